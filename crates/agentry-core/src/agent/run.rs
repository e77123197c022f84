//! `Agent`: seed 003's safe loop. The model only names tools; the program
//! decides whether they run. Safety = allow-list + per-tool capability gate +
//! frozen intent + bounded loop (steps and a token budget).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::future::join_all;
use serde::Serialize;
use tracing::{Instrument, field};

use super::gate::gated_dispatch;
use super::policy::{Approval, Approver, AuditOutcome, AuditRecord, AuditSink, arguments_digest};
use super::skills::RunTools;
use crate::model::{
    ChatModel, ChatRequest, Message, ModelError, Step, StreamEvent, ToolChoice, Usage, collect_step,
};
use crate::skill::{Skill, SkillContext, SkillResolver, effective_resolver};
use crate::tool::{
    Capabilities, Capability, ToolCall, ToolContext, ToolResult, ToolSchema, Toolbox,
};

/// Where streamed assistant text goes, with its step number.
type TextSink<'a> = dyn Fn(usize, &str) + Send + Sync + 'a;

/// One model step read as a stream, each text piece passed on as it arrives.
async fn streamed_step(
    model: &dyn ChatModel,
    request: &ChatRequest,
    on_text: impl Fn(&str) + Send,
) -> Result<Step, ModelError> {
    let stream = model.stream(request).inspect(move |event| {
        if let Ok(StreamEvent::TextDelta { text }) = event
            && !text.is_empty()
        {
            on_text(text);
        }
    });
    collect_step(stream.boxed()).await
}

/// Steps an agent may take unless told otherwise.
pub const DEFAULT_MAX_STEPS: usize = 8;
/// The text seed 003's loop gives when it runs out of steps.
pub const OUT_OF_STEPS_TEXT: &str = "out of steps";

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model answered.
    Final(String),
    /// `max_steps` steps were taken without an answer.
    OutOfSteps,
    /// The token budget was exceeded before an answer.
    OverBudget,
    /// The model call failed.
    ModelError(ModelError),
}

/// One tool call of a step, with its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// The call as the model made it.
    pub call: ToolCall,
    /// What was fed back.
    pub result: ToolResult,
    /// How long the gate and the tool took.
    pub duration: Duration,
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// 1-based step number.
    pub index: usize,
    /// Tokens the model call used.
    pub tokens: Usage,
    /// Text the model produced (the answer, on the final step).
    pub text: String,
    /// Tool calls made in this step.
    pub calls: Vec<CallRecord>,
}

/// The result of [`Agent::run`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// How the run ended.
    pub outcome: Outcome,
    /// Tokens used over every step.
    pub usage: Usage,
    /// What happened, step by step.
    pub steps: Vec<StepRecord>,
    /// The full conversation, tool results included.
    pub messages: Vec<Message>,
}

impl RunOutcome {
    /// The answer; seed 003's `"out of steps"` when the loop ran out, and a
    /// short description otherwise.
    pub fn text(&self) -> String {
        match &self.outcome {
            Outcome::Final(text) => text.clone(),
            Outcome::OutOfSteps => OUT_OF_STEPS_TEXT.to_owned(),
            Outcome::OverBudget => "over budget".to_owned(),
            Outcome::ModelError(error) => format!("model error: {error}"),
        }
    }
}

/// A bounded, gated tool-calling loop around a [`ChatModel`].
///
/// ```
/// use agentry_core::agent::{Agent, Outcome};
/// use agentry_core::model::OfflineModel;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let run = Agent::new(OfflineModel).run("What is the weather in Lima?").await;
/// assert_eq!(run.outcome, Outcome::Final("[no llm provider]".into()));
/// assert_eq!(run.usage.total(), 0);
/// # });
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(super) model: Arc<dyn ChatModel>,
    pub(super) toolbox: Toolbox,
    pub(super) advertised: Arc<Vec<ToolSchema>>,
    allow: Option<Arc<HashSet<String>>>,
    pub(super) system: Option<String>,
    skills: Option<Vec<Skill>>,
    skill_resolver: Option<Arc<dyn SkillResolver>>,
    pub(super) skill_context: Option<SkillContext>,
    max_steps: usize,
    token_budget: u64,
    grants: Capabilities,
    approver: Option<Arc<dyn Approver>>,
    audit: Option<Arc<dyn AuditSink>>,
    context: ToolContext,
    max_tokens: Option<u32>,
    temperature: Option<f64>,
    max_tool_rounds: Option<usize>,
    first_tool_choice: ToolChoice,
}

