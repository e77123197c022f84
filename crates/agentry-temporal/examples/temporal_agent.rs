//! An agent run on Temporal, end to end in one process: a dev server
//! (`temporal server start-dev`, from scripts/setup's `.venv` or the PATH), a
//! worker, and a run whose destructive call waits for a person's approval,
//! given here as an update. The model is scripted so the example needs no
//! model download; `agentry worker --temporal` serves the local model.
//!
//! `cargo run -p agentry-temporal --example temporal_agent`

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentry_agent::{Agent, Outcome};
use agentry_core::journal::Decision;
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{ToolCall, ToolHints, function};
use agentry_temporal::{DevServer, RunInput, Status, TemporalRuns, connect, serve};
use serde_json::json;

#[derive(serde::Deserialize)]
struct Path {
    path: String,
}

fn agent() -> Agent {
    let delete = function("delete_file")
        .arg::<String>("path", "the file to delete")
        .hints(ToolHints {
            destructive: true,
            ..Default::default()
        })
        .handler(|a: Path| Ok::<_, String>(format!("deleted {}", a.path)))
        .build()
        .expect("a tool")
        .with_name("delete_file");
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new(
                "c1",
                "delete_file",
                json!({"path": "old.log"}),
            )],
            text: String::new(),
            tokens: Usage::new(20, 8),
        })
        .reply(Step::Final {
            text: "Deleted old.log.".into(),
            tokens: Usage::new(30, 5),
        });
    Agent::builder(model)
        .tool(delete)
        .build()
        .expect("an agent")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = DevServer::program(&root).ok_or("no `temporal` program: run scripts/setup")?;
    let server = DevServer::start(&program)?;
    println!("Temporal dev server on {}", server.address());

    // The worker: its own thread, as it would be its own process.
    let client = connect(server.address(), "default").await?;
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        runtime.block_on(serve(Arc::new(agent()), client, "example"))
    });

    let runs = TemporalRuns::connect(server.address())
        .await?
        .task_queue("example");
    runs.start("example-1", RunInput::new("Delete old.log"))
        .await?;
    let record = loop {
        let record = runs.record("example-1").await?;
        if record.status == Status::Waiting {
            break record;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let waiting = &record.waiting[0].call;
    println!("waiting for a person: {}({})", waiting.name, waiting.input);
    runs.decide("example-1", &waiting.id, Decision::Approve)
        .await?;
    let outcome = runs.outcome("example-1").await?;
    println!("step 1: {}", outcome.steps[0].calls[0].result.output);
    println!("answer: {}", outcome.text());
    assert_eq!(outcome.outcome, Outcome::Final("Deleted old.log.".into()));
    Ok(())
}
