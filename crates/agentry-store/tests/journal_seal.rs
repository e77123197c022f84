//! Finding 10 of issue 39: a journal changed behind agentry's back is not
//! replayed. Whoever can write the database (not the key file next to it,
//! nor `AGENTRY_JOURNAL_KEY`) edits an entry, inserts one, inserts a whole
//! run, removes the last entries, or swaps the key: the run is refused with
//! [`JournalError::Tampered`] naming the first bad entry, and no tool runs.
//! SQLite always; PostgreSQL with `AGENTRY_POSTGRES_URL` (skipped loudly
//! otherwise).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentry::agent::durable::{Decision, JournalError, RunJournal, decide};
use agentry::agent::{Agent, Outcome};
use agentry::model::{Message, ScriptedModel, Step, Usage};
use agentry::tool::{Tool, ToolCall, ToolHints, function};
use agentry_store::{PgStore, SqliteStore};
use serde_json::json;

const NO_MATCH: &str = "its seal does not match (it was changed, moved or made up)";
const NO_SEAL: &str =
    "it has no seal (it was written before journals were sealed, or its seal was removed)";

fn delete(runs: Arc<AtomicUsize>) -> Tool {
    function("delete")
        .arg::<String>("path", "the file")
        .hints(ToolHints {
            destructive: true,
            ..Default::default()
        })
        .handler(move |input: serde_json::Value| {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("deleted {}", input["path"].as_str().unwrap_or("")))
        })
        .build()
        .unwrap()
        .with_name("delete")
}

fn agent(runs: Arc<AtomicUsize>) -> Agent {
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "delete", json!({"path": "a.log"}))],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "deleted".into(),
            tokens: Usage::new(10, 3),
        });
    Agent::builder(model).tool(delete(runs)).build().unwrap()
}

/// A run stopped for approval of `delete a.log`: entries 0 to 2.
async fn waiting_run(journal: Arc<dyn RunJournal>, id: &str) {
    let run = agent(Arc::new(AtomicUsize::new(0)))
        .durable(journal)
        .start_messages(id.to_owned(), vec![Message::user("delete a.log")])
        .await
        .unwrap();
    assert!(matches!(run.outcome.outcome, Outcome::AwaitingDecision(_)));
}

fn tampered(run: &str, seq: u64, why: &str) -> JournalError {
    JournalError::Tampered {
        run: run.to_owned(),
        seq,
        why: why.to_owned(),
    }
}

