//! The loop itself: ask the model for a step, pass each tool call
//! it makes through the gate, feed the results back, and stop at an answer,
//! at the step limit or past the token budget.

use std::sync::Arc;

use futures_util::StreamExt;
use tracing::{Instrument, field};

use super::agent::Agent;
use super::durable::{Durable, OpenStep, Replay, RunEntry};
use super::events::{AgentEvent, EventSink};
use super::outcome::{CallRecord, Outcome, RunOutcome, StepRecord};
use super::spend::Spend;
use crate::relevance::Relevance;
use crate::run_tools::RunTools;
use agentry_core::model::collect_step;
use agentry_core::model::{
    ChatModel, ChatRequest, Message, ModelError, Step, StreamEvent, ToolChoice, Usage,
};
use agentry_core::tool::{Capabilities, ToolCall, ToolContext};

mod calls;
mod check;
mod choice;
mod guard;
mod handoff;

pub(crate) use guard::Guardrails;
pub(crate) use handoff::Segment;

use check::Checked;
pub(crate) use choice::{StepChoice, StepState};

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
    /// The agent's name in traces (`gen_ai.agent.name`): its own, or for a
    /// child agent the tool's.
    pub name: Option<String>,
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
            name: agent.settings.name.clone(),
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
        let start = Replay {
            messages,
            ..Replay::default()
        };
        self.resume_frame(model, frame, start, sink).await
    }

    /// Run the loop from where `start` stands: a fresh conversation, or a
    /// durable run read back from its journal; then, for each handoff, the
    /// agent handed to.
    pub(crate) async fn resume_frame(
        &self,
        model: &dyn ChatModel,
        frame: &Frame,
        start: Replay,
        sink: Option<EventSink>,
    ) -> RunOutcome {
        let segment = self.segment(model, frame, start, sink.as_ref()).await;
        self.follow_handoffs(frame, segment, sink.as_ref()).await
    }

    /// This agent's part of a run: its loop, under its `invoke_agent` span,
    /// until it answers, stops, or hands off.
    pub(crate) async fn segment(
        &self,
        model: &dyn ChatModel,
        frame: &Frame,
        start: Replay,
        sink: Option<&EventSink>,
    ) -> Segment {
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = match &frame.name {
                Some(name) => format!("invoke_agent {name}"),
                None => "invoke_agent".to_owned(),
            },
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = model.provider_name(),
            gen_ai.request.model = model.model_id(),
            gen_ai.agent.name = frame.name.as_deref(),
            gen_ai.conversation.id = frame.context.session().map(|s| s.id.as_str()),
            agentry.depth = crate::telemetry::int(frame.depth),
            gen_ai.usage.input_tokens = field::Empty,
            gen_ai.usage.output_tokens = field::Empty,
            agentry.outcome = field::Empty,
            error.type = field::Empty,
            otel.status_code = field::Empty,
        );
        let mut segment = self
            .run_loop(model, frame, start, sink)
            .instrument(span.clone())
            .await;
        segment.run.agent = self.settings.name.clone();
        let outcome = &segment.run;
        span.record(
            "gen_ai.usage.input_tokens",
            crate::telemetry::int(outcome.usage.input_tokens),
        );
        span.record(
            "gen_ai.usage.output_tokens",
            crate::telemetry::int(outcome.usage.output_tokens),
        );
        if segment.handoff.is_some() {
            span.record("agentry.outcome", "handed_off");
            return segment;
        }
        let kind = outcome.outcome.kind();
        span.record("agentry.outcome", kind);
        if !matches!(
            outcome.outcome,
            Outcome::Final(_) | Outcome::AwaitingDecision(_)
        ) {
            span.record("error.type", kind)
                .record("otel.status_code", "error");
        }
        segment
    }

    /// Step until the model answers, the step limit or the budget is
    /// reached, calls wait for a person, or the model or the journal fails.
    async fn run_loop(
        &self,
        model: &dyn ChatModel,
        frame: &Frame,
        start: Replay,
        sink: Option<&EventSink>,
    ) -> Segment {
        let Replay {
            messages,
            steps,
            mut open,
            started,
            before,
            handoffs,
            ..
        } = start;
        // The run's tools come from the conversation it started with, also
        // when it is resumed (the conversation has grown since).
        let started = started.as_deref().unwrap_or(&messages);
        let run_tools = self.prepare_tools(model, started).await;
        let spend = &frame.spend;
        let mut run = Progress {
            messages,
            steps,
            run_tools,
            index: before,
            first: before,
            handoffs,
            handoff: None,
            tool_rounds: 0,
            discovered: false,
            rechecked: None,
            relevance: None,
            part_calls: false,
            guard_retries: Default::default(),
        };
        run.replay_finished(self).await;
        // A durable run's input was checked before its journal was written.
        if open.is_none()
            && frame.durable.is_none()
            && let Err(tripped) = self.guard_input(&mut run).await
        {
            return run.end(Outcome::GuardrailTripped(tripped), spend);
        }
        loop {
            if let Some(step) = open.take()
                && let Err(outcome) = self.close_step(&mut run, frame, step, sink).await
            {
                return run.end(outcome, spend);
            }
            if run.handoff.is_some() {
                // The agent handed to gives the run its outcome.
                return run.end(Outcome::Final(String::new()), spend);
            }
            if run.index - run.first >= self.settings.max_steps || !spend.within_budget() {
                break;
            }
            run.index += 1;
            let request = self.request(&mut run).await;
            let step = match model_step(model, &request, sink, run.index).await {
                Ok(step) => step,
                Err(error) => return run.end(Outcome::ModelError(error), spend),
            };
            spend.charge(step.tokens());
            let open_step = match step {
                Step::Final { text, tokens } => {
                    let text = match self.check_answer(&mut run, frame, text, tokens, sink) {
                        Checked::Reask => continue,
                        Checked::Final(text) => text,
                    };
                    let durable = frame.durable.is_some();
                    let text = match self
                        .guard_output(&mut run, durable, text, tokens, sink)
                        .await
                    {
                        guard::Answer::Give(text) => text,
                        guard::Answer::Again => continue,
                        guard::Answer::Tripped(tripped) => {
                            return run.end(Outcome::GuardrailTripped(tripped), spend);
                        }
                    };
                    let outcome = answer(&mut run, frame, text, tokens, sink).await;
                    return run.end(outcome, spend);
                }
                Step::Tool {
                    calls,
                    text,
                    tokens,
                } => call_step(&mut run, frame, text, calls, tokens, sink).await,
            };
            match open_step {
                Ok(step) => open = Some(step),
                Err(outcome) => return run.end(outcome, spend),
            }
        }
        let outcome = limit_reached(frame).await;
        run.end(outcome, spend)
    }

    /// The tools of a run whose conversation started with `started`.
    async fn prepare_tools(&self, model: &dyn ChatModel, started: &[Message]) -> RunTools {
        let mut run_tools = RunTools::prepare(self, model, started).await;
        if self.settings.search_first {
            run_tools.search_first(self, started).await;
        }
        run_tools
    }

    /// Carry out the open step's calls, then take in their results: what
    /// they make available, their messages, and the step's record. `Err`
    /// when the run must stop here.
    async fn close_step(
        &self,
        run: &mut Progress,
        frame: &Frame,
        step: OpenStep,
        sink: Option<&EventSink>,
    ) -> Result<(), Outcome> {
        run.index = step.step;
        let record = self.carry_out(&run.run_tools, frame, step, sink).await?;
        (run.discovered, run.tool_rounds) =
            after_calls(self, &mut run.run_tools, &record.calls, run.tool_rounds).await;
        run.messages
            .extend(record.calls.iter().map(|r| Message::tool(r.result.clone())));
        emit(sink, || AgentEvent::StepEnd {
            step: record.clone(),
        });
        if run.handoff.is_none() {
            run.handoff = handoff::called(self, &record);
        }
        run.steps.push(record);
        Ok(())
    }

    /// The request for the step under way: the conversation so far, the
    /// tools on offer, and how the model may use them.
    async fn request(&self, run: &mut Progress) -> ChatRequest {
        let StepChoice {
            tool_choice,
            relevance,
            note,
            for_part,
        } = self
            .tool_choice(
                &run.run_tools,
                &run.messages,
                StepState {
                    // Counted from this agent's first step: an agent handed
                    // to starts as a run does.
                    index: run.index - run.first,
                    tool_rounds: run.tool_rounds,
                    discovered: run.discovered,
                    rechecked: run.rechecked.is_some(),
                },
                run.relevance.as_ref(),
            )
            .await;
        if run.index == 1 {
            run.relevance = relevance;
        }
        run.part_calls |= for_part;
        let mut messages = run.messages.clone();
        messages.extend(note);
        self.chat_request(&run.run_tools, messages, tool_choice)
    }

    /// The request for one step: the run's system prompt and tools, the
    /// conversation, the agent's sampling settings and `tool_choice`.
    pub(crate) fn chat_request(
        &self,
        run_tools: &RunTools,
        messages: Vec<Message>,
        tool_choice: ToolChoice,
    ) -> ChatRequest {
        let settings = &self.settings;
        ChatRequest {
            system: run_tools.system.clone(),
            messages,
            tools: run_tools.advertised.as_ref().clone(),
            tool_choice,
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            response_format: settings.response_format.clone(),
            ..ChatRequest::default()
        }
    }
}

