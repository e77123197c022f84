//! The SQLite store: the shared behaviour suite, persistence across opens,
//! writes from another connection, a file that cannot be written, a full
//! disk, and a file that goes away or is replaced under an open store.

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
async fn sqlite_passes_the_run_journal_checks_and_keeps_runs_across_opens() {
    use agentry_core::journal::{RunJournal, check_journal};
    let path = temp_file("journal");
    let runs = {
        let store = SqliteStore::open(&path).unwrap();
        check_journal(&store, "check").await;
        store.runs().await.unwrap()
    };
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.runs().await.unwrap(), runs);
    assert_eq!(reopened.entries(&runs[0]).await.unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_entry_another_program_wrote_is_a_clear_error() {
    use agentry::agent::durable::{JournalError, RunEntry, RunJournal};
    let path = temp_file("bad-entry");
    let store = SqliteStore::open(&path).unwrap();
    let started = RunEntry::Ended {
        outcome: "out_of_steps".into(),
        detail: String::new(),
    };
    let lease = store
        .acquire("r1", "test", std::time::Duration::from_secs(60))
        .await
        .unwrap();
    store.append("r1", 0, &started, lease.token).await.unwrap();
    // Another program wrote a row (not even an entry): it carries no seal.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "INSERT INTO run_journal (run, seq, entry) VALUES ('r1', 1, '{\"kind\": \"nonsense\"}')",
        [],
    )
    .unwrap();
    assert_eq!(
        store.entries("r1").await,
        Err(JournalError::Tampered {
            run: "r1".into(),
            seq: 1,
            why: "it has no seal (it was written before journals were sealed, or its seal was removed)"
                .into()
        })
    );
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

#[path = "support/chat.rs"]
mod chat;

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_during_a_chat_turn_is_reported_and_loses_nothing() {
    let store = std::sync::Arc::new(SqliteStore::open(temp_file("full")).unwrap());
    let long = "Still here. ".repeat(1000);
    let chef = chat::Chef::new(store.clone(), &["Noted.", &long, "Saved again."]);
    assert_eq!(chef.turn("I like pasta.").await.1, [true, true]);
    // The disk fills: the turn still answers, and says the writes failed.
    store.set_max_size(store.size().unwrap()).unwrap();
    // Both texts need new pages, which the full file cannot give.
    let (reply, persisted) = chef.turn("Pasta tonight? ".repeat(1000).as_str()).await;
    assert!(reply.starts_with("Still here."));
    assert_eq!(persisted, [false, false]);
    // Nothing earlier is damaged.
    assert_eq!(chat::texts(&*store).await, ["I like pasta.", "Noted."]);
    // Space again: the next turn is stored.
    store.set_max_size(1 << 30).unwrap();
    assert_eq!(chef.turn("And now?").await.1, [true, true]);
    assert_eq!(
        chat::texts(&*store).await,
        ["I like pasta.", "Noted.", "And now?", "Saved again."]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_that_disappears_during_a_chat_turn_is_reported_and_loses_nothing() {
    let path = temp_file("gone");
    let dir = path.parent().unwrap().to_path_buf();
    let away = dir.with_extension("unmounted");
    let _ = std::fs::remove_dir_all(&away);
    let store = std::sync::Arc::new(SqliteStore::open(&path).unwrap());
    let chef = chat::Chef::new(store.clone(), &["Noted.", "I heard you.", "Saved again."]);
    assert_eq!(chef.turn("I like pasta.").await.1, [true, true]);
    // The disk holding the file goes away (as an unmount would) while the
    // connection is open: SQLite itself would go on writing into the open file.
    std::fs::rename(&dir, &away).unwrap();
    let (reply, persisted) = chef.turn("Pasta tonight?").await;
    assert_eq!(
        (reply.as_str(), persisted.as_slice()),
        ("I heard you.", [false, false].as_slice())
    );
    let error = store.recent("s", &Default::default()).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "memory store: sqlite: the database file {} is gone (No such file or directory (os error 2)): deleted, moved, or on a disk that went away; nothing was read or written",
            path.display()
        )
    );
    // Back again: the next turn is stored, and everything earlier is there.
    std::fs::rename(&away, &dir).unwrap();
    assert_eq!(chef.turn("And now?").await.1, [true, true]);
    let expected = ["I like pasta.", "Noted.", "And now?", "Saved again."];
    assert_eq!(chat::texts(&*store).await, expected);
    // Nothing went into the file while it was away: a fresh open sees the same.
    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(chat::texts(&reopened).await, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_replaced_under_an_open_store_is_refused_until_reopened() {
    let path = temp_file("restored");
    let store = SqliteStore::open(&path).unwrap();
    let record = |text: &str| MemoryRecord::new("s", "user", text, vec![1.0, 0.0]);
    store.add(record("kept in the backup")).await.unwrap();
    let backup = path.with_extension("backup");
    let copy = rusqlite::Connection::open(&path).unwrap();
    copy.execute("VACUUM INTO ?1", [backup.to_str().unwrap()])
        .unwrap();
    drop(copy);
    store.add(record("after the backup")).await.unwrap();
    // A backup is put in place while the store is open: writing on would go
    // to the old file (or replay its log onto the new one).
    std::fs::rename(&backup, &path).unwrap();
    let error = store.add(record("refused")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "memory store: sqlite: the database file {} was replaced by another file while open; open the store again to use it",
            path.display()
        )
    );
    assert!(
        store
            .recall("s", &[1.0, 0.0], RecallOpts::default())
            .await
            .is_err()
    );
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    let texts = chat::texts(&reopened).await;
    assert_eq!(texts[0], "kept in the backup");
    assert!(!texts.iter().any(|text| text == "refused"), "{texts:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_passes_the_management_suite() {
    let store = SqliteStore::open(temp_file("management")).unwrap();
    conformance::check_management(&store, "sqlite").await;
    assert!(store.sessions().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_passes_the_keyword_suite() {
    let store = SqliteStore::open(temp_file("keywords")).unwrap();
    conformance::check_keywords(&store, "sqlite").await;
    assert!(store.sessions().await.unwrap().is_empty());
}

/// Every file SQLite keeps for the store, read raw.
fn raw_bytes(path: &std::path::Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        if let Ok(more) = std::fs::read(std::path::PathBuf::from(name)) {
            bytes.extend(more);
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread")]
async fn forgotten_text_is_gone_from_the_file() {
    use agentry::memory::Forget;
    let path = temp_file("forgotten");
    let store = SqliteStore::open(&path).unwrap();
    let mut records = Vec::new();
    for (i, text) in [
        "my passport number is XJ-SECRET-ONE",
        "the door code is SECRET-TWO-4471 qwzrtplk",
        "an old note: SECRET-THREE lives here",
        "this one stays: KEEP-ME-PLEASE",
    ]
    .into_iter()
    .enumerate()
    {
        let mut record = MemoryRecord::new("s", "user", text, vec![1.0, i as f32]);
        record.timestamp = 100 + i as i64;
        records.push(record);
    }
    // Long text goes to overflow pages; those must be wiped too.
    let long = format!("SECRET-FOUR {}", "x".repeat(20_000));
    records.push(MemoryRecord::new("other", "user", long, vec![0.5, 0.5]));
    store.add_many(&records).await.unwrap();
    assert!(contains(&raw_bytes(&path), "SECRET-TWO-4471"));
    assert_eq!(
        store.search_text("s", "qwzrtplk", 5).await.unwrap().len(),
        1
    );

    let listed = store.list("s", Default::default()).await.unwrap();
    let one = Forget::Record {
        session: "s".into(),
        id: listed[1].id,
    };
    assert_eq!(store.forget(&one).await.unwrap(), 1);
    let old = Forget::Before {
        session: Some("s".into()),
        timestamp: 101,
    };
    assert_eq!(store.forget(&old).await.unwrap(), 1);
    assert_eq!(
        store
            .forget(&Forget::Session("other".into()))
            .await
            .unwrap(),
        1
    );
    let after: Vec<String> = store
        .list("s", Default::default())
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.record.text)
        .collect();
    assert_eq!(
        after,
        [
            "an old note: SECRET-THREE lives here",
            "this one stays: KEEP-ME-PLEASE"
        ]
    );
    assert!(
        store
            .search_text("s", "qwzrtplk", 5)
            .await
            .unwrap()
            .is_empty()
    );
    // Zeroed in place and out of the write-ahead log already, the keyword
    // index's copy of the words included...
    let raw = raw_bytes(&path);
    for secret in [
        "XJ-SECRET-ONE",
        "SECRET-TWO-4471",
        "SECRET-FOUR",
        "qwzrtplk",
    ] {
        assert!(
            !contains(&raw, secret),
            "{secret} is still in the file after forget"
        );
    }
    // ...and after VACUUM too, with what stays intact.
    store.vacuum().unwrap();
    let raw = raw_bytes(&path);
    for secret in [
        "XJ-SECRET-ONE",
        "SECRET-TWO-4471",
        "SECRET-FOUR",
        "qwzrtplk",
    ] {
        assert!(
            !contains(&raw, secret),
            "{secret} is still in the file after VACUUM"
        );
    }
    assert!(contains(&raw, "KEEP-ME-PLEASE"));
    assert_eq!(store.search_text("s", "keep", 5).await.unwrap().len(), 1);
    let hits = store
        .recall("s", &[1.0, 3.0], RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "this one stays: KEEP-ME-PLEASE");
}

/// A deterministic unit vector generator (xorshift).
struct Rng(u64);

impl Rng {
    fn vector(&mut self, dims: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dims)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_session_is_recalled_through_sketches_with_exact_scores() {
    use agentry::memory::Forget;
    let path = temp_file("large");
    let store = SqliteStore::open(&path).unwrap();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    // More than the exact limit (16,384), so recall goes through sketches.
    let records: Vec<MemoryRecord> = (0..20_000)
        .map(|i| MemoryRecord::new("big", "user", format!("record {i}"), rng.vector(64)))
        .collect();
    store.add_many_blocking(&records).unwrap();
    let opts = RecallOpts {
        limit: 5,
        min_score: -1.0,
    };
    for probe in [0usize, 777, 19_999] {
        // A query close to one record: that record first, with its exact cosine.
        let noise = rng.vector(64);
        let query: Vec<f32> = records[probe]
            .embedding
            .iter()
            .zip(&noise)
            .map(|(x, n)| x + 0.1 * n)
            .collect();
        let hits = store.recall("big", &query, opts).await.unwrap();
        assert_eq!(hits.len(), 5);
        assert_eq!(hits[0].record.text, format!("record {probe}"));
        let exact = agentry::embed::cosine(&query, &records[probe].embedding);
        assert!(
            (hits[0].score - exact).abs() < 2e-3,
            "{} vs {exact}",
            hits[0].score
        );
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    }
    // Another connection deletes the best match: never recalled again, and
    // a new record written there is found.
    let other = SqliteStore::open(&path).unwrap();
    let id = other
        .list(
            "big",
            agentry::memory::ListOpts {
                after: None,
                limit: Some(1),
            },
        )
        .await
        .unwrap()[0]
        .id;
    let gone = Forget::Record {
        session: "big".into(),
        id,
    };
    assert_eq!(other.forget(&gone).await.unwrap(), 1);
    let mut twin = records[0].clone();
    twin.text = "record 0, again".into();
    other.add(twin).await.unwrap();
    let hits = store
        .recall("big", &records[0].embedding, opts)
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "record 0, again");
    assert!(hits.iter().all(|h| h.record.text != "record 0"));
    // Reopened: the sketches come back from the file.
    drop(store);
    let reopened = SqliteStore::open(&path).unwrap();
    let hits = reopened
        .recall("big", &records[777].embedding, opts)
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "record 777");
    assert!((hits[0].score - 1.0).abs() < 2e-3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_session_is_packed_into_blocks_read_back_alike_and_forgetting_drops_them() {
    use agentry::memory::Forget;
    let path = temp_file("blocks");
    let mut rng = Rng(0x853c49e6748fea9b);
    let records: Vec<MemoryRecord> = (0..20_000)
        .map(|i| MemoryRecord::new("big", "user", format!("record {i}"), rng.vector(64)))
        .collect();
    let store = SqliteStore::open(&path).unwrap();
    for batch in records.chunks(1_000) {
        store.add_many_blocking(batch).unwrap();
    }
    let raw = rusqlite::Connection::open(&path).unwrap();
    let blocks = |raw: &rusqlite::Connection| -> (i64, i64) {
        raw.query_row(
            "SELECT count(*), coalesce(sum(length(ids)) / 8, 0) FROM memory_sketch_block",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    // Packed once the session passed 16,384 records (at 17,000): four
    // blocks of 4,096; the 3,616 after them stay loose.
    assert_eq!(blocks(&raw), (4, 16_384));

    let opts = RecallOpts {
        limit: 5,
        min_score: -1.0,
    };
    let probes = [0usize, 4_095, 4_096, 9_999, 16_383, 16_384, 19_999];
    let records_vector = |i: usize| records[i].embedding.clone();
    let recall_all = |store: SqliteStore| async move {
        let mut all = Vec::new();
        for probe in probes {
            let hits = store
                .recall("big", &records_vector(probe), opts)
                .await
                .unwrap();
            all.push(
                hits.iter()
                    .map(|h| (h.record.text.clone(), h.score))
                    .collect::<Vec<_>>(),
            );
        }
        all
    };
    let through_blocks = recall_all(SqliteStore::open(&path).unwrap()).await;
    for (probe, hits) in probes.iter().zip(&through_blocks) {
        assert_eq!(hits[0].0, format!("record {probe}"));
        assert!((hits[0].1 - 1.0).abs() < 2e-3);
    }
    // The same answers when every sketch is read from its row.
    raw.execute("DELETE FROM memory_sketch_block", []).unwrap();
    let through_rows = recall_all(SqliteStore::open(&path).unwrap()).await;
    assert_eq!(through_blocks, through_rows);
    // Packed again by the next write.
    let one_more = MemoryRecord::new("big", "user", "one more", rng.vector(64));
    store.add_many_blocking(&[one_more]).unwrap();
    assert_eq!(blocks(&raw), (4, 16_384));

    // Forgetting a record drops the block that holds it, and only that one;
    // its neighbours are still found (read one by one), it is not.
    let listed = store
        .list(
            "big",
            agentry::memory::ListOpts {
                after: None,
                limit: Some(5_001),
            },
        )
        .await
        .unwrap();
    let gone = listed[5_000].id;
    assert_eq!(listed[5_000].record.text, "record 5000");
    let forget = Forget::Record {
        session: "big".into(),
        id: gone,
    };
    assert_eq!(store.forget(&forget).await.unwrap(), 1);
    assert_eq!(blocks(&raw), (3, 12_288));
    let holding: i64 = raw
        .query_row(
            "SELECT count(*) FROM memory_sketch_block WHERE first_id <= ?1 AND last_id >= ?1",
            [gone],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(holding, 0);
    let reopened = SqliteStore::open(&path).unwrap();
    let hits = reopened
        .recall("big", &records_vector(5_000), opts)
        .await
        .unwrap();
    assert!(hits.iter().all(|h| h.record.text != "record 5000"));
    let hits = reopened
        .recall("big", &records_vector(5_001), opts)
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "record 5001");
    // Forgetting the session drops its blocks.
    store.forget(&Forget::Session("big".into())).await.unwrap();
    assert_eq!(blocks(&raw), (0, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn sketches_of_the_first_format_are_computed_again_on_open() {
    let path = temp_file("first-format-sketches");
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let records: Vec<MemoryRecord> = (0..17_000)
        .map(|i| MemoryRecord::new("big", "user", format!("record {i}"), rng.vector(64)))
        .collect();
    SqliteStore::open(&path)
        .unwrap()
        .add_many_blocking(&records)
        .unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    let lengths = |raw: &rusqlite::Connection| -> Vec<(i64, i64)> {
        raw.prepare("SELECT length(sketch), count(*) FROM memory GROUP BY 1 ORDER BY 1")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    // A format byte, then a 64-dimension sign word and size word.
    assert_eq!(lengths(&raw), [(17, 17_000)]);
    // As the first format stored them: the sign word alone, in a file an
    // older version wrote (it never sets `user_version`).
    raw.execute("UPDATE memory SET sketch = substr(sketch, 2, 8)", [])
        .unwrap();
    raw.pragma_update(None, "user_version", 0).unwrap();
    assert_eq!(lengths(&raw), [(8, 17_000)]);
    drop(raw);

    let store = SqliteStore::open(&path).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(lengths(&raw), [(17, 17_000)], "every sketch rewritten");
    let opts = RecallOpts {
        limit: 5,
        min_score: -1.0,
    };
    for probe in [3usize, 16_999] {
        let hits = store
            .recall("big", &records[probe].embedding, opts)
            .await
            .unwrap();
        assert_eq!(hits[0].record.text, format!("record {probe}"));
    }
    // A record an older version writes into the file later (it stays at the
    // new version, so opening reads no rows): its sketch is computed from
    // its vector when the index reads it.
    raw.execute(
        "UPDATE memory SET sketch = substr(sketch, 2, 8) WHERE text = 'record 16999'",
        [],
    )
    .unwrap();
    let hits = SqliteStore::open(&path)
        .unwrap()
        .recall("big", &records[16_999].embedding, opts)
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "record 16999");
    assert_eq!(
        lengths(&raw),
        [(8, 1), (17, 16_999)],
        "opening rewrote nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_from_before_sketches_and_keywords_is_brought_up_to_date_on_open() {
    let path = temp_file("before-sketches");
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(
            "CREATE TABLE memory (
                id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, role TEXT NOT NULL,
                source TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL,
                timestamp INTEGER NOT NULL, embedding BLOB NOT NULL);
             CREATE INDEX memory_session_time ON memory (session, timestamp, id);",
        )
        .unwrap();
        for (text, vector) in [("pasta", [1.0f32, 0.0]), ("rain", [0.0, 1.0])] {
            raw.execute(
                "INSERT INTO memory (session, role, source, text, metadata, timestamp, embedding)
                 VALUES ('s', 'user', '', ?1, '{}', 1, ?2)",
                rusqlite::params![text, encode_embedding(&vector)],
            )
            .unwrap();
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    let hits = store
        .recall("s", &[0.9, 0.1], RecallOpts::default())
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].record.text, "pasta");
    let raw = rusqlite::Connection::open(&path).unwrap();
    let missing: i64 = raw
        .query_row(
            "SELECT count(*) FROM memory WHERE sketch IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(missing, 0, "every record has its sketch");
    // The keyword index holds the old records, and follows new ones.
    let found = store.search_text("s", "rain", 5).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].record.text, "rain");
    store
        .add(MemoryRecord::new("s", "user", "more rain", vec![0.0, 1.0]))
        .await
        .unwrap();
    assert_eq!(store.search_text("s", "rain", 5).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn keyword_search_skips_words_most_records_hold_and_works_read_only() {
    let path = temp_file("common-words");
    let store = SqliteStore::open(&path).unwrap();
    // "invoice" in 6,000 records (over the postings budget), "48213" in one.
    let mut records: Vec<MemoryRecord> = (0..6_000)
        .map(|i| MemoryRecord::new("s", "user", format!("invoice number {i}"), vec![1.0, 0.0]))
        .collect();
    records.push(MemoryRecord::new(
        "s",
        "user",
        "the disputed invoices were 48213 and 48214",
        vec![0.0, 1.0],
    ));
    store.add_many(&records).await.unwrap();
    let hits = store.search_text("s", "invoice 48213", 5).await.unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.record.text.as_str()).collect();
    assert_eq!(
        texts,
        ["the disputed invoices were 48213 and 48214"],
        "the common word is left out; the rare one (and stemming) finds the record"
    );
    // A word alone is searched however common it is.
    assert_eq!(
        store.search_text("s", "invoices", 5).await.unwrap().len(),
        5
    );
    assert!(
        store
            .search_text("s", "nowhere", 5)
            .await
            .unwrap()
            .is_empty()
    );
    drop(store);

    let read_only = SqliteStore::open(format!("file:{}?mode=ro", path.display())).unwrap();
    assert_eq!(
        read_only.search_text("s", "48213", 5).await.unwrap().len(),
        1
    );
}