impl Agent {
    /// An agent with no tools, no system prompt, [`DEFAULT_MAX_STEPS`] steps and no token limit.
    pub fn new(model: impl ChatModel + 'static) -> Self {
        Self::with_shared_model(Arc::new(model))
    }

    /// An agent over a model shared with others.
    pub fn with_shared_model(model: Arc<dyn ChatModel>) -> Self {
        let toolbox =
            Toolbox::for_agent(Vec::<crate::tool::Tool>::new()).expect("an empty toolbox is valid");
        Self {
            model,
            toolbox,
            advertised: Arc::default(),
            allow: None,
            system: None,
            skills: None,
            skill_resolver: None,
            skill_context: None,
            max_steps: DEFAULT_MAX_STEPS,
            token_budget: u64::MAX,
            grants: Capabilities::none(),
            approver: None,
            audit: None,
            context: ToolContext::default(),
            max_tokens: None,
            temperature: None,
            max_tool_rounds: None,
            first_tool_choice: ToolChoice::Auto,
        }
    }

    /// The tools this agent may call (its allow-list, unless narrowed by [`allow_only`](Self::allow_only)).
    pub fn tools(mut self, toolbox: Toolbox) -> Self {
        self.toolbox = toolbox;
        self.refresh_advertised();
        self
    }

