//! Reading a run back from its journal: the conversation and steps so far,
//! the step whose calls are not all finished, the decisions people made,
//! and whether it has ended ([`Replay`]); and the [`RunStatus`] shown to
//! people.

use std::collections::HashMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::outcome::{CallRecord, StepRecord};
use agentry_core::journal::{Decision, RunEntry, Waiting};
use agentry_core::model::{Message, Usage};
use agentry_core::tool::{ToolCall, ToolResult};

/// A tool step whose calls are not all finished.
#[derive(Debug, Clone)]
pub(crate) struct OpenStep {
    pub step: usize,
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub tokens: Usage,
    /// Finished calls, by id.
    pub finished: HashMap<String, CallRecord>,
    /// Calls started and not finished, with the input they ran with.
    pub started: HashMap<String, Value>,
    /// Calls waiting for a person's decision.
    pub waiting: HashMap<String, Waiting>,
}

impl OpenStep {
    pub fn new(step: usize, text: String, calls: Vec<ToolCall>, tokens: Usage) -> Self {
        Self {
            step,
            text,
            calls,
            tokens,
            finished: HashMap::new(),
            started: HashMap::new(),
            waiting: HashMap::new(),
        }
    }

    /// Every call has its result.
    pub(crate) fn is_complete(&self) -> bool {
        self.calls
            .iter()
            .all(|call| self.finished.contains_key(&call.id))
    }

    /// The step's record, calls in the model's order.
    pub(crate) fn into_record(mut self) -> StepRecord {
        let calls = self
            .calls
            .iter()
            .map(|call| {
                self.finished
                    .remove(&call.id)
                    .unwrap_or_else(|| CallRecord {
                        call: call.clone(),
                        result: ToolResult::error(call.id.clone(), "not run"),
                        duration: Duration::ZERO,
                        child: None,
                    })
            })
            .collect();
        StepRecord {
            index: self.step,
            tokens: self.tokens,
            text: self.text,
            calls,
        }
    }
}

/// A run read back from its journal.
#[derive(Debug, Clone, Default)]
pub(crate) struct Replay {
    /// The conversation as of the last finished step (and the open step's
    /// assistant message).
    pub messages: Vec<Message>,
    /// The system prompt the run started with.
    pub system: Option<String>,
    /// The conversation the run started with (its tools are prepared from
    /// it); `None` for a fresh run, whose `messages` are that.
    pub started: Option<Vec<Message>>,
    /// Finished steps.
    pub steps: Vec<StepRecord>,
    /// Tokens of every recorded step.
    pub usage: Usage,
    /// The step being carried out, when its calls are not all finished.
    pub open: Option<OpenStep>,
    /// Decisions not yet carried out, by call id.
    pub decisions: HashMap<String, Decision>,
    /// Decisions to repeat for a tool's later calls, by tool name.
    pub remembered: HashMap<String, Decision>,
    /// How it ended: (outcome, detail).
    pub ended: Option<(String, String)>,
    /// How many entries the journal holds: the next entry's number.
    pub entries: u64,
    /// Steps taken before the agent with the floor had it (by agents that
    /// handed off to it).
    pub before: usize,
    /// The run's handoffs.
    pub handoffs: Vec<crate::HandoffRecord>,
    /// The agent with the floor, when a handoff gave it to another than the
    /// run's first agent.
    pub floor: Option<String>,
}

