//! The [`Agent`] value: a model, its tools and its limits, and the ways to
//! run it — [`prompt`](Agent::prompt) for the answer, [`run`](Agent::run)
//! for the whole record, [`stream`](Agent::stream) for events as they happen.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::Stream;

use super::builder::AgentBuilder;
use super::events::{AgentEvent, event_stream};
use super::outcome::{Outcome, RunError, RunOutcome};
use super::policy::{Approver, AuditSink};
use super::run::Frame;
use agentry_core::model::{ChatModel, Message, OfflineModel, ResponseFormat, ToolChoice};
use agentry_core::skill::{Skill, SkillContext, SkillResolver, effective_resolver};
use agentry_core::tool::{Capabilities, ToolContext, ToolSchema, ToolSource, Toolbox};

/// Steps an agent may take unless told otherwise.
pub const DEFAULT_MAX_STEPS: usize = 8;
/// How deep agents may nest as each other's tools unless told otherwise.
pub const DEFAULT_MAX_DEPTH: usize = 3;
/// Most tool calls one step may run unless told otherwise; the rest get an
/// error result.
pub const DEFAULT_MAX_CALLS_PER_STEP: usize = 32;

/// Everything about an agent but its model and tools.
#[derive(Clone)]
pub(super) struct Settings {
    /// The agent's name in traces (`gen_ai.agent.name`).
    pub name: Option<String>,
    pub allow: Option<Arc<HashSet<String>>>,
    pub system: Option<String>,
    pub skills: Option<Vec<Skill>>,
    pub skill_resolver: Option<Arc<dyn SkillResolver>>,
    pub skill_context: Option<SkillContext>,
    pub max_steps: usize,
    pub token_budget: u64,
    pub grants: Capabilities,
    pub approver: Option<Arc<dyn Approver>>,
    pub audit: Option<Arc<dyn AuditSink>>,
    pub context: ToolContext,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub max_tool_rounds: Option<usize>,
    pub first_tool_choice: ToolChoice,
    pub max_depth: usize,
    pub max_calls_per_step: usize,
    pub response_format: Option<ResponseFormat>,
    pub sources: Vec<Arc<dyn ToolSource>>,
    /// The function groups the tools came in.
    pub modules: Vec<super::discovery::Module>,
    /// Start runs with module summaries; `discover` loads schemas.
    pub discovery: bool,
    /// What `search_tools` asks, with discovery on.
    pub tool_search: Option<Arc<dyn agentry_core::tool::ToolSearcher>>,
    /// Search the catalog with the user's request before the first step.
    pub search_first: bool,
    /// Offer the names `read_skill`, `apply_skill` and `discover` accept as enums.
    pub name_enums: bool,
    /// Asks for a text answer at step 1 when no tool is near the request.
    pub relevance_gate: Option<Arc<super::RelevanceGate>>,
    /// Read final answers against the tool results they rest on.
    pub check_answers: super::AnswerCheck,
    /// Guardrails on the user's message, the answer, and untrusted tools' results.
    pub guardrails: super::run::Guardrails,
    /// The agents this one may hand the conversation to.
    pub handoffs: Vec<super::Handoff>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            name: None,
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
            max_depth: DEFAULT_MAX_DEPTH,
            max_calls_per_step: DEFAULT_MAX_CALLS_PER_STEP,
            response_format: None,
            sources: Vec::new(),
            modules: Vec::new(),
            discovery: false,
            search_first: false,
            name_enums: true,
            tool_search: None,
            relevance_gate: None,
            check_answers: super::AnswerCheck::Off,
            guardrails: Default::default(),
            handoffs: Vec::new(),
        }
    }
}

/// A bounded, gated tool-calling loop around a [`ChatModel`].
///
/// The model only names tools; the agent decides whether they run:
/// allow-list, least-privilege capabilities, approval of destructive calls,
/// an audit trail, and a loop bounded by steps and a token budget.
///
/// ```
/// use agentry_agent::{Agent, RunError};
/// use agentry_core::model::OfflineModel;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let agent = Agent::new(OfflineModel);
/// assert_eq!(agent.prompt("What is the weather in Lima?").await?, "[no llm provider]");
/// let run = agent.run("What is the weather in Lima?").await;
/// assert_eq!(run.usage.total(), 0);
/// # Ok::<_, RunError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(super) model: Arc<dyn ChatModel>,
    pub(super) toolbox: Toolbox,
    pub(super) advertised: Arc<Vec<ToolSchema>>,
    pub(super) settings: Settings,
    /// With discovery: the catalog of the agent's own tools, made by the
    /// first run and copied by each (sources add to a run's copy).
    pub(super) catalog: Arc<std::sync::OnceLock<super::discovery::Catalog>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model.model_id())
            .field("tools", &self.toolbox)
            .field("max_steps", &self.settings.max_steps)
            .field("token_budget", &self.settings.token_budget)
            .finish_non_exhaustive()
    }
}

impl Default for Agent {
    /// The offline agent: no tools, and every answer `[no llm provider]`.
    fn default() -> Self {
        Self::new(OfflineModel)
    }
}

impl Agent {
    /// An agent with no tools, no system prompt, [`DEFAULT_MAX_STEPS`] steps
    /// and no token limit. Use [`builder`](Self::builder) for anything else.
    pub fn new(model: impl ChatModel + 'static) -> Self {
        Agent::assemble(Arc::new(model), Toolbox::empty(), Settings::default())
    }

    /// Start building an agent over `model` (an `Arc` of a model works too,
    /// to share one model between agents).
    pub fn builder(model: impl ChatModel + 'static) -> AgentBuilder {
        AgentBuilder::new(model)
    }