/// A run under way: its conversation, its finished steps, its tools, and
/// where it stands.
struct Progress {
    messages: Vec<Message>,
    steps: Vec<StepRecord>,
    run_tools: RunTools,
    /// The step under way (`first` before this agent's first).
    index: usize,
    /// Steps taken before this agent had the floor (by agents that handed
    /// off to it): its step limit counts from here.
    first: usize,
    /// The run's handoffs so far.
    handoffs: Vec<crate::HandoffRecord>,
    /// A handoff this agent's last step made: the run goes on with its agent.
    handoff: Option<handoff::Pending>,
    /// The steps whose calls count against the limit on tool rounds.
    tool_rounds: usize,
    /// The step before only loaded functions (discovery): now call one.
    discovered: bool,
    /// An answer disagreed with the tool results and was re-asked: how
    /// long the conversation was before it (see [`crate::answer_check`]).
    rechecked: Option<usize>,
    /// What the relevance gate made of the request before step 1.
    relevance: Option<Relevance>,
    /// A step called a tool for a part of the request no call answered:
    /// the answer rests on every step's results.
    part_calls: bool,
    /// How many times each output guardrail (by name) asked again.
    guard_retries: std::collections::HashMap<String, u32>,
}

impl Progress {
    /// A resumed run: what its finished steps made available, as they did.
    async fn replay_finished(&mut self, agent: &Agent) {
        for step in self.steps.iter().filter(|step| step.index > self.first) {
            self.index = step.index;
            if !step.calls.is_empty() {
                (self.discovered, self.tool_rounds) =
                    after_calls(agent, &mut self.run_tools, &step.calls, self.tool_rounds).await;
            }
        }
    }

