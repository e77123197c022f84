//! An agentry agent served over A2A and called with the SDK's client and
//! with agentry's own remote-agent tool, in process over HTTP: the card,
//! an answer, streaming, a destructive call waiting as `input-required`
//! (approved, denied, answered with something else), cancel, tasks kept to
//! the caller who started them, and the per-caller limit. Loop logic with
//! scripted models; `python/a2a_client_check.py` and the local model prove
//! it against the official SDK.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a::{
    CancelTaskRequest, GetTaskRequest, Message, Part, PartContent, Role, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskState,
};
use a2a_client::jsonrpc::JsonRpcTransport;
use a2a_client::{A2AClient, Transport};
use agentry_a2a::{A2aServer, PRINCIPAL_HEADER, RemoteAgent, remote_agent};
use agentry_agent::Agent;
use agentry_core::model::ScriptedModel;
use agentry_core::tool::{ToolCall, ToolHints, Toolbox, function};
use futures_util::StreamExt;
use serde_json::{Value, json};
use support::{call, delete, say};

/// Serve `agent` over A2A on a free port; its base URL.
async fn serve(server: A2aServer) -> String {
    serve_claiming(server, None).await
}

/// [`serve`], its card claiming to be at `claimed` when given.
async fn serve_claiming(server: A2aServer, claimed: Option<&str>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let routes = server.routes(claimed.unwrap_or(&base), false).await;
    tokio::spawn(async move {
        axum::serve(listener, routes.card.merge(routes.rpc))
            .await
            .unwrap()
    });
    base
}

/// The SDK's JSON-RPC client, as caller `who` (the header a keyed front
/// end would set).
fn client(base: &str, who: &str) -> A2AClient<Box<dyn Transport>> {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(PRINCIPAL_HEADER, who.parse().unwrap());
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let transport: Box<dyn Transport> =
        Box::new(JsonRpcTransport::new(http, format!("{base}/a2a")));
    A2AClient::new(transport)
}

fn ask(text: &str, task: Option<&str>) -> SendMessageRequest {
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.task_id = task.map(str::to_owned);
    SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

async fn send(client: &A2AClient<Box<dyn Transport>>, request: SendMessageRequest) -> Task {
    match client.send_message(&request).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        other => panic!("a task expected: {other:?}"),
    }
}

fn said(task: &Task) -> String {
    let message = task.status.message.as_ref().expect("a status message");
    message
        .parts
        .iter()
        .filter_map(|p| p.as_text().map(str::to_owned))
        .collect::<Vec<_>>()
        .join(" ")
}

