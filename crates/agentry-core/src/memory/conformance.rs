//! The behaviour every [`MemoryStore`] must show, as one async check that
//! panics with a precise message on the first deviation. The in-memory,
//! SQLite and PostgreSQL stores all run it in their tests.

use super::store::{MemoryRecord, MemoryStore, RecallOpts, RecentOpts};

fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

fn record(
    session: &str,
    role: &str,
    text: &str,
    timestamp: i64,
    embedding: &[f32],
) -> MemoryRecord {
    let mut record = MemoryRecord::new(session, role, text, unit(embedding));
    record.timestamp = timestamp;
    record.source = "conformance".into();
    record
        .metadata
        .insert("n".into(), serde_json::Value::from(timestamp));
    record
}

/// Run the behaviour suite against `store`. Sessions used are
/// `{prefix}-a` and `{prefix}-b`; pass a fresh prefix per run when the
/// store is shared.
pub async fn check_store(store: &dyn MemoryStore, prefix: &str) {
    let a = format!("{prefix}-a");
    let b = format!("{prefix}-b");
    let records = [
        record(&a, "user", "pasta recipes", 100, &[1.0, 0.0, 0.0]),
        record(&a, "assistant", "pasta with tomato", 101, &[0.9, 0.1, 0.0]),
        record(&a, "user", "weather in Lima", 102, &[0.0, 1.0, 0.0]),
        record(&a, "system", "note", 103, &[0.0, 0.0, 1.0]),
        record(&b, "user", "pasta in session b", 104, &[1.0, 0.0, 0.0]),
    ];
    for record in records.clone() {
        store.add(record).await.expect("add succeeds");
    }
    let query = unit(&[1.0, 0.05, 0.0]);

    // Ranked by cosine, best first, only session a, min_score applied.
    let hits = store
        .recall(&a, &query, RecallOpts::default())
        .await
        .expect("recall succeeds");
    let texts: Vec<&str> = hits.iter().map(|h| h.record.text.as_str()).collect();
    assert_eq!(
        texts,
        ["pasta recipes", "pasta with tomato"],
        "recall order and min_score"
    );
    assert!(hits[0].score > hits[1].score && hits[1].score >= 0.3);
    assert!(
        (hits[0].score - 0.99875).abs() < 1e-3,
        "cosine, got {}",
        hits[0].score
    );
    let first = &hits[0].record;
    assert_eq!(first, &records[0], "a recalled record comes back whole");

    // limit
    let one = store
        .recall(
            &a,
            &query,
            RecallOpts {
                limit: 1,
                min_score: -1.0,
            },
        )
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    // min_score -1 admits everything in the session, and nothing from b.
    let all = store
        .recall(
            &a,
            &query,
            RecallOpts {
                limit: 100,
                min_score: -1.0,
            },
        )
        .await
        .unwrap();
    assert_eq!(all.len(), 4, "every record of session a, none of b");
    assert!(all.iter().all(|h| h.record.session == a));
    let other = store
        .recall(&b, &query, RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].record.text, "pasta in session b");
    let none = store
        .recall(&format!("{prefix}-empty"), &query, RecallOpts::default())
        .await
        .unwrap();
    assert!(none.is_empty(), "an unknown session recalls nothing");

    // recent: oldest first, role filters, newest-N window.
    let texts = |records: Vec<MemoryRecord>| -> Vec<String> {
        records.into_iter().map(|r| r.text).collect()
    };
    let everything = store.recent(&a, &RecentOpts::default()).await.unwrap();
    assert_eq!(
        texts(everything),
        [
            "pasta recipes",
            "pasta with tomato",
            "weather in Lima",
            "note"
        ]
    );
    let users = RecentOpts {
        include_roles: vec!["user".into()],
        ..RecentOpts::default()
    };
    assert_eq!(
        texts(store.recent(&a, &users).await.unwrap()),
        ["pasta recipes", "weather in Lima"]
    );
    let no_system = RecentOpts {
        exclude_roles: vec!["system".into()],
        limit: Some(2),
        ..RecentOpts::default()
    };
    assert_eq!(
        texts(store.recent(&a, &no_system).await.unwrap()),
        ["pasta with tomato", "weather in Lima"]
    );
    let both = RecentOpts {
        include_roles: vec!["user".into(), "assistant".into()],
        exclude_roles: vec!["assistant".into()],
        limit: None,
    };
    assert_eq!(
        texts(store.recent(&a, &both).await.unwrap()),
        ["pasta recipes", "weather in Lima"],
        "exclusion wins over inclusion"
    );

    // forget_session: one session's records go, the others stay.
    assert_eq!(store.forget_session(&b).await.unwrap(), 1);
    assert!(
        store
            .recent(&b, &RecentOpts::default())
            .await
            .unwrap()
            .is_empty()
    );
    let gone = store
        .recall(&b, &query, RecallOpts::default())
        .await
        .unwrap();
    assert!(gone.is_empty(), "a forgotten session recalls nothing");
    assert_eq!(
        store
            .recent(&a, &RecentOpts::default())
            .await
            .unwrap()
            .len(),
        4,
        "another session is untouched"
    );
    assert_eq!(
        store.forget_session(&b).await.unwrap(),
        0,
        "nothing left to forget"
    );
}
