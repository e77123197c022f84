//! The loop itself (seed 003): ask the model for a step, pass each tool call
//! it makes through the gate, feed the results back, and stop at an answer,
//! at the step limit or past the token budget.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::future::join_all;
use tracing::{Instrument, field};

use super::agent::Agent;
use super::child::CallScope;
use super::events::{AgentEvent, EventSink};
use super::gate::gated_dispatch;
use super::outcome::{CallRecord, Outcome, RunOutcome, StepRecord};
use super::policy::{Approval, AuditOutcome, AuditRecord, arguments_digest};
use super::skills::RunTools;
use super::spend::Spend;
use crate::model::collect_step;
use crate::model::{ChatModel, ChatRequest, Message, ModelError, Step, StreamEvent, ToolChoice};
use crate::tool::{Capabilities, ToolCall, ToolContext, ToolResult};

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
        }
    }
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
        let span = tracing::info_span!(
            "invoke_agent",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.request.model = model.model_id(),
            agentry.depth = frame.depth,
            gen_ai.usage.input_tokens = field::Empty,
            gen_ai.usage.output_tokens = field::Empty,
        );
        let outcome = self
            .run_loop(model, frame, messages, sink.as_ref())
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
        mut messages: Vec<Message>,
        sink: Option<&EventSink>,
    ) -> RunOutcome {
        let settings = &self.settings;
        let mut run_tools = RunTools::prepare(self, model, &messages).await;
        if settings.search_first {
            run_tools.search_first(self, &messages).await;
        }
        let spend = &frame.spend;
        let mut steps = Vec::new();
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
        while n < settings.max_steps && spend.within_budget() {
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
                    // Child agents charge `spend` themselves, as they go. A step
                    // that spent past the budget gets no tool run at all.
                    let records = if spend.within_budget() {
                        let mut calls = calls;
                        let limit = settings.max_calls_per_step;
                        let extra = calls.split_off(calls.len().min(limit));
                        let mut records = self.execute(&run_tools, frame, calls, sink, n).await;
                        let reason = format!(
                            "a step may make at most {limit} tool calls; make fewer at once"
                        );
                        records.extend(self.refuse(extra, &reason, sink, n));
                        records
                    } else {
                        let spent = spend.usage().total();
                        let reason = format!("the token budget is spent ({spent} tokens used)");
                        self.refuse(calls, &reason, sink, n)
                    };
                    discovered = super::discovery::only_discovered(&records);
                    if !discovered && !super::discovery::only_failed_lookups(&records) {
                        tool_rounds += 1;
                    }
                    run_tools.activate(&records).await;
                    run_tools.reveal(&records);
                    run_tools.refresh_sources(self).await;
                    messages.extend(records.iter().map(|r| Message::tool(r.result.clone())));
                    let record = StepRecord {
                        index: n,
                        tokens,
                        text,
                        calls: records,
                    };
                    emit(sink, || AgentEvent::StepEnd {
                        step: record.clone(),
                    });
                    steps.push(record);
                }
            }
        }
        let outcome = if spend.within_budget() {
            Outcome::OutOfSteps
        } else {
            Outcome::OverBudget
        };
        end(outcome, steps, messages)
    }

    /// Run one step's calls: all at once when every tool involved is
    /// concurrency-safe, one after another otherwise. Results keep call order.
    async fn execute(
        &self,
        run_tools: &RunTools,
        frame: &Frame,
        calls: Vec<ToolCall>,
        sink: Option<&EventSink>,
        step: usize,
    ) -> Vec<CallRecord> {
        let parallel = calls.len() > 1
            && calls.iter().all(|call| {
                run_tools
                    .toolbox
                    .find_for_call(&call.name)
                    .is_some_and(|tool| tool.hints.concurrency_safe)
            });
        let one = |call| async move {
            let record = self.execute_one(run_tools, frame, call).await;
            emit(sink, || AgentEvent::ToolResult {
                step,
                record: record.clone(),
            });
            record
        };
        if parallel {
            join_all(calls.into_iter().map(one)).await
        } else {
            let mut records = Vec::with_capacity(calls.len());
            for call in calls {
                records.push(one(call).await);
            }
            records
        }
    }

    /// Results for calls that are not run (past the budget, past the
    /// per-step limit), each recorded and audited as denied for `reason`.
    fn refuse(
        &self,
        calls: Vec<ToolCall>,
        reason: &str,
        sink: Option<&EventSink>,
        step: usize,
    ) -> Vec<CallRecord> {
        calls
            .into_iter()
            .map(|call| {
                if let Some(audit) = &self.settings.audit {
                    audit.record(AuditRecord {
                        call_id: call.id.clone(),
                        tool: call.name.clone(),
                        arguments_digest: arguments_digest(&call),
                        outcome: AuditOutcome::Denied(reason.to_owned()),
                        duration: Duration::ZERO,
                    });
                }
                let record = CallRecord {
                    result: ToolResult::error(call.id.clone(), format!("not run: {reason}")),
                    call,
                    duration: Duration::ZERO,
                    child: None,
                };
                emit(sink, || AgentEvent::ToolResult {
                    step,
                    record: record.clone(),
                });
                record
            })
            .collect()
    }

    async fn execute_one(&self, run_tools: &RunTools, frame: &Frame, call: ToolCall) -> CallRecord {
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {}", call.name),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = call.name.as_str(),
            gen_ai.tool.call.id = call.id.as_str(),
        );
        let started = Instant::now();
        let scope = Arc::new(CallScope::new(frame));
        let (result, outcome) = self
            .gate(run_tools, frame, &scope, &call)
            .instrument(span)
            .await;
        let duration = started.elapsed();
        if let Some(audit) = &self.settings.audit {
            audit.record(AuditRecord {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments_digest: arguments_digest(&call),
                outcome,
                duration,
            });
        }
        CallRecord {
            call,
            result,
            duration,
            child: scope.take_child().map(Box::new),
        }
    }

    async fn gate(
        &self,
        run_tools: &RunTools,
        frame: &Frame,
        scope: &Arc<CallScope>,
        call: &ToolCall,
    ) -> (ToolResult, AuditOutcome) {
        let allowed = run_tools
            .toolbox
            .find_for_call(&call.name)
            .filter(|tool| run_tools.allows(self.settings.allow.as_deref(), tool));
        let Some(tool) = allowed else {
            let message = format!("{} => not allowed", call.name);
            return (
                ToolResult::error(call.id.clone(), message),
                AuditOutcome::NotAllowed,
            );
        };
        if let Err(message) = run_tools.loaded(&tool.name) {
            return (
                ToolResult::error(call.id.clone(), message),
                AuditOutcome::NotAllowed,
            );
        }
        if tool.hints.destructive {
            let approval = match &self.settings.approver {
                Some(approver) => approver.review(tool, call).await,
                None => Approval::Deny("no approver is configured for destructive tools".into()),
            };
            if let Approval::Deny(reason) = approval {
                let message = format!("tool \"{}\" was not approved: {reason}", tool.name);
                return (
                    ToolResult::error(call.id.clone(), message),
                    AuditOutcome::Denied(reason),
                );
            }
        }
        let context = frame.context.clone().with_call_scope(scope.clone());
        let result =
            gated_dispatch(&run_tools.toolbox, call.clone(), &frame.grants, &context).await;
        let outcome = match result.error_message() {
            Some(message) => AuditOutcome::Error(message.to_owned()),
            None => AuditOutcome::Ok,
        };
        (result, outcome)
    }
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
