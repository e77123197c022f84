//! `kill -9` in the middle of SQLite writes, over and over: every record a
//! writer was told is stored is there afterwards, and the file opens and
//! passes SQLite's integrity check.
//!
//! The writer is this test binary run again as a child process (the
//! `writer_child` test, which does nothing unless `AGENTRY_KILL_CHILD` names
//! a database). Rounds: `AGENTRY_KILL_ROUNDS`, 1,000 by default (about 30 s).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentry::memory::{MemoryRecord, MemoryStore, RecentOpts};
use agentry_store::SqliteStore;

#[tokio::test(flavor = "multi_thread")]
async fn writer_child() {
    let Some(path) = std::env::var_os("AGENTRY_KILL_CHILD") else {
        return; // only a helper: see `acknowledged_records_survive_kill_9`
    };
    let round = std::env::var("AGENTRY_KILL_ROUND").unwrap_or_default();
    let store = SqliteStore::open(path).unwrap();
    let mut out = std::io::stdout();
    for i in 0.. {
        let text = format!("r{round}-{i}");
        let record = MemoryRecord::new("s", "user", &text, vec![1.0, (i % 7) as f32]);
        store.add(record).await.unwrap();
        writeln!(out, "ack {text}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn acknowledged_records_survive_kill_9() {
    let rounds: usize = std::env::var("AGENTRY_KILL_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let dir = std::env::temp_dir().join(format!("agentry-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("memory.db");
    let exe = std::env::current_exe().unwrap();
    let mut acknowledged = HashSet::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let started = Instant::now();
    for round in 0..rounds {
        // The writer runs 5-40 ms, then is killed wherever it is.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let life = Duration::from_millis(5 + seed % 36);
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "writer_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("AGENTRY_KILL_CHILD", &db)
            .env("AGENTRY_KILL_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| line.strip_prefix("ack ").map(str::to_owned))
                .collect::<Vec<_>>()
        });
        std::thread::sleep(life);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        acknowledged.extend(reader.join().unwrap());
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stored: HashSet<String> = runtime.block_on(async {
        let store = SqliteStore::open(&db).unwrap();
        store
            .recent("s", &RecentOpts::default())
            .await
            .unwrap()
            .into_iter()
            .map(|record| record.text)
            .collect()
    });
    let lost: Vec<&String> = acknowledged.difference(&stored).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged records lost: {lost:?}",
        lost.len()
    );
    assert!(!acknowledged.is_empty(), "the writers wrote something");
    eprintln!(
        "kill -9: {rounds} rounds, {} acknowledged records, all {} stored, {:?}",
        acknowledged.len(),
        stored.len(),
        started.elapsed()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
