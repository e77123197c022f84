//! The agent a command runs, settled once for `run`, `chat` and `serve`: a
//! flag on the command line wins over `agentry.toml`, and the file over the
//! built-in default.

use std::path::PathBuf;
use std::sync::Arc;

use agentry::agent::{AgentBuilder, RelevanceGate};
use agentry::embed::Embedder;
use agentry::memory::{Memory, MemoryStore};
use agentry::model::ChatModel;
use agentry::tool::Capability;

use crate::args::{AnswerCheckArg, CallSyntaxArg, GateEmbedderArg, ModelArgs, ProviderKind};
use crate::config::{EmbedderKind, Loaded, ToolSet};

/// Most model calls per run unless told otherwise.
pub const DEFAULT_MAX_STEPS: usize = 6;
/// Token budget per run unless told otherwise.
pub const DEFAULT_BUDGET: u64 = 20_000;
/// Longest reply per model call unless told otherwise.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// Where chat sessions are kept unless told otherwise.
pub const DEFAULT_STORE: &str = "agentry.db";

/// The relevance gate's margin over small talk unless told otherwise
/// (chosen on the tuning half of the everyday requests: BENCHMARKS.md).
pub const DEFAULT_SMALL_TALK_MARGIN: f32 = -0.2;
/// The relevance gate's call floor unless told otherwise (chosen on the
/// tuning half of the everyday requests: BENCHMARKS.md).
pub const DEFAULT_RELEVANCE_CALL_FLOOR: f32 = 0.5;

/// all-MiniLM-L6-v2's embedding size.
const MINILM_DIMENSIONS: usize = 384;

/// Which model answers, settled.
#[derive(Clone, Debug)]
pub struct ModelChoice {
    /// The provider.
    pub provider: ProviderKind,
    /// Local: a GGUF path or a known model id. Remote: the model name.
    pub model: Option<String>,
    /// Local: write tool calls under a grammar.
    pub grammar: bool,
    /// Local: reuse cached prompt prefixes.
    pub prompt_cache: bool,
    /// Local: with the prompt cache, keep prompts on disk too so that the
    /// next process starts warm. Only `run` and `chat` (one user, one-shot
    /// processes) turn it on: a server would write other people's prompts to
    /// this user's cache, and an evaluation's prompts are never seen again.
    pub prompt_store: bool,
    /// Local: read calls written inside the text as calls.
    pub text_calls: bool,
    /// Local: how the model is asked to write tool calls.
    pub call_syntax: CallSyntaxArg,
    /// Local, template syntax: the system prompt says several calls are one JSON list.
    pub call_lists: bool,
    /// Local, with call lists: a reply offering one tool is held to a list.
    pub one_tool_lists: bool,
    /// Local, with call lists: the list floor for one offered tool.
    pub list_floor: f32,
    /// Local, template syntax: the call floor for the first choice between text and a call.
    pub call_floor: f32,
    /// Local: identical calls in one reply are all run, not read as one.
    pub repeated_calls: bool,
    /// Local: every call of a reply runs, grounded in the conversation or not.
    pub ungrounded_calls: bool,
    /// The relevance gate's floor, when the gate is on.
    pub relevance_floor: Option<f32>,
    /// The relevance gate's margin over small talk.
    pub small_talk_margin: f32,
    /// The relevance gate's margin at which the first step must call.
    pub relevance_call_floor: f32,
    /// What becomes of an answer that disagrees with the tool results.
    pub check_answers: AnswerCheckArg,
    /// The embedder of the relevance gate.
    pub gate_embedder: GateEmbedderArg,
}

impl ModelArgs {
    /// The flags alone, as if there were no `agentry.toml`: what the
    /// evaluation harness runs.
    pub fn choose_from_flags(&self) -> ModelChoice {
        self.choose(&Loaded::default())
    }