    /// Narrow the allow-list to these tool names.
    pub fn allow_only<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow = Some(Arc::new(names.into_iter().map(Into::into).collect()));
        self.refresh_advertised();
        self
    }

    fn refresh_advertised(&mut self) {
        let advertised = self
            .toolbox
            .tools()
            .filter(|tool| {
                self.allow
                    .as_ref()
                    .is_none_or(|allow| allow.contains(&tool.name))
            })
            .map(|tool| tool.schema())
            .collect();
        self.advertised = Arc::new(advertised);
    }

    /// The system prompt. It never changes during a run (frozen intent).
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The skills the model may pull in (seed 004). The index joins the
    /// system prompt each run and the skill built-ins join the toolbox.
    pub fn skills<I>(mut self, skills: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Skill>,
    {
        self.skills = Some(skills.into_iter().map(Into::into).collect());
        self
    }

    /// A resolver that decides which skills are advertised each run. It wins
    /// over [`skills`](Self::skills).
    pub fn skill_resolver(mut self, resolver: impl SkillResolver + 'static) -> Self {
        self.skill_resolver = Some(Arc::new(resolver));
        self
    }

    /// Per-run data for skill body functions (e.g. `attachments`), merged
    /// into the model's `ctx` by `apply_skill` with these keys winning.
    pub fn skill_context(mut self, context: SkillContext) -> Self {
        self.skill_context = Some(context);
        self
    }

    /// The resolver runs use ([`effective_resolver`] of the resolver and skills).
    pub fn resolver(&self) -> Option<Arc<dyn SkillResolver>> {
        effective_resolver(self.skill_resolver.clone(), self.skills.clone())
    }

    /// Most model calls in one run.
    pub fn max_steps(mut self, max_steps: usize) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// Token budget: the loop continues only while tokens spent ≤ budget.
    pub fn token_budget(mut self, budget: u64) -> Self {
        self.token_budget = budget;
        self
    }

    /// Grant a capability. Each tool runs with its own declared needs ∩ these grants.
    pub fn grant(mut self, capability: Capability) -> Self {
        self.grants = self.grants.iter().cloned().chain([capability]).collect();
        self
    }

    /// Replace every grant.
    pub fn grants(mut self, grants: Capabilities) -> Self {
        self.grants = grants;
        self
    }

    /// Who approves calls of destructive tools. Without one, they are denied.
    pub fn approver(mut self, approver: impl Approver + 'static) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Where audit records go.
    pub fn audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }

    /// The request context handed to tools (session, sender, extras, state).
    pub fn context(mut self, context: ToolContext) -> Self {
        self.context = context;
        self
    }

    /// Most tokens per model call.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// After this many steps with tool calls, ask the model to answer in text
    /// (`ToolChoice::None`). Small local models otherwise tend to call the same
    /// tool again instead of answering. Unlimited by default.
    pub fn max_tool_rounds(mut self, rounds: usize) -> Self {
        self.max_tool_rounds = Some(rounds);
        self
    }

    /// The tool choice of the first step (default [`ToolChoice::Auto`]).
    /// `Required`, or `Tool("read_skill")`, makes the model start with a
    /// call: small local models otherwise tend to answer before reading the
    /// skill that covers the task. Later steps use `Auto`.
    pub fn first_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.first_tool_choice = choice;
        self
    }

    /// The toolbox.
    pub fn toolbox(&self) -> &Toolbox {
        &self.toolbox
    }

    /// Run the loop on one task.
    pub async fn run(&self, task: &str) -> RunOutcome {
        self.run_messages(vec![Message::user(task)]).await
    }

    /// Run the loop on a conversation (the last message is normally the user's).
    pub async fn run_messages(&self, messages: Vec<Message>) -> RunOutcome {
        self.run_traced(messages, None).await
    }

    /// [`run_messages`](Self::run_messages), streaming: every model step is
    /// read as a stream and each piece of assistant text goes to `on_text` as
    /// it arrives, with the number of its step (from 1), in every step (text a
    /// model writes before its tool calls included). The outcome is the same
    /// as without streaming.
    pub async fn run_messages_streaming(
        &self,
        messages: Vec<Message>,
        on_text: &(dyn Fn(usize, &str) + Send + Sync),
    ) -> RunOutcome {
        self.run_traced(messages, Some(on_text)).await
    }

    async fn run_traced(
        &self,
        messages: Vec<Message>,
        on_text: Option<&TextSink<'_>>,
    ) -> RunOutcome {
        let span = tracing::info_span!(
            "invoke_agent",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.request.model = self.model.model_id(),
            gen_ai.usage.input_tokens = field::Empty,
            gen_ai.usage.output_tokens = field::Empty,
        );
        let outcome = self
            .run_loop(messages, on_text)
            .instrument(span.clone())
            .await;
        span.record("gen_ai.usage.input_tokens", outcome.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", outcome.usage.output_tokens);
        outcome
    }

    async fn run_loop(
        &self,
        mut messages: Vec<Message>,
        on_text: Option<&TextSink<'_>>,
    ) -> RunOutcome {
        let mut run_tools = RunTools::prepare(self, &messages).await;
        let mut usage = Usage::default();
        let mut steps = Vec::new();
        let mut n = 0;
        let mut tool_rounds = 0;
        while n < self.max_steps && usage.total() <= self.token_budget {
            n += 1;
            let tool_choice = match self.max_tool_rounds {
                Some(limit) if tool_rounds >= limit => ToolChoice::None,
                _ if n == 1 => self.first_tool_choice.clone(),
                _ => ToolChoice::Auto,
            };
            let request = ChatRequest {
                model: None,
                system: run_tools.system.clone(),
                messages: messages.clone(),
                tools: run_tools.advertised.as_ref().clone(),
                tool_choice,
                max_tokens: self.max_tokens,
                temperature: self.temperature,
                stop: Vec::new(),
            };
            let step = match self.model_step(&request, on_text, n).await {
                Ok(step) => step,
                Err(error) => {
                    return RunOutcome {
                        outcome: Outcome::ModelError(error),
                        usage,
                        steps,
                        messages,
                    };
                }
            };
            usage += step.tokens();
            match step {
                Step::Final { text, tokens } => {
                    messages.push(Message::assistant(text.clone()));
                    steps.push(StepRecord {
                        index: n,
                        tokens,
                        text: text.clone(),
                        calls: Vec::new(),
                    });
                    return RunOutcome {
                        outcome: Outcome::Final(text),
                        usage,
                        steps,
                        messages,
                    };
                }
                Step::Tool {
                    calls,
                    text,
                    tokens,
                } => {
                    tool_rounds += 1;
                    messages.push(Message::Assistant {
                        text: text.clone(),
                        tool_calls: calls.clone(),
                    });
                    let records = self.execute(&run_tools, calls).await;
                    run_tools.activate(&records).await;
                    messages.extend(
                        records
                            .iter()
                            .map(|record| Message::tool(record.result.clone())),
                    );
                    steps.push(StepRecord {
                        index: n,
                        tokens,
                        text,
                        calls: records,
                    });
                }
            }
        }
        let outcome = if usage.total() > self.token_budget {
            Outcome::OverBudget
        } else {
            Outcome::OutOfSteps
        };
        RunOutcome {
            outcome,
            usage,
            steps,
            messages,
        }
    }

    async fn model_step(
        &self,
        request: &ChatRequest,
        on_text: Option<&TextSink<'_>>,
        step_number: usize,
    ) -> Result<Step, ModelError> {
        let model = self.model.model_id();
        let span = tracing::info_span!(
            "chat",
            otel.name = format!("chat {model}"),
            gen_ai.operation.name = "chat",
            gen_ai.request.model = model,
            gen_ai.usage.input_tokens = field::Empty,
            gen_ai.usage.output_tokens = field::Empty,
        );
        let step = match on_text {
            None => self.model.step(request).instrument(span.clone()).await,
            Some(on_text) => {
                streamed_step(self.model.as_ref(), request, |text| {
                    on_text(step_number, text)
                })
                .instrument(span.clone())
                .await
            }
        };
        if let Ok(step) = &step {
            span.record("gen_ai.usage.input_tokens", step.tokens().input_tokens);
            span.record("gen_ai.usage.output_tokens", step.tokens().output_tokens);
        }
        step
    }

    /// Run one step's calls: all at once when every tool involved is
    /// concurrency-safe, one after another otherwise. Results keep call order.
    async fn execute(&self, run_tools: &RunTools, calls: Vec<ToolCall>) -> Vec<CallRecord> {
        let parallel = calls.len() > 1
            && calls.iter().all(|call| {
                run_tools
                    .toolbox
                    .find_for_call(&call.name)
                    .is_some_and(|tool| tool.hints.concurrency_safe)
            });
        if parallel {
            join_all(
                calls
                    .into_iter()
                    .map(|call| self.execute_one(run_tools, call)),
            )
            .await
        } else {
            let mut records = Vec::with_capacity(calls.len());
            for call in calls {
                records.push(self.execute_one(run_tools, call).await);
            }
            records
        }
    }

    async fn execute_one(&self, run_tools: &RunTools, call: ToolCall) -> CallRecord {
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {}", call.name),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = call.name.as_str(),
            gen_ai.tool.call.id = call.id.as_str(),
        );
        let started = Instant::now();
        let (result, outcome) = self.gate(run_tools, &call).instrument(span).await;
        let duration = started.elapsed();
        if let Some(audit) = &self.audit {
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
        }
    }

    async fn gate(&self, run_tools: &RunTools, call: &ToolCall) -> (ToolResult, AuditOutcome) {
        let allowed = run_tools
            .toolbox
            .find_for_call(&call.name)
            .filter(|tool| run_tools.allows(self.allow.as_deref(), tool));
        let Some(tool) = allowed else {
            let message = format!("{} => not allowed", call.name);
            return (
                ToolResult::error(call.id.clone(), message),
                AuditOutcome::NotAllowed,
            );
        };
        if tool.hints.destructive {
            let approval = match &self.approver {
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
        let result = gated_dispatch(
            &run_tools.toolbox,
            call.clone(),
            &self.grants,
            &self.context,
        )
        .await;
        let outcome = match result.error_message() {
            Some(message) => AuditOutcome::Error(message.to_owned()),
            None => AuditOutcome::Ok,
        };
        (result, outcome)
    }
}
