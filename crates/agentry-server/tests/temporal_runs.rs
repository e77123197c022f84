//! Turns handed to Temporal workers (`AgentServer::remote_runs` with
//! `agentry_temporal::TemporalTurns`), on a real dev server: a turn whose
//! worker reaches a destructive call stops with `waiting`; `GET
//! /v1/runs/{id}` reads the run from Temporal; `POST /v1/runs/{id}/approvals`
//! refuses what it must and, once approved, the worker carries the run on,
//! the tool runs once, and the answer lands in the session's memory.
//! Scripted model: loop logic.

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentry_agent::Agent;
use agentry_core::model::OfflineModel;
use agentry_temporal::{DevServer, TemporalRuns, TemporalTurns, connect, serve};
use serde_json::{Value, json};

/// A dev server, or a loud skip (a failure under `AGENTRY_REQUIRE_TEMPORAL`).
fn dev_server() -> Option<DevServer> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(program) = DevServer::program(&root) else {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_TEMPORAL").is_none(),
            "AGENTRY_REQUIRE_TEMPORAL is set but there is no `temporal` program (run scripts/setup)"
        );
        eprintln!("\n*** SKIPPED: no `temporal` program: run scripts/setup ***\n");
        return None;
    };
    Some(DevServer::start(&program).expect("a Temporal dev server"))
}

async fn post(server: &support::Running, path: &str, key: &str, body: Value) -> (u16, Value) {
    let response = server
        .http
        .post(format!("{}{path}", server.url))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.json::<Value>().await.unwrap(),
    )
}

/// A worker on `queue` whose agent deletes `a.log` (destructive: it waits
/// for approval; `effects` counts its runs), and an HTTP server, with no
/// model of its own ever called, handing its agent loops to that queue.
async fn served(
    temporal: &DevServer,
    queue: &str,
    effects: Arc<AtomicUsize>,
) -> (TemporalRuns, support::Running) {
    let agent = Agent::builder(support::deleting_model("a.log", "", "Done: "))
        .tool(support::delete_tool(effects))
        .build()
        .unwrap();
    let client = connect(temporal.address(), "default").await.unwrap();
    let queue_name = queue.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let _ = serve(agent, client, &queue_name).await;
        });
    });
    let runs = TemporalRuns::connect(temporal.address())
        .await
        .unwrap()
        .task_queue(queue);
    let turns = Arc::new(TemporalTurns::new(runs.clone()));
    let server =
        support::serve_agent(Agent::new(OfflineModel), |server| server.remote_runs(turns)).await;
    (runs, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_on_temporal_waits_and_an_approval_over_http_carries_it_on() {
    let Some(temporal) = dev_server() else { return };
    let effects = Arc::new(AtomicUsize::new(0));
    let (runs, server) = served(&temporal, "http-runs", effects.clone()).await;

    let (status, answer) = post(
        &server,
        "/v1/sessions/files/turns",
        "alice-key",
        json!({"text": "delete a.log", "payload": {"message_id": "m1"}}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(
        answer["waiting"]["calls"],
        json!([{"call_id": "c1", "tool": "delete", "input": {"path": "a.log"}, "reason": "approval"}]),
        "{answer}"
    );
    let run = answer["waiting"]["run"].as_str().unwrap().to_owned();
    assert_eq!(run, "files~m1");
    assert_eq!(effects.load(Ordering::SeqCst), 0);

    // The run is read from Temporal; another key sees nothing.
    let shown = server
        .get_json(&format!("/v1/runs/{run}"), "alice-key")
        .await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    assert_eq!(shown["waiting"][0]["call_id"], "c1");
    let other = server
        .get(&format!("/v1/runs/{run}"), Some("bob-key"))
        .await;
    assert_eq!(other.status(), 404);

    // Refused: a denial without a reason, a call that does not wait.
    let path = format!("/v1/runs/{run}/approvals");
    let (status, body) = post(
        &server,
        &path,
        "alice-key",
        json!({"call_id": "c1", "decision": "deny"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = post(
        &server,
        &path,
        "alice-key",
        json!({"call_id": "c9", "decision": "approve"}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    // It names the run as the client does, never with the key's prefix.
    assert!(
        message.contains("not waiting")
            && message.contains("\"files~m1\"")
            && !message.contains('/'),
        "{body}"
    );

    // Approved: the worker runs the tool once and answers.
    let (status, body) = post(
        &server,
        &path,
        "alice-key",
        json!({"call_id": "c1", "decision": "approve"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ended", "{body}");
    assert_eq!(body["answer"], "Done: deleted a.log", "{body}");
    assert_eq!(effects.load(Ordering::SeqCst), 1);
    // A second approval of the same call is refused; nothing runs again.
    let (status, _) = post(
        &server,
        &path,
        "alice-key",
        json!({"call_id": "c1", "decision": "approve"}),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(effects.load(Ordering::SeqCst), 1);

    // The answer is in the session's memory, once.
    let stored = server
        .get_json("/v1/sessions/files/messages", "alice-key")
        .await;
    let answers = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["text"] == "Done: deleted a.log")
        .count();
    assert_eq!(answers, 1, "{stored}");
    // A message id that could not name a run is refused before any run.
    let (status, body) = post(
        &server,
        "/v1/sessions/files/turns",
        "alice-key",
        json!({"text": "delete b.log", "payload": {"message_id": "a~b"}}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    // And the run is Temporal's: its workflow is the turn's run.
    let ids: Vec<String> = runs
        .list(10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert!(ids.iter().any(|id| id.ends_with("files~m1")), "{ids:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_completion_that_reaches_a_destructive_call_stops_its_run() {
    let Some(temporal) = dev_server() else { return };
    let effects = Arc::new(AtomicUsize::new(0));
    let (runs, server) = served(&temporal, "completions", effects.clone()).await;
    let (status, body) = post(
        &server,
        "/v1/chat/completions",
        "alice-key",
        json!({"model": "helper", "messages": [{"role": "user", "content": "delete a.log"}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // Nobody can decide on a completion's call later: its run is stopped,
    // not left waiting on the server for ever, and the tool never ran.
    let mut statuses = Vec::new();
    for _ in 0..100 {
        statuses = runs
            .list(10)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.status)
            .collect();
        if !statuses.is_empty() && statuses.iter().all(|s| s != "Running") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_ne!(statuses[0], "Running", "{statuses:?}");
    assert_eq!(effects.load(Ordering::SeqCst), 0);
}
