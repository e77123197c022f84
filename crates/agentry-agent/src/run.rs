//! The loop itself: ask the model for a step, pass each tool call
//! it makes through the gate, feed the results back, and stop at an answer,
//! at the step limit or past the token budget.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::future::join_all;
use tracing::{Instrument, field};

use super::agent::Agent;
use super::child::CallScope;
use super::durable::{Durable, OpenStep, Replay, RunEntry, WaitingCall};
use super::events::{AgentEvent, EventSink};
use super::outcome::{CallRecord, Outcome, RunOutcome, StepRecord};
use super::policy::{AuditOutcome, AuditRecord, arguments_digest};
use super::spend::Spend;
use crate::run_tools::RunTools;
use agentry_core::model::collect_step;
use agentry_core::model::{
    ChatModel, ChatRequest, Message, ModelError, Step, StreamEvent, ToolChoice,
};
use agentry_core::tool::{Capabilities, ToolCall, ToolContext, ToolResult};

/// Where in a tree of agents a run stands, and what it may spend and touch.
pub(crate) struct Frame {
    /// 0 for a run started by the program, parent's + 1 for a child agent.
    pub depth: usize,
    /// Deepest a child may be started at.
    pub max_depth: usize,
    /// What this run's tools may be granted (for a child: its own grants ∩ its parent's).
    pub grants: Capabilities,
    /// What this run (and the runs under it) spent, against its budget and
    /// every enclosing run's.
    pub spend: Arc<Spend>,
    /// The context tools get.
    pub context: ToolContext,
    /// The journal a durable run writes each step to.
    pub durable: Option<Arc<Durable>>,
}

impl Frame {
    /// The frame of a run the program starts.
    pub fn root(agent: &Agent) -> Self {
        Self {
            depth: 0,
            max_depth: agent.settings.max_depth,
            grants: agent.settings.grants.clone(),
            spend: Spend::root(agent.settings.token_budget),
            context: agent.settings.context.clone(),
            durable: None,
        }
    }
}

/// What became of one call.
enum Executed {
    /// It ran, or was refused: its result goes back to the model.
    Done(CallRecord),
    /// It waits for a person's decision (durable runs only).
    Waiting(WaitingCall),
}

impl Agent {
    /// Run the loop with `model` inside `frame`, sending events to `sink` when streaming.
    pub(crate) async fn run_frame(
        &self,
        model: &dyn ChatModel,
        frame: &Frame,
        messages: Vec<Message>,
        sink: Option<EventSink>,
    ) -> RunOutcome {
        let start = Replay {
            messages,
            ..Replay::default()
        };
        self.resume_frame(model, frame, start, sink).await
    }