    /// The flags over the file's `[model]`.
    pub(crate) fn choose(&self, loaded: &Loaded) -> ModelChoice {
        let section = &loaded.file.model;
        let provider = self
            .provider
            .or(section.provider)
            .unwrap_or(ProviderKind::Local);
        let default_floor =
            (provider == ProviderKind::Local).then_some(agentry::agent::DEFAULT_RELEVANCE_FLOOR);
        ModelChoice {
            provider,
            model: self.model.clone().or_else(|| section.name.clone()),
            grammar: !self.no_grammar && section.grammar.unwrap_or(true),
            prompt_cache: !self.no_prompt_cache && section.prompt_cache.unwrap_or(true),
            prompt_store: false,
            text_calls: !self.no_text_calls && section.text_calls.unwrap_or(true),
            call_syntax: self
                .call_syntax
                .or(section.call_syntax)
                .unwrap_or(CallSyntaxArg::Template),
            call_lists: !self.no_call_lists && section.call_lists.unwrap_or(true),
            one_tool_lists: self.one_tool_lists || section.one_tool_lists.unwrap_or(false),
            list_floor: self
                .list_floor
                .or(section.list_floor)
                .unwrap_or(agentry_local::DEFAULT_LIST_FLOOR),
            call_floor: self.call_floor.or(section.call_floor).unwrap_or(1.0),
            repeated_calls: self.repeated_calls || section.repeated_calls.unwrap_or(false),
            ungrounded_calls: self.ungrounded_calls || section.ungrounded_calls.unwrap_or(false),
            relevance_floor: self
                .relevance_floor
                .or(section.relevance_floor)
                .or(default_floor)
                .filter(|floor| *floor > 0.0),
            small_talk_margin: self
                .small_talk_margin
                .or(section.small_talk_margin)
                .unwrap_or(DEFAULT_SMALL_TALK_MARGIN),
            relevance_call_floor: self
                .relevance_call_floor
                .or(section.relevance_call_floor)
                .unwrap_or(DEFAULT_RELEVANCE_CALL_FLOOR),
            check_answers: self.check_answers.or(section.check_answers).unwrap_or(
                if provider == ProviderKind::Local {
                    AnswerCheckArg::Quote
                } else {
                    AnswerCheckArg::Off
                },
            ),
            gate_embedder: self
                .gate_embedder
                .or(section.gate_embedder)
                .unwrap_or_default(),
        }
    }
}

/// The agent's definition on the command line, shared by `agentry run`,
/// `agentry chat` and `agentry serve`; each flag may come from `agentry.toml`
/// instead.
#[derive(clap::Args, Default)]
pub struct AgentArgs {
    /// The agent definition file (default: `agentry.toml` here, if there is one).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Directory the file reader may read, and nothing outside it [default: .].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Most model calls per run [default: 6].
    #[arg(long)]
    max_steps: Option<usize>,
    /// Token budget per run [default: 20000].
    #[arg(long)]
    budget: Option<u64>,
    /// Steps with tool calls before the model must answer in text (default: 1 for the local model, 4 otherwise).
    #[arg(long)]
    tool_rounds: Option<usize>,
    /// Give the agent the Agent Skills folders in this directory (listed in
    /// the system prompt, read on demand with `read_skill`).
    #[arg(long)]
    skills: Option<PathBuf>,
    /// Give the agent an MCP server's tools: `[NAME=]COMMAND_OR_URL`, a
    /// command line (run over stdio) or an http(s) URL (Streamable HTTP); the
    /// tools are named `NAME.tool` (the server's own name by default).
    /// Repeatable; added to the file's `[mcp.servers.NAME]` tables.
    #[arg(long = "mcp", value_name = "[NAME=]COMMAND_OR_URL")]
    mcp: Vec<String>,
    /// Believe the `--mcp` servers' tool annotations (read-only, destructive).
    /// Without it every MCP tool is treated as destructive.
    #[arg(long)]
    mcp_trusted: bool,
    /// Give the agent a remote A2A agent as a tool: `[NAME=]URL`, its base
    /// URL (the card is read from `/.well-known/agent-card.json`); the tool
    /// is NAME (the card's name by default) and each call needs approval.
    /// Repeatable; added to the file's `[a2a.agents.NAME]` tables.
    #[arg(long = "a2a", value_name = "[NAME=]URL")]
    a2a: Vec<String>,
}

