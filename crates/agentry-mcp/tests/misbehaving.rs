//! The MCP client against a server that misbehaves on purpose
//! (`tests/fixtures/misbehaving_server.js`, run by the pinned Node from npm):
//! what reaches the server when a call is cancelled, a hung server, a result
//! that breaks its own output schema, and a call the approver refuses. The
//! fixture appends what it sees to a log file the tests read.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agentry_agent::{Agent, Approval};
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{Tool, ToolCall, Toolbox};
use agentry_mcp::{McpClient, McpServerConfig};
use serde_json::json;
use support::{call, peers};

/// The fixture with a fresh log, calls timing out after one second.
async fn misbehaving(test: &str) -> Option<(McpClient, PathBuf)> {
    let (node, _) = peers()?;
    let log = std::env::temp_dir().join(format!(
        "agentry-mcp-misbehaving-{test}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&log);
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/misbehaving_server.js"
    );
    let config = McpServerConfig::command("odd", node.as_str(), [fixture])
        .env("FIXTURE_LOG", log.display().to_string())
        .call_timeout(Duration::from_secs(1));
    let client = McpClient::connect(config)
        .await
        .expect("the fixture starts");
    Some((client, log))
}

/// The fixture's log lines.
fn seen(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The fixture's `start <pid>` lines: one per process started.
fn starts(log: &Path) -> Vec<String> {
    seen(log)
        .into_iter()
        .filter(|line| line.starts_with("start "))
        .collect()
}

/// Wait (up to 20 s) until the log holds a line `done` accepts.
async fn until(log: &Path, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    for _ in 0..200 {
        let lines = seen(log);
        if done(&lines) {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen(log)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_call_is_cancelled_on_the_wire_and_a_responsive_server_is_kept() {
    let Some((client, log)) = misbehaving("cancel").await else {
        return;
    };
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let waited = call(&toolbox, "odd.wait", json!({})).await;
    assert_eq!(
        (waited.is_error, waited.output),
        (
            true,
            json!(
                "tool \"odd.wait\" failed: the MCP server odd did not answer within 1s; the request was cancelled"
            )
        )
    );
    // The server hears the cancellation of the very request it was sent.
    let lines = until(&log, |lines| {
        lines.iter().any(|line| line.starts_with("cancelled "))
    })
    .await;
    let cancelled: Vec<&String> = lines
        .iter()
        .filter(|line| line.starts_with("cancelled "))
        .collect();
    assert_eq!(cancelled.len(), 1, "{lines:?}");
    // It still answers pings, so it is kept: the next call reaches the same process.
    let echoed = call(&toolbox, "odd.echo", json!({"text": "still here"})).await;
    assert_eq!(echoed.output, json!("still here"), "{echoed:?}");
    assert_eq!(
        starts(&log).len(),
        1,
        "no restart for a slow tool: {:?}",
        seen(&log)
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hung_server_is_stopped_and_restarted() {
    let Some((client, log)) = misbehaving("hung").await else {
        return;
    };
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let first_pid = seen(&log)[0]
        .strip_prefix("start ")
        .unwrap()
        .trim()
        .to_owned();
    let frozen = call(&toolbox, "odd.freeze", json!({})).await;
    assert!(frozen.is_error, "{frozen:?}");
    // The ping after the time-out goes unanswered: the process is stopped.
    let mut gone = false;
    for _ in 0..200 {
        let alive = std::process::Command::new("kill")
            .args(["-0", &first_pid])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        if !alive {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the hung server {first_pid} was stopped");
    // The next call starts a new process and goes through.
    let echoed = call(&toolbox, "odd.echo", json!({"text": "again"})).await;
    assert_eq!(echoed.output, json!("again"), "{echoed:?}");
    let starts = starts(&log);
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_ne!(starts[1], format!("start {first_pid}"));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_content_that_breaks_the_output_schema_is_an_error_result() {
    let Some((client, _log)) = misbehaving("schema").await else {
        return;
    };
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let result = call(&toolbox, "odd.bad_output", json!({})).await;
    assert!(result.is_error, "{result:?}");
    let message = result.output.as_str().unwrap();
    assert!(
        message.contains("odd.bad_output") && message.contains("output"),
        "{message}"
    );
    assert!(
        message.contains("\"many\""),
        "names the bad value: {message}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_untrusted_servers_call_refused_by_the_approver_never_reaches_it() {
    let Some((client, log)) = misbehaving("denied").await else {
        return;
    };
    let echo = || Step::Tool {
        calls: vec![ToolCall::new("c1", "odd.echo", json!({"text": "hi"}))],
        text: String::new(),
        tokens: Usage::new(1, 1),
    };
    let model = ScriptedModel::new().reply(echo()).reply(Step::Final {
        text: "done".into(),
        tokens: Usage::new(1, 1),
    });
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen_by_approver = asked.clone();
    let run = Agent::builder(model)
        .tool_source(client.clone())
        .approver(move |tool: &Tool, call: &ToolCall| {
            seen_by_approver.lock().unwrap().push((
                tool.name.clone(),
                tool.hints.destructive,
                call.name.clone(),
            ));
            Approval::Deny("the user said no".into())
        })
        .build()
        .unwrap()
        .run("say hi")
        .await;
    assert_eq!(
        *asked.lock().unwrap(),
        [("odd.echo".to_owned(), true, "odd.echo".to_owned())],
        "an untrusted server's tool is destructive, so the approver is asked"
    );
    let results: Vec<_> = run
        .steps
        .iter()
        .flat_map(|step| &step.calls)
        .map(|record| (record.result.is_error, record.result.output_text()))
        .collect();
    assert_eq!(
        results,
        [(
            true,
            "tool \"odd.echo\" was not approved: the user said no".to_owned()
        )]
    );
    assert!(
        !seen(&log).iter().any(|line| line.starts_with("call ")),
        "the server never saw a call: {:?}",
        seen(&log)
    );
    client.close().await;
}
