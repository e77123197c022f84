//! The loop's decisions as a Temporal workflow ([`AgentWorkflow`]):
//! deterministic, with every effect an activity (the model's step, each
//! tool call) and every person's decision an update.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, ApplicationFailure, ChildWorkflowOptions, LocalActivityOptions,
    SyncWorkflowContext, WorkflowContext, WorkflowContextView, WorkflowResult, WorkflowTermination,
};

use crate::activities::AgentActivities;
use crate::wire::{
    CallEntry, CallInput, ChildEntry, ChildOf, DecideInput, Ending, Limits, PlanInput, RunInput,
    RunRecord, Status, StepEntry, TurnScope, WaitingEntry,
};
use agentry_agent::stepwise::{Admission, StepAt};
use agentry_core::journal::{Decision, Waiting};
use agentry_core::model::{Message, Step, Usage};
use agentry_core::tool::{Capabilities, ToolCall, ToolResult};

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

/// An agent run as a Temporal workflow. Its state is the run's record: the
/// conversation, the steps, the tokens spent and the calls that wait for a
/// person, rebuilt from the workflow's history on any worker.
#[workflow]
#[derive(Default)]
pub struct AgentWorkflow {
    record: RunRecord,
    /// Decisions people made on waiting calls, by call id, not yet used.
    decisions: HashMap<String, Decision>,
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
            max_depth: input
                .child_of
                .as_ref()
                .map_or(limits.max_depth, |of| of.max_depth),
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
                        let result = if !within(usage, &scope.limits) {
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

/// Whether the run is still within its token budget.
fn within(usage: Usage, input: &Limits) -> bool {
    usage.total() <= input.token_budget
}

fn refused(call: &ToolCall, message: String) -> CallEntry {
    CallEntry {
        call: call.clone(),
        result: ToolResult::error(call.id.clone(), message),
        duration_ms: 0,
        child: None,
    }
}

/// What a run's activities and children need to know of it.
struct Scope {
    /// The conversation it started with.
    started: Vec<Message>,
    /// The child agent carrying it out (`None`: the worker's own).
    agent: Option<String>,
    /// For a child's run, its parent's grants.
    within: Option<Capabilities>,
    /// Its limits, lowered by its input.
    limits: Limits,
    /// How deep it is nested (0 for a run of the worker's own agent).
    depth: usize,
    /// How deep agents may nest under the outermost run.
    max_depth: usize,
    /// A chat turn's system prompt and context, for a turn's run.
    turn: Option<TurnScope>,
}

/// One call through the agent's gate: refused, run, or run once a person
/// decides. A call whose tool is not idempotent and whose activity failed
/// (its worker died, its time ran out) may have had its effect: it is not
/// run again without a person's say.
async fn admit(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    scope: &Scope,
    mut call: ToolCall,
    admission: Admission,
    slot: (usize, usize),
) -> CallEntry {
    let (idempotent, timeout_ms) = match admission {
        Admission::Refused { message } => return refused(&call, message),
        Admission::Run {
            idempotent,
            timeout_ms,
        } => (idempotent, timeout_ms),
        Admission::NeedsApproval {
            idempotent,
            timeout_ms,
        } => {
            match wait_for_decision(ctx, &call, Waiting::Approval).await {
                Decision::Approve => {}
                Decision::Edit { input } => call.input = input,
                Decision::Deny { reason } => {
                    return refused(
                        &call,
                        format!("tool \"{}\" was not approved: {reason}", call.name),
                    );
                }
            }
            (idempotent, timeout_ms)
        }
    };
    if scope.limits.children.contains(&call.name) {
        return run_child(ctx, scope, call, slot).await;
    }
    loop {
        let began = ctx.workflow_time();
        let input = CallInput {
            started: scope.started.clone(),
            call: call.clone(),
            agent: scope.agent.clone(),
            within: scope.within.clone(),
            turn: scope.turn.clone(),
        };
        let ran = ctx
            .execute_activity(
                AgentActivities::call_tool,
                input,
                tool_options(idempotent, timeout_ms),
            )
            .await;
        let duration_ms = elapsed_ms(began, ctx.workflow_time());
        match ran {
            Ok(result) => {
                return CallEntry {
                    call,
                    result,
                    duration_ms,
                    child: None,
                };
            }
            Err(error) if idempotent => {
                let message = format!("the tool could not be run: {}", failure_text(&error));
                return CallEntry {
                    result: ToolResult::error(call.id.clone(), message),
                    call,
                    duration_ms,
                    child: None,
                };
            }
            Err(_) => match wait_for_decision(ctx, &call, Waiting::Interrupted).await {
                Decision::Approve => {}
                Decision::Edit { input } => call.input = input,
                Decision::Deny { reason } => {
                    let message = format!(
                        "not run again: {reason}; it was started before and may already have had its effect"
                    );
                    return refused(&call, message);
                }
            },
        }
    }
}

/// A call to a child agent, as a child workflow: the child's own run, with
/// what its parent has left of the token budget, at most the parent's
/// grants, one level deeper. Its answer is the call's result (anything else
/// is an error result, worded as in an in-process run); what it spent counts
/// against the parent's budget. Its workflow id is the parent's, then
/// `/step-N-call-M`.
async fn run_child(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    scope: &Scope,
    call: ToolCall,
    (step, at): (usize, usize),
) -> CallEntry {
    let name = call.name.clone();
    let depth = scope.depth + 1;
    if depth > scope.max_depth {
        let message = format!(
            "tool \"{name}\" failed: agent \"{name}\" was not started: agents may nest only {} deep",
            scope.max_depth
        );
        return refused(&call, message);
    }
    let Some(task) = call.input.get("task").and_then(Value::as_str) else {
        let message = format!(
            "tool \"{name}\" needs {{\"task\": \"…\"}}: the whole task for this agent, as a string"
        );
        return refused(&call, message);
    };
    let usage = ctx.state(|s| s.record.usage);
    let input = RunInput {
        messages: vec![Message::user(task)],
        max_steps: None,
        token_budget: Some(scope.limits.token_budget.saturating_sub(usage.total())),
        child_of: Some(ChildOf {
            agent: name.clone(),
            grants: scope.limits.grants.clone(),
            depth,
            max_depth: scope.max_depth,
        }),
        turn: None,
    };
    let id = format!("{}/step-{step}-call-{}", ctx.workflow_id(), at + 1);
    let options = ChildWorkflowOptions::builder()
        .workflow_id(id.clone())
        .static_summary(format!("child agent {name}"))
        .build();
    ctx.set_current_details(format!("waiting for child agent \"{name}\": workflow {id}"));
    let began = ctx.workflow_time();
    let input = serde_json::to_value(&input).unwrap_or_default();
    let ended = match ctx
        .start_child_workflow(AgentWorkflow::run, input, options)
        .await
    {
        Ok(child) => child.result().await.map_err(|e| child_failure(&e)),
        Err(e) => Err(e.to_string()),
    };
    ctx.set_current_details(String::new());
    let duration_ms = elapsed_ms(began, ctx.workflow_time());
    match ended {
        Ok(record) => {
            ctx.state_mut(|s| s.record.usage += record.usage);
            let result = match &record.ended {
                Some(Ending::Final(text)) => {
                    ToolResult::ok(call.id.clone(), Value::String(text.clone()))
                }
                _ => ToolResult::error(
                    call.id.clone(),
                    format!(
                        "tool \"{name}\" failed: agent \"{name}\" did not answer: {}",
                        record.text()
                    ),
                ),
            };
            CallEntry {
                call,
                result,
                duration_ms,
                child: Some(Box::new(ChildEntry {
                    agent: name,
                    workflow_id: id,
                    record,
                })),
            }
        }
        Err(reason) => CallEntry {
            result: ToolResult::error(
                call.id.clone(),
                format!("tool \"{name}\" failed: agent \"{name}\" did not answer: {reason}"),
            ),
            call,
            duration_ms,
            child: None,
        },
    }
}

/// Record `call` as waiting, wait for a person's decision, and take it.
async fn wait_for_decision(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    call: &ToolCall,
    waiting: Waiting,
) -> Decision {
    ctx.state_mut(|s| {
        s.record.waiting.push(WaitingEntry {
            call: call.clone(),
            waiting,
        });
        s.record.status = Status::Waiting;
    });
    // What Temporal's UI shows for the run while it waits.
    let why = match waiting {
        Waiting::Approval => "needs approval",
        Waiting::Interrupted => "was started and never finished; it may have had its effect",
    };
    let mut input = call.input.to_string();
    if input.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|&i| input.is_char_boundary(i))
            .unwrap_or(0);
        input.truncate(cut);
        input.push('…');
    }
    ctx.set_current_details(format!(
        "waiting for a person: call {} {}({input}) {why}; the `decide` update approves, denies or edits it",
        call.id, call.name
    ));
    let id = call.id.clone();
    // The run is cancelled or ends otherwise; a decision always comes first here.
    let _ = ctx.wait_condition(|s| s.decisions.contains_key(&id)).await;
    ctx.set_current_details(String::new());
    ctx.state_mut(|s| {
        s.record.waiting.retain(|w| w.call.id != id);
        if s.record.waiting.is_empty() {
            s.record.status = Status::Running;
        }
        s.decisions.remove(&id).unwrap_or(Decision::Deny {
            reason: "no decision".into(),
        })
    })
}

