//! The loop's decisions as a Temporal workflow ([`AgentWorkflow`]):
//! deterministic, with every effect an activity (the model's step, each
//! tool call) and every person's decision an update.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, ApplicationFailure, LocalActivityOptions, SyncWorkflowContext,
    WorkflowContext, WorkflowContextView, WorkflowResult, WorkflowTermination,
};

use crate::activities::AgentActivities;
use crate::calls::{Scope, admit, failure_text, refused};
use crate::wire::{DecideInput, Ending, Limits, PlanInput, RunInput, RunRecord, Status, StepEntry};
use agentry_agent::stepwise::StepAt;
use agentry_core::journal::Decision;
use agentry_core::model::{Message, Step, Usage};

/// The workflow type agent runs have on the server (what `temporal
/// workflow list --query "WorkflowType = 'agentry.AgentRun'"` finds).
pub const WORKFLOW_TYPE: &str = "agentry.AgentRun";

/// The first change to the workflow's code, guarded with Temporal's
/// patching API: the agent's limits are read by a local activity (on the
/// worker, without a round trip through the server's task queue). Runs
/// started before it replay the remote activity their history holds.
pub const LIMITS_AS_LOCAL_ACTIVITY: &str = "agentry.limits-local";

/// Test hooks: this process's workflows behave as the code before every
/// patch did (`BEFORE_PATCHES`), or take every patched path without asking
/// the history (`UNGUARDED`, which breaks older runs: what the guard is for).
static BEFORE_PATCHES: AtomicBool = AtomicBool::new(false);
static UNGUARDED: AtomicBool = AtomicBool::new(false);

/// For upgrade tests only: make this process's workers run the workflow as
/// the version before every patch (`before`), or as new code that skips the
/// patch guards (`unguarded`). Process-wide.
#[doc(hidden)]
pub fn __workflow_version(before: bool, unguarded: bool) {
    BEFORE_PATCHES.store(before, Ordering::SeqCst);
    UNGUARDED.store(unguarded, Ordering::SeqCst);
}

/// Whether this run takes the code path of `patch`: new runs do (and record
/// it in their history); runs started before it do not.
fn uses_patch(ctx: &WorkflowContext<AgentWorkflow>, patch: &str) -> bool {
    if BEFORE_PATCHES.load(Ordering::SeqCst) {
        return false; // the old code never asked
    }
    UNGUARDED.load(Ordering::SeqCst) || ctx.patched(patch)
}

/// How long one model step may take before Temporal gives it to another
/// worker (a local model on two cores takes seconds; a long answer, minutes).
pub const MODEL_STEP_TIMEOUT: Duration = Duration::from_secs(600);
/// A tool's time limit when it has none of its own.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(300);
/// Activities report that they are alive this often; a worker that stops
/// reporting for [`HEARTBEAT_TIMEOUT`] has its activity given to another.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// See [`HEARTBEAT_EVERY`].
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);
/// Tries of a model step, and of an idempotent tool's call.
pub const ATTEMPTS: u32 = 3;
/// The most a run's record (its result, as JSON) and a model step's input
/// may grow to: Temporal refuses payloads past 2 MB, and a workflow that
/// cannot hand over its result stays stuck. A run near this ends, saying
/// so, and a call that could take it past is not run.
pub const MAX_RECORD_BYTES: usize = 1536 * 1024;
/// The most a tool's result may hold as JSON to cross Temporal; a larger
/// one reaches the model as an error result that says its size. (The
/// record holds each result twice: in the conversation and in its step.)
pub const MAX_TOOL_RESULT_BYTES: usize = 256 * 1024;
/// Room kept in the record for a model step's own text and calls.
const STEP_ROOM_BYTES: usize = 128 * 1024;

