//! The OpenAI-compatible face: `POST /v1/chat/completions` (streaming and
//! not) and `GET /v1/models`, so any OpenAI client library can talk to the
//! agent. The agent's loop runs on the server, tools included; the client
//! sees the answer. The conversation is the request's (nothing is stored);
//! the client's system messages are added to the agent's own prompt.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use agentry_agent::turn::{TurnContext, TurnRun, TurnRunner};
use agentry_agent::{Agent, AgentEvent, Outcome, RunOutcome};
use agentry_core::model::Message;
use axum::Json;
use axum::extract::{Extension, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio_stream::wrappers::UnboundedReceiverStream;
use utoipa::ToSchema;

use crate::App;
use crate::auth::Principal;
use crate::checked::Checked;
use crate::error::{ApiError, ErrorBody};
use crate::metrics::{Face, Metrics, TurnGuard};

/// A chat completion request. Fields OpenAI defines and agentry does not use
/// (temperature, tools, …) are accepted and ignored.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatCompletionRequest {
    /// The model: the agent's name (see `GET /v1/models`).
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Stream the answer as `chat.completion.chunk` events.
    #[serde(default)]
    pub stream: bool,
}

/// One message of the conversation.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ChatMessage {
    /// `system`, `developer`, `user` or `assistant` (`tool` messages are ignored: tools run here).
    pub role: String,
    /// Text, or a list of parts of which the `text` ones are read.
    #[serde(default)]
    #[schema(schema_with = content_schema)]
    pub content: Value,
}

/// `content`: a string, a list of parts (objects), or null.
fn content_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
    Schema::OneOf(
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::Object)))
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .description(Some(
                "Text, or a list of parts of which the `text` ones are read.",
            ))
            .build(),
    )
}

/// The answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-…`.
    pub id: String,
    /// `chat.completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The agent's name.
    pub model: String,
    /// One choice.
    #[schema(value_type = Vec<Object>)]
    pub choices: Vec<Value>,
    /// Tokens used by the whole agent run.
    #[schema(value_type = Object)]
    pub usage: Value,
}

/// The models: the one agent this server runs.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelList {
    /// `list`.
    pub object: &'static str,
    /// The agent, as a model.
    #[schema(value_type = Vec<Object>)]
    pub data: Vec<Value>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The text of a message's content: a string, or its `text` parts joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The models this server offers.
#[utoipa::path(
    get,
    path = "/v1/models",
    responses(
        (status = 200, description = "The agent, as a model", body = ModelList),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 429, description = "Over this key's rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn list_models(State(app): State<App>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: vec![json!({
            "id": app.name,
            "object": "model",
            "created": app.started,
            "owned_by": "agentry",
        })],
    })
}

