//! Workspace trust: an `agentry.toml` found in the current directory that
//! would start a process (here an MCP server whose command also creates a
//! file) is refused, with nothing started, until `agentry trust`; an edit
//! takes the trust back; `--config FILE` is trust enough; every command that
//! finds the file goes through the check. The trust store is a file of this
//! test's own (`AGENTRY_TRUST_FILE`), and private.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{AGENTRY, Dir};

/// `agentry ARGS` in `dir`, with the trust store at `store`.
fn agentry(dir: &Path, store: &Path, args: &[&str]) -> Output {
    Command::new(AGENTRY)
        .current_dir(dir)
        .args(args)
        .env("AGENTRY_TRUST_FILE", store)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A directory with an `agentry.toml` whose MCP server's command creates
/// `started` before it serves; the directory, the file, the marker and the
/// command line.
fn workspace(tag: &str) -> (Dir, PathBuf, PathBuf, String) {
    let dir = Dir::new(tag);
    let marker = dir.0.join("started");
    let command = format!(
        "sh -c 'touch {}; exec {AGENTRY} mcp serve'",
        marker.display()
    );
    let file = dir.0.join("agentry.toml");
    std::fs::write(
        &file,
        format!("[model]\nprovider = \"offline\"\n\n[mcp.servers.files]\ncommand = {command:?}\n"),
    )
    .unwrap();
    (dir, file, marker, command)
}

fn refused(file: &Path, command: &str) -> String {
    format!(
        "error: {} was found in the current directory and is not trusted; it would:\n  - start \
         the MCP server `files`: `{command}`\nNothing was started. If you trust it, run \
         `agentry trust` (or name it: `--config agentry.toml`).\n",
        file.display()
    )
}

#[test]
fn a_found_config_that_starts_a_process_runs_only_once_trusted_as_it_is() {
    let (dir, file, marker, command) = workspace("trust-run");
    let dir = &dir.0;
    let store = dir.join("store").join("trusted.json");

    let output = agentry(dir, &store, &["run", "hello"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stderr), refused(&file, &command));
    assert!(!marker.exists(), "nothing was started");

    let output = agentry(dir, &store, &["trust"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!(
            "{} would:\n  - start the MCP server `files`: `{command}`\ntrusted as it is now; \
             after an edit, run `agentry trust` again ({})\n",
            file.display(),
            store.display()
        )
    );
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the trust store is private");

    let output = agentry(dir, &store, &["run", "hello"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("answer: [no llm provider]\n"));
    assert!(marker.exists(), "the trusted file's server was started");

    // An edit takes the trust back.
    std::fs::remove_file(&marker).unwrap();
    let mut edited = std::fs::read_to_string(&file).unwrap();
    edited.push_str("# edited\n");
    std::fs::write(&file, edited).unwrap();
    let output = agentry(dir, &store, &["run", "hello"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: {} changed since you trusted it; it would:\n  - start the MCP server \
             `files`: `{command}`\nNothing was started. If you trust it as it is now, run \
             `agentry trust` again (or name it: `--config agentry.toml`).\n",
            file.display()
        )
    );
    assert!(!marker.exists(), "nothing was started");
    let output = agentry(dir, &store, &["trust", "--list"]);
    assert_eq!(
        text(&output.stdout),
        format!("{} (changed since: not trusted)\n", file.display())
    );

    // Named on the command line, the file is the user's choice.
    let output = agentry(dir, &store, &["run", "--config", "agentry.toml", "hello"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(marker.exists(), "--config FILE is trust enough");

    let output = agentry(dir, &store, &["trust", "--revoke"]);
    assert_eq!(
        text(&output.stdout),
        format!("{} is no longer trusted\n", file.display())
    );
    let output = agentry(dir, &store, &["trust", "--list"]);
    assert_eq!(text(&output.stdout), "");
}

#[test]
fn every_command_that_finds_the_file_goes_through_the_check() {
    let (dir, file, marker, command) = workspace("trust-commands");
    let dir = &dir.0;
    let store = dir.join("trusted.json");
    for args in [
        &["chat"][..],
        &["serve", "--listen", "127.0.0.1:0"],
        &["runs", "list"],
        &["memory", "list"],
        &["run", "--durable", "hello"],
    ] {
        let output = agentry(dir, &store, args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&output.stderr), refused(&file, &command), "{args:?}");
        assert!(!marker.exists(), "{args:?} started nothing");
    }
    assert!(
        !dir.join("agentry.db").exists(),
        "no memory store was made either"
    );
}

#[test]
fn a_found_config_that_starts_nothing_and_grants_nothing_needs_no_trust() {
    let dir = Dir::new("trust-plain");
    let dir = &dir.0;
    let store = dir.join("trusted.json");
    std::fs::write(
        dir.join("agentry.toml"),
        "[model]\nprovider = \"offline\"\n[agent]\ndir = \".\"\nmax_steps = 2\n",
    )
    .unwrap();
    let output = agentry(dir, &store, &["run", "hello"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let output = agentry(dir, &store, &["trust"]);
    assert_eq!(
        text(&output.stdout),
        format!(
            "{} starts nothing and grants nothing: it runs without trust\n",
            dir.join("agentry.toml").display()
        )
    );
    assert!(!store.exists(), "nothing was recorded");

    // A grant widens what tools may do: it needs trust.
    std::fs::write(
        dir.join("agentry.toml"),
        "[model]\nprovider = \"offline\"\n[grants]\nfs_write = [\"/\"]\n",
    )
    .unwrap();
    let output = agentry(dir, &store, &["run", "hello"]);
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: {} was found in the current directory and is not trusted; it would:\n  - \
             let tools write /\nNothing was started. If you trust it, run `agentry trust` (or \
             name it: `--config agentry.toml`).\n",
            dir.join("agentry.toml").display()
        )
    );
}
