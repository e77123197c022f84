//! The SQLite store: the shared behaviour suite, persistence across opens,
//! writes from another connection, and a file that cannot be written.

use agentry::memory::{MemoryRecord, MemoryStore, RecallOpts, conformance};
use agentry_store::{SqliteStore, decode_embedding, encode_embedding};

fn temp_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agentry-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("memory.db")
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_passes_the_behaviour_suite() {
    let store = SqliteStore::open(temp_file("suite")).unwrap();
    conformance::check_store(&store, "sqlite").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn records_survive_reopening_and_other_connections_are_seen() {
    let path = temp_file("reopen");
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .add(MemoryRecord::new("s", "user", "pasta", vec![1.0, 0.0]))
            .await
            .unwrap();
    }
    let reader = SqliteStore::open(&path).unwrap();
    let hits = reader
        .recall("s", &[1.0, 0.0], RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "pasta");
    // A second process (here: connection) writes; the first sees it next recall.
    let writer = SqliteStore::open(&path).unwrap();
    writer
        .add(MemoryRecord::new("s", "user", "more pasta", vec![0.8, 0.2]))
        .await
        .unwrap();
    let hits = reader
        .recall("s", &[1.0, 0.0], RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
    let mode: String = rusqlite_journal_mode(&path);
    assert_eq!(mode, "wal");
}

fn rusqlite_journal_mode(path: &std::path::Path) -> String {
    // The WAL file sits next to the database while connections are open.
    let wal = path.with_extension("db-wal");
    if wal.exists() {
        "wal".into()
    } else {
        "not wal".into()
    }
}

#[test]
fn embeddings_are_stored_compactly_and_precisely() {
    let vector: Vec<f32> = (0..384).map(|i| ((i as f32) * 0.37).sin() / 20.0).collect();
    let bytes = encode_embedding(&vector);
    assert_eq!(bytes.len(), 768, "two bytes per dimension");
    let back = decode_embedding(&bytes);
    let worst = vector
        .iter()
        .zip(&back)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "{worst}");
    let cosine = agentry::embed::cosine(&vector, &back);
    assert!(cosine > 0.99999, "{cosine}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_database_refuses_writes_with_a_clear_error_and_still_reads() {
    let path = temp_file("readonly");
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .add(MemoryRecord::new("s", "user", "kept", vec![1.0]))
            .await
            .unwrap();
    }
    let store = SqliteStore::open(format!("file:{}?mode=ro", path.display()))
        .expect("an existing database opens read-only");
    let error = store
        .add(MemoryRecord::new("s", "user", "lost", vec![1.0]))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "memory store: sqlite: attempt to write a readonly database"
    );
    let hits = store
        .recall("s", &[1.0], RecallOpts::default())
        .await
        .unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.record.text.as_str()).collect();
    assert_eq!(texts, ["kept"], "nothing was lost and nothing half-written");
}