fn artifact_text(task: &Task) -> String {
    let artifacts = task.artifacts.as_ref().expect("artifacts");
    match &artifacts[0].parts[0].content {
        PartContent::Text(text) => text.clone(),
        other => panic!("text expected: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_card_names_the_agent_its_tools_and_endpoint() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = Agent::builder(ScriptedModel::new())
        .tool(delete(runs, Duration::ZERO))
        .build()
        .unwrap();
    let base = serve(A2aServer::new("janitor", agent).description("Cleans up.")).await;
    let card: Value = reqwest::get(format!("{base}/.well-known/agent-card.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "janitor");
    assert_eq!(card["description"], "Cleans up.");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["supportedInterfaces"][0]["url"], format!("{base}/a2a"));
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(skills, ["utils.delete_file"]);
    assert!(card.get("securitySchemes").is_none(), "no keys here");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_destructive_call_waits_for_the_callers_decision() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        // Approved.
        .reply(call("utils.delete_file", json!({"path": "a.txt"})))
        .reply(say("Deleted a.txt."))
        // A later task in the same context knows the approved turn.
        .respond(|request| {
            let seen = format!("{:?}", request.messages);
            assert!(
                seen.contains("Delete a.txt") && seen.contains("Deleted a.txt."),
                "{seen}"
            );
            Ok(say("You had me delete a.txt."))
        })
        // Denied.
        .reply(call("utils.delete_file", json!({"path": "b.txt"})))
        .respond(|request| {
            let last = format!("{:?}", request.messages.last());
            assert!(last.contains("not b"), "the model reads the reason: {last}");
            Ok(say("I left b.txt alone."))
        });
    let agent = Agent::builder(model)
        .tool(delete(runs.clone(), Duration::ZERO))
        .build()
        .unwrap();
    let base = serve(A2aServer::new("janitor", agent)).await;
    let me = client(&base, "alice");

    let waiting = send(&me, ask("Delete a.txt", None)).await;
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    assert!(
        said(&waiting).contains("utils.delete_file"),
        "{}",
        said(&waiting)
    );
    let data = waiting
        .status
        .message
        .as_ref()
        .unwrap()
        .parts
        .iter()
        .find_map(|p| match &p.content {
            PartContent::Data(value) => Some(value.clone()),
            _ => None,
        });
    assert_eq!(
        data.unwrap()["approval"]["arguments"],
        json!({"path": "a.txt"})
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran yet");

    // Neither yes nor no: asked again, still waiting.
    let again = send(&me, ask("what?", Some(&waiting.id))).await;
    assert_eq!(again.status.state, TaskState::InputRequired);

    let done = send(&me, ask("approve", Some(&waiting.id))).await;
    assert_eq!(done.status.state, TaskState::Completed, "{}", said(&done));
    assert_eq!(artifact_text(&done), "Deleted a.txt.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // An ended task takes no more messages.
    let error = me
        .send_message(&ask("again", Some(&done.id)))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("terminal"), "{error}");
    let mut later = ask("What did I ask before?", None);
    later.message.context_id = Some(done.context_id.clone());
    let later = send(&me, later).await;
    assert_eq!(artifact_text(&later), "You had me delete a.txt.");

    let waiting = send(&me, ask("Delete b.txt", None)).await;
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    let done = send(&me, ask("deny: not b", Some(&waiting.id))).await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(artifact_text(&done), "I left b.txt alone.");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the denied call did not run"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_shows_the_calls_and_ends_with_the_answer() {
    let runs = Arc::new(AtomicUsize::new(0));
    let weather = function("weather")
        .arg::<String>("city", "The city")
        .hints(ToolHints {
            read_only: true,
            ..ToolHints::default()
        })
        .handler(|_: Value| Ok::<_, String>("sunny"))
        .build()
        .unwrap();
    let model = ScriptedModel::new()
        .reply(call("utils.weather", json!({"city": "Lima"})))
        .reply(say("Sunny in Lima."));
    let agent = Agent::builder(model)
        .tool(weather)
        .tool(delete(runs, Duration::ZERO))
        .build()
        .unwrap();
    let base = serve(A2aServer::new("forecaster", agent)).await;
    let me = client(&base, "alice");
    let events: Vec<StreamResponse> = me
        .send_streaming_message(&ask("Weather in Lima?", None))
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    let states: Vec<TaskState> = events
        .iter()
        .filter_map(|e| match e {
            StreamResponse::StatusUpdate(u) => Some(u.status.state.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(states.first(), Some(&TaskState::Working));
    assert_eq!(states.last(), Some(&TaskState::Completed));
    let progress = format!("{events:?}");
    assert!(
        progress.contains("toolCall") && progress.contains("Lima"),
        "{progress}"
    );
    assert!(
        progress.contains("toolResult") && progress.contains("sunny"),
        "{progress}"
    );
    let answer = events.iter().find_map(|e| match e {
        StreamResponse::ArtifactUpdate(u) => {
            Some(u.artifact.parts[0].as_text().unwrap().to_owned())
        }
        _ => None,
    });
    assert_eq!(answer.as_deref(), Some("Sunny in Lima."));
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_stops_the_run_and_tasks_are_the_callers_own() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(call("utils.delete_file", json!({"path": "x"})))
        .reply(say("never"));
    let agent = Agent::builder(model)
        .tool(delete(runs.clone(), Duration::from_secs(5)))
        .build()
        .unwrap();
    let base = serve(A2aServer::new("slow", agent).max_running_per_caller(1)).await;
    let (alice, bob) = (client(&base, "alice"), client(&base, "bob"));
    let waiting = send(&alice, ask("Delete x", None)).await;
    assert_eq!(waiting.status.state, TaskState::InputRequired);

    // Bob cannot see, cancel or answer Alice's task.
    let get = GetTaskRequest {
        id: waiting.id.clone(),
        history_length: None,
        tenant: None,
    };
    let error = bob.get_task(&get).await.unwrap_err();
    assert!(error.to_string().contains("not found"), "{error}");
    let cancel = CancelTaskRequest {
        id: waiting.id.clone(),
        metadata: None,
        tenant: None,
    };
    assert!(bob.cancel_task(&cancel).await.is_err());
    assert!(
        bob.send_message(&ask("approve", Some(&waiting.id)))
            .await
            .is_err()
    );
    assert_eq!(
        alice.get_task(&get).await.unwrap().status.state,
        TaskState::InputRequired
    );

    // One run at a time for Alice: a second task is rejected.
    let second = send(&alice, ask("Delete y", None)).await;
    assert_eq!(
        second.status.state,
        TaskState::Rejected,
        "{}",
        said(&second)
    );

    // Approved, the slow call starts; canceled, it never finishes.
    let mut stream = alice
        .send_streaming_message(&ask("approve", Some(&waiting.id)))
        .await
        .unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(first, StreamResponse::StatusUpdate(_)),
        "{first:?}"
    );
    // Another stream follows the running task: Alice's, not Bob's.
    let follow = a2a::SubscribeToTaskRequest {
        id: waiting.id.clone(),
        tenant: None,
    };
    assert!(bob.subscribe_to_task(&follow).await.is_err());
    let mut followed = alice.subscribe_to_task(&follow).await.unwrap();
    let snapshot = followed.next().await.unwrap().unwrap();
    assert!(
        matches!(&snapshot, StreamResponse::Task(t) if t.status.state == TaskState::Working),
        "{snapshot:?}"
    );
    let canceled = alice.cancel_task(&cancel).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // Both streams end with the cancel, not with an error.
    for rest in [stream, followed] {
        let rest: Vec<_> = rest.collect().await;
        assert!(rest.iter().all(Result::is_ok), "{rest:?}");
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the canceled call stopped");
    // The slot is free again.
    let third = send(&alice, ask("Delete z", None)).await;
    assert_ne!(third.status.state, TaskState::Rejected);
}

#[tokio::test(flavor = "multi_thread")]
async fn agentrys_remote_agent_tool_calls_an_a2a_agent() {
    let answering = Agent::builder(ScriptedModel::new().reply(say("Paris is in France.")))
        .build()
        .unwrap();
    let base = serve(A2aServer::new("Geo Expert", answering).description("Knows places.")).await;
    let tool = remote_agent(RemoteAgent::new(&base)).await.unwrap();
    assert_eq!(tool.name, "geo_expert");
    let description = tool.description.clone().unwrap();
    assert!(description.contains("Knows places."), "{description}");
    assert!(
        tool.hints.destructive,
        "untrusted: each call needs approval"
    );
    let toolbox = Toolbox::for_agent(vec![tool]).unwrap();
    let result = toolbox
        .dispatch(ToolCall::new(
            "1",
            "geo_expert",
            json!({"message": "Where is Paris?"}),
        ))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.output, json!("Paris is in France."));
    // A card that is not there is a clear error.
    let error = remote_agent(RemoteAgent::new("http://127.0.0.1:9"))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("the agent card at http://127.0.0.1:9"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decision_that_never_comes_frees_the_callers_slot() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(call("utils.delete_file", json!({"path": "x"})))
        .reply(say("Hello again."));
    let agent = Agent::builder(model)
        .tool(delete(runs.clone(), Duration::ZERO))
        .build()
        .unwrap();
    let server = A2aServer::new("janitor", agent)
        .approval_wait(Duration::from_millis(300))
        .max_running_per_caller(1);
    let base = serve(server).await;
    let me = client(&base, "alice");
    let waiting = send(&me, ask("Delete x", None)).await;
    assert_eq!(waiting.status.state, TaskState::InputRequired);
    tokio::time::sleep(Duration::from_millis(800)).await;
    // The abandoned run no longer counts: a new task runs.
    let next = send(&me, ask("Hello", None)).await;
    assert_eq!(next.status.state, TaskState::Completed, "{}", said(&next));
    // The late answer is told the run is gone; nothing ran.
    let late = send(&me, ask("approve", Some(&waiting.id))).await;
    assert_eq!(late.status.state, TaskState::Failed);
    assert!(
        said(&late).contains("no decision came in time"),
        "{}",
        said(&late)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn push_notifications_are_refused_before_any_task_is_kept() {
    let agent = Agent::builder(ScriptedModel::new().reply(say("Still here.")))
        .build()
        .unwrap();
    let base = serve(A2aServer::new("small", agent).max_tasks(3)).await;
    let me = client(&base, "alice");
    for _ in 0..10 {
        let mut request = ask("hi", None);
        request.configuration = Some(a2a::SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: Some(a2a::TaskPushNotificationConfig {
                url: "http://127.0.0.1:1/x".into(),
                id: None,
                task_id: String::new(),
                token: None,
                authentication: None,
                tenant: None,
            }),
            history_length: None,
            return_immediately: None,
        });
        let error = me.send_message(&request).await.unwrap_err();
        assert!(error.to_string().to_lowercase().contains("push"), "{error}");
    }
    // None of them took a place: a task still runs.
    let done = send(&me, ask("hi", None)).await;
    assert_eq!(done.status.state, TaskState::Completed);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_card_past_its_size_is_refused() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                use tokio::io::AsyncReadExt;
                // The request first, then a body past any card's size.
                let mut request = vec![0; 4096];
                let _ = stream.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000000\r\n\r\n";
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&vec![b' '; 4_000_000]).await;
                tokio::time::sleep(Duration::from_secs(5)).await;
            });
        }
    });
    let error = remote_agent(RemoteAgent::new(&url)).await.unwrap_err();
    assert!(
        error.to_string().contains("larger than 1048576 bytes"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_card_sending_calls_elsewhere_is_refused() {
    let agent = Agent::builder(ScriptedModel::new()).build().unwrap();
    let base = serve_claiming(
        A2aServer::new("decoy", agent),
        Some("http://evil.example:80"),
    )
    .await;
    let error = remote_agent(RemoteAgent::new(&base)).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("sends calls to http://evil.example:80/a2a"),
        "{error}"
    );
}
