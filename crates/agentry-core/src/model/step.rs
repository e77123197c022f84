//! What one model call produces: a [`Step`] (the model's decision)
//! with exact token usage, or, when streaming, a sequence of [`StreamEvent`]s
//! that [`StepAssembler`] folds into the same `Step`.

use std::collections::BTreeMap;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ModelError;
use crate::tool::ToolCall;

/// Tokens a model call consumed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Of the prompt tokens, those a prompt cache served instead of the
    /// model reading them again (the local model's prefix cache; providers
    /// that report it). Already counted in `input_tokens`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Usage {
    /// Usage with the given counts.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            cached_input_tokens: 0,
        }
    }

    /// The same usage, with `cached` of its prompt tokens served by a cache.
    pub fn with_cached_input(self, cached: u64) -> Self {
        Self {
            cached_input_tokens: cached,
            ..self
        }
    }

    /// Input plus output tokens: what a token budget counts (saturating,
    /// so a provider's absurd counts cannot wrap around a budget).
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(self, other: Usage) -> Usage {
        Usage::new(
            self.input_tokens.saturating_add(other.input_tokens),
            self.output_tokens.saturating_add(other.output_tokens),
        )
        .with_cached_input(
            self.cached_input_tokens
                .saturating_add(other.cached_input_tokens),
        )
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

/// The model's decision for one step: a final answer,
/// or one or more tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    /// `{kind: "final", text, tokens}`.
    Final {
        /// The answer.
        text: String,
        /// Tokens this step consumed.
        tokens: Usage,
    },
    /// `{kind: "tool", calls, tokens}`: the model wants these tools run.
    Tool {
        /// The calls, in the order the model made them.
        calls: Vec<ToolCall>,
        /// Any text the model produced alongside the calls.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
        /// Tokens this step consumed.
        tokens: Usage,
    },
}

impl Step {
    /// Tokens this step consumed.
    pub fn tokens(&self) -> Usage {
        match self {
            Step::Final { tokens, .. } | Step::Tool { tokens, .. } => *tokens,
        }
    }
}

/// Why a model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the answer.
    Stop,
    /// The model called tools.
    ToolCalls,
    /// The token limit was reached.
    Length,
    /// A stop sequence matched.
    StopSequence,
    /// Content was filtered.
    ContentFilter,
    /// Anything else, as the provider named it.
    Other(String),
}

/// One event of a streamed model reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A piece of answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A tool call begins. `index` identifies it among parallel calls.
    ToolCallStart {
        /// Position of the call in this reply.
        index: usize,
        /// Provider id of the call.
        id: String,
        /// Tool name (already mapped back from the wire name).
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// Which call.
        index: usize,
        /// The fragment.
        arguments: String,
    },
    /// Token usage (may arrive more than once; later counts replace earlier ones field by field).
    Usage {
        /// The counts.
        usage: Usage,
    },
    /// The reply is complete.
    Finish {
        /// Why it ended.
        reason: FinishReason,
    },
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Folds [`StreamEvent`]s into a [`Step`].
#[derive(Default)]
pub struct StepAssembler {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Usage,
    finish: Option<FinishReason>,
}

impl StepAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tokens counted so far (later counts replace earlier ones field
    /// by field).
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Take one event into account.
    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta { text } => self.text.push_str(text),
            StreamEvent::ToolCallStart { index, id, name } => {
                let call = self.calls.entry(*index).or_default();
                if !id.is_empty() {
                    call.id.clone_from(id);
                }
                if !name.is_empty() {
                    call.name.clone_from(name);
                }
            }
            StreamEvent::ToolCallDelta { index, arguments } => self
                .calls
                .entry(*index)
                .or_default()
                .arguments
                .push_str(arguments),
            StreamEvent::Usage { usage } => {
                if usage.input_tokens > 0 {
                    self.usage.input_tokens = usage.input_tokens;
                }
                if usage.output_tokens > 0 {
                    self.usage.output_tokens = usage.output_tokens;
                }
                if usage.cached_input_tokens > 0 {
                    self.usage.cached_input_tokens = usage.cached_input_tokens;
                }
            }
            StreamEvent::Finish { reason } => self.finish = Some(reason.clone()),
        }
    }

    /// The step so far. Fails when the stream never finished.
    pub fn finish(self) -> Result<Step, ModelError> {
        if self.finish.is_none() {
            return Err(ModelError::StreamCut(
                "the stream ended before the model finished its reply".into(),
            ));
        }
        if self.calls.is_empty() {
            return Ok(Step::Final {
                text: self.text,
                tokens: self.usage,
            });
        }
        let calls = self
            .calls
            .into_values()
            .map(|call| ToolCall {
                id: call.id,
                name: call.name,
                input: parse_arguments(&call.arguments),
            })
            .collect();
        Ok(Step::Tool {
            calls,
            text: self.text,
            tokens: self.usage,
        })
    }
}

/// Tool-call arguments as JSON: empty means `{}`; text that is not JSON is
/// kept as a string, so dispatch reports it to the model instead of losing it.
pub fn parse_arguments(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assembles_parallel_calls_from_fragments() {
        let mut assembler = StepAssembler::new();
        for event in [
            StreamEvent::ToolCallStart {
                index: 1,
                id: "b".into(),
                name: "time".into(),
            },
            StreamEvent::ToolCallStart {
                index: 0,
                id: "a".into(),
                name: "weather".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"ci".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 1,
                arguments: "".into(),
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "ty\": \"Lima\"}".into(),
            },
            StreamEvent::Usage {
                usage: Usage::new(10, 0),
            },
            StreamEvent::Usage {
                usage: Usage::new(0, 7),
            },
            StreamEvent::Finish {
                reason: FinishReason::ToolCalls,
            },
        ] {
            assembler.push(&event);
        }
        let step = assembler.finish().unwrap();
        assert_eq!(
            step,
            Step::Tool {
                calls: vec![
                    ToolCall::new("a", "weather", json!({"city": "Lima"})),
                    ToolCall::new("b", "time", json!({})),
                ],
                text: String::new(),
                tokens: Usage::new(10, 7),
            }
        );
    }

    #[test]
    fn usage_saturates_instead_of_wrapping() {
        let huge = Usage::new(u64::MAX, u64::MAX);
        assert_eq!(huge.total(), u64::MAX);
        assert_eq!(huge + Usage::new(5, 5), huge);
        let mut sum = Usage::new(u64::MAX - 1, 0);
        sum += Usage::new(10, 1);
        assert_eq!(sum, Usage::new(u64::MAX, 1));
    }

    #[test]
    fn unfinished_streams_are_errors() {
        let mut assembler = StepAssembler::new();
        assembler.push(&StreamEvent::TextDelta { text: "Hel".into() });
        assert!(matches!(assembler.finish(), Err(ModelError::StreamCut(_))));
    }

    #[test]
    fn step_serialises_with_its_kind_tag() {
        let step = Step::Final {
            text: "[no llm provider]".into(),
            tokens: Usage::default(),
        };
        assert_eq!(
            serde_json::to_value(&step).unwrap(),
            json!({"kind": "final", "text": "[no llm provider]", "tokens": {"input_tokens": 0, "output_tokens": 0}})
        );
        assert_eq!(parse_arguments("not json"), json!("not json"));
    }
}
