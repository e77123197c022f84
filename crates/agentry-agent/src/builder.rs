//! [`AgentBuilder`]: every setting of an [`Agent`] and its tools, checked
//! once by [`build`](AgentBuilder::build).

use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::agent::{Agent, Settings};
use super::policy::{Approver, AuditSink};
use agentry_core::model::{ChatModel, ResponseFormat, ToolChoice};
use agentry_core::skill::{Skill, SkillContext, SkillError, SkillResolver};
use agentry_core::tool::{
    BuildError, Capabilities, Capability, NetGrantError, Tool, ToolContext, ToolGroup, ToolSandbox,
    ToolSource, Toolbox, ToolboxError,
};

/// Why [`AgentBuilder::build`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The tools do not go together: duplicate or empty names, a schema that
    /// does not compile, wire names that collide.
    #[error(transparent)]
    Tools(#[from] ToolboxError),
    /// Two skills share a name.
    #[error(transparent)]
    Skills(#[from] SkillError),
    /// A granted or declared `Net` capability does not read as a grant.
    #[error(transparent)]
    Grant(#[from] NetGrantError),
    /// A group's namespace is not an identifier, or is reserved.
    #[error("tool group: {0}")]
    Group(#[from] BuildError),
    /// A handoff's agent has no name, or two handoffs share one.
    #[error("handoff: {0}")]
    Handoff(String),
    /// Flat tools beside groups: functions are either all flat or all grouped.
    #[error(
        "functions are either all flat or all grouped: the flat tools {} sit beside the groups {}; put them in a group",
        flat.join(", "),
        groups.join(", ")
    )]
    MixedShapes {
        /// The flat tools.
        flat: Vec<String>,
        /// The groups' namespaces.
        groups: Vec<String>,
    },
}

/// Builds an [`Agent`]: its model, tools and limits. Start with [`Agent::builder`].
///
/// ```
/// use agentry_agent::Agent;
/// use agentry_core::model::{ScriptedModel, Step, Usage};
/// use agentry_core::tool::{ToolHandler, function};
/// use serde_json::Value;
///
/// let add = function("add")
///     .namespace("math")
///     .arg::<i64>("x", "First addend")
///     .arg::<i64>("y", "Second addend")
///     .handler(|args: Value| Ok::<_, String>(args["x"].as_i64().unwrap_or(0) + args["y"].as_i64().unwrap_or(0)))
///     .build()?;
/// let model = ScriptedModel::new().reply(Step::Final { text: "hi".into(), tokens: Usage::new(3, 1) });
/// let agent = Agent::builder(model).tool(add).system("Be brief.").max_steps(4).build()?;
/// assert_eq!(agent.toolbox().names().collect::<Vec<_>>(), ["math.add"]);
///
/// // Two tools with one name are an error of `build`, not of a later run.
/// let twice = function("add").handler(|_: Value| Ok::<_, String>(0)).build()?;
/// let err = Agent::builder(agentry_core::model::OfflineModel)
///     .tools([twice.clone(), twice])
///     .build()
///     .unwrap_err();
/// assert_eq!(err.to_string(), "two tools are named \"utils.add\"; tool names must be unique");
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[must_use = "an AgentBuilder does nothing until `build` is called"]
pub struct AgentBuilder {
    model: Arc<dyn ChatModel>,
    toolbox: Option<Toolbox>,
    tools: Vec<Tool>,
    groups: Vec<ToolGroup>,
    default_timeout: Option<Duration>,
    max_result_bytes: Option<usize>,
    settings: Settings,
}

impl AgentBuilder {
    /// A builder over a model shared with others.
    pub fn new(model: impl ChatModel + 'static) -> Self {
        Self {
            model: Arc::new(model),
            toolbox: None,
            tools: Vec::new(),
            groups: Vec::new(),
            default_timeout: None,
            max_result_bytes: None,
            settings: Settings::default(),
        }
    }

    /// The builder an existing agent was made with, to derive a variant.
    pub(super) fn from_agent(agent: &Agent) -> Self {
        Self {
            model: agent.model.clone(),
            toolbox: Some(agent.toolbox.clone()),
            tools: Vec::new(),
            groups: Vec::new(),
            default_timeout: None,
            max_result_bytes: None,
            settings: agent.settings.clone(),
        }
    }

    /// Let the agent hand the conversation to another agent: the model is
    /// offered `transfer_to_<name>` with a reason, and a call to it gives
    /// the run to that agent, which carries on with its own tools, grants,
    /// budget and model and answers the user (see [`Handoff`](super::Handoff)).
    /// The agent handed to must have a [`name`](Self::name); without an
    /// [`approver`](Self::approver) of its own it asks this agent's.
    pub fn handoff(mut self, handoff: super::Handoff) -> Self {
        self.tools.push(handoff.tool());
        self.settings.handoffs.push(handoff);
        self
    }

    /// Add one tool: a `#[tool]` function's `f::tool()`, a built
    /// [`function`](agentry_core::tool::function), a child agent's
    /// [`as_tool`](Agent::as_tool), or a hand-made [`Tool`].
    pub fn tool(mut self, tool: impl Into<Tool>) -> Self {
        self.tools.push(tool.into());
        self
    }

    /// Add several tools.
    pub fn tools<I>(mut self, tools: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Tool>,
    {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Add a function group: its tools are called
    /// `namespace.function`. An agent's functions are either all flat or all
    /// grouped: groups beside [`tool`](Self::tool)s are an error of `build`.
    ///
    /// ```
    /// use agentry_agent::{Agent, AgentError};
    /// use agentry_core::model::OfflineModel;
    /// use agentry_core::tool::{ToolGroup, function};
    /// use serde_json::Value;
    ///
    /// let search = function("search").handler(|_: Value| Ok::<_, String>("…")).build()?;
    /// let kb = ToolGroup::new("kb", "Knowledge Base")
    ///     .selection_criteria("Use for policy or documentation lookup.")
    ///     .tool(search.clone());
    /// let agent = Agent::builder(OfflineModel).group(kb.clone()).discovery(true).build()?;
    /// assert_eq!(agent.toolbox().names().collect::<Vec<_>>(), ["kb.search"]);
    ///
    /// let mixed = Agent::builder(OfflineModel).group(kb).tool(search).build().unwrap_err();
    /// assert!(matches!(mixed, AgentError::MixedShapes { .. }));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn group(mut self, group: ToolGroup) -> Self {
        self.groups.push(group);
        self
    }

    /// Add several function groups.
    pub fn groups(mut self, groups: impl IntoIterator<Item = ToolGroup>) -> Self {
        self.groups.extend(groups);
        self
    }

    /// Discovery: runs start with the modules' summaries (and the
    /// schemas of groups that are `always_include`); the model calls
    /// `discover({"tools": "kb"})` to load a module's functions, which it may
    /// call from the next step on. Tool sources (MCP servers) are modules
    /// too, named after their namespace. Off by default.
    pub fn discovery(mut self, on: bool) -> Self {
        self.settings.discovery = on;
        self
    }

    /// With discovery on, offer `search_tools({"query": …})`, answered by
    /// `searcher` over the catalog (e.g. `agentry_search::ToolSearch`): the
    /// tools it finds are callable from the next step on. When there are too
    /// many modules to list in the prompt, it is how the model finds tools.
    pub fn tool_search(
        mut self,
        searcher: impl agentry_core::tool::ToolSearcher + 'static,
    ) -> Self {
        self.settings.tool_search = Some(Arc::new(searcher));
        self
    }

    /// The agent's name: its runs' spans are `invoke_agent {name}` with
    /// `gen_ai.agent.name` (a child agent without one is named by its tool).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.settings.name = Some(name.into());
        self
    }

    /// With discovery and a [`tool_search`](Self::tool_search), start each
    /// run by searching the catalog with the user's request (the last user
    /// message) and loading what `search_tools` would find, so that the
    /// first step can call those tools directly. The model may still search
    /// or discover more. Small models write poor search queries; the user's
    /// own words are usually a better one. Off by default.
    pub fn search_first(mut self, on: bool) -> Self {
        self.settings.search_first = on;
        self
    }

    /// Offer the names the lookup built-ins accept as an `enum` in their
    /// schemas: `read_skill`'s and `apply_skill`'s the skills offered so far,
    /// `discover`'s the modules and functions (while their names take at most
    /// 1,000 bytes in all). A grammar-constrained
    /// model then cannot invent a name. On by default; off to compare.
    pub fn name_enums(mut self, on: bool) -> Self {
        self.settings.name_enums = on;
        self
    }

    /// Before the first step, compare the request with the agent's tools
    /// ([`RelevanceGate`](super::RelevanceGate)): when none is near it, step 1
    /// must answer in text instead of calling a tool that does not fit. The
    /// gate stands aside with discovery or skills on (step 1 then offers
    /// built-ins whose descriptions say nothing about the request), when the
    /// first tool choice is not `Auto`, and when the embedder fails.
    pub fn relevance_gate(mut self, gate: impl Into<Arc<super::RelevanceGate>>) -> Self {
        self.settings.relevance_gate = Some(gate.into());
        self
    }

    /// Read each final answer that follows tool calls against their results
    /// (off by default): an answer that states a number no result holds (and
    /// none that one does), a weekday no result names, or nothing the
    /// results returned at all (none of their numbers, names or codes). With
    /// [`AnswerCheck::Quote`](super::AnswerCheck::Quote) the results are quoted in its place (after it,
    /// where it only left them out); with
    /// [`AnswerCheck::AskAgain`](super::AnswerCheck::AskAgain) the
    /// model is asked once more first, the disagreement named, and the
    /// results are quoted if the second answer still disagrees. Small local
    /// models need it: they often call the right tool and then answer
    /// "18.288 meters" for its 1.8288, or describe the function instead of
    /// its result. Durable runs take answers as they are.
    pub fn check_answers(mut self, check: super::AnswerCheck) -> Self {
        self.settings.check_answers = check;
        self
    }

    /// Check the user's message before the first model step: a guardrail
    /// may pass it, rewrite it (what the model then reads) or trip, which
    /// ends the run before the model is asked
    /// ([`Outcome::GuardrailTripped`](crate::Outcome::GuardrailTripped)).
    /// Guardrails run in the order added.
    pub fn input_guardrail(mut self, guardrail: super::Guardrail) -> Self {
        self.settings.guardrails.input.push(guardrail);
        self
    }

    /// Check the final answer before it is given: pass, rewrite (a
    /// redaction), ask the model again with feedback (up to the guardrail's
    /// [`retries`](super::Guardrail::retries)), or trip.
    pub fn output_guardrail(mut self, guardrail: super::Guardrail) -> Self {
        self.settings.guardrails.output.push(guardrail);
        self
    }

    /// Check what comes back from tools the agent does not control (a tool
    /// source's tools, such as an MCP server's or an A2A agent's, and tools
    /// marked `open_world`, such as OpenAPI operations): pass, rewrite what
    /// the model reads, or trip.
    pub fn tool_result_guardrail(mut self, guardrail: super::Guardrail) -> Self {
        self.settings.guardrails.tool_result.push(guardrail);
        self
    }

    /// Start from a toolbox built elsewhere (its tools come first, and its
    /// default timeout is kept unless [`default_timeout`](Self::default_timeout) is set).
    pub fn toolbox(mut self, toolbox: Toolbox) -> Self {
        self.toolbox = Some(toolbox);
        self
    }

    /// How long an async tool may run when it does not say (default
    /// [`DEFAULT_TIMEOUT`](agentry_core::tool::DEFAULT_TIMEOUT)).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Most bytes of a tool result's text the model gets (default
    /// [`DEFAULT_MAX_RESULT_BYTES`](agentry_core::tool::DEFAULT_MAX_RESULT_BYTES));
    /// a longer result is cut and says so ([`Toolbox::with_max_result_bytes`]).
    pub fn max_result_bytes(mut self, max_bytes: usize) -> Self {
        self.max_result_bytes = Some(max_bytes);
        self
    }

    /// Narrow the allow-list to these tool names (by default every tool is allowed).
    pub fn allow_only<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: HashSet<String> = names.into_iter().map(Into::into).collect();
        self.settings.allow = Some(Arc::new(names));
        self
    }

    /// The system prompt. It never changes during a run (frozen intent).
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.settings.system = Some(system.into());
        self
    }

    /// The skills the model may pull in. The index joins the
    /// system prompt each run and the skill built-ins join the toolbox.
    pub fn skills<I>(mut self, skills: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Skill>,
    {
        self.settings.skills = Some(skills.into_iter().map(Into::into).collect());
        self
    }

    /// A resolver that decides which skills are advertised each run. It wins
    /// over [`skills`](Self::skills).
    pub fn skill_resolver(mut self, resolver: impl SkillResolver + 'static) -> Self {
        self.settings.skill_resolver = Some(Arc::new(resolver));
        self
    }

    /// Per-run data for skill body functions (e.g. `attachments`), merged
    /// into the model's `ctx` by `apply_skill` with these keys winning.
    pub fn skill_context(mut self, context: SkillContext) -> Self {
        self.settings.skill_context = Some(context);
        self
    }

    /// Most model calls in one run (default [`DEFAULT_MAX_STEPS`](super::DEFAULT_MAX_STEPS)).
    pub fn max_steps(mut self, max_steps: usize) -> Self {
        self.settings.max_steps = max_steps;
        self
    }

    /// Token budget: the loop continues only while tokens spent ≤ budget.
    /// Child agents' tokens count against it.
    pub fn token_budget(mut self, budget: u64) -> Self {
        self.settings.token_budget = budget;
        self
    }

    /// Grant a capability. Each tool runs with its own declared needs ∩ the grants.
    pub fn grant(mut self, capability: Capability) -> Self {
        let grants = self.settings.grants.iter().cloned().chain([capability]);
        self.settings.grants = grants.collect();
        self
    }

    /// Take tools from `source` too (an MCP server's): asked when each run
    /// starts and again between steps when they changed. They obey the
    /// allow-list like the agent's own tools; a name the agent already has
    /// stays the agent's.
    pub fn tool_source(mut self, source: impl ToolSource + 'static) -> Self {
        self.settings.sources.push(Arc::new(source));
        self
    }

    /// Replace every grant.
    pub fn grants(mut self, grants: Capabilities) -> Self {
        self.settings.grants = grants;
        self
    }

    /// Who approves calls of destructive tools. Without one, they are denied.
    pub fn approver(mut self, approver: impl Approver + 'static) -> Self {
        self.settings.approver = Some(Arc::new(approver));
        self
    }

    /// Where audit records go.
    pub fn audit(mut self, sink: impl AuditSink + 'static) -> Self {
        self.settings.audit = Some(Arc::new(sink));
        self
    }

    /// The request context handed to tools (session, sender, extras, state).
    pub fn context(mut self, context: ToolContext) -> Self {
        self.settings.context = context;
        self
    }

    /// Where calls of sandboxed tools ([`ToolHints::sandbox`]) run: the
    /// `agentry-sandbox` crate's `Sandbox` confines each to the tool's
    /// granted capabilities in a child process. Without one such calls are
    /// refused. Set it after [`context`](Self::context), which replaces it.
    ///
    /// [`ToolHints::sandbox`]: agentry_core::tool::ToolHints::sandbox
    pub fn sandbox(mut self, sandbox: impl ToolSandbox + 'static) -> Self {
        self.settings.context = self.settings.context.with_sandbox(Arc::new(sandbox));
        self
    }

    /// Typed state for tools (a database pool, a client): what a
    /// [`State<T>`](agentry_core::tool::State) parameter receives. One value per type.
    pub fn state<T: Any + Send + Sync>(mut self, state: T) -> Self {
        self.settings.context = self.settings.context.with_state(state);
        self
    }

    /// Most tokens per model call.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.settings.max_tokens = Some(max_tokens);
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.settings.temperature = Some(temperature);
        self
    }

    /// After this many steps with tool calls, ask the model to answer in text
    /// (`ToolChoice::None`). Small local models otherwise tend to call the same
    /// tool again instead of answering. Unlimited by default.
    pub fn max_tool_rounds(mut self, rounds: usize) -> Self {
        self.settings.max_tool_rounds = Some(rounds);
        self
    }

    /// The tool choice of the first step (default [`ToolChoice::Auto`]).
    /// `Required`, or `Tool("read_skill")`, makes the model start with a
    /// call: small local models otherwise tend to answer before reading the
    /// skill that covers the task. Later steps use `Auto`.
    pub fn first_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.settings.first_tool_choice = choice;
        self
    }

    /// How deep agents may nest as each other's tools (default
    /// [`DEFAULT_MAX_DEPTH`](super::DEFAULT_MAX_DEPTH)): a child past it is
    /// not started and its parent gets an error result.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.settings.max_depth = depth;
        self
    }

    /// Most tool calls one step may run (default
    /// [`DEFAULT_MAX_CALLS_PER_STEP`](super::DEFAULT_MAX_CALLS_PER_STEP)); the
    /// rest of a step's calls get an error result saying so.
    pub fn max_calls_per_step(mut self, limit: usize) -> Self {
        self.settings.max_calls_per_step = limit;
        self
    }

    /// Make every answer a JSON text that follows `format`'s schema
    /// (providers' structured-output modes; a grammar on the local model).
    /// [`Program`](crate::program::Program) sets this and validates the answers.
    pub fn response_format(mut self, format: ResponseFormat) -> Self {
        self.settings.response_format = Some(format);
        self
    }

    /// Check the tools (unique names, valid schemas, wire names) and the
    /// skills (unique names), and make the agent.
    pub fn build(mut self) -> Result<Agent, AgentError> {
        let mut targets = HashSet::new();
        if let Some(approver) = &self.settings.approver {
            // An agent handed to without an approver of its own asks this one's.
            for handoff in &mut self.settings.handoffs {
                if handoff.target.settings.approver.is_none() {
                    let mut target = (*handoff.target).clone();
                    target.settings.approver = Some(approver.clone());
                    handoff.target = std::sync::Arc::new(target);
                }
            }
        }
        for handoff in &self.settings.handoffs {
            if handoff.name.trim().is_empty() {
                return Err(AgentError::Handoff(
                    "the agent handed to has no name (AgentBuilder::name)".into(),
                ));
            }
            if !targets.insert(handoff.tool_name()) {
                return Err(AgentError::Handoff(format!(
                    "two handoffs are to `{}`",
                    handoff.name
                )));
            }
        }
        if let Some(skills) = &self.settings.skills {
            agentry_core::skill::for_agent(skills.iter().cloned())?;
        }
        let mut settings = self.settings;
        let mut tools = self.tools;
        if !self.groups.is_empty() {
            let grouped: Vec<&str> = settings
                .modules
                .iter()
                .map(|module| module.namespace.as_str())
                .chain(self.groups.iter().map(|group| group.namespace.as_str()))
                .collect();
            let flat: Vec<String> = self
                .toolbox
                .iter()
                .flat_map(Toolbox::names)
                .filter(|name| {
                    super::discovery::namespace_of(name).is_none_or(|ns| !grouped.contains(&ns))
                })
                .map(str::to_owned)
                .chain(tools.iter().map(|tool| tool.name.clone()))
                .collect();
            if !flat.is_empty() {
                return Err(AgentError::MixedShapes {
                    flat,
                    groups: self.groups.iter().map(|g| g.namespace.clone()).collect(),
                });
            }
            for group in &self.groups {
                tools.extend(group.tools()?);
                settings.modules.push(super::discovery::Module::of(group));
            }
        }
        let toolbox = match self.toolbox {
            Some(toolbox) if tools.is_empty() => toolbox,
            Some(toolbox) => toolbox.with_tools(tools)?,
            None => Toolbox::for_agent(tools)?,
        };
        let toolbox = match self.default_timeout {
            Some(timeout) => toolbox.with_default_timeout(timeout),
            None => toolbox,
        };
        let toolbox = match self.max_result_bytes {
            Some(max_bytes) => toolbox.with_max_result_bytes(max_bytes),
            None => toolbox,
        };
        settings.grants.check()?;
        for tool in toolbox.tools() {
            tool.capabilities
                .iter()
                .cloned()
                .collect::<Capabilities>()
                .check()?;
        }
        Ok(Agent::assemble(self.model, toolbox, settings))
    }
}
