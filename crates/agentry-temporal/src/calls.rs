//! One call of a run's step, as the workflow carries it out: through the
//! agent's admission (refused, run, or run once a person decides), as an
//! activity, or, for a registered child agent, as a child workflow.

use std::time::{Duration, SystemTime};

use serde_json::Value;
use temporalio_common::RetryPolicy;
use temporalio_sdk::{ActivityOptions, ChildWorkflowOptions, WorkflowContext};

use crate::activities::AgentActivities;
use crate::wire::{
    CallEntry, CallInput, ChildEntry, ChildOf, Ending, Limits, RunInput, RunRecord, Status,
    TurnScope, WaitingEntry,
};
use crate::workflow::{
    ATTEMPTS, AgentWorkflow, HEARTBEAT_TIMEOUT, MAX_TOOL_RESULT_BYTES, TOOL_TIMEOUT, json_size,
};
use agentry_agent::stepwise::Admission;
use agentry_core::journal::{Decision, Waiting};
use agentry_core::model::Message;
use agentry_core::tool::{Capabilities, ToolCall, ToolResult};

pub(crate) fn refused(call: &ToolCall, message: String) -> CallEntry {
    CallEntry {
        call: call.clone(),
        result: ToolResult::error(call.id.clone(), message),
        duration_ms: 0,
        child: None,
    }
}

/// What a run's activities and children need to know of it.
pub(crate) struct Scope {
    /// The conversation it started with.
    pub(crate) started: Vec<Message>,
    /// The child agent carrying it out (`None`: the worker's own).
    pub(crate) agent: Option<String>,
    /// For a child's run, its parent's grants.
    pub(crate) within: Option<Capabilities>,
    /// Its limits, lowered by its input.
    pub(crate) limits: Limits,
    /// How deep it is nested (0 for a run of the worker's own agent).
    pub(crate) depth: usize,
    /// How deep agents may nest under the outermost run.
    pub(crate) max_depth: usize,
    /// A chat turn's system prompt and context, for a turn's run.
    pub(crate) turn: Option<TurnScope>,
}

/// One call through the agent's gate: refused, run, or run once a person
/// decides. A call whose tool is not idempotent and whose activity failed
/// (its worker died, its time ran out) may have had its effect: it is not
/// run again without a person's say.
pub(crate) async fn admit(
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
                    record: within_room(record),
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

/// A child's record to keep in its parent's: whole when it is small, else
/// how it ended and what it spent (the whole is its own workflow's).
fn within_room(record: RunRecord) -> RunRecord {
    if json_size(&record) <= MAX_TOOL_RESULT_BYTES {
        return record;
    }
    RunRecord {
        status: record.status,
        usage: record.usage,
        ended: record.ended,
        ..RunRecord::default()
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

pub(crate) fn failure_text(error: &temporalio_sdk::ActivityExecutionError) -> String {
    failure_chain(error.failure(), || error.to_string())
}

fn child_failure(error: &temporalio_sdk::ChildWorkflowExecutionError) -> String {
    failure_chain(error.failure(), || error.to_string())
}

fn failure_chain(
    failure: Option<&temporalio_common::protos::temporal::api::failure::v1::Failure>,
    otherwise: impl FnOnce() -> String,
) -> String {
    let text = match failure {
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
    };
    // A cancelled activity's failure carries no message.
    match text.trim() {
        "" => "cancelled".to_owned(),
        text => text.to_owned(),
    }
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
