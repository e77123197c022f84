//! The normalised chat request every [`ChatModel`](super::ChatModel) accepts:
//! system text, messages (assistant tool calls and tool results included),
//! tools, tool choice and sampling limits.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::{ToolCall, ToolResult, ToolSchema};

/// One message of a conversation.
///
/// Tool output only ever travels as [`Message::Tool`], never as user or
/// system text, so a model can always tell what a tool said from what the
/// user asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user said.
    User {
        /// The text.
        text: String,
    },
    /// What the model said: text, tool calls, or both.
    Assistant {
        /// The text (may be empty when the model only called tools).
        #[serde(default)]
        text: String,
        /// The tool calls the model made.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The result, its id matching the call's.
        result: ToolResult,
    },
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    /// An assistant message with only text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        }
    }

    /// A tool-result message.
    pub fn tool(result: ToolResult) -> Self {
        Self::Tool { result }
    }
}

/// Which tools the model may or must call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The model must answer in text.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// The shape a model's answer must take: one JSON text that satisfies
/// `schema`. Providers use their structured-output modes (OpenAI's
/// `response_format`, Anthropic's `output_config.format`); the local model
/// decodes under a grammar made from the schema. Tool calls stay possible
/// in the same step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// A name for the schema, `^[a-zA-Z0-9_-]{1,64}$` (OpenAI asks for one).
    pub name: String,
    /// The JSON Schema of the answer.
    pub schema: Value,
}

impl ResponseFormat {
    /// A format called `name` with `schema`.
    pub fn new(name: impl Into<String>, schema: Value) -> Self {
        Self {
            name: name.into(),
            schema,
        }
    }
}

/// A normalised request to a chat model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model id; `None` uses the provider's configured model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call, by their agentry names (providers map them to wire names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSchema>,
    /// Whether and which tool must be called.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// When set, the answer (not a tool call) must be JSON following this format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
}

impl ChatRequest {
    /// A request with a system prompt and one user message.
    pub fn new(system: Option<String>, user: impl Into<String>) -> Self {
        Self {
            system,
            messages: vec![Message::user(user)],
            ..Self::default()
        }
    }
}
