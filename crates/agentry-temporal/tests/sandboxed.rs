//! A sandboxed tool stays sandboxed on a Temporal worker: the worker's
//! agent runs its call in a child process confined by the operating system
//! to the tool's grants, as an in-process run does. A read of
//! `/etc/passwd` is refused by the kernel; a read inside the grant works.
//!
//! A plain `main` (no test harness): the sandbox starts this binary again
//! as its child, and `main` must hand the child its tools first. Where the
//! kernel cannot confine, the test says so and passes, unless
//! `AGENTRY_REQUIRE_SANDBOX=1`.

mod common;

use std::path::Path;

use agentry_agent::{Agent, Outcome};
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{Capability, Tool, ToolCall, function};
use agentry_sandbox::Sandbox;
use serde_json::json;

#[derive(serde::Deserialize)]
struct Read {
    path: String,
}

/// Reads a file with `std` (no capability handle), granted `dir` only.
fn reader(dir: &Path) -> Tool {
    function("read")
        .arg::<String>("path", "the file")
        .capability(Capability::fs_read(dir))
        .sandboxed()
        .handler(|read: Read| std::fs::read_to_string(read.path).map_err(|e| e.to_string()))
        .build()
        .unwrap()
        .with_name("read")
}

fn main() {
    agentry_sandbox::serve_if_child(|| vec![reader(Path::new("/"))]);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run());
}

async fn run() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("agentry-temporal-sandbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "inside the grant").unwrap();
    let read = |id: &str, path: &Path| ToolCall::new(id, "read", json!({"path": path}));
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![read("r1", Path::new("/etc/passwd")), read("r2", &notes)],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "read what I may".into(),
            tokens: Usage::new(10, 5),
        });
    let agent = Agent::builder(model)
        .tool(reader(&dir))
        .grant(Capability::fs_read(&dir))
        .sandbox(Sandbox::new())
        .build()
        .unwrap();
    let runs = common::worker(server.address(), "sandboxed", agent).await;
    let outcome = runs.run("sandboxed-1", "read both").await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let results = &outcome.steps[0].calls;
    let refused = results[0].result.output_text();
    if refused.contains("it could not be confined") {
        assert!(
            std::env::var("AGENTRY_REQUIRE_SANDBOX").as_deref() != Ok("1"),
            "AGENTRY_REQUIRE_SANDBOX=1 but this kernel cannot confine tools: {refused}"
        );
        eprintln!("\n*** SKIPPED: the sandbox needs Landlock and seccomp: {refused} ***\n");
        return;
    }
    assert_eq!(outcome.outcome, Outcome::Final("read what I may".into()));
    assert!(results[0].result.is_error, "{refused}");
    assert!(
        refused.starts_with(
            "tool \"read\" failed: Permission denied (os error 13) (the tool runs in a sandbox"
        ),
        "{refused}"
    );
    assert_eq!(results[1].result.output_text(), "inside the grant");
    println!("test a_sandboxed_tool_stays_sandboxed_on_a_worker ... ok");
}
