//! A remote A2A agent as a tool: its card read once (name, description,
//! skills, for the model), each call a task on it, streamed when the agent
//! streams (its progress reported as the call's progress), its answer the
//! tool's result. A task that asks for input returns the question and its
//! id, so the model can answer it with the next call.

use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, AgentCard, Message, Part, PartContent, Role, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task, TaskState,
};
use a2a_client::jsonrpc::JsonRpcTransportFactory;
use a2a_client::{A2AClient, A2AClientFactory, Transport};
use agentry_core::tool::{Tool, ToolContext, ToolError, ToolHandler, ToolHints};
use futures_util::StreamExt;
use serde_json::{Value, json};

/// How long one call of a remote agent may take unless told otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The most of a card's skills' text the tool's description carries.
const DESCRIPTION_BYTES: usize = 2_000;

/// The largest agent card read.
const CARD_BYTES: usize = 1 << 20;

/// How long reading the card may take.
const CARD_TIMEOUT: Duration = Duration::from_secs(15);

/// The most of an answer (its text and artifacts) kept.
const ANSWER_BYTES: usize = 1 << 20;

/// Where a remote agent is and how to reach it.
#[derive(Debug, Clone)]
pub struct RemoteAgent {
    /// Its base URL: the card is at `{url}/.well-known/agent-card.json`.
    pub url: String,
    /// The tool's name; else the card's name, in snake case.
    pub name: Option<String>,
    /// Sent as `Authorization: Bearer <token>` (also when reading the card).
    pub bearer: Option<String>,
    /// Other headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Believe the agent harmless: its calls run without approval. Off by
    /// default: each call is treated as destructive.
    pub trusted: bool,
    /// How long one call may take.
    pub timeout: Duration,
}

impl RemoteAgent {
    /// The agent at `url`, untrusted, with no credentials.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            name: None,
            bearer: None,
            headers: Vec::new(),
            trusted: false,
            timeout: DEFAULT_CALL_TIMEOUT,
        }
    }
}

/// Why a remote agent could not be reached.
fn failed(what: &str, error: impl std::fmt::Display) -> ToolError {
    ToolError::failed(format!("{what}: {error}"))
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_owned();
    if out.is_empty() {
        "remote_agent".to_owned()
    } else {
        out
    }
}

/// What the model reads about the agent: the card's description and skills.
fn describe(card: &AgentCard) -> String {
    let mut text = format!(
        "Ask the agent \"{}\" (over A2A): {}",
        card.name,
        card.description.trim()
    );
    if !card.skills.is_empty() {
        text.push_str(" It can: ");
        let skills: Vec<String> = card
            .skills
            .iter()
            .map(|s| format!("{} ({})", s.name, s.description.trim()))
            .collect();
        text.push_str(&skills.join("; "));
        text.push('.');
    }
    crate::clip(text, DESCRIPTION_BYTES)
}