fn elapsed_ms(began: Option<SystemTime>, ended: Option<SystemTime>) -> u64 {
    match (began, ended) {
        (Some(began), Some(ended)) => ended
            .duration_since(began)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        _ => 0,
    }
}

fn failure_text(error: &temporalio_sdk::ActivityExecutionError) -> String {
    failure_chain(error.failure(), || error.to_string())
}

fn child_failure(error: &temporalio_sdk::ChildWorkflowExecutionError) -> String {
    failure_chain(error.failure(), || error.to_string())
}

fn failure_chain(
    failure: Option<&temporalio_common::protos::temporal::api::failure::v1::Failure>,
    otherwise: impl FnOnce() -> String,
) -> String {
    match failure {
        Some(failure) => {
            let mut text = failure.message.clone();
            let mut cause = failure.cause.as_deref();
            while let Some(inner) = cause {
                if !inner.message.is_empty() {
                    text = format!("{text}: {}", inner.message);
                }
                cause = inner.cause.as_deref();
            }
            text
        }
        None => otherwise(),
    }
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

fn tool_options(idempotent: bool, timeout_ms: Option<u64>) -> ActivityOptions {
    let limit = timeout_ms
        .map(Duration::from_millis)
        .unwrap_or(TOOL_TIMEOUT);
    let attempts = if idempotent { ATTEMPTS } else { 1 };
    ActivityOptions::with_start_to_close_timeout(limit + HEARTBEAT_TIMEOUT)
        .heartbeat_timeout(HEARTBEAT_TIMEOUT)
        .retry_policy(RetryPolicy::builder().maximum_attempts(attempts).build())
        .build()
}