/// An agent run as a Temporal workflow. Its state is the run's record: the
/// conversation, the steps, the tokens spent and the calls that wait for a
/// person, rebuilt from the workflow's history on any worker.
#[workflow]
#[derive(Default)]
pub struct AgentWorkflow {
    pub(crate) record: RunRecord,
    /// Decisions people made on waiting calls, by call id, not yet used.
    pub(crate) decisions: HashMap<String, Decision>,
}

#[workflow_methods]
impl AgentWorkflow {
    /// Carry the run out: step until the model answers, the step limit or
    /// the token budget is reached, or the model step fails for good.
    #[run(name = WORKFLOW_TYPE)]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: serde_json::Value,
    ) -> WorkflowResult<RunRecord> {
        // Read here, not by the SDK: a malformed input fails the run at once
        // with what is wrong, instead of leaving it stuck as running.
        let input = RunInput::checked(input).map_err(|reason| {
            WorkflowTermination::failed_application(ApplicationFailure::non_retryable(reason))
        })?;
        let started = input.messages.clone();
        ctx.state_mut(|s| s.record.messages = input.messages.clone());
        let limits = match &input.child_of {
            Some(of) => {
                ctx.execute_local_activity(
                    AgentActivities::child_limits,
                    of.clone(),
                    local_options(),
                )
                .await?
            }
            None if uses_patch(ctx, LIMITS_AS_LOCAL_ACTIVITY) => {
                ctx.execute_local_activity(AgentActivities::limits, (), local_options())
                    .await?
            }
            None => {
                ctx.execute_activity(AgentActivities::limits, (), quick_options())
                    .await?
            }
        };
        let scope = Scope {
            agent: input.child_of.as_ref().map(|of| of.agent.clone()),
            within: input.child_of.as_ref().map(|of| of.grants.clone()),
            depth: input.child_of.as_ref().map_or(0, |of| of.depth),
            // Never deeper than the worker's own agent allows, whatever the
            // input says.
            max_depth: input
                .child_of
                .as_ref()
                .map_or(limits.max_depth, |of| of.max_depth.min(limits.max_depth)),
            limits: limits.lowered(&input),
            turn: input.turn.clone(),
            started,
        };
        let mut tool_rounds = 0;
        let ending = loop {
            let (index, usage) = ctx.state(|s| (s.record.steps.len() + 1, s.record.usage));
            if index > scope.limits.max_steps {
                break if within(usage, &scope.limits) {
                    Ending::OutOfSteps
                } else {
                    Ending::OverBudget
                };
            }
            if !within(usage, &scope.limits) {
                break Ending::OverBudget;
            }
            let plan = PlanInput {
                started: scope.started.clone(),
                messages: ctx.state(|s| s.record.messages.clone()),
                at: StepAt { index, tool_rounds },
                agent: scope.agent.clone(),
                turn: scope.turn.clone(),
            };
            let size = ctx
                .state(|s| json_size(&s.record))
                .saturating_add(STEP_ROOM_BYTES)
                .max(json_size(&plan));
            if size > MAX_RECORD_BYTES {
                break Ending::ModelError(format!(
                    "the model was not asked again: the run holds {size} bytes, and Temporal carries at most {MAX_RECORD_BYTES} of it"
                ));
            }
            let planned = ctx
                .execute_activity(AgentActivities::plan_step, plan, model_options())
                .await;
            let planned = match planned {
                Ok(planned) => planned,
                Err(error) => break Ending::ModelError(failure_text(&error)),
            };
            match planned.step {
                Step::Final { text, tokens } => {
                    ctx.state_mut(|s| {
                        s.record.usage += tokens;
                        s.record.messages.push(Message::assistant(text.clone()));
                        s.record.steps.push(StepEntry {
                            index,
                            tokens,
                            text: text.clone(),
                            calls: Vec::new(),
                        });
                    });
                    break Ending::Final(text);
                }
                Step::Tool {
                    calls,
                    text,
                    tokens,
                } => {
                    ctx.state_mut(|s| {
                        s.record.usage += tokens;
                        s.record.messages.push(Message::Assistant {
                            text: text.clone(),
                            tool_calls: calls.clone(),
                        });
                    });
                    let mut entries = Vec::new();
                    for (at, planned) in planned.calls.into_iter().enumerate() {
                        let call = planned.call;
                        let usage = ctx.state(|s| s.record.usage);
                        // Each result goes in twice: the conversation, the step.
                        let held = ctx.state(|s| json_size(&s.record))
                            + 2 * entries.iter().map(json_size).sum::<usize>();
                        let result = if held + 2 * MAX_TOOL_RESULT_BYTES > MAX_RECORD_BYTES {
                            refused(
                                &call,
                                format!(
                                    "not run: the run holds {held} bytes, and its result could take it past the {MAX_RECORD_BYTES} Temporal carries; answer with what you have"
                                ),
                            )
                        } else if !within(usage, &scope.limits) {
                            let reason = format!(
                                "the token budget is spent ({} tokens used)",
                                usage.total()
                            );
                            refused(&call, format!("not run: {reason}"))
                        } else if at >= scope.limits.max_calls_per_step {
                            let limit = scope.limits.max_calls_per_step;
                            refused(
                                &call,
                                format!(
                                    "not run: a step may make at most {limit} tool calls; make fewer at once"
                                ),
                            )
                        } else {
                            admit(ctx, &scope, call.clone(), planned.admission, (index, at)).await
                        };
                        entries.push(result);
                    }
                    ctx.state_mut(|s| {
                        for entry in &entries {
                            s.record.messages.push(Message::tool(entry.result.clone()));
                        }
                        s.record.steps.push(StepEntry {
                            index,
                            tokens,
                            text,
                            calls: entries,
                        });
                    });
                    tool_rounds += 1;
                }
            }
        };
        ctx.state_mut(|s| {
            s.record.status = Status::Ended;
            s.record.ended = Some(ending);
        });
        Ok(ctx.state(|s| s.record.clone()))
    }

    /// The run as it stands: steps, tokens, waiting calls, conversation.
    #[query]
    pub fn record(&self, _ctx: &WorkflowContextView) -> RunRecord {
        self.record.clone()
    }

    #[update_validator(decide)]
    fn validate_decide(
        &self,
        _ctx: &WorkflowContextView,
        input: &DecideInput,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if !self
            .record
            .waiting
            .iter()
            .any(|w| w.call.id == input.call_id)
        {
            return Err(format!("no call \"{}\" waits for a decision", input.call_id).into());
        }
        if self.decisions.contains_key(&input.call_id) {
            return Err(format!("call \"{}\" was decided already", input.call_id).into());
        }
        input.checked().map_err(Into::into)
    }

    /// A person's decision on a waiting call: approve, deny (the reason goes
    /// to the model) or edit (run with this input). Refused for a call that
    /// does not wait.
    #[update]
    pub fn decide(&mut self, _ctx: &mut SyncWorkflowContext<Self>, input: DecideInput) -> Status {
        self.decisions.insert(input.call_id, input.decision);
        self.record.status
    }
}

/// How large `value` is as JSON.
pub(crate) fn json_size(value: &impl serde::Serialize) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |json| json.len())
}

/// Whether the run is still within its token budget.
fn within(usage: Usage, input: &Limits) -> bool {
    usage.total() <= input.token_budget
}

fn local_options() -> LocalActivityOptions {
    LocalActivityOptions::builder()
        .start_to_close_timeout(Duration::from_secs(30))
        .retry_policy(RetryPolicy::builder().maximum_attempts(ATTEMPTS).build())
        .build()
}

fn quick_options() -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(30))
        .retry_policy(RetryPolicy::builder().maximum_attempts(ATTEMPTS).build())
        .build()
}

fn model_options() -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(MODEL_STEP_TIMEOUT)
        .heartbeat_timeout(HEARTBEAT_TIMEOUT)
        .retry_policy(RetryPolicy::builder().maximum_attempts(ATTEMPTS).build())
        .summary("model step".to_owned())
        .build()
}