#[test]
fn a_path_that_cannot_be_opened_is_a_clear_error() {
    let error = SqliteStore::open("/proc/agentry/no/such/dir/memory.db").unwrap_err();
    assert_eq!(
        error.to_string(),
        "memory store: sqlite: unable to open database file: /proc/agentry/no/such/dir/memory.db"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unusable_embeddings_are_refused_and_nothing_is_stored() {
    let store = SqliteStore::open(temp_file("bad-vectors")).unwrap();
    let add = |vector: Vec<f32>| store.add(MemoryRecord::new("s", "user", "x", vector));
    assert_eq!(
        add(vec![f32::NAN, 1.0]).await.unwrap_err().to_string(),
        "memory store: sqlite: the embedding of a record for session \"s\" has a value that is not a finite number"
    );
    assert!(add(vec![f32::INFINITY, 0.0]).await.is_err());
    assert_eq!(
        add(Vec::new()).await.unwrap_err().to_string(),
        "memory store: sqlite: the embedding of a record for session \"s\" is empty"
    );
    add(vec![1.0, 0.0]).await.unwrap();
    assert_eq!(
        add(vec![1.0, 0.0, 0.0]).await.unwrap_err().to_string(),
        "memory store: sqlite: session \"s\" holds 2-dimension embeddings, got 3"
    );
    // A batch with one bad record stores none of them.
    let batch = [
        MemoryRecord::new("t", "user", "fine", vec![1.0, 0.0]),
        MemoryRecord::new("t", "user", "bad", vec![f32::NAN, 0.0]),
    ];
    assert!(store.add_many_blocking(&batch).is_err());
    assert!(
        store
            .recent("t", &Default::default())
            .await
            .unwrap()
            .is_empty()
    );
    // A NaN query is an error, not a ranking.
    assert!(
        store
            .recall("s", &[f32::NAN, 0.0], RecallOpts::default())
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_values_do_not_overflow_half_precision_into_first_place() {
    let store = SqliteStore::open(temp_file("overflow")).unwrap();
    // 1e6 overflows f16 (max 65504): stored raw it would become inf, then NaN.
    store
        .add(MemoryRecord::new("s", "user", "huge", vec![1e6, 0.0, 0.0]))
        .await
        .unwrap();
    store
        .add(MemoryRecord::new("s", "user", "close", vec![0.1, 0.9, 0.0]))
        .await
        .unwrap();
    let opts = RecallOpts {
        limit: 5,
        min_score: -1.0,
    };
    let hits = store.recall("s", &[0.0, 1.0, 0.0], opts).await.unwrap();
    let ranked: Vec<(&str, f32)> = hits
        .iter()
        .map(|h| (h.record.text.as_str(), h.score))
        .collect();
    assert_eq!(ranked[0].0, "close");
    assert_eq!(ranked[1], ("huge", 0.0));
    assert!(
        hits.iter()
            .all(|h| h.record.embedding.iter().all(|x| x.is_finite()))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_written_by_others_never_break_or_leak_recall() {
    let path = temp_file("foreign-rows");
    let raw = rusqlite::Connection::open(&path).unwrap();
    // A file made before ids were AUTOINCREMENT, where SQLite reuses the
    // largest id after it is deleted.
    raw.execute_batch(
        "CREATE TABLE memory (id INTEGER PRIMARY KEY, session TEXT NOT NULL, role TEXT NOT NULL,
         source TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL,
         timestamp INTEGER NOT NULL, embedding BLOB NOT NULL)",
    )
    .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let insert = |session: &str, text: &str, blob: Vec<u8>| {
        raw.execute(
            "INSERT INTO memory (session, role, source, text, metadata, timestamp, embedding) VALUES (?1, 'user', '', ?2, '{}', 1, ?3)",
            rusqlite::params![session, text, blob],
        )
        .unwrap();
    };
    // An empty first vector used to set the session's width to 0 and panic
    // the scan while holding the lock; it is skipped now.
    insert("a", "empty", Vec::new());
    store
        .add(MemoryRecord::new("a", "user", "pasta", vec![1.0, 0.0]))
        .await
        .unwrap();
    let hits = store
        .recall("a", &[1.0, 0.0], RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| h.record.text.as_str())
            .collect::<Vec<_>>(),
        ["pasta"]
    );

    // A row of session a deleted, its id reused by session b: a's recall
    // must not serve b's text.
    raw.execute("DELETE FROM memory WHERE text = 'pasta'", [])
        .unwrap();
    insert("b", "b's secret", encode_embedding(&[1.0, 0.0]));
    let hits = store
        .recall("a", &[1.0, 0.0], RecallOpts::default())
        .await
        .unwrap();
    assert!(hits.iter().all(|h| h.record.session == "a"), "{hits:?}");
    assert!(hits.is_empty());
    // The store keeps working.
    store
        .add(MemoryRecord::new("a", "user", "risotto", vec![0.9, 0.1]))
        .await
        .unwrap();
    let hits = store
        .recall("a", &[1.0, 0.0], RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "risotto");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_during_a_chat_turn_is_reported_and_loses_nothing() {
    use agentry::embed::KeywordEmbedder;
    use agentry::memory::{Memory, RecentOpts};
    use agentry::model::{ScriptedModel, Step, Usage};
    use agentry::tool::{Identity, Session};
    use agentry::turn::{ChatTurn, TurnConfig, TurnEvent, TurnInput};
    use std::sync::{Arc, Mutex};

    let store = Arc::new(SqliteStore::open(temp_file("full")).unwrap());
    let reply = |text: &str| Step::Final {
        text: text.into(),
        tokens: Usage::new(5, 2),
    };
    let model = Arc::new(
        ScriptedModel::new()
            .reply(reply("Noted."))
            .reply(reply(&"Still here. ".repeat(1000)))
            .reply(reply("Saved again.")),
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let config = TurnConfig::new(
        "chef",
        model,
        Memory::new(store.clone(), Arc::new(KeywordEmbedder::new(["pasta"]))),
    )
    .on_event(move |event| log.lock().unwrap().push(event.clone()));
    let turn = |text: &str| TurnInput::new(Session::new("s"), Identity::new("ana"), text);
    let persisted = |events: &[TurnEvent]| -> Vec<bool> {
        events
            .iter()
            .filter_map(|event| match event {
                TurnEvent::UserPersisted { ok } | TurnEvent::AssistantPersisted { ok, .. } => {
                    Some(*ok)
                }
                _ => None,
            })
            .collect()
    };

    assert!(ChatTurn::run(&config, turn("I like pasta.")).await.ok);
    // The disk fills: the turn still answers, and says the writes failed.
    store.set_max_size(store.size().unwrap()).unwrap();
    events.lock().unwrap().clear();
    // Both texts need new pages, which the full file cannot give.
    let output = ChatTurn::run(&config, turn("Pasta tonight? ".repeat(1000).as_str())).await;
    assert!(output.ok);
    assert!(output.text.starts_with("Still here."));
    assert_eq!(persisted(&events.lock().unwrap()), [false, false]);
    // Nothing earlier is damaged.
    let texts =
        |records: Vec<MemoryRecord>| records.into_iter().map(|r| r.text).collect::<Vec<_>>();
    assert_eq!(
        texts(store.recent("s", &RecentOpts::default()).await.unwrap()),
        ["I like pasta.", "Noted."]
    );
    // Space again: the next turn is stored.
    store.set_max_size(1 << 30).unwrap();
    events.lock().unwrap().clear();
    assert!(ChatTurn::run(&config, turn("And now?")).await.ok);
    assert_eq!(persisted(&events.lock().unwrap()), [true, true]);
    assert_eq!(
        texts(store.recent("s", &RecentOpts::default()).await.unwrap()),
        ["I like pasta.", "Noted.", "And now?", "Saved again."]
    );
}
