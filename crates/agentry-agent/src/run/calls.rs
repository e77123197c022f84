//! Carrying out a tool step's calls: run, refused, or left waiting for a
//! person, each recorded, audited and written to the journal of a durable
//! run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use tracing::Instrument;

use super::{Frame, emit};
use crate::agent::Agent;
use crate::child::CallScope;
use crate::durable::{OpenStep, RunEntry, WaitingCall};
use crate::events::{AgentEvent, EventSink};
use crate::outcome::{CallRecord, Outcome, StepRecord};
use crate::policy::{AuditOutcome, AuditRecord, arguments_digest};
use crate::run_tools::RunTools;
use agentry_core::tool::{ToolCall, ToolResult};

/// What became of one call.
enum Executed {
    /// It ran, or was refused: its result goes back to the model (withheld
    /// where a tool-result guardrail tripped, which ends the run).
    Done(CallRecord, Option<crate::GuardrailTripped>),
    /// It waits for a person's decision (durable runs only).
    Waiting(WaitingCall),
}

impl Agent {
    /// Run the calls of a tool step that have no result yet. Child agents
    /// charge the budget themselves, as they go; a step that spent past the
    /// budget gets no tool run at all. `Err` when the run must stop here:
    /// calls wait for a person, or the journal failed.
    pub(super) async fn carry_out(
        &self,
        run_tools: &RunTools,
        frame: &Frame,
        mut step: OpenStep,
        sink: Option<&EventSink>,
    ) -> Result<StepRecord, Outcome> {
        let spend = &frame.spend;
        let limit = self.settings.max_calls_per_step;
        let n = step.step;
        let (pending, extra) = unfinished_calls(&step, limit);
        let mut records = Vec::new();
        let mut waiting = Vec::new();
        let mut tripped = None;
        if spend.within_budget() {
            for executed in self.execute(run_tools, frame, pending, sink, n).await {
                match executed {
                    Executed::Done(record, trip) => {
                        records.push(record);
                        tripped = tripped.or(trip);
                    }
                    Executed::Waiting(call) => waiting.push(call),
                }
            }
            let reason = format!("a step may make at most {limit} tool calls; make fewer at once");
            records.extend(self.refuse(frame, extra, &reason, sink, n).await);
        } else {
            let spent = spend.usage().total();
            let reason = format!("the token budget is spent ({spent} tokens used)");
            let (interrupted, fresh): (Vec<_>, Vec<_>) = pending
                .into_iter()
                .partition(|(_, interrupted)| *interrupted);
            let calls = fresh.into_iter().map(|(call, _)| call).chain(extra);
            records.extend(self.refuse(frame, calls.collect(), &reason, sink, n).await);
            // It was started before: it may have had its effect.
            let again = format!(
                "{reason}; it was started before the run stopped and may already have had its effect"
            );
            let calls = interrupted.into_iter().map(|(call, _)| call).collect();
            records.extend(self.refuse(frame, calls, &again, sink, n).await);
        }
        if let Some(durable) = frame.durable.as_deref() {
            if let Some(error) = durable.failure() {
                return Err(Outcome::JournalFailed(error));
            }
            for call in &waiting {
                if step.waiting.get(&call.call.id) == Some(&call.waiting) {
                    continue; // already written down, still waiting
                }
                let entry = RunEntry::AwaitingDecision {
                    call_id: call.call.id.clone(),
                    waiting: call.waiting,
                };
                if let Err(error) = durable.write(entry).await {
                    return Err(Outcome::JournalFailed(error));
                }
            }
        }
        for record in records {
            step.finished.insert(record.call.id.clone(), record);
        }
        if let Some(tripped) = tripped {
            return Err(Outcome::GuardrailTripped(tripped));
        }
        if !waiting.is_empty() {
            return Err(Outcome::AwaitingDecision(waiting));
        }
        Ok(step.into_record())
    }

