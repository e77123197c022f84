//! The behaviour every [`MemoryStore`] must show, as async checks that
//! panic with a precise message on the first deviation: [`check_store`]
//! (recall, recent, forgetting a session) and [`check_management`] (listing,
//! forgetting records and old ones, export and import) and
//! [`check_keywords`] (keyword search). The in-memory, SQLite and
//! PostgreSQL stores all run all three in their tests.

use super::manage::{Forget, ListOpts, SessionSummary, StoredRecord};
use super::store::{MemoryRecord, MemoryStore, RecallOpts, RecentOpts};
use super::transfer::{export_session, import_records};

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

/// Run the management suite against `store`: `sessions`, `list` with
/// paging, `forget` of one record, of a session's old records and of every
/// session's old records, and an export/import round trip. Sessions used
/// are `{prefix}-m1`, `{prefix}-m2` and `{prefix}-m3`, with timestamps
/// below 100; the store-wide step deletes every record stamped before 45,
/// so give it a store (or, for PostgreSQL, an embedding size) no other
/// check uses at the same time. Vectors have 5 dimensions.
pub async fn check_management(store: &dyn MemoryStore, prefix: &str) {
    let m1 = format!("{prefix}-m1");
    let m2 = format!("{prefix}-m2");
    let m3 = format!("{prefix}-m3");
    let batch = [
        record(&m1, "user", "first of m1", 10, &[1.0, 0.0, 0.0, 0.0, 0.0]),
        record(&m2, "user", "first of m2", 20, &[0.0, 1.0, 0.0, 0.0, 0.0]),
        record(
            &m1,
            "assistant",
            "second of m1",
            30,
            &[0.0, 0.0, 1.0, 0.0, 0.0],
        ),
        record(&m2, "user", "second of m2", 40, &[0.0, 0.0, 0.0, 1.0, 0.0]),
        record(&m1, "user", "third of m1", 50, &[0.0, 0.0, 0.0, 0.0, 1.0]),
    ];
    store.add_many(&batch).await.expect("add_many succeeds");

    // sessions: counts and the oldest and newest timestamps.
    let sessions = store.sessions().await.expect("sessions succeeds");
    let mine: Vec<&SessionSummary> = sessions
        .iter()
        .filter(|s| s.session == m1 || s.session == m2)
        .collect();
    assert_eq!(
        mine,
        [
            &SessionSummary {
                session: m1.clone(),
                records: 3,
                first: 10,
                last: 50
            },
            &SessionSummary {
                session: m2.clone(),
                records: 2,
                first: 20,
                last: 40
            },
        ],
        "sessions, by name"
    );

    // list: insertion order, growing ids, whole records, pages.
    let listed = store.list(&m1, ListOpts::default()).await.expect("list");
    let texts = |stored: &[StoredRecord]| -> Vec<String> {
        stored.iter().map(|s| s.record.text.clone()).collect()
    };
    assert_eq!(
        texts(&listed),
        ["first of m1", "second of m1", "third of m1"]
    );
    assert!(listed.windows(2).all(|w| w[0].id < w[1].id), "ids grow");
    assert_eq!(
        listed[0].record, batch[0],
        "a listed record comes back whole"
    );
    let page = store
        .list(
            &m1,
            ListOpts {
                after: Some(listed[0].id),
                limit: Some(1),
            },
        )
        .await
        .unwrap();
    assert_eq!(texts(&page), ["second of m1"], "after and limit");

    // forget one record: never through another session's name.
    let other_session = Forget::Record {
        session: m2.clone(),
        id: listed[1].id,
    };
    assert_eq!(store.forget(&other_session).await.unwrap(), 0);
    let one = Forget::Record {
        session: m1.clone(),
        id: listed[1].id,
    };
    assert_eq!(store.forget(&one).await.unwrap(), 1);
    assert_eq!(store.forget(&one).await.unwrap(), 0, "already gone");
    let left = store.list(&m1, ListOpts::default()).await.unwrap();
    assert_eq!(texts(&left), ["first of m1", "third of m1"]);
    let query = [0.0, 0.0, 1.0, 0.0, 0.0];
    let all = RecallOpts {
        limit: 10,
        min_score: -1.0,
    };
    let recalled = store.recall(&m1, &query, all).await.unwrap();
    assert!(
        recalled.iter().all(|h| h.record.text != "second of m1"),
        "a forgotten record is never recalled"
    );
    assert_eq!(recalled.len(), 2);

    // forget one session's records older than a date.
    let old_m2 = Forget::Before {
        session: Some(m2.clone()),
        timestamp: 30,
    };
    assert_eq!(store.forget(&old_m2).await.unwrap(), 1);
    assert_eq!(
        texts(&store.list(&m2, ListOpts::default()).await.unwrap()),
        ["second of m2"]
    );
    assert_eq!(
        texts(&store.list(&m1, ListOpts::default()).await.unwrap()),
        ["first of m1", "third of m1"],
        "another session is untouched"
    );

    // forget every session's records older than a date.
    let old = Forget::Before {
        session: None,
        timestamp: 45,
    };
    assert!(store.forget(&old).await.unwrap() >= 2);
    assert_eq!(
        texts(&store.list(&m1, ListOpts::default()).await.unwrap()),
        ["third of m1"]
    );
    assert!(
        store
            .list(&m2, ListOpts::default())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .sessions()
            .await
            .unwrap()
            .iter()
            .all(|s| s.session != m2),
        "an emptied session is no longer listed"
    );

    // export and import: the same records, recalled the same way.
    let mut lines = Vec::new();
    assert_eq!(export_session(store, &m1, &mut lines).await.unwrap(), 1);
    assert_eq!(
        import_records(store, lines.as_slice(), Some(&m3))
            .await
            .unwrap(),
        1
    );
    let copied = store.list(&m3, ListOpts::default()).await.unwrap();
    let mut expected = batch[4].clone();
    expected.session = m3.clone();
    assert_eq!(copied.len(), 1);
    assert_eq!(copied[0].record, expected, "an imported record is whole");
    let hits = store
        .recall(&m3, &[0.0, 0.0, 0.0, 0.0, 1.0], RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert!((hits[0].score - 1.0).abs() < 1e-3);

    // a bad line imports nothing.
    let bad = format!(
        "{}\nnot json\n",
        String::from_utf8(lines.clone()).unwrap().trim_end()
    );
    let error = import_records(store, bad.as_bytes(), Some(&m3))
        .await
        .unwrap_err();
    assert!(error.detail().starts_with("line 2: "), "{error}");
    assert_eq!(store.list(&m3, ListOpts::default()).await.unwrap().len(), 1);

    for session in [&m1, &m3] {
        store
            .forget(&Forget::Session(session.clone()))
            .await
            .unwrap();
    }
}

/// Run the keyword-search suite against `store`
/// ([`MemoryStore::search_text`], the keyword half of hybrid recall):
/// records are found by an exact number and by a plain word, within their
/// own session only, at most `limit`, a record holding more of the words
/// first; a query without searchable words
/// finds nothing, query-language syntax in the text is only text, and a
/// forgotten record is no longer found. Sessions used are `{prefix}-ka` and
/// `{prefix}-kb`; vectors have 3 dimensions.
pub async fn check_keywords(store: &dyn MemoryStore, prefix: &str) {
    let a = format!("{prefix}-ka");
    let b = format!("{prefix}-kb");
    let batch = [
        record(
            &a,
            "user",
            "invoice 48213 was paid in full",
            10,
            &[1.0, 0.0, 0.0],
        ),
        record(
            &a,
            "user",
            "the meeting moved to thursday",
            11,
            &[0.0, 1.0, 0.0],
        ),
        record(
            &a,
            "assistant",
            "every invoice template was updated",
            12,
            &[0.0, 0.0, 1.0],
        ),
        record(
            &b,
            "user",
            "invoice 48213 belongs to session b",
            13,
            &[1.0, 0.0, 0.0],
        ),
    ];
    store.add_many(&batch).await.expect("add_many succeeds");
    let texts = |hits: &[super::Recalled]| -> Vec<String> {
        hits.iter().map(|h| h.record.text.clone()).collect()
    };

    let hits = store
        .search_text(&a, "what happened to 48213?", 5)
        .await
        .expect("search_text succeeds");
    assert_eq!(
        texts(&hits),
        [batch[0].text.clone()],
        "found by an exact number, in its own session only"
    );
    assert_eq!(hits[0].record, batch[0], "a found record is whole");
    assert!(
        hits[0].score > 0.0,
        "a match scores above 0: {}",
        hits[0].score
    );

    let mut found = texts(&store.search_text(&a, "Invoice", 5).await.unwrap());
    found.sort();
    assert_eq!(
        found,
        [batch[2].text.clone(), batch[0].text.clone()],
        "found by a word, any case"
    );
    assert_eq!(
        store.search_text(&a, "invoice", 1).await.unwrap().len(),
        1,
        "limit"
    );
    let hits = store.search_text(&a, "invoice 48213", 5).await.unwrap();
    assert_eq!(
        texts(&hits),
        [batch[0].text.clone(), batch[2].text.clone()],
        "the record holding both words first"
    );
    assert!(
        hits[0].score > hits[1].score,
        "both words score above one: {hits:?}"
    );

    for nothing in ["", "?! ...", "the of and"] {
        let hits = store.search_text(&a, nothing, 5).await.unwrap();
        assert!(
            hits.is_empty(),
            "no searchable words in {nothing:?}: {hits:?}"
        );
    }
    for syntax in [
        "\"48213\" OR *",
        "NEAR(48213 x) AND -",
        "48213'; DROP TABLE memory; --",
        "text:48213 ^",
    ] {
        let hits = store
            .search_text(&a, syntax, 5)
            .await
            .unwrap_or_else(|e| panic!("query syntax is only text ({syntax:?}): {e}"));
        assert_eq!(texts(&hits), [batch[0].text.clone()], "for {syntax:?}");
    }

    store.forget(&Forget::Session(a.clone())).await.unwrap();
    assert!(
        store.search_text(&a, "48213", 5).await.unwrap().is_empty(),
        "forgotten records are not found"
    );
    assert_eq!(
        store.search_text(&b, "48213", 5).await.unwrap().len(),
        1,
        "other sessions keep theirs"
    );
    store.forget(&Forget::Session(b)).await.unwrap();
}
