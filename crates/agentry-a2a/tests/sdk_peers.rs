//! The official A2A Python SDK (`a2a-sdk`, in `.venv`) on both sides:
//! its client drives an agentry agent served over A2A behind agentry's HTTP
//! server and its API keys (stream, input-required approved in a blocking
//! call, the task read back, cancel, a wrong key), and agentry's
//! remote-agent tool calls an agent the SDK serves. Scripted models: the
//! protocol is what is tested here; `agentry-cli`'s `a2a` test runs the
//! local model. No A2A conformance or lint tool is published on the
//! registries CI reaches (the TCK and the inspector are not on PyPI or
//! npm), so the official SDKs are the peers.

mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentry_a2a::{A2aServer, RemoteAgent, remote_agent};
use agentry_agent::Agent;
use agentry_core::embed::KeywordEmbedder;
use agentry_core::memory::{InMemoryStore, Memory};
use agentry_core::model::ScriptedModel;
use agentry_core::tool::{ToolCall, Toolbox};
use agentry_server::{AgentServer, ApiKeys};
use serde_json::{Value, json};
use support::{call, delete, say};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `.venv`'s Python with the SDK, or a loud skip (a failure under
/// `AGENTRY_REQUIRE_PYTHON=1`).
fn python() -> Option<PathBuf> {
    let python = repo().join(".venv/bin/python");
    let has_sdk = Command::new(&python)
        .args(["-c", "import a2a.client, a2a.server, uvicorn"])
        .status()
        .is_ok_and(|s| s.success());
    if has_sdk {
        return Some(python);
    }
    if std::env::var("AGENTRY_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!("a2a-sdk is missing from .venv and AGENTRY_REQUIRE_PYTHON=1: run scripts/setup");
    }
    eprintln!("\n*** SKIPPED: run scripts/setup to install a2a-sdk into .venv ***\n");
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_client_drives_a_keyed_agentry_server() {
    let Some(python) = python() else {
        return;
    };
    let runs = Arc::new(AtomicUsize::new(0));
    let delete = delete(runs.clone(), Duration::ZERO);
    let model = ScriptedModel::new()
        .reply(call("utils.delete_file", json!({"path": "a.txt"})))
        .reply(say("Deleted a.txt."))
        .reply(call("utils.delete_file", json!({"path": "b.txt"})));
    let agent = Agent::builder(model).tool(delete).build().unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let a2a = A2aServer::new("janitor", agent.clone())
        .routes(&base, true)
        .await;
    let memory = Memory::new(InMemoryStore::new(), KeywordEmbedder::new(["file"]));
    let server = AgentServer::new("janitor", agent, memory)
        .api_keys(ApiKeys::from_list("k1"))
        .public_routes(a2a.card)
        .keyed_routes(a2a.rpc);
    tokio::spawn(server.serve(listener, std::future::pending()));

    let output = tokio::process::Command::new(&python)
        .arg(repo().join("python/a2a_client_check.py"))
        .args([&base, "k1", "approval"])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    let first = &seen["first"];
    assert_eq!(first["states"][0], "TASK_STATE_WORKING", "{seen:#}");
    assert_eq!(
        first["states"].as_array().unwrap().last().unwrap(),
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert!(
        first["asks"]
            .as_str()
            .unwrap()
            .contains("utils.delete_file"),
        "{seen:#}"
    );
    assert_eq!(
        seen["approved"]["states"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        "TASK_STATE_COMPLETED",
        "{seen:#}"
    );
    assert_eq!(seen["approved"]["answer"], "Deleted a.txt.");
    assert_eq!(seen["read_back"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(seen["read_back"]["artifacts"], json!(["Deleted a.txt."]));
    assert_eq!(seen["canceled"], "TASK_STATE_CANCELED");
    assert_ne!(seen["wrong_key"], "answered", "{seen:#}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "approved once, canceled before the second"
    );
}

/// A running `python a2a_echo_server.py`, killed when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn agentrys_tool_calls_an_agent_the_python_sdk_serves() {
    let Some(python) = python() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _served = Served(
        Command::new(python)
            .arg(repo().join("python/a2a_echo_server.py"))
            .args([&port.to_string(), "s3cret"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while reqwest::get(format!("{url}/.well-known/agent-card.json"))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the SDK's server did not start"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let mut remote = RemoteAgent::new(&url);
    remote.bearer = Some("s3cret".into());
    let tool = remote_agent(remote).await.unwrap();
    assert_eq!(tool.name, "echo_agent");
    let description = tool.description.clone().unwrap();
    assert!(
        description.contains("Repeats a text in capitals."),
        "{description}"
    );
    let toolbox = Toolbox::for_agent(vec![tool]).unwrap();
    let result = toolbox
        .dispatch(ToolCall::new(
            "1",
            "echo_agent",
            json!({"message": "hi there"}),
        ))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.output, json!("ECHO: HI THERE"));

    // A wrong token: the call fails and says so.
    let mut wrong = RemoteAgent::new(&url);
    wrong.bearer = Some("guess".into());
    let toolbox = Toolbox::for_agent(vec![remote_agent(wrong).await.unwrap()]).unwrap();
    let result = toolbox
        .dispatch(ToolCall::new("2", "echo_agent", json!({"message": "hi"})))
        .await;
    assert!(result.is_error);
    assert!(
        result.output_text().contains("the remote agent"),
        "{}",
        result.output_text()
    );
}
