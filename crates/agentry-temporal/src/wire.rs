//! What crosses Temporal: a run's input, its record while it runs (the
//! workflow's query), its report when it ends (the workflow's result), and a
//! person's decision (the workflow's update). All serde, all plain data.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use agentry_agent::stepwise::StepAt;
use agentry_agent::turn::TurnContext;
use agentry_agent::{CallRecord, ChildRun, Outcome, RunOutcome, StepRecord};
use agentry_core::journal::{Decision, Waiting};
use agentry_core::model::{Message, ModelError, Usage};
use agentry_core::tool::{Capabilities, ToolCall, ToolResult};

/// What a run starts with: the conversation, and limits lower than the
/// agent's own if it should have them (the worker's agent has its own; the
/// lower of the two holds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInput {
    /// The conversation the run starts with (usually one user message).
    pub messages: Vec<Message>,
    /// Most model steps the run may take.
    pub max_steps: Option<usize>,
    /// Most tokens the run may spend; past it, no more steps and no tool runs.
    pub token_budget: Option<u64>,
    /// Set when the run is a child agent's, started by another run's call
    /// (a child workflow); `None` for a run of the worker's own agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_of: Option<ChildOf>,
    /// Set when the run is a chat turn's loop ([`TemporalTurns`](crate::TemporalTurns)):
    /// the turn's system prompt and tool context replace the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnScope>,
}

/// What a chat turn's run takes from its turn instead of from the worker's
/// agent: the system prompt (the agent's own, with what memory recalled)
/// and the request context its tools get (laid over the agent's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnScope {
    /// The turn's system prompt.
    pub system: String,
    /// The turn's session, sender and extras.
    pub context: TurnContext,
}

impl RunInput {
    /// A run of one user message, within the agent's own limits.
    pub fn new(task: impl Into<String>) -> Self {
        Self {
            messages: vec![Message::user(task)],
            max_steps: None,
            token_budget: None,
            child_of: None,
            turn: None,
        }
    }
}

/// What a child agent's run knows of the run that started it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildOf {
    /// The child agent: the tool name its parent called it by, registered
    /// on the workers with [`AgentActivities::child`](crate::AgentActivities::child).
    pub agent: String,
    /// The parent's grants: the child's tools get at most what both grant.
    pub grants: Capabilities,
    /// How deep it is nested: 1 for a child of a worker's own agent.
    pub depth: usize,
    /// How deep agents may nest: the outermost agent's limit.
    pub max_depth: usize,
}

/// The most a run's input may hold, as JSON: each model step's activity
/// carries the conversation twice (as it started and as it stands), and
/// Temporal refuses payloads past about 2 MB, so a larger run could not go on.
pub const MAX_RUN_INPUT_BYTES: usize = 64 * 1024;
/// The most a person's deny reason or edited input may hold, as JSON.
pub const MAX_DECISION_BYTES: usize = 16 * 1024;

impl RunInput {
    /// Read a run's input, refusing (with what is wrong) one that is not a
    /// `RunInput`, holds no user message, or is larger than
    /// [`MAX_RUN_INPUT_BYTES`].
    pub fn checked(value: serde_json::Value) -> Result<Self, String> {
        let size = value.to_string().len();
        if size > MAX_RUN_INPUT_BYTES {
            return Err(format!(
                "the run's input is {size} bytes; at most {MAX_RUN_INPUT_BYTES} are taken"
            ));
        }
        let input: Self = serde_json::from_value(value)
            .map_err(|e| format!("the run's input is not a RunInput: {e}"))?;
        if !input
            .messages
            .iter()
            .any(|m| matches!(m, Message::User { .. }))
        {
            return Err("the run's input holds no user message".to_owned());
        }
        Ok(input)
    }
}

