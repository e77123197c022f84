//! What the `agentry` binary's tests share: where the repository is, fresh
//! directories, which resources are installed (a missing one skips loudly,
//! or fails under CI's `AGENTRY_REQUIRE_*`), and a running `agentry serve`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The binary under test.
pub const AGENTRY: &str = env!("CARGO_BIN_EXE_agentry");

/// The local model the tests of the plumbing (chat, serve, MCP) run: the
/// small one, faster on CI's two cores; `cli.rs` runs the default model.
pub const SMALL: &str = "qwen2.5-coder-0.5b";

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory, removed when dropped.
pub struct Dir(pub PathBuf);

impl Dir {
    /// `agentry-TAG-PID` under the temporary directory, empty.
    pub fn new(tag: &str) -> Self {
        let path = std::env::temp_dir().join(format!("agentry-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path.canonicalize().unwrap())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// False (loudly), or a panic when `variable` is `1`, for a missing `what`.
fn missing(variable: &str, what: &str, how: &str) -> bool {
    if std::env::var(variable).as_deref() == Ok("1") {
        panic!("{what} is missing and {variable}=1: {how}");
    }
    eprintln!("\n*** SKIPPED: {what} is missing: {how} ***\n");
    false
}

/// True when the MiniLM embedder (and, with `chat`, the local chat model) is installed.
pub fn models_present(chat: bool) -> bool {
    let embedder =
        agentry_local::fetch::installed_embedding(&agentry_local::fetch::MINILM).is_some();
    let qwen = !chat || agentry_local::fetch::installed(&agentry_local::fetch::QWEN).is_some();
    embedder && qwen
        || missing(
            "AGENTRY_REQUIRE_MODEL",
            "a local model",
            "run `agentry model pull` (and all-minilm-l6-v2)",
        )
}

/// The PostgreSQL server of the tests, when one is named.
pub fn postgres_url() -> Option<String> {
    match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            missing(
                "AGENTRY_REQUIRE_POSTGRES",
                "AGENTRY_POSTGRES_URL",
                "scripts/postgres start DIR prints one",
            );
            None
        }
    }
}

/// True when headless Chromium and playwright-core are installed.
pub fn browser_ready() -> bool {
    PathBuf::from("/usr/bin/chromium").exists()
        && repo().join("npm/node_modules/playwright-core").exists()
        || missing(
            "AGENTRY_REQUIRE_BROWSER",
            "Chromium or playwright-core",
            "run scripts/setup (chromium, npm ci)",
        )
}

/// True when tmux is installed.
pub fn tmux_present() -> bool {
    Command::new("tmux").arg("-V").output().is_ok()
        || missing("AGENTRY_REQUIRE_TMUX", "tmux", "run scripts/setup")
}

/// A running `agentry serve`, stopped (SIGKILL) when dropped.
pub struct Served {
    pub child: Child,
    pub url: String,
    /// The first line it wrote (its address, and whether keys are required).
    pub banner: String,
}

impl Served {
    /// Start `command` (an `agentry serve`) and wait for its banner.
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (banner, url) = loop {
            let line = lines
                .next()
                .expect("agentry serve exited before listening")
                .unwrap();
            if let Some(rest) = line.strip_prefix("agentry serve: http://") {
                let url = format!("http://{}", rest.split_whitespace().next().unwrap());
                break (line, url);
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self { child, url, banner }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `command`, which must succeed (else its stderr is the failure), and
/// read its stdout as one JSON value.
pub fn json_of(command: &mut Command) -> serde_json::Value {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}
