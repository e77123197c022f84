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
