//! The request and response bodies of the sessions API, and the checks
//! on the counts they carry.

use agentry_core::tool::{ToolCall, ToolResult};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::runs::WaitingCallBody;

/// One user message: the fields of a chat turn's input (`TurnInput`) a client may set.
/// The session comes from the path and the sender from the API key; the
/// request context for tools is the server's.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    /// The user's message.
    pub text: String,
    /// Files that came with it (described to the model, not uploaded).
    #[serde(default)]
    pub attachments: Vec<AttachmentBody>,
    /// Forwarded on every reply event: `message_id` (generated when absent).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Map<String, Value>>,
    /// Recall options (default `{limit: 5, min_score: 0.3}`).
    #[serde(default)]
    pub recall_opts: Option<RecallBody>,
    /// Heading of the memory block in the prompt (default `## Memory`).
    #[serde(default)]
    pub memory_heading: Option<String>,
    /// Store the user's message (default true).
    #[serde(default)]
    pub persist_user: Option<bool>,
    /// Store the reply (default true).
    #[serde(default)]
    pub persist_assistant: Option<bool>,
    /// Metadata stored with the user's message.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub user_metadata: Option<Map<String, Value>>,
    /// Metadata stored with the reply.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub assistant_metadata: Option<Map<String, Value>>,
    /// Reply with this text instead of asking the model.
    #[serde(default)]
    pub fallback_text: Option<String>,
}

/// A file that came with a message.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachmentBody {
    /// File name.
    pub name: String,
    /// MIME type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Where it can be fetched.
    #[serde(default)]
    pub url: Option<String>,
    /// Size in bytes.
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 0, maximum = 9007199254740991_u64)]
    pub size: Option<u64>,
}

/// How much memory to recall into the prompt.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallBody {
    /// Most records (default 5).
    #[serde(default, deserialize_with = "whole_number")]
    #[schema(minimum = 0, maximum = 9007199254740991_u64)]
    pub limit: Option<u64>,
    /// Lowest similarity (default 0.3).
    #[serde(default)]
    #[schema(minimum = -1.0, maximum = 1.0)]
    pub min_score: Option<f32>,
}

/// The answer to a turn asked for as JSON.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnResponse {
    /// The session (as the client named it).
    pub session_id: String,
    /// The reply's message id.
    pub message_id: String,
    /// False when the model failed (the user's message is still stored).
    pub ok: bool,
    /// The reply.
    pub text: String,
    /// Why the model failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tool calls the agent made, in order, with their results.
    pub tool_calls: Vec<ToolCallRecord>,
    /// With durable runs: the run stopped for these decisions
    /// (`POST /v1/runs/{run}/approvals`); the reply comes once it goes on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<RunWaiting>,
}

/// A durable turn's run, stopped for decisions on its calls.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunWaiting {
    /// The run's id: `{session}~{message_id}`.
    pub run: String,
    /// The calls that wait.
    pub calls: Vec<WaitingCallBody>,
}

/// One tool call and what it returned.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToolCallRecord {
    /// The call.
    #[schema(value_type = Object)]
    pub call: ToolCall,
    /// Its result (absent if the turn stopped first).
    #[schema(value_type = Option<Object>)]
    pub result: Option<ToolResult>,
}

/// A stored message of a session.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoredMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// What was said.
    pub text: String,
    /// When, in Unix seconds.
    pub timestamp: i64,
    /// Its metadata.
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
}

/// A session's stored messages, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessagesResponse {
    /// The session.
    pub session_id: String,
    /// The messages.
    pub messages: Vec<StoredMessage>,
}

/// `?limit=N`: only the newest N messages.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessagesQuery {
    /// The newest N messages only.
    #[param(value_type = Option<i32>, minimum = 0)]
    #[serde(default, deserialize_with = "count_in_query")]
    pub limit: Option<u32>,
}

/// A count in a query string: a whole number from 0 to 2^31 − 1 (the
/// document's `int32`, `minimum: 0`).
fn count_in_query<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u32>, D::Error> {
    let Some(text) = Option::<String>::deserialize(deserializer)? else {
        return Ok(None);
    };
    match text.parse::<i32>() {
        Ok(count) if count >= 0 => Ok(Some(count as u32)),
        _ => Err(serde::de::Error::custom(format!(
            "expected a whole number from 0 to {}, got {text:?}",
            i32::MAX
        ))),
    }
}

/// The largest integer every JSON reader holds exactly (2^53 − 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// An optional count in a JSON body: an integer, or a number without a
/// fraction (`3.0`, which JSON Schema also calls an integer), from 0 to
/// 2^53 − 1; anything else is refused with what was expected.
fn whole_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let whole = number.as_u64().or_else(|| {
        number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= MAX_SAFE_INTEGER as f64)
            .map(|f| f as u64)
    });
    match whole {
        Some(value) if value <= MAX_SAFE_INTEGER => Ok(Some(value)),
        _ => Err(serde::de::Error::custom(format!(
            "expected a whole number from 0 to {MAX_SAFE_INTEGER}, got {number}"
        ))),
    }
}
