//! `agentry memory`: what a chat remembered, listed, searched with the real
//! MiniLM embedder, exported and imported, and forgotten until the text is
//! gone from the file.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::{AGENTRY, Dir, models_present};

fn agentry(dir: &Dir, args: &[&str]) -> Output {
    let store = dir.0.join("memory.db");
    Command::new(AGENTRY)
        .args(args)
        .args(["--memory", store.to_str().unwrap()])
        .current_dir(&dir.0)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Type `input` into `agentry chat` (offline model) in session `home` of
/// the directory's SQLite store, and wait for it to leave.
fn chat_home(dir: &Dir, input: &[u8]) {
    let mut chat = Command::new(AGENTRY)
        .args([
            "chat",
            "--provider",
            "offline",
            "--session",
            "home",
            "--memory",
        ])
        .arg(dir.0.join("memory.db"))
        .env("AGENTRY_CHAT_HISTORY", dir.0.join("history"))
        .current_dir(&dir.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    chat.stdin.take().unwrap().write_all(input).unwrap();
    let done = chat.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

#[test]
fn a_chat_is_listed_searched_exported_imported_and_forgotten() {
    if !models_present(false) {
        return;
    }
    let dir = Dir::new("memory-cli");
    chat_home(
        &dir,
        b"I keep my bike in the garage\nMy favourite pasta is carbonara\nMy locker code is 7731-QX\n/exit\n",
    );

    let sessions = stdout(&agentry(&dir, &["memory", "list"]));
    let row = sessions
        .lines()
        .find(|l| l.starts_with("home "))
        .expect(&sessions);
    assert_eq!(row.split_whitespace().nth(1), Some("6"), "{sessions}");

    let records = stdout(&agentry(&dir, &["memory", "list", "home"]));
    let bike = records
        .lines()
        .find(|l| l.contains("I keep my bike in the garage"))
        .expect(&records);
    let bike_id = bike.split_whitespace().next().unwrap().to_owned();
    assert!(bike.contains(" user "), "{bike}");

    let found = stdout(&agentry(
        &dir,
        &["memory", "search", "home", "where is my bicycle?"],
    ));
    let first = found.lines().next().unwrap();
    assert!(first.contains("I keep my bike in the garage"), "{found}");

    // Hybrid recall finds the record by a word, as `[memory.ranking]
    // keywords = true` would, and says which ranking each score is.
    let found = stdout(&agentry(
        &dir,
        &["memory", "search", "home", "QX", "--keywords"],
    ));
    let first = found.lines().next().unwrap();
    assert!(first.contains("My locker code is 7731-QX"), "{found}");
    std::fs::write(
        dir.0.join("agentry.toml"),
        "[memory.ranking]\nkeywords = true\n",
    )
    .unwrap();
    let from_file = stdout(&agentry(&dir, &["memory", "search", "home", "QX"]));
    assert_eq!(from_file, found, "the file's [memory.ranking] is used");
    std::fs::remove_file(dir.0.join("agentry.toml")).unwrap();

    let export = dir.0.join("home.jsonl");
    let exported = agentry(
        &dir,
        &[
            "memory",
            "export",
            "home",
            "--out",
            export.to_str().unwrap(),
        ],
    );
    stdout(&exported);
    assert_eq!(std::fs::read_to_string(&export).unwrap().lines().count(), 6);
    let imported = stdout(&agentry(
        &dir,
        &[
            "memory",
            "import",
            export.to_str().unwrap(),
            "--into",
            "copy",
        ],
    ));
    assert_eq!(imported.trim(), "imported 6 records");
    let found = stdout(&agentry(&dir, &["memory", "search", "copy", "pasta"]));
    assert!(
        found.lines().next().unwrap().contains("carbonara"),
        "{found}"
    );

    // A bad line imports nothing, and says where it is.
    let bad = dir.0.join("bad.jsonl");
    let mut text = std::fs::read_to_string(&export).unwrap();
    text.push_str("{\"session\": \"x\"}\n");
    std::fs::write(&bad, text).unwrap();
    let refused = agentry(
        &dir,
        &["memory", "import", bad.to_str().unwrap(), "--into", "bad"],
    );
    assert!(!refused.status.success());
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(error.contains("line 7: not a memory record"), "{error}");
    assert!(error.contains("nothing was imported"), "{error}");
    let sessions = stdout(&agentry(&dir, &["memory", "list"]));
    assert!(!sessions.contains("bad "), "{sessions}");

    // Forget one record, then everything, and the text is gone from the file.
    let forgot = stdout(&agentry(
        &dir,
        &["memory", "forget", "home", "--id", &bike_id],
    ));
    assert_eq!(forgot.trim(), "forgot 1 record");
    let found = stdout(&agentry(
        &dir,
        &["memory", "search", "home", "where is my bicycle?"],
    ));
    assert!(!found.contains("garage"), "{found}");
    let forgot = stdout(&agentry(
        &dir,
        &["memory", "forget", "--before", "2100-01-01", "--vacuum"],
    ));
    assert_eq!(forgot.trim(), "forgot 11 records");
    assert_eq!(
        stdout(&agentry(&dir, &["memory", "list"])).trim(),
        "no sessions"
    );
    let mut raw = std::fs::read(dir.0.join("memory.db")).unwrap();
    raw.extend(std::fs::read(dir.0.join("memory.db-wal")).unwrap_or_default());
    for gone in ["garage", "carbonara"] {
        assert!(
            !raw.windows(gone.len()).any(|w| w == gone.as_bytes()),
            "{gone} is still in the file"
        );
    }

    let missing = Command::new(AGENTRY)
        .args(["memory", "search", "home", "bike", "--memory"])
        .arg(dir.0.join("nothing-here.db"))
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no memory store here"));
    assert!(
        !dir.0.join("nothing-here.db").exists(),
        "a search makes no file"
    );

    let unclear = agentry(&dir, &["memory", "forget"]);
    assert!(!unclear.status.success());
    assert!(String::from_utf8_lossy(&unclear.stderr).contains("say what to forget"));
}

/// `agentry memory` with `--memory postgres://…`.
fn agentry_pg(url: &str, args: &[&str]) -> Output {
    Command::new(AGENTRY)
        .args(args)
        .args(["--memory", url])
        .output()
        .unwrap()
}

#[test]
fn the_same_commands_work_on_postgresql() {
    if !models_present(false) {
        return;
    }
    let Some(url) = common::postgres_url() else {
        return;
    };
    let dir = Dir::new("memory-cli-pg");
    // Records with real MiniLM vectors, made by the SQLite path's chat.
    chat_home(&dir, b"The spare key is under the blue flowerpot\n/exit\n");
    let export = dir.0.join("home.jsonl");
    stdout(&agentry(
        &dir,
        &[
            "memory",
            "export",
            "home",
            "--out",
            export.to_str().unwrap(),
        ],
    ));

    let session = format!("cli-pg-{}", std::process::id());
    let imported = stdout(&agentry_pg(
        &url,
        &[
            "memory",
            "import",
            export.to_str().unwrap(),
            "--into",
            &session,
        ],
    ));
    assert_eq!(imported.trim(), "imported 2 records");
    let sessions = stdout(&agentry_pg(&url, &["memory", "list"]));
    let row = sessions
        .lines()
        .find(|l| l.starts_with(&session))
        .expect(&sessions);
    assert_eq!(row.split_whitespace().nth(1), Some("2"), "{sessions}");
    let found = stdout(&agentry_pg(
        &url,
        &["memory", "search", &session, "where is the key?"],
    ));
    assert!(
        found.lines().next().unwrap().contains("blue flowerpot"),
        "{found}"
    );
    let found = stdout(&agentry_pg(
        &url,
        &["memory", "search", &session, "flowerpots", "--keywords"],
    ));
    assert!(
        found.lines().next().unwrap().contains("blue flowerpot"),
        "PostgreSQL's full-text search stems words: {found}"
    );
    let records = stdout(&agentry_pg(&url, &["memory", "list", &session]));
    let id = records
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let forgot = stdout(&agentry_pg(
        &url,
        &["memory", "forget", &session, "--id", &id, "--vacuum"],
    ));
    assert_eq!(forgot.trim(), "forgot 1 record");
    let forgot = stdout(&agentry_pg(&url, &["memory", "forget", &session]));
    assert_eq!(forgot.trim(), "forgot 1 record");
}
