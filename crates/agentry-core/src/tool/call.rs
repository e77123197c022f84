//! `ToolCall` and `ToolResult`: the two values that cross between a model and a tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A single tool invocation request emitted by a model.
///
/// Providers normalise their native tool-use blocks into this shape before
/// handing it to [`Toolbox::dispatch`](crate::tool::Toolbox::dispatch).
///
/// Serialises as `{"id": .., "name": .., "input": ..}`.
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
/// Serialises as `{"id": .., "output": .., "is_error": ..}`.
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

    /// This result with its output cut to at most `max_bytes` bytes of text
    /// when its text ([`output_text`](Self::output_text)) is longer.
    ///
    /// A cut output is a string: the text's first bytes up to a character
    /// boundary (the compact JSON text, for output that is not a string),
    /// then the line `[tool result cut: N of M bytes shown]`. `is_error` and
    /// `id` stay. Output within the limit is returned untouched, and telling
    /// that costs no serialising for the common small result.
    pub fn cut_to(mut self, max_bytes: usize) -> Self {
        if let Some(output) = cut_output(&self.output, max_bytes) {
            self.output = Value::String(output);
        }
        self
    }
}

/// The cut text of `output` when its text is over `max` bytes.
fn cut_output(output: &Value, max: usize) -> Option<String> {
    let (kept, total) = match output {
        Value::String(text) if text.len() <= max => return None,
        Value::String(text) => {
            let mut end = max;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            (text[..end].to_owned(), text.len())
        }
        _ if text_bound(output, max).is_some() => return None,
        _ => {
            let mut writer = Prefix {
                kept: Vec::with_capacity(max),
                max,
                total: 0,
            };
            serde_json::to_writer(&mut writer, output).expect("a JSON value serialises");
            if writer.total <= max {
                return None;
            }
            let kept = match String::from_utf8(writer.kept) {
                Ok(kept) => kept,
                Err(error) => {
                    let valid = error.utf8_error().valid_up_to();
                    let mut bytes = error.into_bytes();
                    bytes.truncate(valid);
                    String::from_utf8(bytes).expect("cut at a character boundary")
                }
            };
            (kept, writer.total)
        }
    };
    Some(format!(
        "{kept}\n[tool result cut: {} of {total} bytes shown]",
        kept.len()
    ))
}

/// An upper bound on the length of `value`'s compact JSON text, when it is
/// at most `max` (`None` as soon as the bound passes it).
fn text_bound(value: &Value, max: usize) -> Option<usize> {
    let mut bound = 0usize;
    // Only containers need the stack: a lone scalar costs no allocation.
    let mut stack = Vec::new();
    let mut next = Some(value);
    while let Some(value) = next.take().or_else(|| stack.pop()) {
        // A string's every byte may become a six-byte `\u00XX` escape.
        let string = |text: &str| 2 + 6 * text.len();
        bound += match value {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 24,
            Value::String(text) => string(text),
            Value::Array(items) => 2 + items.len(),
            Value::Object(map) => 2 + map.keys().map(|key| string(key) + 2).sum::<usize>(),
        };
        if bound > max {
            return None;
        }
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    Some(bound)
}

/// A writer keeping the first `max` bytes and counting all of them.
struct Prefix {
    kept: Vec<u8>,
    max: usize,
    total: usize,
}

impl std::io::Write for Prefix {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let room = self.max.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.total += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_match_the_wire_format() {
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

    #[test]
    fn long_outputs_are_cut_at_a_character_boundary() {
        // "é" is two bytes: a cut at 5 bytes keeps two of them.
        let text = ToolResult::ok("1", json!("éééééé")).cut_to(5);
        assert_eq!(
            text,
            ToolResult::ok("1", json!("éé\n[tool result cut: 4 of 12 bytes shown]"))
        );
        let error = ToolResult::error("2", "abcdef").cut_to(3);
        assert_eq!(
            error,
            ToolResult::error("2", "abc\n[tool result cut: 3 of 6 bytes shown]")
        );
        let structured = ToolResult::ok("3", json!({"k": "vvvvvvvvvv"})).cut_to(8);
        assert_eq!(
            structured,
            ToolResult::ok(
                "3",
                json!("{\"k\":\"vv\n[tool result cut: 8 of 18 bytes shown]")
            )
        );
        // Within the limit, however loose the bound: untouched.
        let small = ToolResult::ok("4", json!({"k": "vvvvvvvvvv"}));
        assert_eq!(small.clone().cut_to(18), small);
        assert_eq!(small.clone().cut_to(1 << 20), small);
        let exact = ToolResult::ok("5", json!("abc"));
        assert_eq!(exact.clone().cut_to(3), exact);
    }
}