    /// Run the loop from where `start` stands: a fresh conversation, or a
    /// durable run read back from its journal.
    pub(crate) async fn resume_frame(
        &self,
        model: &dyn ChatModel,
        frame: &Frame,
        start: Replay,
        sink: Option<EventSink>,
    ) -> RunOutcome {
        let span = tracing::info_span!(
            "invoke_agent",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.request.model = model.model_id(),
            agentry.depth = frame.depth,
            gen_ai.usage.input_tokens = field::Empty,
            gen_ai.usage.output_tokens = field::Empty,
        );
        let outcome = self
            .run_loop(model, frame, start, sink.as_ref())
            .instrument(span.clone())
            .await;
        span.record("gen_ai.usage.input_tokens", outcome.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", outcome.usage.output_tokens);
        outcome
    }

    async fn run_loop(
        &self,
        model: &dyn ChatModel,
        frame: &Frame,
        start: Replay,
        sink: Option<&EventSink>,
    ) -> RunOutcome {
        let settings = &self.settings;
        let Replay {
            mut messages,
            mut steps,
            open,
            started,
            ..
        } = start;
        // The run's tools come from the conversation it started with, also
        // when it is resumed (the conversation has grown since).
        let mut run_tools = {
            let started = started.as_deref().unwrap_or(&messages);
            let mut run_tools = RunTools::prepare(self, model, started).await;
            if settings.search_first {
                run_tools.search_first(self, started).await;
            }
            run_tools
        };
        let spend = &frame.spend;
        let durable = frame.durable.as_deref();
        let mut n = 0;
        let mut tool_rounds = 0;
        // The step before only loaded functions (discovery): now call one.
        let mut discovered = false;
        let end = |outcome, steps, messages| RunOutcome {
            outcome,
            usage: spend.usage(),
            steps,
            messages,
        };
        // A resumed run: what its finished steps made available, as they did.
        for step in &steps {
            n = step.index;
            if !step.calls.is_empty() {
                (discovered, tool_rounds) =
                    after_calls(self, &mut run_tools, &step.calls, tool_rounds).await;
            }
        }
        let mut open = open;
        loop {
            if let Some(step) = open.take() {
                n = step.step;
                let record = match self.carry_out(&run_tools, frame, step, sink).await {
                    Ok(record) => record,
                    Err(outcome) => return end(outcome, steps, messages),
                };
                (discovered, tool_rounds) =
                    after_calls(self, &mut run_tools, &record.calls, tool_rounds).await;
                messages.extend(record.calls.iter().map(|r| Message::tool(r.result.clone())));
                emit(sink, || AgentEvent::StepEnd {
                    step: record.clone(),
                });
                steps.push(record);
            }
            if n >= settings.max_steps || !spend.within_budget() {
                break;
            }
            n += 1;
            let tool_choice = match settings.max_tool_rounds {
                Some(limit) if tool_rounds >= limit => ToolChoice::None,
                _ if n == 1 => settings.first_tool_choice.clone(),
                _ if discovered => ToolChoice::Required,
                _ => ToolChoice::Auto,
            };
            let tool_choice = match tool_choice {
                ToolChoice::Auto if n == 1 => {
                    super::relevance::first_step_choice(settings, &run_tools.advertised, &messages)
                        .await
                }
                other => other,
            };
            let request = ChatRequest {
                system: run_tools.system.clone(),
                messages: messages.clone(),
                tools: run_tools.advertised.as_ref().clone(),
                tool_choice,
                max_tokens: settings.max_tokens,
                temperature: settings.temperature,
                response_format: settings.response_format.clone(),
                ..ChatRequest::default()
            };
            let step = match model_step(model, &request, sink, n).await {
                Ok(step) => step,
                Err(error) => return end(Outcome::ModelError(error), steps, messages),
            };
            spend.charge(step.tokens());
            match step {
                Step::Final { text, tokens } => {
                    if let Some(durable) = durable {
                        // The answer is the run's end: nothing is written after it.
                        let answer = RunEntry::Answer {
                            step: n,
                            text: text.clone(),
                            tokens,
                        };
                        if let Err(error) = durable.write(answer).await {
                            let outcome = Outcome::JournalFailed(error);
                            return end(outcome, steps, messages);
                        }
                    }
                    messages.push(Message::assistant(text.clone()));
                    let record = StepRecord {
                        index: n,
                        tokens,
                        text: text.clone(),
                        calls: Vec::new(),
                    };
                    emit(sink, || AgentEvent::StepEnd {
                        step: record.clone(),
                    });
                    steps.push(record);
                    return end(Outcome::Final(text), steps, messages);
                }
                Step::Tool {
                    calls,
                    text,
                    tokens,
                } => {
                    if let Some(durable) = durable {
                        let entry = RunEntry::ToolStep {
                            step: n,
                            text: text.clone(),
                            calls: calls.clone(),
                            tokens,
                        };
                        if let Err(error) = durable.write(entry).await {
                            let outcome = Outcome::JournalFailed(error);
                            return end(outcome, steps, messages);
                        }
                        // Decisions were on the last step's calls, whose ids
                        // this step's may repeat.
                        durable.new_step();
                    }
                    messages.push(Message::Assistant {
                        text: text.clone(),
                        tool_calls: calls.clone(),
                    });
                    for call in &calls {
                        emit(sink, || AgentEvent::ToolCall {
                            step: n,
                            call: call.clone(),
                        });
                    }
                    open = Some(OpenStep::new(n, text, calls, tokens));
                }
            }
        }
        let outcome = if spend.within_budget() {
            Outcome::OutOfSteps
        } else {
            Outcome::OverBudget
        };
        if let Some(durable) = durable {
            let ended = RunEntry::Ended {
                outcome: outcome.kind().into(),
                detail: String::new(),
            };
            if let Err(error) = durable.write(ended).await {
                return end(Outcome::JournalFailed(error), steps, messages);
            }
        }
        end(outcome, steps, messages)
    }

    /// Run the calls of a tool step that have no result yet. Child agents
    /// charge the budget themselves, as they go; a step that spent past the
    /// budget gets no tool run at all. `Err` when the run must stop here:
    /// calls wait for a person, or the journal failed.
    async fn carry_out(
        &self,
        run_tools: &RunTools,
        frame: &Frame,
        mut step: OpenStep,
        sink: Option<&EventSink>,
    ) -> Result<StepRecord, Outcome> {
        let spend = &frame.spend;
        let limit = self.settings.max_calls_per_step;
        let n = step.step;
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
        let mut records = Vec::new();
        let mut waiting = Vec::new();
        if spend.within_budget() {
            for executed in self.execute(run_tools, frame, pending, sink, n).await {
                match executed {
                    Executed::Done(record) => records.push(record),
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
            if let Executed::Done(record) = &executed {
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
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {}", call.name),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = call.name.as_str(),
            gen_ai.tool.call.id = call.id.as_str(),
        );
        let started = Instant::now();
        let scope = Arc::new(CallScope::new(frame));
        let gated = self
            .admit(run_tools, frame, &scope, &call, interrupted)
            .instrument(span)
            .await;
        let (ran, result, outcome) = match gated {
            Ok(ran) => ran,
            Err(waiting) => return Executed::Waiting(WaitingCall { call, waiting }),
        };
        let child = scope.take_child().map(Box::new);
        let record = self
            .finish(frame, ran, result, outcome, started.elapsed(), child)
            .await;
        Executed::Done(record)
    }

    /// A call's record, audited, and written to the journal of a durable run.
    async fn finish(
        &self,
        frame: &Frame,
        call: ToolCall,
        result: ToolResult,
        outcome: AuditOutcome,
        duration: Duration,
        child: Option<Box<super::outcome::ChildRun>>,
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

/// After a step's calls: whether the step only loaded functions
/// (discovery), the tool rounds counted so far, and the skills, revealed
/// functions and sources the results bring in.
async fn after_calls(
    agent: &Agent,
    run_tools: &mut RunTools,
    records: &[CallRecord],
    tool_rounds: usize,
) -> (bool, usize) {
    let discovered = super::discovery::only_discovered(records);
    let counts = !discovered && !super::discovery::only_failed_lookups(records);
    run_tools.activate(records).await;
    run_tools.reveal(records);
    run_tools.refresh_sources(agent).await;
    (discovered, tool_rounds + usize::from(counts))
}

fn emit(sink: Option<&EventSink>, event: impl FnOnce() -> AgentEvent) {
    if let Some(sink) = sink {
        sink.emit(event());
    }
}

/// One model call, traced; read as a stream (text passed on as it arrives)
/// when the run streams.
async fn model_step(
    model: &dyn ChatModel,
    request: &ChatRequest,
    sink: Option<&EventSink>,
    step: usize,
) -> Result<Step, ModelError> {
    let model_id = model.model_id();
    let span = tracing::info_span!(
        "chat",
        otel.name = format!("chat {model_id}"),
        gen_ai.operation.name = "chat",
        gen_ai.request.model = model_id,
        gen_ai.usage.input_tokens = field::Empty,
        gen_ai.usage.output_tokens = field::Empty,
    );
    let result = match sink {
        None => model.step(request).instrument(span.clone()).await,
        Some(sink) => {
            let stream = model.stream(request).inspect(move |event| {
                if let Ok(StreamEvent::TextDelta { text }) = event
                    && !text.is_empty()
                {
                    sink.emit(AgentEvent::TextDelta {
                        step,
                        text: text.clone(),
                    });
                }
            });
            collect_step(stream.boxed()).instrument(span.clone()).await
        }
    };
    if let Ok(step) = &result {
        span.record("gen_ai.usage.input_tokens", step.tokens().input_tokens);
        span.record("gen_ai.usage.output_tokens", step.tokens().output_tokens);
    }
    result
}