/// A run's limits: the worker's agent's, lowered by the run's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Most model steps.
    pub max_steps: usize,
    /// Most tokens.
    pub token_budget: u64,
    /// Most calls one step may make; the rest are refused.
    pub max_calls_per_step: usize,
    /// How deep child agents may nest (the agent's
    /// [`max_depth`](agentry_agent::Agent::max_depth)).
    #[serde(default = "default_max_depth")]
    pub max_depth: usize,
    /// The agent's tools that are child agents run as child workflows
    /// (empty in runs started before child workflows: their child agents
    /// ran inside one tool call's activity, and still do).
    #[serde(default)]
    pub children: Vec<String>,
    /// What the run's tools may use: the agent's grants (for a child, what
    /// both it and its parent grant).
    #[serde(default)]
    pub grants: Capabilities,
}

fn default_max_depth() -> usize {
    agentry_agent::DEFAULT_MAX_DEPTH
}

impl Limits {
    /// The agent's limits, lowered where `input` asks for less.
    pub fn lowered(&self, input: &RunInput) -> Self {
        Self {
            max_steps: input
                .max_steps
                .map_or(self.max_steps, |n| n.min(self.max_steps)),
            token_budget: input
                .token_budget
                .map_or(self.token_budget, |n| n.min(self.token_budget)),
            ..self.clone()
        }
    }
}

/// The input of the model-step activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanInput {
    /// The conversation the run started with (its tools come from it).
    pub started: Vec<Message>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Where the run stands.
    pub at: StepAt,
    /// The child agent carrying the run out; `None` for the worker's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A chat turn's system prompt and context, for a turn's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnScope>,
}

/// The input of the tool-call activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallInput {
    /// The conversation the run started with (its tools come from it).
    pub started: Vec<Message>,
    /// The call to run (a person's edit already applied).
    pub call: ToolCall,
    /// The child agent carrying the run out; `None` for the worker's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// For a child's run, its parent's grants: the tool gets at most what
    /// both grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<Capabilities>,
    /// A chat turn's system prompt and context, for a turn's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnScope>,
}

/// One call and its result, as the workflow records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallEntry {
    /// The call as the model made it (or as a person edited it).
    pub call: ToolCall,
    /// What went back to the model.
    pub result: ToolResult,
    /// How long it took, from the workflow's clock (0 when not run).
    pub duration_ms: u64,
    /// The run of the child agent this call started, when its tool is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<ChildEntry>>,
}

/// A child agent's run, started by a call as a child workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildEntry {
    /// The tool name the child was called by.
    pub agent: String,
    /// The child workflow's id (its record, progress and waiting calls are
    /// read and decided there, as any run's).
    pub workflow_id: String,
    /// The child's run as it ended.
    pub record: RunRecord,
}

/// One step, as the workflow records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepEntry {
    /// 1-based step number.
    pub index: usize,
    /// Tokens this step's model call used.
    pub tokens: Usage,
    /// What the model said (the answer, on the last step).
    pub text: String,
    /// The step's calls, in order.
    pub calls: Vec<CallEntry>,
}

/// A call that waits for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitingEntry {
    /// The call.
    pub call: ToolCall,
    /// Why it waits.
    pub waiting: Waiting,
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It is being carried out.
    #[default]
    Running,
    /// Calls wait for a person's decision ([`RunRecord::waiting`]).
    Waiting,
    /// It ended ([`RunRecord::ended`]).
    Ended,
}

/// How a run ended, as data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum Ending {
    /// The model answered.
    Final(String),
    /// The step limit was reached without an answer.
    OutOfSteps,
    /// The token budget was spent before an answer.
    OverBudget,
    /// The model step failed (after its retries).
    ModelError(String),
}

impl Ending {
    /// How the run ended, in one word: the same as [`Outcome::kind`].
    pub fn kind(&self) -> &'static str {
        match self {
            Ending::Final(_) => "final",
            Ending::OutOfSteps => "out_of_steps",
            Ending::OverBudget => "over_budget",
            Ending::ModelError(_) => "model_error",
        }
    }
}