impl AgentArgs {
    /// The built-in agent working in `dir`, as `agentry run` would build it
    /// with no other flags: `agentry mcp serve --agent` serves this one.
    pub fn in_dir(dir: PathBuf) -> Self {
        Self {
            dir: Some(dir),
            ..Self::default()
        }
    }

    /// The definition file these arguments name, or find.
    pub fn load(&self) -> Result<Loaded, String> {
        Loaded::find(self.config.as_deref())
    }

    /// The agent over `model` (answering through `provider`): its tools,
    /// prompt, grants, limits, skills and MCP servers' tools; the caller adds
    /// the approver.
    pub async fn builder(
        &self,
        loaded: &Loaded,
        model: Arc<dyn ChatModel>,
        choice: &ModelChoice,
    ) -> Result<AgentBuilder, String> {
        let gate = relevance_gate(choice).await?.map(Arc::new);
        self.builder_with_gate(loaded, model, choice, gate).await
    }

    /// [`builder`](Self::builder) with a relevance gate already made (the
    /// agents of a team share one: its embedder is loaded once).
    pub async fn builder_with_gate(
        &self,
        loaded: &Loaded,
        model: Arc<dyn ChatModel>,
        choice: &ModelChoice,
        gate: Option<Arc<RelevanceGate>>,
    ) -> Result<AgentBuilder, String> {
        let provider = choice.provider;
        let section = &loaded.file.agent;
        let dir = match (&self.dir, &section.dir) {
            (Some(dir), _) => dir
                .canonicalize()
                .map_err(|e| format!("{}: {e}", dir.display()))?,
            (None, Some(dir)) => loaded.existing(dir, "agent.dir")?,
            (None, None) => PathBuf::from(".")
                .canonicalize()
                .map_err(|e| format!(".: {e}"))?,
        };
        let tools = section.tools.clone().unwrap_or(vec![ToolSet::Demo]);
        let shared = model.clone();
        let mut agent =
            AgentBuilder::new(model)
                .name(loaded.file.name.as_deref().unwrap_or("agentry"))
                .system(section.system.as_deref().unwrap_or(crate::run::SYSTEM))
                .max_steps(
                    self.max_steps
                        .or(section.max_steps)
                        .unwrap_or(DEFAULT_MAX_STEPS),
                )
                .token_budget(
                    self.budget
                        .or(section.token_budget)
                        .unwrap_or(DEFAULT_BUDGET),
                )
                .max_tokens(section.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))
                .max_tool_rounds(self.tool_rounds.or(section.tool_rounds).unwrap_or(
                    match provider {
                        ProviderKind::Local => 1,
                        _ => 4,
                    },
                ));
        if tools.contains(&ToolSet::Demo) {
            agent = agent
                .tools(crate::demo_tools::all(&dir))
                .grant(Capability::fs_read(&dir));
        }
        for capability in grants(loaded)? {
            agent = agent.grant(capability);
        }
        let skills = match (&self.skills, &section.skills) {
            (Some(dir), _) => Some(dir.clone()),
            (None, Some(dir)) => Some(loaded.existing(dir, "agent.skills")?),
            (None, None) => None,
        };
        if let Some(skills_dir) = skills {
            let report = crate::skills::load_and_warn(&skills_dir)?;
            agent = agent.skills(report.to_skills());
        }
        let trusted = self.mcp_trusted || section.mcp_trusted.unwrap_or(false);
        let servers = crate::mcp::server_configs(&self.mcp, trusted, loaded)?;
        for server in crate::mcp::connect_all(servers).await? {
            agent = agent.tool_source(Arc::new(server));
        }
        let remote = crate::a2a::remote_agents(&self.a2a, loaded)?;
        agent = agent.tools(crate::a2a::tools(remote).await?);
        if let Some(gate) = &gate {
            agent = agent.relevance_gate(gate.clone());
        }
        let mut agent = agent.check_answers(choice.check_answers.into());
        if section.first_call == Some(crate::config::FirstCall::Required) {
            agent = agent.first_tool_choice(agentry::model::ToolChoice::Required);
        }
        Box::pin(crate::team::with_handoffs(
            self, loaded, agent, shared, choice, gate,
        ))
        .await
    }
}

