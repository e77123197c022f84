//! AG-UI's official client (`@ag-ui/client` 1.0, `npm/web/drive-agui.mjs`)
//! against an agentry agent served behind agentry's HTTP server and its API
//! keys: the event sequence of a tool-calling run, and a destructive call as
//! an interrupt resumed approved and denied. Loop logic with a scripted
//! model; `agentry-cli`'s `serve` test runs the local model. Also what a
//! frontend that gets it wrong is told.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentry_agent::Agent;
use agentry_agui::AguiServer;
use agentry_core::embed::KeywordEmbedder;
use agentry_core::memory::{InMemoryStore, Memory};
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{ToolCall, ToolContext, ToolHints, function};
use agentry_server::{AgentServer, ApiKeys};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Node and `@ag-ui/client`, or a loud skip (a failure under `AGENTRY_REQUIRE_NPM=1`).
fn node_ready() -> bool {
    let ready = repo().join("npm/node_modules/@ag-ui/client").exists()
        && std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok();
    if !ready {
        if std::env::var("AGENTRY_REQUIRE_NPM").as_deref() == Ok("1") {
            panic!("@ag-ui/client is missing and AGENTRY_REQUIRE_NPM=1: run scripts/setup");
        }
        eprintln!(
            "\n*** SKIPPED: run scripts/setup (npm ci) to test AG-UI with @ag-ui/client ***\n"
        );
    }
    ready
}

fn call(name: &str, path: &str) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new(
            format!("call-{path}"),
            name,
            json!({"path": path}),
        )],
        text: String::new(),
        tokens: Usage::new(10, 3),
    }
}

fn say(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(12, 4),
    }
}

/// An agent with a destructive `delete_file` that counts its runs, served
/// with key `k1`; its base URL.
async fn serve(model: ScriptedModel, runs: Arc<AtomicUsize>) -> String {
    serve_with(model, runs, agentry_server::DEFAULT_MAX_RUNNING_PER_KEY).await
}

/// [`serve`], a key having at most `running` requests going at once.
async fn serve_with(model: ScriptedModel, runs: Arc<AtomicUsize>, running: usize) -> String {
    let delete = function("delete_file")
        .description("Delete a file.")
        .arg::<String>("path", "The file")
        .hints(ToolHints {
            destructive: true,
            ..ToolHints::default()
        })
        .handler(move |_: Value, _: ToolContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("deleted")
            }
        })
        .build()
        .unwrap();
    let agent = Agent::builder(model).tool(delete).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let memory = Memory::new(InMemoryStore::new(), KeywordEmbedder::new(["file"]));
    let server = AgentServer::new("janitor", agent.clone(), memory)
        .api_keys(ApiKeys::from_list("k1"))
        .max_running_per_key(running)
        .keyed_routes(AguiServer::new(agent).router());
    tokio::spawn(server.serve(listener, std::future::pending()));
    base
}