    /// A builder holding this agent's model, tools and settings, to derive a variant.
    pub fn to_builder(&self) -> AgentBuilder {
        AgentBuilder::from_agent(self)
    }

    pub(super) fn assemble(
        model: Arc<dyn ChatModel>,
        toolbox: Toolbox,
        settings: Settings,
    ) -> Self {
        let advertised = toolbox
            .tools()
            .filter(|tool| {
                settings
                    .allow
                    .as_ref()
                    .is_none_or(|allow| allow.contains(&tool.name))
            })
            .map(|tool| tool.schema())
            .collect();
        Self {
            model,
            toolbox,
            advertised: Arc::new(advertised),
            settings,
            catalog: Arc::default(),
        }
    }

    /// The model's id.
    pub fn model_id(&self) -> &str {
        self.model.model_id()
    }

    /// The tools (the allow-list may narrow which ones the model is shown).
    pub fn toolbox(&self) -> &Toolbox {
        &self.toolbox
    }

    /// The system prompt.
    pub fn system(&self) -> Option<&str> {
        self.settings.system.as_deref()
    }

    /// The capabilities this agent grants its tools.
    pub fn grants(&self) -> &Capabilities {
        &self.settings.grants
    }

    /// The request context handed to tools.
    pub fn context(&self) -> &ToolContext {
        &self.settings.context
    }

    /// Most model calls in one run.
    pub fn max_steps(&self) -> usize {
        self.settings.max_steps
    }

    /// The token budget of one run.
    pub fn token_budget(&self) -> u64 {
        self.settings.token_budget
    }

    /// Most calls one step may make; the rest are refused.
    pub fn max_calls_per_step(&self) -> usize {
        self.settings.max_calls_per_step
    }

    /// How deep child agents may nest under a run of this agent
    /// ([`AgentBuilder::max_depth`](crate::AgentBuilder::max_depth)).
    pub fn max_depth(&self) -> usize {
        self.settings.max_depth
    }

    /// The sources whose tools join the toolbox at each step (MCP servers).
    pub fn sources(&self) -> &[Arc<dyn ToolSource>] {
        &self.settings.sources
    }

    /// The agent's name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.settings.name.as_deref()
    }

    /// The agents this one may hand the conversation to.
    pub fn handoffs(&self) -> &[super::Handoff] {
        &self.settings.handoffs
    }

    /// The agent called `name` among this one and every agent it may hand
    /// to, directly or through others (a durable run resumes with it).
    pub fn find_agent(&self, name: &str) -> Option<&Agent> {
        if self.settings.name.as_deref() == Some(name) {
            return Some(self);
        }
        self.settings
            .handoffs
            .iter()
            .find_map(|handoff| handoff.target.find_agent(name))
    }

    /// The resolver runs use ([`effective_resolver`] of the resolver and skills).
    pub fn resolver(&self) -> Option<Arc<dyn SkillResolver>> {
        effective_resolver(
            self.settings.skill_resolver.clone(),
            self.settings.skills.clone(),
        )
    }

    /// Run the loop on one task and return the answer. Running out of steps
    /// or budget, or a model failure, is an `Err`; use [`run`](Self::run)
    /// for the full record of a run.
    pub async fn prompt(&self, task: impl Into<String>) -> Result<String, RunError> {
        let run = self.run(task).await;
        self.answer_of(run)
    }

    /// The answer of a finished run of this agent, or why there is none.
    pub(crate) fn answer_of(&self, run: RunOutcome) -> Result<String, RunError> {
        match run.outcome {
            Outcome::Final(text) => Ok(text),
            Outcome::OutOfSteps => Err(RunError::OutOfSteps {
                max_steps: self.settings.max_steps,
            }),
            Outcome::OverBudget => Err(RunError::OverBudget {
                used: run.usage.total(),
                budget: self.settings.token_budget,
            }),
            Outcome::ModelError(error) => Err(RunError::Model(error)),
            Outcome::AwaitingDecision(calls) => Err(RunError::AwaitingDecision {
                calls: calls.into_iter().map(|waiting| waiting.call.id).collect(),
            }),
            Outcome::JournalFailed(error) => Err(RunError::Journal(error.to_string())),
            Outcome::GuardrailTripped(tripped) => Err(RunError::Guardrail(tripped)),
        }
    }

    /// Run the loop on one task.
    pub async fn run(&self, task: impl Into<String>) -> RunOutcome {
        self.run_messages(vec![Message::user(task)]).await
    }

    /// Run the loop on a conversation (the last message is normally the user's).
    pub async fn run_messages(&self, messages: Vec<Message>) -> RunOutcome {
        self.run_frame(self.model.as_ref(), &Frame::root(self), messages, None)
            .await
    }

    /// Run the loop on one task as a stream of [`AgentEvent`]s: each piece
    /// of text as the model writes it, each tool call and result, each
    /// step's end, and last the [`AgentEvent::Final`] record.
    pub fn stream(&self, task: impl Into<String>) -> impl Stream<Item = AgentEvent> + Send + '_ {
        self.stream_messages(vec![Message::user(task)])
    }

    /// [`stream`](Self::stream) over a conversation.
    pub fn stream_messages(
        &self,
        messages: Vec<Message>,
    ) -> impl Stream<Item = AgentEvent> + Send + '_ {
        event_stream(move |sink| async move {
            self.run_frame(
                self.model.as_ref(),
                &Frame::root(self),
                messages,
                Some(sink),
            )
            .await
        })
    }
}