    /// This agent's end: `outcome` (or a handoff), what was spent, the
    /// steps and the conversation.
    fn end(self, outcome: Outcome, spend: &Spend) -> Segment {
        Segment {
            run: RunOutcome {
                outcome,
                usage: spend.usage(),
                steps: self.steps,
                messages: self.messages,
                relevance: self.relevance,
                agent: None,
                handoffs: self.handoffs,
            },
            handoff: self.handoff,
        }
    }
}

/// The model answered: the answer is written to the journal of a durable
/// run (nothing is written after it), then added to the conversation and the
/// steps. The run's outcome: the answer, or the journal's failure.
async fn answer(
    run: &mut Progress,
    frame: &Frame,
    text: String,
    tokens: Usage,
    sink: Option<&EventSink>,
) -> Outcome {
    if let Some(durable) = frame.durable.as_deref() {
        let answer = RunEntry::Answer {
            step: run.index,
            text: text.clone(),
            tokens,
        };
        if let Err(error) = durable.write(answer).await {
            return Outcome::JournalFailed(error);
        }
    }
    text_step(run, text.clone(), tokens, sink);
    Outcome::Final(text)
}

/// A step that answered in text: added to the conversation and the steps,
/// and announced.
fn text_step(run: &mut Progress, text: String, tokens: Usage, sink: Option<&EventSink>) {
    let record = StepRecord {
        index: run.index,
        tokens,
        text: text.clone(),
        calls: Vec::new(),
    };
    emit(sink, || AgentEvent::StepEnd {
        step: record.clone(),
    });
    run.steps.push(record);
    run.messages.push(Message::assistant(text));
}

/// The model called tools: the step is written to the journal of a durable
/// run, added to the conversation and announced call by call; it is open
/// until its calls are carried out. `Err` when the journal failed.
async fn call_step(
    run: &mut Progress,
    frame: &Frame,
    text: String,
    calls: Vec<ToolCall>,
    tokens: Usage,
    sink: Option<&EventSink>,
) -> Result<OpenStep, Outcome> {
    let n = run.index;
    if let Some(durable) = frame.durable.as_deref() {
        let entry = RunEntry::ToolStep {
            step: n,
            text: text.clone(),
            calls: calls.clone(),
            tokens,
        };
        if let Err(error) = durable.write(entry).await {
            return Err(Outcome::JournalFailed(error));
        }
        // Decisions were on the last step's calls, whose ids
        // this step's may repeat.
        durable.new_step();
    }
    run.messages.push(Message::Assistant {
        text: text.clone(),
        tool_calls: calls.clone(),
    });
    for call in &calls {
        emit(sink, || AgentEvent::ToolCall {
            step: n,
            call: call.clone(),
        });
    }
    Ok(OpenStep::new(n, text, calls, tokens))
}

/// The run stopped at its step limit or past its budget: which, written to
/// the journal of a durable run (or the journal's failure).
async fn limit_reached(frame: &Frame) -> Outcome {
    let outcome = if frame.spend.within_budget() {
        Outcome::OutOfSteps
    } else {
        Outcome::OverBudget
    };
    if let Some(durable) = frame.durable.as_deref() {
        let ended = RunEntry::Ended {
            outcome: outcome.kind().into(),
            detail: String::new(),
        };
        if let Err(error) = durable.write(ended).await {
            return Outcome::JournalFailed(error);
        }
    }
    outcome
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
    let call = async {
        match sink {
            None => model.step(request).await,
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
                collect_step(stream.boxed()).await
            }
        }
    };
    crate::telemetry::traced_chat(model, request, call).await
}