    /// Run one step's calls: all at once when every tool involved is
    /// concurrency-safe, one after another otherwise (then a call that
    /// waits for a person holds back the calls after it). Results keep call
    /// order. Each call comes with whether a process already started it.
    async fn execute(
        &self,
        run_tools: &RunTools,
        frame: &Frame,
        calls: Vec<(ToolCall, bool)>,
        sink: Option<&EventSink>,
        step: usize,
    ) -> Vec<Executed> {
        let parallel = calls.len() > 1
            && calls.iter().all(|(call, _)| {
                run_tools
                    .toolbox
                    .find_for_call(&call.name)
                    .is_some_and(|tool| tool.hints.concurrency_safe)
            });
        let one = |(call, interrupted)| async move {
            let executed = self.execute_one(run_tools, frame, call, interrupted).await;
            if let Executed::Done(record, _) = &executed {
                emit(sink, || AgentEvent::ToolResult {
                    step,
                    record: record.clone(),
                });
            }
            executed
        };
        if parallel {
            join_all(calls.into_iter().map(one)).await
        } else {
            let mut done = Vec::with_capacity(calls.len());
            for call in calls {
                let executed = one(call).await;
                let waits = matches!(executed, Executed::Waiting(_));
                done.push(executed);
                if waits {
                    break;
                }
            }
            done
        }
    }

    /// Results for calls that are not run (past the budget, past the
    /// per-step limit), each recorded and audited as denied for `reason`.
    async fn refuse(
        &self,
        frame: &Frame,
        calls: Vec<ToolCall>,
        reason: &str,
        sink: Option<&EventSink>,
        step: usize,
    ) -> Vec<CallRecord> {
        let mut records = Vec::with_capacity(calls.len());
        for call in calls {
            let outcome = AuditOutcome::Denied(reason.to_owned());
            let result = ToolResult::error(call.id.clone(), format!("not run: {reason}"));
            let record = self
                .finish(frame, call, result, outcome, Duration::ZERO, None)
                .await;
            emit(sink, || AgentEvent::ToolResult {
                step,
                record: record.clone(),
            });
            records.push(record);
        }
        records
    }

    async fn execute_one(
        &self,
        run_tools: &RunTools,
        frame: &Frame,
        call: ToolCall,
        interrupted: bool,
    ) -> Executed {
        let span = crate::telemetry::tool_span(&call);
        let started = Instant::now();
        let scope = Arc::new(CallScope::new(frame));
        let gated = self
            .admit(run_tools, frame, &scope, &call, interrupted)
            .instrument(span.clone())
            .await;
        let (ran, result, outcome) = match gated {
            Ok(ran) => ran,
            Err(waiting) => return Executed::Waiting(WaitingCall { call, waiting }),
        };
        // Before the audit, the journal and the model see it.
        let (result, tripped) = self.guard_result(run_tools, &ran, result).await;
        crate::telemetry::end_tool(&span, &result);
        let child = scope.take_child().map(Box::new);
        let record = self
            .finish(frame, ran, result, outcome, started.elapsed(), child)
            .await;
        Executed::Done(record, tripped)
    }

    /// A call's record, audited, and written to the journal of a durable run.
    async fn finish(
        &self,
        frame: &Frame,
        call: ToolCall,
        result: ToolResult,
        outcome: AuditOutcome,
        duration: Duration,
        child: Option<Box<crate::outcome::ChildRun>>,
    ) -> CallRecord {
        if let Some(audit) = &self.settings.audit {
            audit.record(AuditRecord {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments_digest: arguments_digest(&call),
                outcome,
                duration,
            });
        }
        if let Some(durable) = frame.durable.as_deref() {
            let entry = RunEntry::CallFinished {
                result: result.clone(),
                duration_ms: duration.as_millis() as u64,
                child_usage: child.as_ref().map(|child| child.usage),
            };
            // A failure is kept by the journal and stops the run after this step.
            let _ = durable.write(entry).await;
        }
        CallRecord {
            call,
            result,
            duration,
            child,
        }
    }
}

/// The calls of `step` that have no result yet, in order: those among its
/// first `limit` calls, each with whether a process already started it, and
/// those past the limit.
fn unfinished_calls(step: &OpenStep, limit: usize) -> (Vec<(ToolCall, bool)>, Vec<ToolCall>) {
    let mut pending: Vec<(ToolCall, bool)> = Vec::new();
    let mut extra = Vec::new();
    for (at, call) in step.calls.iter().enumerate() {
        if step.finished.contains_key(&call.id) {
            continue;
        }
        // A call a process started runs again (if it may) with the
        // input it was started with: a person's edit, say.
        let mut call = call.clone();
        let interrupted = match step.started.get(&call.id) {
            Some(input) => {
                call.input = input.clone();
                true
            }
            None => false,
        };
        if at < limit {
            pending.push((call, interrupted));
        } else {
            extra.push(call);
        }
    }
    (pending, extra)
}
