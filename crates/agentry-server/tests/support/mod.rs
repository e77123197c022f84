//! A server on a free port with a model that streams its reply in pieces,
//! and the helpers the HTTP tests share.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use agentry_agent::Agent;
use agentry_core::embed::KeywordEmbedder;
use agentry_core::memory::{InMemoryStore, Memory, MemoryStore};
use agentry_core::model::{
    ChatModel, ChatRequest, EventStream, FinishReason, ModelError, StreamEvent, Usage,
};
use agentry_server::{AgentServer, ApiKeys};
use futures_util::stream;
use serde_json::Value;

/// Streams `pieces` one at a time, `gap` apart; then fails if `fail_after`
/// is set (after that many pieces) instead of finishing.
pub struct DripModel {
    pub pieces: Vec<String>,
    pub gap: Duration,
    pub fail_after: Option<usize>,
}

impl DripModel {
    pub fn new(text: &str, gap_ms: u64) -> Self {
        Self {
            pieces: text.split_inclusive(' ').map(str::to_owned).collect(),
            gap: Duration::from_millis(gap_ms),
            fail_after: None,
        }
    }
}

impl ChatModel for DripModel {
    fn model_id(&self) -> &str {
        "drip"
    }

    fn stream<'a>(&'a self, _request: &'a ChatRequest) -> EventStream<'a> {
        let count = self.fail_after.unwrap_or(self.pieces.len());
        let mut events: Vec<Result<StreamEvent, ModelError>> = self.pieces[..count]
            .iter()
            .map(|text| Ok(StreamEvent::TextDelta { text: text.clone() }))
            .collect();
        if self.fail_after.is_some() {
            events.push(Err(ModelError::StreamCut(
                "the connection to the model dropped".into(),
            )));
        } else {
            events.push(Ok(StreamEvent::Usage {
                usage: Usage::new(7, count as u64),
            }));
            events.push(Ok(StreamEvent::Finish {
                reason: FinishReason::Stop,
            }));
        }
        let gap = self.gap;
        Box::pin(stream::unfold(
            events.into_iter(),
            move |mut events| async move {
                let next = events.next()?;
                if gap.is_zero() {
                    tokio::task::yield_now().await;
                } else {
                    tokio::time::sleep(gap).await;
                }
                Some((next, events))
            },
        ))
    }
}

/// A running server and what the tests look at.
pub struct Running {
    pub url: String,
    pub store: Arc<InMemoryStore>,
    pub http: reqwest::Client,
}

/// Serve `model` as agent `helper` with keys `alice-key` and `bob-key`.
pub async fn serve(
    model: impl ChatModel + 'static,
    tune: impl FnOnce(AgentServer) -> AgentServer,
) -> Running {
    let agent = Agent::builder(model).system("You help.").build().unwrap();
    serve_agent(agent, tune).await
}

/// Serve `agent` as `helper` with keys `alice-key` and `bob-key`.
pub async fn serve_agent(agent: Agent, tune: impl FnOnce(AgentServer) -> AgentServer) -> Running {
    let store = Arc::new(InMemoryStore::new());
    let memory = Memory::new(
        store.clone() as Arc<dyn MemoryStore>,
        KeywordEmbedder::new(["paris", "rome"]),
    );
    let server = tune(
        AgentServer::new("helper", agent, memory).api_keys(ApiKeys::from_list("alice-key,bob-key")),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener, std::future::pending()));
    Running {
        url,
        store,
        http: reqwest::Client::new(),
    }
}

/// `utils.add(x, y)`: a tool for the agents that call one.
pub fn add_tool() -> agentry_core::tool::Tool {
    agentry_core::tool::function("add")
        .arg::<i64>("x", "x")
        .arg::<i64>("y", "y")
        .handler(|a: Value| Ok::<_, String>(a["x"].as_i64().unwrap() + a["y"].as_i64().unwrap()))
        .build()
        .unwrap()
}

impl Running {
    /// `GET path`, with `key` when given.
    pub async fn get(&self, path: &str, key: Option<&str>) -> reqwest::Response {
        let mut request = self.http.get(format!("{}{path}", self.url));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        request.send().await.unwrap()
    }

    /// `GET path` with `key`, its body as JSON.
    pub async fn get_json(&self, path: &str, key: &str) -> Value {
        let response = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(key)
            .send();
        response.await.unwrap().json().await.unwrap()
    }

    /// `POST path` of `body` as JSON with `key`, the answer as JSON.
    pub async fn post_json(&self, path: &str, key: &str, body: &Value) -> Value {
        let request = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(key)
            .json(body);
        request.send().await.unwrap().json().await.unwrap()
    }
}

impl Running {
    /// `POST path` of `body` with `key`, asking for server-sent events: the
    /// `(event, data)` pairs of the answer.
    pub async fn post_events(&self, path: &str, key: &str, body: &Value) -> Vec<(String, Value)> {
        let text = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(key)
            .header("Accept", "text/event-stream")
            .json(body)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        sse(&text)
    }
}

/// Assert that `instance` validates against schema `name` of the OpenAPI
/// `document`.
pub fn assert_conforms(document: &Value, name: &str, instance: &Value) {
    let mut root = document.clone();
    root["$ref"] = Value::String(format!("#/components/schemas/{name}"));
    let validator = jsonschema::validator_for(&root).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?} in {instance}");
}

/// `(event, data)` pairs of a server-sent event body.
pub fn sse(body: &str) -> Vec<(String, Value)> {
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut name = String::from("message");
        let mut data = String::new();
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("event:") {
                name = value.trim().to_owned();
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push_str(value.trim_start());
            }
        }
        if !data.is_empty() {
            let value = serde_json::from_str(&data).unwrap_or(Value::String(data));
            events.push((name, value));
        }
    }
    events
}

/// `delete(path)`: a destructive tool that counts its runs in `runs`.
pub fn delete_tool(runs: Arc<std::sync::atomic::AtomicUsize>) -> agentry_core::tool::Tool {
    agentry_core::tool::function("delete")
        .description("Delete a file.")
        .arg::<String>("path", "the file")
        .hints(agentry_core::tool::ToolHints {
            destructive: true,
            ..Default::default()
        })
        .handler(move |input: Value| {
            runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(format!("deleted {}", input["path"].as_str().unwrap_or("")))
        })
        .build()
        .unwrap()
        .with_name("delete")
}

/// A model that calls `delete` on `path` (saying `intro` beside the call)
/// until a tool result is in the conversation, then answers `done` followed
/// by what the tool said: what any process's model does with the same
/// conversation, so a run resumed elsewhere goes on alike.
pub fn deleting_model(path: &str, intro: &str, done: &str) -> agentry_core::model::ScriptedModel {
    use agentry_core::model::{Message, ScriptedModel, Step};
    let mut model = ScriptedModel::new();
    for _ in 0..2 {
        let (path, intro, done) = (path.to_owned(), intro.to_owned(), done.to_owned());
        model = model.respond(move |request| {
            let said = request.messages.iter().rev().find_map(|m| match m {
                Message::Tool { result } => Some(result.output_text().to_owned()),
                _ => None,
            });
            Ok(match said {
                None => Step::Tool {
                    calls: vec![agentry_core::tool::ToolCall::new(
                        "c1",
                        "delete",
                        serde_json::json!({ "path": path }),
                    )],
                    text: intro.clone(),
                    tokens: Usage::new(10, 5),
                },
                Some(said) => Step::Final {
                    text: format!("{done}{said}"),
                    tokens: Usage::new(12, 4),
                },
            })
        });
    }
    model
}
