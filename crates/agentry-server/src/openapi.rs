//! The OpenAPI 3.1 document of the API, from the handlers' annotations.

use serde_json::{Value, json};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::{ErrorBody, ErrorDetail};
use crate::openai::{ChatCompletion, ChatCompletionRequest, ChatMessage, ModelList};
use crate::runs::{ApprovalRequest, DecisionKind, RunResponse, RunStep, WaitingCallBody};
use crate::sessions::{
    AttachmentBody, MessagesResponse, RecallBody, RunWaiting, StoredMessage, ToolCallRecord,
    TurnRequest, TurnResponse,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "agentry", description = "An agentry agent over HTTP: chat sessions with memory, durable runs that wait for approval, and an OpenAI-compatible API. Every route but /healthz and /readyz answers 403 (`forbidden`) to a Host the server does not answer to and to a browser's request from a page of another origin, or one that changes something cross-site; without API keys, a POST that is not `application/json` is answered 415."),
    paths(
        crate::sessions::post_turn,
        crate::sessions::get_messages,
        crate::sessions::delete_session,
        crate::runs::get_run,
        crate::runs::post_approval,
        crate::runs::post_resume,
        crate::openai::chat_completions,
        crate::openai::list_models,
        crate::metrics::metrics,
        crate::healthz,
        crate::readyz,
    ),
    components(schemas(
        TurnRequest, AttachmentBody, RecallBody, TurnResponse, ToolCallRecord, MessagesResponse,
        StoredMessage, ChatCompletionRequest, ChatMessage, ChatCompletion, ModelList, ErrorBody,
        ErrorDetail, ServerSentEvent, RunResponse, RunStep, WaitingCallBody, ApprovalRequest,
        DecisionKind, RunWaiting,
    )),
    modifiers(&ApiKeyScheme),
)]
struct ApiDoc;

/// One server-sent event of a streamed answer, as the OpenAPI document
/// describes `text/event-stream` bodies: a name and its data.
#[derive(Debug, Clone, PartialEq, Eq, utoipa::ToSchema)]
pub struct ServerSentEvent {
    /// The event's name: `reply:start`, `reply:delta`, `tool:call`,
    /// `tool:result`, `run:waiting` (a durable turn stopped for approval),
    /// `reply:end`, `error` or `turn:end` for a turn;
    /// `message` (none given) for a chat completion.
    pub event: Option<String>,
    /// JSON; the last event of a chat completion stream is `[DONE]`.
    pub data: String,
}

/// `Authorization: Bearer <key>`.
struct ApiKeyScheme;

impl Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document.
///
/// ```
/// let document = agentry_server::openapi();
/// assert!(document.paths.paths.contains_key("/v1/sessions/{id}/turns"));
/// ```
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The document a server serves: [`openapi`] with the one model name the
/// chat completions accept (`name`, the agent's), and the rules the
/// handlers check that the annotations cannot say: a conversation needs a
/// user message, a turn needs text (not only white space) or an attachment,
/// a denial needs a reason and an edit an input, and (with durable runs) a
/// turn's `payload.message_id` is one a run id can hold.
pub(crate) fn served(name: &str, durable: bool) -> Value {
    let mut document = serde_json::to_value(openapi()).unwrap_or_default();
    let schemas = "/components/schemas";
    if let Some(request) = document.pointer_mut(&format!("{schemas}/ChatCompletionRequest")) {
        request["properties"]["model"]["enum"] = json!([name]);
        request["properties"]["messages"]["contains"] = json!({
            "type": "object",
            "properties": {"role": {"const": "user"}},
            "required": ["role"],
        });
    }
    if let Some(turn) = document.pointer_mut(&format!("{schemas}/TurnRequest")) {
        turn["anyOf"] = json!([
            {"properties": {"text": {"pattern": "\\S"}}},
            {"properties": {"attachments": {"minItems": 1}}, "required": ["attachments"]},
        ]);
        if durable {
            // A durable turn's run is named after its message id.
            turn["allOf"] = json!([{"properties": {"payload": {"properties": {
                "message_id": {"pattern": "^[A-Za-z0-9_.:-]{1,128}$"}
            }}}}]);
        }
    }
    if let Some(approval) = document.pointer_mut(&format!("{schemas}/ApprovalRequest")) {
        approval["allOf"] = json!([
            {
                "if": {"properties": {"decision": {"const": "deny"}}, "required": ["decision"]},
                "then": {"required": ["reason"], "properties": {"reason": {"type": "string", "pattern": "\\S"}}},
            },
            {
                "if": {"properties": {"decision": {"const": "edit"}}, "required": ["decision"]},
                "then": {"required": ["input"], "properties": {"input": {"type": "object"}}},
            },
        ]);
    }
    document
}