fn http_client(agent: &RemoteAgent) -> Result<reqwest::Client, ToolError> {
    let mut headers = reqwest::header::HeaderMap::new();
    let mut add = |name: &str, value: &str| -> Result<(), ToolError> {
        let name = reqwest::header::HeaderName::try_from(name)
            .map_err(|e| failed(&format!("header name {name:?}"), e))?;
        let mut value = reqwest::header::HeaderValue::try_from(value)
            .map_err(|e| failed(&format!("header {name}"), e))?;
        value.set_sensitive(true);
        headers.insert(name, value);
        Ok(())
    };
    if let Some(token) = &agent.bearer {
        add("authorization", &format!("Bearer {token}"))?;
    }
    for (name, value) in &agent.headers {
        add(name, value)?;
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(Duration::from_secs(10))
        // A card or an answer is never a redirect away: credentials stay put.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| failed("the HTTP client", e))
}

/// The card at `{url}/.well-known/agent-card.json`, read within
/// [`CARD_TIMEOUT`] and [`CARD_BYTES`].
async fn read_card(http: &reqwest::Client, url: &str) -> Result<AgentCard, String> {
    let at = format!("{}/.well-known/agent-card.json", url.trim_end_matches('/'));
    let read = async {
        let mut response = http.get(&at).send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > CARD_BYTES {
                return Err(format!("larger than {CARD_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("not an agent card: {e}"))
    };
    tokio::time::timeout(CARD_TIMEOUT, read)
        .await
        .map_err(|_| format!("no answer within {} s", CARD_TIMEOUT.as_secs()))?
}

/// Refuse a card whose interfaces send the calls (and the credentials)
/// anywhere but the origin the agent was configured at.
fn same_origin(card: &AgentCard, url: &str) -> Result<(), ToolError> {
    let origin = |text: &str| {
        reqwest::Url::parse(text).ok().map(|u| {
            (
                u.scheme().to_owned(),
                u.host_str().map(str::to_owned),
                u.port_or_known_default(),
            )
        })
    };
    let configured = origin(url).ok_or_else(|| failed("the agent's URL", url))?;
    match card
        .supported_interfaces
        .iter()
        .find(|i| origin(&i.url) != Some(configured.clone()))
    {
        Some(elsewhere) => Err(ToolError::failed(format!(
            "the agent card at {url} sends calls to {}, not to {url}'s origin: refused",
            elsewhere.url
        ))),
        None => Ok(()),
    }
}

/// The remote agent at `agent.url` as a tool: the card is read now.
pub async fn remote_agent(agent: RemoteAgent) -> Result<Tool, ToolError> {
    let http = http_client(&agent)?;
    let card = read_card(&http, &agent.url)
        .await
        .map_err(|e| failed(&format!("the agent card at {}", agent.url), e))?;
    same_origin(&card, &agent.url)?;
    let client = A2AClientFactory::builder()
        .register(Arc::new(JsonRpcTransportFactory::new(Some(http))))
        .build()
        .create_from_card(&card)
        .await
        .map_err(|e| failed(&format!("the agent at {}", agent.url), e))?;
    let name = agent.name.clone().unwrap_or_else(|| snake(&card.name));
    // A card that does not say it streams does not (A2A's default).
    let streams = card.capabilities.streaming == Some(true);
    let client = Arc::new(client);
    let handler = ToolHandler::from_async(move |input: Value, ctx: ToolContext| {
        let client = client.clone();
        async move { ask(&client, streams, input, &ctx).await }
    });
    let hints = ToolHints {
        read_only: agent.trusted,
        destructive: !agent.trusted,
        timeout: Some(agent.timeout),
        // Another agent's answer: tool-result guardrails read it.
        open_world: true,
        ..ToolHints::default()
    };
    Ok(Tool::new(
        name,
        json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What to ask or tell the agent."},
                "task_id": {"type": "string", "description": "Only to answer a question the agent asked: the task id it gave."}
            },
            "required": ["message"]
        }),
        handler,
    )
    .with_description(describe(&card))
    .with_hints(hints))
}

/// One call: a message to the agent, its task followed to an answer.
async fn ask(
    client: &A2AClient<Box<dyn Transport>>,
    streams: bool,
    input: Value,
    ctx: &ToolContext,
) -> Result<Value, ToolError> {
    let text = input["message"].as_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Err(ToolError::InvalidArgument {
            pointer: "/message".to_owned(),
            message: "say something to the agent".to_owned(),
        });
    }
    let mut message = Message::new(Role::User, vec![Part::text(text)]);
    message.task_id = input["task_id"].as_str().map(str::to_owned);
    let request = SendMessageRequest {
        message,
        configuration: None,
        metadata: None,
        tenant: None,
    };
    let task = if streams {
        follow(client, &request, ctx).await?
    } else {
        match client.send_message(&request).await.map_err(remote)? {
            SendMessageResponse::Task(task) => Followed::from_task(task),
            SendMessageResponse::Message(message) => {
                return Ok(Value::String(words(&message.parts)));
            }
        }
    };
    task.answer()
}