/// The id of the embedder the relevance gate uses.
pub const MINILM_ID: &str = agentry_local::fetch::MINILM.id;

/// The relevance gate `choice` asks for, on all-MiniLM-L6-v2 or
/// nomic-embed-text-v1.5 (pulled on first use), or `None` with the gate off.
pub async fn relevance_gate(choice: &ModelChoice) -> Result<Option<RelevanceGate>, String> {
    let Some(floor) = choice.relevance_floor else {
        return Ok(None);
    };
    let gate = match choice.gate_embedder {
        GateEmbedderArg::Minilm => RelevanceGate::new(minilm().await?, floor),
        GateEmbedderArg::Nomic => RelevanceGate::new(nomic().await?, floor),
    };
    // Past these the comparisons cannot change a decision: left out.
    let gate = if choice.small_talk_margin > -2.0 {
        gate.small_talk(
            agentry::agent::SMALL_TALK.iter().copied(),
            choice.small_talk_margin,
        )
    } else {
        gate
    };
    Ok(Some(if choice.relevance_call_floor < 2.0 {
        gate.call_floor(choice.relevance_call_floor)
    } else {
        gate
    }))
}

/// nomic-embed-text-v1.5, pulled into the cache first (with a progress bar) when missing.
pub async fn nomic() -> Result<agentry_local::GgufEmbedder, String> {
    let spec = &agentry_local::fetch::NOMIC;
    if agentry_local::fetch::installed_zipped(spec).is_none() {
        eprintln!(
            "pulling {} into {} …",
            spec.id,
            agentry_local::fetch::cache_dir().display()
        );
        crate::providers::pull_zipped_with_bar(spec).await?;
    }
    agentry_local::GgufEmbedder::nomic()
        .await
        .map_err(|e| format!("the embedding model: {e}"))
}

/// all-MiniLM-L6-v2, pulled into the cache first (with a progress bar) when missing.
pub async fn minilm() -> Result<agentry_local::LocalEmbedder, String> {
    let spec = &agentry_local::fetch::MINILM;
    if agentry_local::fetch::installed_embedding(spec).is_none() {
        eprintln!(
            "pulling {} into {} …",
            spec.id,
            agentry_local::fetch::cache_dir().display()
        );
        crate::providers::pull_embedding_with_bar(spec).await?;
    }
    agentry_local::LocalEmbedder::minilm()
        .await
        .map_err(|e| format!("the embedding model: {e}"))
}

/// The file's `[grants]`, paths resolved against the file and checked to exist.
fn grants(loaded: &Loaded) -> Result<Vec<Capability>, String> {
    let section = &loaded.file.grants;
    let mut capabilities = Vec::new();
    for dir in &section.fs_read {
        capabilities.push(Capability::fs_read(loaded.existing(dir, "grants.fs_read")?));
    }
    for dir in &section.fs_write {
        capabilities.push(Capability::fs_write(
            loaded.existing(dir, "grants.fs_write")?,
        ));
    }
    capabilities.extend(
        section
            .net
            .iter()
            .map(|host| Capability::net(host.get_ref())),
    );
    capabilities.extend(section.env.iter().map(Capability::env));
    Ok(capabilities)
}

/// Where chat sessions are kept, on the command line.
#[derive(clap::Args)]
pub struct MemoryArgs {
    /// Where session memory lives: a SQLite file, or a `postgres://` URL
    /// (pgvector) [default: agentry.db].
    #[arg(long)]
    memory: Option<String>,
}

impl MemoryArgs {
    /// Where the store is: the flag, else the file's `memory.store` (a path
    /// relative to the file), else `agentry.db` here.
    pub fn location(&self, loaded: &Loaded) -> String {
        match (&self.memory, &loaded.file.memory.store) {
            (Some(location), _) => location.clone(),
            (None, Some(store)) if is_postgres(store.get_ref()) => store.get_ref().clone(),
            (None, Some(store)) => loaded
                .resolve(std::path::Path::new(store.get_ref()))
                .display()
                .to_string(),
            (None, None) => DEFAULT_STORE.to_owned(),
        }
    }