/// A run as it stands: the workflow's query, and (ended) its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RunRecord {
    /// Where it stands.
    pub status: Status,
    /// Its steps so far.
    pub steps: Vec<StepEntry>,
    /// Tokens spent so far.
    pub usage: Usage,
    /// Calls waiting for a person.
    pub waiting: Vec<WaitingEntry>,
    /// The conversation so far, tool results included.
    pub messages: Vec<Message>,
    /// How it ended, once it has.
    pub ended: Option<Ending>,
}

impl RunRecord {
    /// The answer, or a short description of how the run ended (as
    /// [`RunOutcome::text`] says it); empty while it runs.
    pub fn text(&self) -> String {
        self.ended
            .as_ref()
            .map(|_| self.outcome().text())
            .unwrap_or_default()
    }

    /// The same [`RunOutcome`] an in-process [`Agent::run`](agentry_agent::Agent::run)
    /// gives. A run still under way reads as waiting for its calls (or with
    /// no calls, as waiting for nothing).
    pub fn outcome(&self) -> RunOutcome {
        let outcome = match &self.ended {
            Some(Ending::Final(text)) => Outcome::Final(text.clone()),
            Some(Ending::OutOfSteps) => Outcome::OutOfSteps,
            Some(Ending::OverBudget) => Outcome::OverBudget,
            Some(Ending::ModelError(message)) => {
                Outcome::ModelError(ModelError::Transport(message.clone()))
            }
            None => Outcome::AwaitingDecision(
                self.waiting
                    .iter()
                    .map(|entry| agentry_agent::durable::WaitingCall {
                        call: entry.call.clone(),
                        waiting: entry.waiting,
                    })
                    .collect(),
            ),
        };
        RunOutcome {
            outcome,
            usage: self.usage,
            steps: self.steps.iter().map(StepEntry::record).collect(),
            messages: self.messages.clone(),
            relevance: None,
            agent: None,
            handoffs: Vec::new(),
        }
    }
}

impl StepEntry {
    /// The step as an in-process run records it.
    pub fn record(&self) -> StepRecord {
        StepRecord {
            index: self.index,
            tokens: self.tokens,
            text: self.text.clone(),
            calls: self
                .calls
                .iter()
                .map(|entry| CallRecord {
                    call: entry.call.clone(),
                    result: entry.result.clone(),
                    duration: Duration::from_millis(entry.duration_ms),
                    child: entry.child.as_ref().map(|child| {
                        Box::new(ChildRun {
                            agent: child.agent.clone(),
                            outcome: child.record.outcome().outcome,
                            usage: child.record.usage,
                            steps: child.record.steps.iter().map(StepEntry::record).collect(),
                        })
                    }),
                })
                .collect(),
        }
    }
}

impl DecideInput {
    /// Refuse a decision larger than [`MAX_DECISION_BYTES`] (a deny's reason
    /// goes to the model, an edit's input to the tool).
    pub fn checked(&self) -> Result<(), String> {
        let size = serde_json::to_string(&self.decision).map_or(usize::MAX, |json| json.len());
        if size > MAX_DECISION_BYTES {
            return Err(format!(
                "the decision is {size} bytes; at most {MAX_DECISION_BYTES} are taken"
            ));
        }
        Ok(())
    }
}

/// A person's decision on a waiting call: the workflow's update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecideInput {
    /// The waiting call's id.
    pub call_id: String,
    /// Approve, deny (with the reason the model reads) or edit.
    pub decision: Decision,
}

/// What the model has said so far in the step under way: the side channel
/// of a run's text, carried in the model-step activity's heartbeats (token
/// deltas do not belong in the workflow's history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Progress {
    /// The step under way, from 1.
    pub step: usize,
    /// Its text so far.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ending_has_the_kind_of_the_outcome_it_reads_as() {
        for ending in [
            Ending::Final("5".into()),
            Ending::OutOfSteps,
            Ending::OverBudget,
            Ending::ModelError("reset".into()),
        ] {
            let record = RunRecord {
                ended: Some(ending.clone()),
                ..RunRecord::default()
            };
            assert_eq!(ending.kind(), record.outcome().outcome.kind());
        }
    }
}
