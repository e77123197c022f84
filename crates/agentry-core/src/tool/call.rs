//! `ToolCall` and `ToolResult`: the two values that cross between a model and a tool (seed 000).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A single tool invocation request emitted by a model.
///
/// Providers normalise their native tool-use blocks into this shape before
/// handing it to [`Toolbox::dispatch`](crate::tool::Toolbox::dispatch).
///
/// Serialises exactly as the seed's `ToolCall`: `{"id": .., "name": .., "input": ..}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-supplied identifier, echoed back in the matching [`ToolResult`].
    pub id: String,
    /// The [`Tool::name`](crate::tool::Tool::name) (or its wire name) the model wants to invoke.
    pub name: String,
    /// JSON-decoded input, normally a map keyed by parameter name.
    pub input: Value,
}

impl ToolCall {
    /// Build a call from its three parts.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// The reply to a single [`ToolCall`], fed back to the model on its next step.
///
/// Serialises exactly as the seed's `ToolResult`: `{"id": .., "output": .., "is_error": ..}`.
/// When `is_error` is true, `output` is a string the model can read and act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Always equal to the originating [`ToolCall::id`].
    pub id: String,
    /// The tool's return value, or the error message when `is_error` is true.
    pub output: Value,
    /// True when the tool could not produce a result.
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(id: impl Into<String>, output: Value) -> Self {
        Self {
            id: id.into(),
            output,
            is_error: false,
        }
    }

    /// A failed result whose output is `message`.
    pub fn error(id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            output: Value::String(message.into()),
            is_error: true,
        }
    }

    /// The output as text: a string output as it is, anything else as JSON.
    pub fn output_text(&self) -> String {
        match self.output.as_str() {
            Some(text) => text.to_owned(),
            None => self.output.to_string(),
        }
    }

    /// The error message, when this is an error result.
    pub fn error_message(&self) -> Option<&str> {
        if self.is_error {
            self.output.as_str()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_match_the_seed() {
        let call = ToolCall::new("call_1", "myapp::add", json!({"x": 2, "y": 3}));
        assert_eq!(
            serde_json::to_string(&call).unwrap(),
            r#"{"id":"call_1","name":"myapp::add","input":{"x":2,"y":3}}"#
        );
        let result = ToolResult::ok("call_1", json!(5));
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            r#"{"id":"call_1","output":5,"is_error":false}"#
        );
        let failed = ToolResult::error("call_2", "boom");
        assert_eq!(failed.error_message(), Some("boom"));
        assert_eq!(result.error_message(), None);
        assert_eq!(result.output_text(), "5");
        assert_eq!(failed.output_text(), "boom");
    }
}