    /// The embedding size the file's embedder gives (384 for MiniLM),
    /// known without loading it: a PostgreSQL store keeps one table per size.
    pub fn dimensions(loaded: &Loaded) -> usize {
        let section = &loaded.file.memory;
        match section.embedder.unwrap_or_default() {
            EmbedderKind::Minilm => MINILM_DIMENSIONS,
            EmbedderKind::Openai => section.embedding_dimensions.unwrap_or(1536),
        }
    }

    /// The store (the flag over the file's `memory.store`) and the file's embedder.
    pub async fn open(&self, loaded: &Loaded) -> Result<Memory, String> {
        let embedder = Self::embedder(loaded).await?;
        let location = self.location(loaded);
        let store: Arc<dyn MemoryStore> = if is_postgres(&location) {
            Arc::new(
                agentry_store::PgStore::connect(&location, embedder.dimensions())
                    .await
                    .map_err(|e| e.to_string())?,
            )
        } else {
            Arc::new(
                agentry_store::SqliteStore::open(&location)
                    .map_err(|e| format!("{location}: {e}"))?,
            )
        };
        Ok(Memory::new(store, embedder).with_ranking(Self::ranking(loaded)))
    }

    /// How the file says recall ranks records (`[memory.ranking]`; cosine
    /// similarity alone when it says nothing).
    pub fn ranking(loaded: &Loaded) -> agentry::memory::Ranking {
        loaded.file.memory.ranking.unwrap_or_default()
    }

    /// The file's embedder (`memory.embedder`), loaded.
    pub async fn embedder(loaded: &Loaded) -> Result<Arc<dyn Embedder>, String> {
        let section = &loaded.file.memory;
        Ok(match section.embedder.unwrap_or_default() {
            EmbedderKind::Minilm => Arc::new(minilm().await?),
            EmbedderKind::Openai => Arc::new(
                agentry::providers::OpenAiEmbedder::from_env(
                    section
                        .embedding_model
                        .as_deref()
                        .unwrap_or("text-embedding-3-small"),
                    section.embedding_dimensions.unwrap_or(1536),
                )
                .map_err(|e| format!("memory.embedder: {e}"))?,
            ),
        })
    }
}