fn remote(error: A2AError) -> ToolError {
    failed("the remote agent", error)
}

/// Text parts joined, data parts as JSON.
fn words(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::Text(text) => Some(text.clone()),
            PartContent::Data(value) => Some(value.to_string()),
            PartContent::Url(url) => Some(url.clone()),
            PartContent::Raw(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a task came to.
struct Followed {
    id: String,
    state: TaskState,
    /// The last status message.
    said: String,
    /// The artifacts' contents.
    artifacts: Vec<String>,
}

impl Followed {
    fn from_task(task: Task) -> Self {
        let said = task
            .status
            .message
            .as_ref()
            .map(|m| words(&m.parts))
            .unwrap_or_default();
        let artifacts = task
            .artifacts
            .unwrap_or_default()
            .iter()
            .map(|a| words(&a.parts))
            .collect();
        Self {
            id: task.id,
            state: task.status.state,
            said,
            artifacts,
        }
    }

    /// Refuse an answer past `max` bytes (its text and artifacts).
    fn within(&self, max: usize) -> Result<(), ToolError> {
        let kept = self.said.len() + self.artifacts.iter().map(String::len).sum::<usize>();
        match kept > max {
            true => Err(ToolError::failed(format!(
                "the remote agent's answer is longer than {max} bytes"
            ))),
            false => Ok(()),
        }
    }

    fn answer(self) -> Result<Value, ToolError> {
        self.within(ANSWER_BYTES)?;
        match self.state {
            TaskState::Completed => Ok(Value::String(match self.artifacts.is_empty() {
                true => self.said,
                false => self.artifacts.join("\n"),
            })),
            TaskState::InputRequired | TaskState::AuthRequired => Ok(json!({
                "asks": self.said,
                "task_id": self.id,
                "note": "The agent waits for an answer: call again with this task_id.",
            })),
            state => Err(ToolError::failed(format!(
                "the remote agent's task ended {state:?}: {}",
                self.said
            ))),
        }
    }
}

/// Follow a streamed task to its end, its progress reported on `ctx`.
async fn follow(
    client: &A2AClient<Box<dyn Transport>>,
    request: &SendMessageRequest,
    ctx: &ToolContext,
) -> Result<Followed, ToolError> {
    let mut events = client
        .send_streaming_message(request)
        .await
        .map_err(remote)?;
    let mut followed = Followed {
        id: String::new(),
        state: TaskState::Submitted,
        said: String::new(),
        artifacts: Vec::new(),
    };
    let mut updates = 0.0;
    while let Some(event) = events.next().await {
        match event.map_err(remote)? {
            StreamResponse::Task(task) => followed = Followed::from_task(task),
            StreamResponse::Message(message) => {
                followed.said = words(&message.parts);
                followed.state = TaskState::Completed;
            }
            StreamResponse::StatusUpdate(update) => {
                followed.id = update.task_id;
                followed.state = update.status.state;
                if let Some(message) = update.status.message {
                    followed.said = words(&message.parts);
                    updates += 1.0;
                    ctx.report_progress(updates, None, followed.said.clone());
                }
            }
            StreamResponse::ArtifactUpdate(update) => {
                let text = words(&update.artifact.parts);
                if update.append == Some(true) && !followed.artifacts.is_empty() {
                    if let Some(last) = followed.artifacts.last_mut() {
                        last.push_str(&text);
                    }
                } else {
                    followed.artifacts.push(text);
                }
            }
        }
        followed.within(ANSWER_BYTES)?;
        if followed.state.is_terminal()
            || matches!(
                followed.state,
                TaskState::InputRequired | TaskState::AuthRequired
            )
        {
            break;
        }
    }
    Ok(followed)
}
