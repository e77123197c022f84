//! What a run produces: how it ended ([`Outcome`]), what happened step by
//! step ([`StepRecord`], [`CallRecord`], nested [`ChildRun`]s), and the
//! [`RunError`] that [`Agent::prompt`](super::Agent::prompt) returns.

use std::time::Duration;

use serde::Serialize;

use super::durable::{JournalError, WaitingCall};
use agentry_core::model::{Message, ModelError, Usage};
use agentry_core::tool::{ToolCall, ToolResult};

/// The text the loop gives when it runs out of steps.
pub const OUT_OF_STEPS_TEXT: &str = "out of steps";

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Outcome {
    /// The model answered.
    Final(String),
    /// `max_steps` steps were taken without an answer.
    OutOfSteps,
    /// The token budget was exceeded before an answer.
    OverBudget,
    /// The model call failed.
    ModelError(#[serde(serialize_with = "display")] ModelError),
    /// A durable run stopped for these calls: each waits for a person's
    /// decision ([`decide`](super::durable::decide)), then the run is resumed.
    AwaitingDecision(Vec<WaitingCall>),
    /// A durable run's journal could not be written (or another process
    /// wrote it first): the run stopped rather than do anything unrecorded.
    JournalFailed(#[serde(serialize_with = "display")] JournalError),
    /// A guardrail stopped the run: which, where, and why.
    GuardrailTripped(super::GuardrailTripped),
}

impl Outcome {
    /// How it ended, in one word: the `kind` it serialises with (`final`,
    /// `out_of_steps`, `over_budget`, `model_error`, `awaiting_decision`,
    /// `journal_failed`, `guardrail_tripped`).
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Final(_) => "final",
            Outcome::OutOfSteps => "out_of_steps",
            Outcome::OverBudget => "over_budget",
            Outcome::ModelError(_) => "model_error",
            Outcome::AwaitingDecision(_) => "awaiting_decision",
            Outcome::JournalFailed(_) => "journal_failed",
            Outcome::GuardrailTripped(_) => "guardrail_tripped",
        }
    }
}

fn display<S: serde::Serializer>(
    error: &impl std::fmt::Display,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}

/// A child agent's run inside one tool call of its parent (see
/// [`Agent::as_tool`](super::Agent::as_tool)): the parent's trace holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildRun {
    /// The tool name the child was called by.
    pub agent: String,
    /// How the child's run ended.
    pub outcome: Outcome,
    /// Tokens the child spent (its own children included); they count
    /// against the parent's budget.
    pub usage: Usage,
    /// The child's steps, tool calls (and grandchildren) included.
    pub steps: Vec<StepRecord>,
}

/// One tool call of a step, with its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// The call as the model made it.
    pub call: ToolCall,
    /// What was fed back.
    pub result: ToolResult,
    /// How long the gate and the tool took.
    #[serde(with = "duration_ms")]
    pub duration: Duration,
    /// The run of the child agent this call started, when the tool is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<ChildRun>>,
}

mod duration_ms {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(
        value: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(value.as_secs_f64() * 1000.0)
    }
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// 1-based step number.
    pub index: usize,
    /// Tokens this step's model call used (child agents' tokens are in their [`ChildRun`]).
    pub tokens: Usage,
    /// Text the model produced (the answer, on the final step).
    pub text: String,
    /// Tool calls made in this step.
    pub calls: Vec<CallRecord>,
}

/// The result of [`Agent::run`](super::Agent::run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    /// How the run ended.
    pub outcome: Outcome,
    /// Tokens used over every step, child agents' included.
    pub usage: Usage,
    /// What happened, step by step.
    pub steps: Vec<StepRecord>,
    /// The full conversation, tool results included.
    pub messages: Vec<Message>,
    /// What the relevance gate made of the request before step 1 (`None`
    /// without a gate, when it stood aside, or for a resumed run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<super::relevance::Relevance>,
    /// The agent that had the floor at the end: the one that answered
    /// (its name; `None` when it has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Each time one agent handed the conversation to another, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<super::HandoffRecord>,
}

impl RunOutcome {
    /// The answer; `"out of steps"` when the loop ran out, and a
    /// short description otherwise.
    pub fn text(&self) -> String {
        match &self.outcome {
            Outcome::Final(text) => text.clone(),
            Outcome::OutOfSteps => OUT_OF_STEPS_TEXT.to_owned(),
            Outcome::OverBudget => "over budget".to_owned(),
            Outcome::ModelError(error) => format!("model error: {error}"),
            Outcome::AwaitingDecision(calls) => format!(
                "waiting for a decision on {}",
                calls
                    .iter()
                    .map(|waiting| format!("{} ({})", waiting.call.name, waiting.call.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Outcome::JournalFailed(error) => format!("stopped: {error}"),
            Outcome::GuardrailTripped(tripped) => format!("stopped: {tripped}"),
        }
    }

    /// Every tool call of the run, in order (child agents' calls not included).
    pub fn calls(&self) -> impl Iterator<Item = &CallRecord> {
        self.steps.iter().flat_map(|step| step.calls.iter())
    }
}

/// Why [`Agent::prompt`](super::Agent::prompt) has no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The loop took every step it may take without an answer.
    #[error("the agent took its {max_steps} steps without answering")]
    OutOfSteps {
        /// The step limit.
        max_steps: usize,
    },
    /// The run spent more tokens than its budget.
    #[error("the agent spent {used} tokens, over its budget of {budget}")]
    OverBudget {
        /// Tokens spent.
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// The model call failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A durable run waits for a person's decision on these calls (ids).
    #[error("the run waits for a decision on calls {}", calls.join(", "))]
    AwaitingDecision {
        /// The ids of the waiting calls.
        calls: Vec<String>,
    },
    /// A durable run's journal failed.
    #[error("the run stopped: {0}")]
    Journal(String),
    /// A guardrail stopped the run.
    #[error(transparent)]
    Guardrail(#[from] super::GuardrailTripped),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_is_the_serialised_kind() {
        for outcome in [
            Outcome::Final("hi".into()),
            Outcome::OutOfSteps,
            Outcome::OverBudget,
            Outcome::ModelError(ModelError::Transport("reset".into())),
            Outcome::AwaitingDecision(Vec::new()),
            Outcome::JournalFailed(JournalError::NotFound("r".into())),
        ] {
            let serialised = serde_json::to_value(&outcome).unwrap();
            assert_eq!(serialised["kind"], outcome.kind(), "{outcome:?}");
        }
    }
}