/// Answer a conversation with the agent.
#[utoipa::path(
    post,
    path = "/v1/chat/completions",
    request_body = ChatCompletionRequest,
    responses(
        (status = 200, description = "The completion; with `stream: true`, `chat.completion.chunk` server-sent events ending with `[DONE]`", content((ChatCompletion = "application/json"), (crate::ServerSentEvent = "text/event-stream"))),
        (status = 400, description = "No user message", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "Unknown model", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "JSON of the wrong shape", body = ErrorBody),
        (status = 429, description = "Too many requests running for this key, or over its rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn chat_completions(
    State(app): State<App>,
    Extension(principal): Extension<Principal>,
    body: Result<Checked<ChatCompletionRequest>, ApiError>,
) -> Result<Response, ApiError> {
    let Checked(request) = body?;
    if request.model != app.name {
        return Err(ApiError::not_found(format!(
            "the model {:?} does not exist; this server's model is {:?}",
            request.model, app.name
        )));
    }
    let (system, messages) = conversation(&request.messages);
    if !messages.iter().any(|m| matches!(m, Message::User { .. })) {
        return Err(ApiError::bad_request(
            "`messages` needs at least one user message",
        ));
    }
    let agent = agent_for(&app, &system)?;
    let permit = app.limits.acquire(&principal)?;
    let (sender, receiver) = mpsc::unbounded_channel::<AgentEvent>();
    let span = tracing::info_span!("chat_completion", key = %principal.id);
    let id = format!("chatcmpl-{}", crate::sessions::new_id());
    let run = Run {
        agent,
        remote: app.remote.clone().map(|runner| (runner, id.clone())),
        metrics: app.metrics.clone(),
        counted: app.metrics.turn(Face::ChatCompletions),
        permit,
    };
    tokio::spawn(tracing::Instrument::instrument(
        run.send_events(messages, sender),
        span,
    ));
    let chunks = Chunks {
        id,
        created: now(),
        model: app.name.clone(),
        last_step: None,
    };
    if request.stream {
        return Ok(stream_response(receiver, chunks));
    }
    completion(receiver, chunks).await
}

/// The client's conversation: the texts of its system (and developer)
/// messages, and its user and assistant messages; others are left out.
fn conversation(chat: &[ChatMessage]) -> (Vec<String>, Vec<Message>) {
    let mut system = Vec::new();
    let mut messages = Vec::new();
    for message in chat {
        let text = text_of(&message.content);
        match message.role.as_str() {
            "system" | "developer" => system.push(text),
            "user" => messages.push(Message::user(text)),
            "assistant" => messages.push(Message::assistant(text)),
            _ => {}
        }
    }
    (system, messages)
}

/// The agent that answers: the server's, with the client's system messages
/// added to its prompt when there are any.
fn agent_for(app: &App, system: &[String]) -> Result<Arc<Agent>, ApiError> {
    if system.is_empty() {
        return Ok(app.agent.clone());
    }
    let base = app.agent.system().unwrap_or_default();
    let prompt = format!("{base}\n\n{}", system.join("\n\n"))
        .trim()
        .to_owned();
    let built = app.agent.to_builder().system(prompt).build();
    Ok(Arc::new(built.map_err(|error| {
        ApiError::bad_request(error.to_string())
    })?))
}

/// An agent run for one request, with what it holds until it ends: its
/// count in the metrics and its place among the key's running requests.
struct Run {
    agent: Arc<Agent>,
    /// Where the loop runs instead of here, and the run's id there.
    remote: Option<(Arc<dyn TurnRunner>, String)>,
    metrics: Metrics,
    counted: TurnGuard,
    permit: OwnedSemaphorePermit,
}

impl Run {
    /// Run the agent on `messages`, sending its events to `sender`; the
    /// final one is counted in the metrics, with the tool calls it made. A
    /// client that goes away stops the run.
    async fn send_events(self, messages: Vec<Message>, sender: UnboundedSender<AgentEvent>) {
        let Self {
            agent,
            remote,
            metrics,
            mut counted,
            permit,
        } = self;
        let mut events = match &remote {
            Some((runner, id)) => runner.run(TurnRun {
                id: id.clone(),
                system: agent.system().unwrap_or_default().to_owned(),
                messages,
                context: TurnContext::default(),
            }),
            None => agent.stream_messages(messages).boxed(),
        };
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(event) => {
                        if let AgentEvent::Final { run } = &event {
                            // A completion cannot be decided on later: a run
                            // handed off that waits for a person is stopped.
                            if let (Some((runner, id)), Outcome::AwaitingDecision(_)) =
                                (&remote, &run.outcome)
                                && let Err(error) = runner.cancel(id.clone()).await
                            {
                                tracing::warn!(%error, run = %id, "a waiting completion's run was not stopped");
                            }
                            counted.finish(outcome_name(&run.outcome));
                            for record in run.steps.iter().flat_map(|step| &step.calls) {
                                metrics.tool_call(&record.call.name, record.result.is_error);
                            }
                        }
                        if sender.send(event).is_err() { break }
                    }
                    None => break,
                },
                // The client went away: stop the run.
                () = sender.closed() => break,
            }
        }
        drop(counted);
        drop(permit);
    }
}

/// The completion's `id`, `created` and `model`, and for a stream, the step
/// whose text came last.
struct Chunks {
    id: String,
    created: u64,
    model: String,
    last_step: Option<usize>,
}

