//! Chat sessions over HTTP: each `POST /v1/sessions/{id}/turns` runs one
//! chat turn (memory recalled into the prompt, both sides stored) and
//! streams its events as server-sent events, or answers once as JSON.
//! Sessions belong to the API key that made them: another key gets 404.

use std::convert::Infallible;

use agentry_agent::turn::{
    Attachment, Reply, TurnConfig, TurnError, TurnEvent, TurnEvents, TurnInput,
};
use agentry_core::memory::RecentOpts;
use agentry_core::tool::{Identity, Session};
use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use crate::App;
use crate::auth::Principal;
use crate::checked::Checked;
use crate::driven::Driven;
use crate::error::{ApiError, ErrorBody};
use crate::metrics::{Face, Metrics, TurnGuard};
use crate::runs::WaitingCallBody;

pub use bodies::{
    AttachmentBody, MessagesQuery, MessagesResponse, RecallBody, RunWaiting, StoredMessage,
    ToolCallRecord, TurnRequest, TurnResponse,
};

mod bodies;

/// The memory session of `id` for `principal`: the client's id, checked,
/// under the key's own prefix.
pub(crate) fn owned_session(principal: &Principal, id: &str) -> Result<String, ApiError> {
    let valid = (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if !valid {
        return Err(ApiError::bad_request(format!(
            "invalid session id {id:?}: use 1 to 128 of A-Z a-z 0-9 - _ . :"
        )));
    }
    Ok(format!("{}/{id}", principal.id))
}

/// A fresh message id.
pub(crate) fn new_id() -> String {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    bytes.iter().fold(String::with_capacity(24), |mut id, b| {
        use std::fmt::Write;
        let _ = write!(id, "{b:02x}");
        id
    })
}

/// What the turn task reports.
enum Report {
    /// A streamed event, ready to send.
    Sse(Event),
    /// A tool call or result, for a JSON answer.
    Tool(TurnEvent),
    /// A durable turn stopped for decisions, for a JSON answer.
    Waiting(RunWaiting),
    /// The turn's end.
    Done(TurnEnd),
}

/// A turn's end as the API reports it (`turn:end`, and the JSON answer's
/// `ok`, `text` and `error`): the reply, or the text kept and why it ended.
#[derive(Debug, Serialize)]
struct TurnEnd {
    ok: bool,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl TurnEnd {
    /// The end of `reply`, with `hidden` (the key's part of a run id) cut
    /// from the error's words.
    fn new(reply: Result<Reply, TurnError>, hidden: &str) -> Self {
        match reply {
            Ok(reply) => Self {
                ok: true,
                text: reply.text,
                error: None,
            },
            Err(error) => Self {
                ok: false,
                text: error.partial().to_owned(),
                error: Some(error.to_string().replace(hidden, "")),
            },
        }
    }
}

/// Run one turn of session `id`.
#[utoipa::path(
    post,
    path = "/v1/sessions/{id}/turns",
    params(("id" = String, Path, description = "The session (1-128 of A-Z a-z 0-9 - _ . :)", pattern = "^[A-Za-z0-9_.:-]{1,128}$")),
    request_body = TurnRequest,
    responses(
        (status = 200, description = "The turn: server-sent events (`reply:start`, `reply:delta`, `tool:call`, `tool:result`, `reply:end`, `turn:end`, and `error` when the model failed) with `Accept: text/event-stream`, else one JSON answer", content((TurnResponse = "application/json"), (crate::ServerSentEvent = "text/event-stream"))),
        (status = 400, description = "Invalid session id or body", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "JSON of the wrong shape", body = ErrorBody),
        (status = 429, description = "Too many requests running for this key, or over its rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn post_turn(
    State(app): State<App>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Checked<TurnRequest>, ApiError>,
) -> Result<Response, ApiError> {
    let session = owned_session(&principal, &id)?;
    let Checked(request) = body?;
    if request.text.trim().is_empty() && request.attachments.is_empty() {
        return Err(ApiError::bad_request("`text` must not be empty"));
    }
    let permit = app.limits.acquire(&principal)?;
    let message_id = message_id(&app, &principal, request.payload.as_ref())?;
    let input = turn_input(request, session, &principal, &id, &message_id);
    let (sender, receiver) = mpsc::unbounded_channel::<Report>();
    let mut config = app.turn.clone();
    let streaming = wants_events(&headers);
    config.events = reports(app.metrics.clone(), sender.clone(), streaming);
    let turn = Turn {
        config,
        input,
        streaming,
        key_prefix: format!("{}/", principal.id),
        counted: app.metrics.turn(Face::Sessions),
        permit,
    };
    let span = tracing::info_span!("turn", session = %id, key = %principal.id, %message_id);
    // The turn runs on its own task: it ends when the reply does, or when
    // a streaming client goes away (what was said so far is stored).
    let turn = tracing::Instrument::instrument(turn.run(sender), span);
    if streaming {
        // The response runs the turn; a client that leaves stops it.
        let stream = Driven::new(turn, receiver)
            .flat_map(|report| futures_util::stream::iter(sse_events(report)))
            .map(Ok::<_, Infallible>);
        return Ok(Sse::new(stream)
            .keep_alive(KeepAlive::default())
            .into_response());
    }
    let task = tokio::spawn(turn);
    let _ = task.await;
    json_answer(receiver, id, message_id).await
}

/// The reply's message id: the payload's `message_id`, else a fresh one.
fn message_id(
    app: &App,
    principal: &Principal,
    payload: Option<&Map<String, Value>>,
) -> Result<String, ApiError> {
    let message_id = match payload
        .and_then(|payload| payload.get("message_id"))
        .and_then(Value::as_str)
    {
        Some(given) => given.to_owned(),
        None => new_id(),
    };
    // A durable turn's run is named after its message id: it must be one an
    // approval can name.
    if (app.runs.is_some() || app.remote.is_some())
        && owned_session(principal, &message_id).is_err()
    {
        return Err(ApiError::bad_request(format!(
            "invalid payload.message_id {message_id:?}: use 1 to 128 of A-Z a-z 0-9 - _ . :"
        )));
    }
    Ok(message_id)
}

/// The chat turn's input: the request's message and options, in memory
/// session `session`, from the key's identity; the reply names the
/// client's session `id` and `message_id`.
fn turn_input(
    request: TurnRequest,
    session: String,
    principal: &Principal,
    id: &str,
    message_id: &str,
) -> TurnInput {
    let mut input = TurnInput::new(
        Session::new(session),
        Identity::new(principal.id.clone()),
        request.text,
    );
    input.attachments = request
        .attachments
        .into_iter()
        .map(|a| Attachment {
            name: a.name,
            mime_type: a.mime_type,
            url: a.url,
            size: a.size,
        })
        .collect();
    input.reply_session_id = Some(id.to_owned());
    input.message_id = Some(message_id.to_owned());
    input.recall_opts = request.recall_opts.map(|r| {
        let defaults = agentry_core::memory::RecallOpts::default();
        agentry_core::memory::RecallOpts {
            limit: r.limit.map_or(defaults.limit, |limit| limit as usize),
            min_score: r.min_score.unwrap_or(defaults.min_score),
        }
    });
    input.memory_heading = request.memory_heading;
    input.persist_user = request.persist_user;
    input.persist_assistant = request.persist_assistant;
    input.user_metadata = request.user_metadata;
    input.assistant_metadata = request.assistant_metadata;
    input.fallback_text = request.fallback_text;
    input
}

/// The turn's listener: each tool result counted in the metrics, and the
/// events the response needs sent to it as reports — written out as
/// server-sent events here, once, when `streaming`, rather than copied for
/// the response to write.
fn reports(metrics: Metrics, events: UnboundedSender<Report>, streaming: bool) -> TurnEvents {
    TurnEvents::new(move |event| {
        if let TurnEvent::ToolResult { name, result, .. } = event {
            metrics.tool_call(name, result.is_error);
        }
        let report = match event {
            TurnEvent::ReplyStart { .. }
            | TurnEvent::ReplyDelta { .. }
            | TurnEvent::ReplyEnd { .. }
            | TurnEvent::ToolCall { .. }
            | TurnEvent::ToolResult { .. }
                if streaming =>
            {
                Report::Sse(self::event(event.name(), event))
            }
            TurnEvent::ToolCall { .. } | TurnEvent::ToolResult { .. } => {
                Report::Tool(event.clone())
            }
            TurnEvent::AwaitingDecision { run, calls, .. } => {
                // The client's run id: its session, not the key's prefix.
                let run = run.split_once('/').map_or(run.as_str(), |(_, id)| id);
                let waiting = RunWaiting {
                    run: run.to_owned(),
                    calls: WaitingCallBody::list(calls),
                };
                if streaming {
                    Report::Sse(self::event("run:waiting", &waiting))
                } else {
                    Report::Waiting(waiting)
                }
            }
            _ => return,
        };
        let _ = events.send(report);
    })
}

/// A turn ready to run, with what it holds until it ends: its count in the
/// metrics and its place among the key's running requests.
struct Turn {
    config: TurnConfig,
    input: TurnInput,
    /// Stop when the client goes away (a streaming client only).
    streaming: bool,
    /// The key's part of a durable run's journal id: not shown.
    key_prefix: String,
    counted: TurnGuard,
    permit: OwnedSemaphorePermit,
}

impl Turn {
    /// Run the turn; once it ends, let go of its count and permit, then
    /// report its end to `sender`.
    async fn run(self, sender: UnboundedSender<Report>) {
        let Self {
            config,
            input,
            streaming,
            key_prefix,
            mut counted,
            permit,
        } = self;
        let gone = sender.clone();
        let stop = async move {
            if streaming {
                gone.closed().await
            } else {
                std::future::pending().await
            }
        };
        let reply = config.run_until(input, stop).await;
        counted.finish(match &reply {
            Ok(_) => "ok",
            Err(TurnError::Stopped { .. }) => "cancelled",
            Err(_) => "error",
        });
        // A durable run's journal id carries the key's id: not shown.
        let output = TurnEnd::new(reply, &key_prefix);
        drop(counted);
        drop(permit);
        let _ = sender.send(Report::Done(output));
    }
}

/// The JSON answer of session `id`'s finished turn, from its reports: the
/// tool calls with their results, in order, the end, and any run waiting
/// for decisions.
async fn json_answer(
    mut receiver: UnboundedReceiver<Report>,
    id: String,
    message_id: String,
) -> Result<Response, ApiError> {
    let mut tool_calls: Vec<ToolCallRecord> = Vec::new();
    let mut output = None;
    let mut waiting = None;
    while let Some(report) = receiver.recv().await {
        match report {
            Report::Tool(TurnEvent::ToolCall { call, .. }) => {
                tool_calls.push(ToolCallRecord { call, result: None })
            }
            Report::Tool(TurnEvent::ToolResult { result, .. }) => {
                if let Some(record) = tool_calls
                    .iter_mut()
                    .rev()
                    .find(|r| r.call.id == result.id && r.result.is_none())
                {
                    record.result = Some(result);
                }
            }
            Report::Tool(_) | Report::Sse(_) => {}
            Report::Waiting(run) => waiting = Some(run),
            Report::Done(done) => output = Some(done),
        }
    }
    let output = output.ok_or_else(|| ApiError::internal("the turn ended without an answer"))?;
    Ok(Json(TurnResponse {
        session_id: id,
        message_id,
        ok: output.ok,
        text: output.text,
        error: output.error,
        tool_calls,
        waiting,
    })
    .into_response())
}

/// True when the client asked for server-sent events.
fn wants_events(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("text/event-stream"))
}

/// The SSE events of one report: reply and tool events by their names; at
/// the end an `error` event if the model failed, then `turn:end`.
fn sse_events(report: Report) -> impl Iterator<Item = Event> {
    let events = match report {
        Report::Sse(event) => [Some(event), None],
        Report::Tool(_) | Report::Waiting(_) => [None, None],
        Report::Done(output) => [
            output
                .error
                .as_deref()
                .filter(|_| !output.ok)
                .map(|error| event("error", &json!({"message": error}))),
            Some(event("turn:end", &output)),
        ],
    };
    events.into_iter().flatten()
}

/// One server-sent event: `name`, with `data` as JSON.
fn event(name: &str, data: &impl Serialize) -> Event {
    let json = serde_json::to_string(data).unwrap_or_else(|_| "null".into());
    Event::default().event(name).data(json)
}

/// The stored messages of session `id`.
#[utoipa::path(
    get,
    path = "/v1/sessions/{id}/messages",
    params(("id" = String, Path, description = "The session", pattern = "^[A-Za-z0-9_.:-]{1,128}$"), MessagesQuery),
    responses(
        (status = 200, description = "The session's messages, oldest first", body = MessagesResponse),
        (status = 400, description = "Invalid session id", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such session for this key", body = ErrorBody),
        (status = 429, description = "Over this key's rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn get_messages(
    State(app): State<App>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    query: Result<Query<MessagesQuery>, QueryRejection>,
) -> Result<Json<MessagesResponse>, ApiError> {
    let session = owned_session(&principal, &id)?;
    let Query(query) = query.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let opts = RecentOpts {
        include_roles: vec!["user".into(), "assistant".into()],
        limit: query.limit.map(|limit| limit as usize),
        ..RecentOpts::default()
    };
    let records = app.turn.memory.store().recent(&session, &opts).await?;
    if records.is_empty() {
        return Err(ApiError::not_found(format!("no session {id:?}")));
    }
    Ok(Json(MessagesResponse {
        session_id: id,
        messages: records
            .into_iter()
            .map(|record| StoredMessage {
                role: record.role,
                text: record.text,
                timestamp: record.timestamp,
                metadata: record.metadata,
            })
            .collect(),
    }))
}

/// Delete session `id` and everything stored in it.
#[utoipa::path(
    delete,
    path = "/v1/sessions/{id}",
    params(("id" = String, Path, description = "The session", pattern = "^[A-Za-z0-9_.:-]{1,128}$")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Invalid session id", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such session for this key", body = ErrorBody),
        (status = 429, description = "Over this key's rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn delete_session(
    State(app): State<App>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let session = owned_session(&principal, &id)?;
    let deleted = app.turn.memory.store().forget_session(&session).await?;
    if deleted == 0 {
        return Err(ApiError::not_found(format!("no session {id:?}")));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_live_under_their_key_and_bad_ids_are_refused() {
        let alice = Principal { id: "a1".into() };
        assert_eq!(owned_session(&alice, "trip-2026").unwrap(), "a1/trip-2026");
        for bad in ["", "a/b", "x y", &"z".repeat(129)] {
            let error = owned_session(&alice, bad).unwrap_err();
            assert_eq!(error.status, StatusCode::BAD_REQUEST, "{bad:?}");
        }
        assert_eq!(new_id().len(), 24);
        assert_ne!(new_id(), new_id());
    }
}