async fn drive(base: &str, args: &[&str]) -> Value {
    let output = tokio::process::Command::new("node")
        .arg(repo().join("npm/web/drive-agui.mjs"))
        .arg(format!("{base}/agui"))
        .args(args)
        .current_dir(repo().join("npm"))
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_client_sees_an_interrupt_resumed_approved_and_denied() {
    if !node_ready() {
        return;
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(call("utils.delete_file", "a.txt"))
        .reply(say("Deleted a.txt."))
        .reply(call("utils.delete_file", "b.txt"))
        .respond(|request| {
            let last = format!("{:?}", request.messages.last());
            assert!(
                last.contains("not now"),
                "the model reads the reason: {last}"
            );
            Ok(say("I left b.txt alone."))
        });
    let base = serve(model, runs.clone()).await;
    let seen = drive(&base, &["k1", "approval"]).await;

    let first = &seen["first"];
    assert_eq!(
        first["types"],
        json!([
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]),
        "{seen:#}"
    );
    assert_eq!(first["toolCalls"][0]["name"], "utils.delete_file");
    assert_eq!(first["toolCalls"][0]["args"], r#"{"path":"a.txt"}"#);
    let interrupt = &first["interrupts"][0];
    assert_eq!(interrupt["reason"], "tool_call");
    assert_eq!(interrupt["toolCallId"], "call-a.txt");
    assert_eq!(interrupt["responseSchema"]["required"], json!(["approved"]));

    // Resumed: the original call's result, no second announcement, the answer.
    let approved = &seen["approved"];
    assert_eq!(
        approved["types"],
        json!([
            "RUN_STARTED",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STATE_SNAPSHOT",
            "RUN_FINISHED"
        ]),
        "{seen:#}"
    );
    assert_eq!(approved["results"][0]["toolCallId"], "call-a.txt");
    assert_eq!(approved["results"][0]["content"], "deleted");
    assert_eq!(approved["text"], "Deleted a.txt.");
    assert_eq!(approved["result"]["answer"], "Deleted a.txt.");

    let denied = &seen["denied"];
    assert!(
        denied["results"][0]["content"]
            .as_str()
            .unwrap()
            .contains("not now"),
        "{seen:#}"
    );
    assert_eq!(denied["text"], "I left b.txt alone.");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "approved once, denied once");
}

/// A raw `POST /agui`: the SSE events' types, or the HTTP status.
async fn post(base: &str, key: &str, body: Value) -> Result<Vec<Value>, u16> {
    let response = reqwest::Client::new()
        .post(format!("{base}/agui"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap();
    if !response.status().is_success() {
        return Err(response.status().as_u16());
    }
    let text = response.text().await.unwrap();
    Ok(text
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frontend_that_gets_it_wrong_is_told_what() {
    let runs = Arc::new(AtomicUsize::new(0));
    let base = serve(
        ScriptedModel::new().reply(call("utils.delete_file", "a.txt")),
        runs.clone(),
    )
    .await;
    let input = |thread: &str, run: &str| {
        json!({"threadId": thread, "runId": run, "state": {}, "tools": [], "context": [],
               "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "Delete a.txt"}]})
    };
    assert_eq!(post(&base, "wrong", input("t", "r")).await, Err(401));
    assert_eq!(
        post(&base, "k1", json!({"threadId": "t"})).await,
        Err(422),
        "not a RunAgentInput"
    );
    // Nothing waits on this thread.
    let mut resume = input("t0", "r0");
    resume["resume"] =
        json!([{"interruptId": "approve-x", "status": "resolved", "payload": {"approved": true}}]);
    let events = post(&base, "k1", resume).await.unwrap();
    assert_eq!(events[0]["type"], "RUN_STARTED");
    assert_eq!(events[1]["type"], "RUN_ERROR");
    assert_eq!(events[1]["code"], "no_interrupt");

    // A run waits; a new run on its thread, or a resume of another
    // interrupt, is refused, and it still waits.
    let events = post(&base, "k1", input("t1", "r1")).await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(last["outcome"]["type"], "interrupt");
    let events = post(&base, "k1", input("t1", "r2")).await.unwrap();
    assert_eq!(events[1]["code"], "interrupt_open");
    let mut wrong = input("t1", "r3");
    wrong["resume"] = json!([{"interruptId": "approve-other", "status": "resolved", "payload": {"approved": true}}]);
    let events = post(&base, "k1", wrong).await.unwrap();
    assert_eq!(events[1]["code"], "bad_resume");
    let mut no_answer = input("t1", "r4");
    no_answer["resume"] =
        json!([{"interruptId": "approve-call-a.txt", "status": "resolved", "payload": {}}]);
    let events = post(&base, "k1", no_answer).await.unwrap();
    assert_eq!(events[1]["code"], "bad_resume");
    let mut twice = input("t1", "r4b");
    twice["resume"] = json!([
        {"interruptId": "approve-call-a.txt", "status": "resolved", "payload": {"approved": false}},
        {"interruptId": "approve-call-a.txt", "status": "resolved", "payload": {"approved": true}}
    ]);
    let events = post(&base, "k1", twice).await.unwrap();
    assert_eq!(events[1]["code"], "bad_resume", "one answer per interrupt");
    // The last message must be the user's.
    let mut not_user = input("t2", "r5");
    not_user["messages"] = json!([{"id": "a1", "role": "assistant", "content": "hi"}]);
    let events = post(&base, "k1", not_user).await.unwrap();
    assert_eq!(events[1]["code"], "bad_input");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_run_at_a_time_on_a_thread() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .respond(|_| {
            // A slow model: the run is still going when the second comes.
            std::thread::sleep(std::time::Duration::from_millis(800));
            Ok(say("first"))
        })
        .reply(say("second"));
    let base = serve(model, runs).await;
    let input = |run: &str| {
        json!({"threadId": "t", "runId": run, "state": {}, "tools": [], "context": [],
               "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "hi"}]})
    };
    // A run going on…
    let open = reqwest::Client::new()
        .post(format!("{base}/agui"))
        .bearer_auth("k1")
        .json(&input("r1"))
        .send()
        .await
        .unwrap();
    // …holds the thread.
    let events = post(&base, "k1", input("r2")).await.unwrap();
    assert_eq!(events[1]["code"], "run_in_progress", "{events:?}");
    // Ended, it lets the thread go.
    let first = open.text().await.unwrap();
    assert!(first.contains("RUN_FINISHED"), "{first}");
    let events = post(&base, "k1", input("r3")).await.unwrap();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "{events:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_busy_key_is_told_to_wait() {
    let model = ScriptedModel::new().respond(|_| {
        std::thread::sleep(std::time::Duration::from_millis(800));
        Ok(say("slow"))
    });
    let base = serve_with(model, Arc::new(AtomicUsize::new(0)), 1).await;
    let input = |thread: &str| {
        json!({"threadId": thread, "runId": "r", "state": {}, "tools": [], "context": [],
               "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "hi"}]})
    };
    let client = reqwest::Client::new();
    let first = client
        .post(format!("{base}/agui"))
        .bearer_auth("k1")
        .json(&input("a"))
        .send()
        .await
        .unwrap();
    // The key's one running slot is taken until the first stream ends.
    assert_eq!(post(&base, "k1", input("b")).await, Err(429));
    assert!(first.text().await.unwrap().contains("RUN_FINISHED"));
}