/// Whether a memory location is a PostgreSQL URL (else a SQLite file).
pub fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        model: ModelArgs,
    }

    fn choose(flags: &[&str], file: &str) -> ModelChoice {
        let cli = Cli::parse_from(std::iter::once("agentry").chain(flags.iter().copied()));
        let loaded = Loaded {
            file: toml::from_str(file).unwrap(),
            ..Loaded::default()
        };
        cli.model.choose(&loaded)
    }

    #[test]
    fn the_relevance_gate_is_on_for_the_local_model_only_and_zero_turns_it_off() {
        assert_eq!(choose(&[], "").relevance_floor, Some(0.2));
        assert_eq!(choose(&["--provider", "openai"], "").relevance_floor, None);
        let from_file = "[model]\nprovider = \"openai\"\nrelevance_floor = 0.3";
        assert_eq!(choose(&[], from_file).relevance_floor, Some(0.3));
        assert_eq!(
            choose(&["--relevance-floor", "0"], "").relevance_floor,
            None
        );
        assert_eq!(
            choose(
                &["--relevance-floor", "0.4"],
                "[model]\nrelevance_floor = 0.3"
            )
            .relevance_floor,
            Some(0.4)
        );
    }

    #[test]
    fn the_gates_small_talk_margin_and_call_floor_come_from_the_flag_the_file_or_the_default() {
        let defaults = choose(&[], "");
        assert_eq!(defaults.small_talk_margin, DEFAULT_SMALL_TALK_MARGIN);
        assert_eq!(defaults.relevance_call_floor, DEFAULT_RELEVANCE_CALL_FLOOR);
        let from_file = "[model]\nsmall_talk_margin = -0.3\nrelevance_call_floor = 0.1";
        let chosen = choose(&[], from_file);
        assert_eq!(
            (chosen.small_talk_margin, chosen.relevance_call_floor),
            (-0.3, 0.1)
        );
        let flags = [
            "--small-talk-margin",
            "-0.1",
            "--relevance-call-floor",
            "-0.05",
        ];
        let chosen = choose(&flags, from_file);
        assert_eq!(
            (chosen.small_talk_margin, chosen.relevance_call_floor),
            (-0.1, -0.05)
        );
    }

    #[test]
    fn call_lists_are_on_unless_a_flag_or_the_file_says_otherwise() {
        assert!(choose(&[], "").call_lists);
        assert!(!choose(&["--no-call-lists"], "").call_lists);
        assert!(!choose(&[], "[model]\ncall_lists = false").call_lists);
    }

    #[test]
    fn the_list_floor_comes_from_the_flag_the_file_or_the_default() {
        assert_eq!(
            choose(&[], "").list_floor,
            agentry_local::DEFAULT_LIST_FLOOR
        );
        assert_eq!(choose(&["--list-floor", "1"], "").list_floor, 1.0);
        let from_file = "[model]\nlist_floor = 0.2";
        assert_eq!(choose(&[], from_file).list_floor, 0.2);
        assert_eq!(choose(&["--list-floor", "0"], from_file).list_floor, 0.0);
    }

    #[test]
    fn the_call_floor_comes_from_the_flag_the_file_or_the_default() {
        assert_eq!(choose(&[], "").call_floor, 1.0);
        assert_eq!(choose(&["--call-floor", "0.2"], "").call_floor, 0.2);
        let from_file = "[model]\ncall_floor = 0.3";
        assert_eq!(choose(&[], from_file).call_floor, 0.3);
        assert_eq!(choose(&["--call-floor", "1"], from_file).call_floor, 1.0);
    }

    #[test]
    fn answers_are_quoted_with_the_local_model_unless_told_otherwise() {
        use AnswerCheckArg::*;
        assert_eq!(choose(&[], "").check_answers, Quote);
        assert_eq!(choose(&["--provider", "openai"], "").check_answers, Off);
        let flags = ["--provider", "openai", "--check-answers", "ask-again"];
        assert_eq!(choose(&flags, "").check_answers, AskAgain);
        let from_file = "[model]\ncheck_answers = \"off\"";
        assert_eq!(choose(&[], from_file).check_answers, Off);
        assert_eq!(
            choose(&["--check-answers", "quote"], from_file).check_answers,
            Quote
        );
    }

    #[test]
    fn one_tool_lists_are_off_unless_a_flag_or_the_file_says_otherwise() {
        assert!(!choose(&[], "").one_tool_lists);
        assert!(choose(&["--one-tool-lists"], "").one_tool_lists);
        assert!(choose(&[], "[model]\none_tool_lists = true").one_tool_lists);
    }

    #[test]
    fn repeated_calls_are_read_once_unless_a_flag_or_the_file_says_otherwise() {
        assert!(!choose(&[], "").repeated_calls);
        assert!(choose(&["--repeated-calls"], "").repeated_calls);
        assert!(choose(&[], "[model]\nrepeated_calls = true").repeated_calls);
    }

    #[test]
    fn ungrounded_calls_are_left_out_unless_a_flag_or_the_file_says_otherwise() {
        assert!(!choose(&[], "").ungrounded_calls);
        assert!(choose(&["--ungrounded-calls"], "").ungrounded_calls);
        assert!(choose(&[], "[model]\nungrounded_calls = true").ungrounded_calls);
    }

    #[test]
    fn calls_are_template_json_unless_a_flag_or_the_file_says_otherwise() {
        use CallSyntaxArg::{Python, Template};
        assert_eq!(choose(&[], "").call_syntax, Template);
        assert_eq!(choose(&["--call-syntax", "python"], "").call_syntax, Python);
        let file = "[model]\ncall_syntax = \"python\"";
        assert_eq!(choose(&[], file).call_syntax, Python);
        let auto = "[model]\ncall_syntax = \"auto\"";
        assert_eq!(choose(&[], auto).call_syntax, CallSyntaxArg::Auto);
        assert_eq!(
            choose(&["--call-syntax", "template"], file).call_syntax,
            Template
        );
    }
}