impl Chunks {
    /// One `chat.completion.chunk`.
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        let Self {
            id, created, model, ..
        } = self;
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    }

    /// The data of the events `event` makes: text as it arrives (a blank
    /// line between the texts of different steps), and at the end the
    /// finish reason or the model's error, then `[DONE]`.
    fn data(&mut self, event: AgentEvent) -> Option<Vec<String>> {
        match event {
            AgentEvent::TextDelta { step, text } => {
                // A blank line between the texts of different steps.
                let text = match self.last_step.replace(step) {
                    Some(previous) if previous != step => format!("\n\n{text}"),
                    _ => text,
                };
                Some(vec![self.chunk(json!({"content": text}), None).to_string()])
            }
            AgentEvent::Final { run } => Some(match &run.outcome {
                Outcome::ModelError(error) => vec![
                    json!({"error": {"message": error.to_string(), "type": "server_error", "code": "model_error"}}).to_string(),
                    "[DONE]".to_owned(),
                ],
                outcome => vec![
                    self.chunk(json!({}), Some(finish_reason(outcome))).to_string(),
                    "[DONE]".to_owned(),
                ],
            }),
            _ => None,
        }
    }
}

/// The answer as `chat.completion.chunk` server-sent events, the first
/// opening the assistant's message, the last `[DONE]`.
fn stream_response(receiver: UnboundedReceiver<AgentEvent>, mut chunks: Chunks) -> Response {
    let first = chunks.chunk(json!({"role": "assistant", "content": ""}), None);
    let body = UnboundedReceiverStream::new(receiver).filter_map(move |event| {
        let data = chunks.data(event);
        async move { data }
    });
    let body = futures_util::stream::iter([vec![first.to_string()]])
        .chain(body)
        .flat_map(futures_util::stream::iter)
        .map(|data| Ok::<_, Infallible>(Event::default().data(data)));
    Sse::new(body)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The answer as one `chat.completion`, once the run has ended.
async fn completion(
    mut receiver: UnboundedReceiver<AgentEvent>,
    chunks: Chunks,
) -> Result<Response, ApiError> {
    let mut run: Option<Box<RunOutcome>> = None;
    while let Some(event) = receiver.recv().await {
        if let AgentEvent::Final { run: done } = event {
            run = Some(done);
        }
    }
    let run = run.ok_or_else(|| ApiError::internal("the agent's run ended without an answer"))?;
    if let Outcome::ModelError(error) = &run.outcome {
        return Err(ApiError::internal(format!("the model failed: {error}")));
    }
    Ok(Json(ChatCompletion {
        id: chunks.id,
        object: "chat.completion",
        created: chunks.created,
        model: chunks.model,
        choices: vec![json!({
            "index": 0,
            "message": {"role": "assistant", "content": run.text()},
            "finish_reason": finish_reason(&run.outcome),
        })],
        usage: json!({
            "prompt_tokens": run.usage.input_tokens,
            "completion_tokens": run.usage.output_tokens,
            "total_tokens": run.usage.total(),
        }),
    })
    .into_response())
}

/// How a run ended, for the metrics.
fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Final(_) => "ok",
        Outcome::ModelError(_) => "error",
        Outcome::OutOfSteps => "out_of_steps",
        Outcome::OverBudget => "over_budget",
        Outcome::AwaitingDecision(_) => "awaiting_decision",
        Outcome::JournalFailed(_) => "journal_failed",
        Outcome::GuardrailTripped(_) => "guardrail_tripped",
    }
}

/// `stop` for an answer, `content_filter` when a guardrail stopped the run,
/// `length` when the run hit its step or token limit.
fn finish_reason(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Final(_) => "stop",
        // OpenAI's word for an answer a filter stopped.
        Outcome::GuardrailTripped(_) => "content_filter",
        _ => "length",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_text_or_the_text_parts() {
        assert_eq!(text_of(&json!("hi")), "hi");
        assert_eq!(
            text_of(
                &json!([{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}])
            ),
            "a\nb"
        );
        assert_eq!(text_of(&Value::Null), "");
    }
}