impl Replay {
    /// Fold `entries` (in order) into where the run stands.
    pub(crate) fn from_entries(entries: Vec<RunEntry>) -> Self {
        let mut replay = Replay {
            entries: entries.len() as u64,
            ..Replay::default()
        };
        let mut tools: HashMap<String, String> = HashMap::new();
        for entry in entries {
            match entry {
                RunEntry::Started {
                    messages, system, ..
                } => {
                    replay.started = Some(messages.clone());
                    replay.messages = messages;
                    replay.system = system;
                }
                RunEntry::Answer { step, text, tokens } => {
                    replay.close_open();
                    replay.usage += tokens;
                    replay.messages.push(Message::assistant(text.clone()));
                    replay.ended = Some(("final".to_owned(), text.clone()));
                    replay.steps.push(StepRecord {
                        index: step,
                        tokens,
                        text,
                        calls: Vec::new(),
                    });
                }
                RunEntry::ToolStep {
                    step,
                    text,
                    calls,
                    tokens,
                } => {
                    replay.close_open();
                    // Decisions are on the open step's calls; a call id of
                    // a new step may repeat an earlier one's.
                    replay.decisions.clear();
                    replay.usage += tokens;
                    for call in &calls {
                        tools.insert(call.id.clone(), call.name.clone());
                    }
                    replay.messages.push(Message::Assistant {
                        text: text.clone(),
                        tool_calls: calls.clone(),
                    });
                    replay.open = Some(OpenStep::new(step, text, calls, tokens));
                }
                RunEntry::CallStarted { call_id, input } => {
                    // A decision is carried out once its call starts.
                    replay.decisions.remove(&call_id);
                    if let Some(open) = &mut replay.open {
                        open.waiting.remove(&call_id);
                        open.started.insert(call_id, input);
                    }
                }
                RunEntry::CallFinished {
                    result,
                    duration_ms,
                    child_usage,
                } => {
                    replay.usage += child_usage.unwrap_or_default();
                    replay.decisions.remove(&result.id);
                    if let Some(open) = &mut replay.open {
                        open.waiting.remove(&result.id);
                        let input = open.started.remove(&result.id);
                        if let Some(call) = open.calls.iter().find(|c| c.id == result.id) {
                            let mut call = call.clone();
                            if let Some(input) = input {
                                call.input = input;
                            }
                            open.finished.insert(
                                result.id.clone(),
                                CallRecord {
                                    call,
                                    result,
                                    duration: Duration::from_millis(duration_ms),
                                    child: None,
                                },
                            );
                        }
                    }
                }
                RunEntry::AwaitingDecision { call_id, waiting } => {
                    if let Some(open) = &mut replay.open {
                        open.waiting.insert(call_id, waiting);
                    }
                }
                RunEntry::Decided {
                    call_id,
                    decision,
                    remember,
                } => {
                    if remember && let Some(tool) = tools.get(&call_id) {
                        // An edit was for its call's input; remembered, it approves.
                        let repeated = match &decision {
                            Decision::Edit { .. } => Decision::Approve,
                            other => other.clone(),
                        };
                        replay.remembered.insert(tool.clone(), repeated);
                    }
                    replay.decisions.insert(call_id, decision);
                }
                RunEntry::HandedOff {
                    step,
                    from,
                    to,
                    reason,
                    messages,
                } => {
                    replay.close_open();
                    replay.handoffs.push(crate::HandoffRecord {
                        from,
                        to: to.clone(),
                        reason,
                        step,
                    });
                    replay.before = replay.steps.len();
                    replay.floor = Some(to);
                    // The agent handed to starts from what it was given,
                    // with its own system prompt and tools.
                    replay.started = Some(messages.clone());
                    replay.messages = messages;
                    replay.system = None;
                    replay.decisions.clear();
                }
                RunEntry::Ended { outcome, detail } => replay.ended = Some((outcome, detail)),
            }
        }
        if replay.open.as_ref().is_some_and(OpenStep::is_complete) {
            replay.close_open();
        }
        replay
    }

    /// Finish the open step: its record, and its results in the conversation.
    fn close_open(&mut self) {
        if let Some(open) = self.open.take() {
            let record = open.into_record();
            self.messages.extend(
                record
                    .calls
                    .iter()
                    .map(|record| Message::tool(record.result.clone())),
            );
            self.steps.push(record);
        }
    }

    /// Where the run stands, for people.
    pub fn status(&self) -> RunStatus {
        if let Some((outcome, detail)) = &self.ended {
            return RunStatus::Ended {
                outcome: outcome.clone(),
                detail: detail.clone(),
            };
        }
        let waiting: Vec<WaitingCall> = self
            .open
            .iter()
            .flat_map(|open| {
                open.calls.iter().filter_map(|call| {
                    let why = *open.waiting.get(&call.id)?;
                    let decided = self.decisions.contains_key(&call.id)
                        || (why == Waiting::Approval && self.remembered.contains_key(&call.name));
                    if decided {
                        return None;
                    }
                    // An interrupted call is shown with the input it ran with.
                    let mut call = call.clone();
                    if let Some(input) = open.started.get(&call.id) {
                        call.input = input.clone();
                    }
                    Some(WaitingCall { call, waiting: why })
                })
            })
            .collect();
        if waiting.is_empty() {
            RunStatus::Incomplete
        } else {
            RunStatus::Waiting(waiting)
        }
    }
}

/// A call that waits for a person, and why.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct WaitingCall {
    /// The call as the model made it.
    pub call: ToolCall,
    /// Why it waits.
    pub waiting: Waiting,
}

/// Where a durable run stands, read from its journal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// It ended; resuming it changes nothing.
    Ended {
        /// `final`, `out_of_steps` or `over_budget`.
        outcome: String,
        /// The answer, or what went wrong.
        detail: String,
    },
    /// It stopped for these calls: each needs a decision (approve, deny or
    /// edit) before the run is resumed.
    Waiting(Vec<WaitingCall>),
    /// It has not ended: it is running in some process, or its process
    /// stopped; resume it to go on.
    Incomplete,
}
