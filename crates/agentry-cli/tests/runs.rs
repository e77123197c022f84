//! S5 of the durable review: `agentry runs` prints what the database holds
//! (run ids, errors that name them) with control and format characters
//! escaped, so whoever can write the database cannot drive the terminal
//! (clear the screen, overwrite a line). The rows are written with the
//! `sqlite3` tool, as an attacker would (skipped loudly without it).

mod common;

use std::process::Command;

use common::{AGENTRY, Dir};

/// `agentry ARGS`: its exit code, stdout and stderr.
fn agentry(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(AGENTRY)
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn runs_commands_print_a_run_id_from_the_database_escaped() {
    if Command::new("sqlite3").arg("-version").output().is_err() {
        if std::env::var("AGENTRY_REQUIRE_SQLITE3").as_deref() == Ok("1") {
            panic!("sqlite3 is not installed and AGENTRY_REQUIRE_SQLITE3=1");
        }
        eprintln!("\n*** SKIPPED: install sqlite3 to write the attacker's rows ***\n");
        return;
    }
    let dir = Dir::new("runs-escaped");
    let db = dir.0.join("t.db");
    let db = db.to_str().unwrap();
    let sql = |statement: &str| {
        let status = Command::new("sqlite3")
            .args([db, statement])
            .status()
            .unwrap();
        assert!(status.success(), "{statement}");
    };
    sql("CREATE TABLE x (y)");
    // Opening the file makes agentry's tables.
    assert_eq!(
        agentry(&["runs", "list", "--memory", db]),
        (0, "no durable runs\n".into(), String::new())
    );
    sql("INSERT INTO run_journal (run, seq, entry) VALUES ('evil' || char(27) || '[2J', 0, '{}')");
    let refused = "run \"evil\\u{1b}[2J\" fails its integrity check at entry 0: it has no seal \
                   (it was written before journals were sealed, or its seal was removed); \
                   it is not replayed";
    assert_eq!(
        agentry(&["runs", "list", "--memory", db]),
        (
            0,
            format!("evil\\u{{1b}}[2J  refused: {refused}\n"),
            String::new()
        )
    );
    let id = "evil\u{1b}[2J";
    for command in [
        vec!["runs", "show", id, "--memory", db],
        vec!["runs", "approve", id, "c1", "--memory", db],
    ] {
        let (code, out, err) = agentry(&command);
        assert_eq!((code, out.as_str()), (1, ""), "{command:?}");
        assert_eq!(err, format!("error: {refused}\n"), "{command:?}");
    }
}