/// `id` is refused on replay, by resume and by a decision, and nothing ran.
async fn refused(journal: Arc<dyn RunJournal>, id: &str, expected: JournalError) {
    assert_eq!(journal.entries(id).await, Err(expected.clone()));
    let runs = Arc::new(AtomicUsize::new(0));
    let resumed = agent(runs.clone())
        .durable(journal.clone())
        .resume(id)
        .await;
    assert_eq!(
        resumed.map(|run| run.outcome.outcome),
        Err(expected.clone())
    );
    assert_eq!(
        decide(journal.as_ref(), id, "c1", Decision::Approve, false).await,
        Err(expected.into())
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no tool ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_journal_changed_outside_agentry_is_refused() {
    let dir = std::env::temp_dir().join(format!("agentry-seal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    let store: Arc<dyn RunJournal> = Arc::new(SqliteStore::open(&db).unwrap());
    for id in ["edited", "extended", "cut", "honest"] {
        waiting_run(store.clone(), id).await;
    }
    let raw = rusqlite::Connection::open(&db).unwrap();
    // The key sits next to the file, readable by its owner only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("runs.db.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // An entry's input changed: the call would delete another file.
    raw.execute(
        "UPDATE run_journal SET entry = replace(entry, 'a.log', '/etc/passwd') WHERE run = 'edited' AND seq = 1",
        [],
    )
    .unwrap();
    refused(store.clone(), "edited", tampered("edited", 1, NO_MATCH)).await;
    // A row inserted after the last (the issue's attack): a decision that
    // approves the waiting call.
    raw.execute(
        r#"INSERT INTO run_journal (run, seq, entry) VALUES ('extended', 3,
           '{"kind":"decided","call_id":"c1","decision":{"decision":"approve"}}')"#,
        [],
    )
    .unwrap();
    refused(store.clone(), "extended", tampered("extended", 3, NO_SEAL)).await;
    // A whole run made up, with seals copied from an honest run.
    raw.execute(
        "INSERT INTO run_journal (run, seq, entry, seal)
         SELECT 'forged', seq, entry, seal FROM run_journal WHERE run = 'honest'",
        [],
    )
    .unwrap();
    refused(store.clone(), "forged", tampered("forged", 0, NO_MATCH)).await;
    // The last entry removed (the run would ask again for a call it made).
    raw.execute("DELETE FROM run_journal WHERE run = 'cut' AND seq = 2", [])
        .unwrap();
    refused(
        store.clone(),
        "cut",
        tampered("cut", 2, "3 entries were written and 2 are there"),
    )
    .await;
    // The honest run still opens; under another key nothing does. A store
    // reads its key once: a key swapped under it changes nothing for it.
    assert_eq!(store.entries("honest").await.unwrap().len(), 3);
    std::fs::write(dir.join("runs.db.key"), format!("{}\n", "ab".repeat(32))).unwrap();
    assert_eq!(store.entries("honest").await.unwrap().len(), 3);
    let reopened: Arc<dyn RunJournal> = Arc::new(SqliteStore::open(&db).unwrap());
    refused(reopened, "honest", tampered("honest", 0, NO_MATCH)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_journal_from_before_seals_is_refused_as_unsealed() {
    let dir = std::env::temp_dir().join(format!("agentry-unsealed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    // A file as an earlier version left it: a run journal without seals.
    {
        let raw = rusqlite::Connection::open(&db).unwrap();
        raw.execute_batch(
            r#"CREATE TABLE run_journal (run TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (run, seq));
               INSERT INTO run_journal VALUES ('old', 0, '{"kind":"started","messages":[{"role":"user","content":"delete a.log"}],"at_ms":1}');"#,
        )
        .unwrap();
    }
    let store: Arc<dyn RunJournal> = Arc::new(SqliteStore::open(&db).unwrap());
    assert_eq!(store.runs().await.unwrap(), ["old"]);
    refused(store, "old", tampered("old", 0, NO_SEAL)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_journal_changed_outside_agentry_is_refused() {
    let url = match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            if std::env::var("AGENTRY_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("AGENTRY_POSTGRES_URL is not set and AGENTRY_REQUIRE_POSTGRES=1");
            }
            eprintln!(
                "\n*** SKIPPED: set AGENTRY_POSTGRES_URL (scripts/postgres start DIR prints one) to run the PostgreSQL seal test ***\n"
            );
            return;
        }
    };
    let pg = PgStore::connect(&url, 2).await.unwrap();
    let pool = pg.pool().clone();
    let store: Arc<dyn RunJournal> = Arc::new(pg);
    let tag = format!("{}-{}", std::process::id(), agentry::journal::now_ms());
    let (edited, extended) = (format!("edited-{tag}"), format!("extended-{tag}"));
    waiting_run(store.clone(), &edited).await;
    waiting_run(store.clone(), &extended).await;
    sqlx::query(
        "UPDATE agentry_run_journal SET entry = replace(entry, 'a.log', '/etc/passwd') WHERE run = $1 AND seq = 1",
    )
    .bind(&edited)
    .execute(&pool)
    .await
    .unwrap();
    refused(store.clone(), &edited, tampered(&edited, 1, NO_MATCH)).await;
    sqlx::query(
        r#"INSERT INTO agentry_run_journal (run, seq, entry) VALUES ($1, 3,
           '{"kind":"decided","call_id":"c1","decision":{"decision":"approve"}}')"#,
    )
    .bind(&extended)
    .execute(&pool)
    .await
    .unwrap();
    refused(store.clone(), &extended, tampered(&extended, 3, NO_SEAL)).await;
}

/// S2, S3 and S6 of the durable review: a key file is taken only as it is
/// made. A symbolic link (to a key an attacker wrote), a FIFO (which
/// wedged the store for good), a file others may read, and a file that is
/// not exactly 64 hex digits are each refused with an exact error that
/// does not name the file's path, and nothing is replayed.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_key_file_that_is_not_as_made_is_refused_with_what_is_wrong() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("agentry-seal-key-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store_error = |what: &str| JournalError::Store(format!("the journal key file {what}"));
    let key_text = format!("{}\n", "ab".repeat(32));
    let open = |name: &str| -> (std::path::PathBuf, Arc<dyn RunJournal>) {
        let db = dir.join(name);
        let store: Arc<dyn RunJournal> = Arc::new(SqliteStore::open(&db).unwrap());
        let mut key = db.into_os_string();
        key.push(".key");
        (key.into(), store)
    };
    // Judged with a bound: a store that hangs (a FIFO's open) fails the test.
    let judged = |store: Arc<dyn RunJournal>| async move {
        tokio::time::timeout(std::time::Duration::from_secs(5), store.entries("r"))
            .await
            .expect("fails as hung after 5 s")
    };

    // A symbolic link to a key the attacker wrote.
    let (key, store) = open("link.db");
    let forged = dir.join("attacker.key");
    std::fs::write(&forged, &key_text).unwrap();
    std::fs::set_permissions(&forged, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&forged, &key).unwrap();
    assert_eq!(
        judged(store).await,
        Err(store_error(
            "is a symbolic link: it must be a regular file, not a link"
        ))
    );

    // A FIFO: opened without blocking and refused.
    let (key, store) = open("fifo.db");
    let made = std::process::Command::new("mkfifo")
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(
        judged(store).await,
        Err(store_error("is not a regular file"))
    );

    // Readable by others than its owner.
    let (key, store) = open("open.db");
    std::fs::write(&key, &key_text).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        judged(store).await,
        Err(store_error(
            "has mode 0644: others than its owner may use it; chmod 600 it"
        ))
    );

    // Not exactly 64 hex digits and an optional newline (here a longer file,
    // of which at most 128 bytes are read).
    let bad = JournalError::Store(
        "the journal key file must hold exactly 64 hex digits (32 bytes) and an optional newline"
            .into(),
    );
    for (n, text) in [
        "abc\n".to_owned(),
        format!("{}\n\n", "ab".repeat(32)),
        format!(" {}", "ab".repeat(32)),
        "ab".repeat(10_000),
    ]
    .into_iter()
    .enumerate()
    {
        let (key, store) = open(&format!("bad{n}.db"));
        std::fs::write(&key, &text).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(judged(store).await, Err(bad.clone()), "{text:?}");
    }

    // The same key file, made as agentry makes it, is taken.
    let (key, store) = open("good.db");
    std::fs::write(&key, &key_text).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(judged(store).await, Err(JournalError::NotFound("r".into())));
    let _ = std::fs::remove_dir_all(&dir);
}

/// From the durable review: a lease end written into the database by hand
/// no longer holds a run for ever. A negative end (read before as a huge
/// unsigned one) has passed; an end beyond one `ttl` from now is cut to
/// that, so the run is free once it passes.
#[tokio::test(flavor = "multi_thread")]
async fn a_lease_end_written_by_hand_holds_a_run_for_one_ttl_at_most() {
    use agentry::journal::now_ms;
    use std::time::Duration;
    let dir = std::env::temp_dir().join(format!("agentry-seal-lease-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    let store = SqliteStore::open(&db).unwrap();
    let raw = rusqlite::Connection::open(&db).unwrap();
    let ttl = Duration::from_millis(500);

    store.acquire("r", "first", ttl).await.unwrap();
    raw.execute("UPDATE run_lease SET until_ms = -1 WHERE run = 'r'", [])
        .unwrap();
    let taken = store.acquire("r", "second", ttl).await.unwrap();
    assert_eq!((taken.token, taken.owner.as_str()), (2, "second"));

    raw.execute(
        "UPDATE run_lease SET until_ms = 9223372036854775807 WHERE run = 'r'",
        [],
    )
    .unwrap();
    let before = now_ms();
    let refused = store.acquire("r", "third", ttl).await.unwrap_err();
    let after = now_ms();
    match refused {
        JournalError::Leased {
            run,
            owner,
            until_ms,
        } => {
            assert_eq!((run.as_str(), owner.as_str()), ("r", "second"));
            assert!(
                (before + 500..=after + 500).contains(&until_ms),
                "cut to one ttl from now: {until_ms}"
            );
        }
        other => panic!("expected Leased, got {other:?}"),
    }
    let written: i64 = raw
        .query_row(
            "SELECT until_ms FROM run_lease WHERE run = 'r'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(
        written <= (after + 500) as i64,
        "the cut is kept: {written}"
    );
    // Once that passes, the run is free.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let taken = store.acquire("r", "third", ttl).await.unwrap();
    assert_eq!((taken.token, taken.owner.as_str()), (3, "third"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same on PostgreSQL: an end far in the future (written by hand) is
/// cut to one `ttl` from now when read, so the run is free once it passes
/// (`AGENTRY_POSTGRES_URL`; skipped loudly without it).
#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_lease_end_written_by_hand_holds_a_run_for_one_ttl_at_most() {
    use agentry::journal::now_ms;
    use std::time::Duration;
    let url = match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            if std::env::var("AGENTRY_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("AGENTRY_POSTGRES_URL is not set and AGENTRY_REQUIRE_POSTGRES=1");
            }
            eprintln!(
                "\n*** SKIPPED: set AGENTRY_POSTGRES_URL (scripts/postgres start DIR prints one) to run the PostgreSQL lease test ***\n"
            );
            return;
        }
    };
    let store = PgStore::connect(&url, 2).await.unwrap();
    let pool = store.pool().clone();
    let run = format!("lease-{}-{}", std::process::id(), now_ms());
    let ttl = Duration::from_millis(500);
    store.acquire(&run, "first", ttl).await.unwrap();
    sqlx::query("UPDATE agentry_run_lease SET expires_at = 'infinity' WHERE run = $1")
        .bind(&run)
        .execute(&pool)
        .await
        .unwrap();
    let before = now_ms();
    let refused = store.acquire(&run, "second", ttl).await.unwrap_err();
    let after = now_ms();
    match refused {
        JournalError::Leased {
            run: leased,
            owner,
            until_ms,
        } => {
            assert_eq!((leased.as_str(), owner.as_str()), (run.as_str(), "first"));
            assert!(
                (before + 500..=after + 500).contains(&until_ms),
                "cut to one ttl from now: {until_ms} not in {before}+500..={after}+500"
            );
        }
        other => panic!("expected Leased, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    let taken = store.acquire(&run, "second", ttl).await.unwrap();
    assert_eq!((taken.token, taken.owner.as_str()), (2, "second"));
}

/// S1 of the durable review, in part: a run rolled back to an earlier
/// sealed state (its rows and head as they were while it waited, as old
/// pages of the `-wal` file hold them) is refused by a store that saw it
/// further on, so an approved call is not approved and run again. A store
/// opened afterwards (another process, or a restart) cannot tell: that is
/// the documented limit, pinned here.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_rolled_back_to_an_earlier_sealed_state_is_refused_by_a_store_that_saw_more() {
    let dir = std::env::temp_dir().join(format!("agentry-seal-rollback-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    let store: Arc<dyn RunJournal> = Arc::new(SqliteStore::open(&db).unwrap());
    waiting_run(store.clone(), "r").await;
    let raw = rusqlite::Connection::open(&db).unwrap();
    let saved: (i64, Vec<u8>) = raw
        .query_row(
            "SELECT entries, head FROM run_lease WHERE run = 'r'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(saved.0, 3);
    decide(store.as_ref(), "r", "c1", Decision::Approve, false)
        .await
        .unwrap();
    assert_eq!(store.entries("r").await.unwrap().len(), 4);
    // Put back the state of the waiting run.
    raw.execute("DELETE FROM run_journal WHERE run = 'r' AND seq >= 3", [])
        .unwrap();
    raw.execute(
        "UPDATE run_lease SET entries = ?1, head = ?2 WHERE run = 'r'",
        rusqlite::params![saved.0, saved.1],
    )
    .unwrap();
    refused(
        store.clone(),
        "r",
        tampered(
            "r",
            3,
            "it was rolled back: 4 entries were seen and 3 are there",
        ),
    )
    .await;
    // Not covered: a store that never saw the run further on replays it.
    let fresh = SqliteStore::open(&db).unwrap();
    assert_eq!(fresh.entries("r").await.unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}
