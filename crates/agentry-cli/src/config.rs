//! `agentry.toml`: one agent definition for `agentry run`, `agentry chat` and
//! `agentry serve`: the model, the system prompt, the tools, skills, granted
//! capabilities, limits, the memory store, the embedder, the server's
//! address and API keys, and MCP servers (`[mcp.servers.NAME]`).
//!
//! Every key is optional; a flag on the command line wins over the file, and
//! the file over the built-in default. Paths in the file are relative to the
//! file's directory. Unknown keys and bad values are errors that name the
//! file, the line and the key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::args::{CallSyntaxArg, ProviderKind};

/// The file `agentry` reads when no `--config` is given, if it exists.
pub const DEFAULT_FILE: &str = "agentry.toml";

/// The starter file `agentry init` writes: every key, commented.
pub const STARTER: &str = include_str!("starter.toml");

/// A parsed `agentry.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFile {
    /// The agent's name (its model name on `/v1/models`).
    pub name: Option<String>,
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub agent: AgentSection,
    #[serde(default)]
    pub grants: GrantsSection,
    #[serde(default)]
    pub memory: MemorySection,
    #[serde(default)]
    pub server: ServerSection,
    /// Read by `agentry_mcp::client::servers_from_toml`.
    #[serde(default)]
    pub mcp: Option<toml::Table>,
    /// `[a2a]`: remote A2A agents as tools.
    #[serde(default)]
    pub a2a: crate::a2a::A2aSection,
    /// `[telemetry]`: OTLP export of traces and metrics (the `OTEL_*`
    /// environment fills in what it leaves out).
    #[serde(default)]
    pub telemetry: agentry_telemetry::TelemetryConfig,
    /// `[agents.NAME]`: more agents, each with the keys of `[agent]`, for
    /// handoffs and workflows.
    #[serde(default)]
    pub agents: std::collections::BTreeMap<String, AgentSection>,
    /// `[workflow]`: steps over the agents (`agentry workflow run`).
    #[serde(default)]
    pub workflow: Option<agentry::workflow::StepSpec>,
}

/// `[model]`: which model answers.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// `local` (default), `openai`, `anthropic` or `offline`.
    pub provider: Option<ProviderKind>,
    /// Local: a GGUF path or a known model id. Remote: the model name.
    pub name: Option<String>,
    /// Local: write tool calls under a grammar (default true).
    pub grammar: Option<bool>,
    /// Local: reuse the KV cache of prompts that begin the same way (default true).
    pub prompt_cache: Option<bool>,
    /// Local: read a call written inside the text (a fenced or bare JSON
    /// object naming an offered tool) as a call (default true).
    pub text_calls: Option<bool>,
    /// Local: how the model is asked to write tool calls, `template` (default) or `python`.
    pub call_syntax: Option<CallSyntaxArg>,
    /// Local, template syntax: tell the model that several calls are one JSON list (default true).
    pub call_lists: Option<bool>,
    /// Local, with call lists: hold a reply that offers one tool to a JSON
    /// list of calls (default false).
    pub one_tool_lists: Option<bool>,
    /// Local, with call lists: when a request offers one tool, open a JSON
    /// list of calls where the model gives a list at least this share of
    /// the probability against one bare call (default 0.05; 1 leaves the
    /// choice to the model).
    pub list_floor: Option<f32>,
    /// Local, template syntax: open a call where the model gives calling at
    /// least this share of the probability against answering in text
    /// (default 1: the model's own choice).
    pub call_floor: Option<f32>,
    /// Local: run every copy of a call the model repeats word for word in
    /// one reply (default false: the repeats are read as one call).
    pub repeated_calls: Option<bool>,
    /// Local: run every call of a reply (default false: after the first, a
    /// call that repeats an earlier one with its numbers in another order,
    /// or brings in a number found nowhere in the conversation, is left out).
    pub ungrounded_calls: Option<bool>,
    /// The relevance gate's floor (default 0.2 with the local model; 0 turns it off).
    pub relevance_floor: Option<f32>,
    /// With the relevance gate: answer in text unless a tool is this much
    /// nearer the request than small talk (-2 turns it off).
    pub small_talk_margin: Option<f32>,
    /// With the relevance gate: the first step calls a tool when one is
    /// this much nearer the request than small talk (2 turns it off).
    pub relevance_call_floor: Option<f32>,
    /// What to do with an answer that disagrees with the tool results it
    /// rests on: `off`, `quote` or `ask-again` (default `quote` with the
    /// local model, `off` otherwise).
    pub check_answers: Option<crate::args::AnswerCheckArg>,
    /// The embedder the relevance gate uses: `minilm` (default) or `nomic`.
    pub gate_embedder: Option<crate::args::GateEmbedderArg>,
}

/// `[agent]`: prompt, tools and limits.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// The system prompt (default: the demo's).
    pub system: Option<String>,
    /// Built-in tool sets: `"demo"` (calculator, time, units, file reader) or none.
    pub tools: Option<Vec<ToolSet>>,
    /// The directory the file reader may read.
    pub dir: Option<Spanned<PathBuf>>,
    /// A folder of Agent Skills.
    pub skills: Option<Spanned<PathBuf>>,
    /// Most model calls per run.
    pub max_steps: Option<usize>,
    /// Token budget per run.
    pub token_budget: Option<u64>,
    /// Steps with tool calls before the model must answer in text.
    pub tool_rounds: Option<usize>,
    /// Longest reply per model call, in tokens.
    pub max_tokens: Option<u32>,
    /// Believe the MCP servers' tool annotations.
    pub mcp_trusted: Option<bool>,
    /// What the agent is for, as an agent that hands off to it is told.
    pub description: Option<String>,
    /// Agents (`[agents.NAME]`) this one may hand the conversation to.
    pub handoffs: Option<Vec<String>>,
    /// Handed the conversation, what this agent sees of it: `all` (the
    /// default), `text` (without tool calls and results) or `last` (the
    /// user's last message).
    pub history: Option<HistoryKind>,
    /// The first step must call a tool (`"required"`), as a triage agent
    /// that only hands off should; `"auto"` (the default) lets the model choose.
    pub first_call: Option<FirstCall>,
}

/// What an agent handed to sees of the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryKind {
    /// Everything.
    All,
    /// What the user and the agents said, without tool calls and results.
    Text,
    /// The user's last message.
    Last,
}

/// Whether the first step must call a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FirstCall {
    /// The model chooses.
    Auto,
    /// It must call one.
    Required,
}

/// A built-in tool set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSet {
    /// The demo tools: calculator, current time, unit conversion, file reader.
    Demo,
}

/// `[grants]`: capabilities given to the tools beyond the file reader's directory.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantsSection {
    /// Directories tools may read.
    #[serde(default)]
    pub fs_read: Vec<Spanned<PathBuf>>,
    /// Directories tools may write.
    #[serde(default)]
    pub fs_write: Vec<Spanned<PathBuf>>,
    /// Hosts tools may reach (`api.example.com`, `*.example.com`, `https://host:8443`).
    #[serde(default)]
    pub net: Vec<Spanned<String>>,
    /// Environment variables tools may read.
    #[serde(default)]
    pub env: Vec<String>,
}

/// `[memory]`: where chat sessions are kept and how text is embedded.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    /// A SQLite file (default `agentry.db`) or a `postgres://` URL.
    pub store: Option<Spanned<String>>,
    /// The embedder: `minilm` (local, default) or `openai`.
    pub embedder: Option<EmbedderKind>,
    /// The OpenAI embedding model (default `text-embedding-3-small`).
    pub embedding_model: Option<String>,
    /// Its dimensions (default 1536).
    pub embedding_dimensions: Option<usize>,
    /// `[memory.ranking]`: hybrid recall, recency and importance (all off by default).
    pub ranking: Option<agentry::memory::Ranking>,
}

/// Which embedder turns text into vectors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 in process (pulled on first use).
    #[default]
    Minilm,
    /// OpenAI's embeddings API (`OPENAI_API_KEY`, `OPENAI_BASE_URL`).
    Openai,
}

/// `[server]`: `agentry serve`'s address, keys and limits.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// The address to listen on (default `127.0.0.1:8080`).
    pub listen: Option<SocketAddr>,
    /// API keys, written out.
    #[serde(default)]
    pub api_keys: Vec<String>,
    /// An environment variable holding comma-separated API keys.
    pub api_keys_env: Option<Spanned<String>>,
    /// Largest request body, in bytes.
    pub max_body_bytes: Option<usize>,
    /// Requests one key may have running at once.
    pub max_running_per_key: Option<usize>,
    /// Requests one key may start per minute.
    pub requests_per_minute: Option<u32>,
    /// `Host`s answered besides the loopback names and the address listened
    /// on (`name`, `name:port`, an address, or `*` for any, with keys only).
    #[serde(default)]
    pub allow_hosts: Vec<Spanned<String>>,
    /// Page origins admitted besides the server's own pages
    /// (`https://name`, `http://name:port`, `http://name:*`).
    #[serde(default)]
    pub allow_origins: Vec<Spanned<String>>,
    /// Seconds a request's head may take from its first byte.
    pub header_read_timeout_secs: Option<u64>,
    /// Seconds a connection may wait for a request's first byte, or for
    /// the next piece of its body.
    pub idle_timeout_secs: Option<u64>,
    /// Seconds a request's whole body may take from the end of its head.
    pub body_read_timeout_secs: Option<u64>,
    /// Connections open at once.
    pub max_connections: Option<usize>,
    /// Connections open at once from one address.
    pub max_connections_per_peer: Option<usize>,
    /// Wrong API keys one address may send a minute.
    pub failed_keys_per_minute: Option<u32>,
}

/// A loaded file: what it says, where it is, and its text (for messages
/// and the MCP tables).
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// The file, or `None` when there is none.
    pub path: Option<PathBuf>,
    /// Its text.
    pub text: String,
    /// What it says.
    pub file: AgentFile,
}

impl Loaded {
    /// The file `--config` names (it must exist), else `agentry.toml` in the
    /// current directory if there is one, else nothing. A file found, not
    /// named, must be trusted if it starts processes or widens grants
    /// ([`crate::trust`]).
    pub fn find(explicit: Option<&Path>) -> Result<Self, String> {
        match explicit {
            Some(path) => Self::read(path),
            None if Path::new(DEFAULT_FILE).is_file() => {
                let found = Self::read(Path::new(DEFAULT_FILE))?;
                crate::trust::check(&found)?;
                Ok(found)
            }
            None => Ok(Self::default()),
        }
    }

    /// Read and check the file at `path`.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(path, text)
    }

    /// Check `text`, the contents of `path`.
    pub fn parse(path: &Path, text: String) -> Result<Self, String> {
        let file: AgentFile =
            toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e))?;
        let loaded = Self {
            path: Some(path.to_owned()),
            text,
            file,
        };
        loaded.check()?;
        Ok(loaded)
    }

    /// Values whose type is right but whose meaning is not.
    fn check(&self) -> Result<(), String> {
        let agent = &self.file.agent;
        for (key, value) in [
            ("agent.max_steps", agent.max_steps),
            ("agent.tool_rounds", agent.tool_rounds),
            ("server.max_body_bytes", self.file.server.max_body_bytes),
            (
                "server.max_running_per_key",
                self.file.server.max_running_per_key,
            ),
        ] {
            if value == Some(0) {
                return Err(self.error_at_key(key, "must be at least 1"));
            }
        }
        if self.file.server.requests_per_minute == Some(0) {
            return Err(self.error_at_key("server.requests_per_minute", "must be at least 1"));
        }
        let server = &self.file.server;
        for (key, value) in [
            (
                "server.header_read_timeout_secs",
                server.header_read_timeout_secs,
            ),
            ("server.idle_timeout_secs", server.idle_timeout_secs),
            (
                "server.body_read_timeout_secs",
                server.body_read_timeout_secs,
            ),
            (
                "server.max_connections",
                server.max_connections.map(|n| n as u64),
            ),
            (
                "server.max_connections_per_peer",
                server.max_connections_per_peer.map(|n| n as u64),
            ),
            (
                "server.failed_keys_per_minute",
                server.failed_keys_per_minute.map(u64::from),
            ),
        ] {
            if value == Some(0) {
                return Err(self.error_at_key(key, "must be at least 1"));
            }
        }
        self.plain_names()?;
        self.server_sites()?;
        for grant in &self.file.grants.net {
            if let Err(error) = agentry::tool::NetGrant::parse(grant.get_ref()) {
                return Err(self.error_at(grant.span(), "grants.net", &error.to_string()));
            }
        }
        if let Some(store) = &self.file.memory.store
            && store.get_ref().trim().is_empty()
        {
            return Err(self.error_at(store.span(), "memory.store", "must not be empty"));
        }
        if let Some(ranking) = &self.file.memory.ranking {
            for (key, weight) in [
                ("memory.ranking.recency_weight", ranking.recency_weight),
                (
                    "memory.ranking.importance_weight",
                    ranking.importance_weight,
                ),
            ] {
                if !weight.is_finite() || weight < 0.0 {
                    return Err(self.error_at_key(key, "must be a number of 0 or more"));
                }
            }
            if ranking.recency_half_life_secs <= 0 {
                return Err(self.error_at_key(
                    "memory.ranking.recency_half_life_secs",
                    "must be at least 1",
                ));
            }
        }
        Ok(())
    }

    /// Names and other words of the file that are shown or stored as they
    /// are (the agent's name goes into every memory record) hold no control
    /// or format character: a newline in a name stored in a file could make
    /// a line of its own there, an escape sequence shown on a terminal could
    /// rewrite what is on the screen.
    fn plain_names(&self) -> Result<(), String> {
        let refused = |value: &str| {
            format!(
                "must hold no control or format characters (it is \"{}\")",
                agentry_mcp::client::escaped(value)
            )
        };
        let file = &self.file;
        for (key, value) in [
            ("name", file.name.as_deref()),
            ("model.name", file.model.name.as_deref()),
            (
                "memory.embedding_model",
                file.memory.embedding_model.as_deref(),
            ),
        ] {
            if let Some(value) = value
                && !agentry_mcp::client::shown_plainly(value)
            {
                return Err(self.error_at_key(key, &refused(value)));
            }
        }
        for variable in &file.grants.env {
            if !agentry_mcp::client::shown_plainly(variable) {
                return Err(self.error_at_key("grants.env", &refused(variable)));
            }
        }
        let spanned = [
            ("memory.store", file.memory.store.iter().collect::<Vec<_>>()),
            (
                "server.api_keys_env",
                file.server.api_keys_env.iter().collect(),
            ),
            ("grants.net", file.grants.net.iter().collect()),
            (
                "server.allow_hosts",
                file.server.allow_hosts.iter().collect(),
            ),
            (
                "server.allow_origins",
                file.server.allow_origins.iter().collect(),
            ),
        ];
        for (key, values) in spanned {
            for value in values {
                if !agentry_mcp::client::shown_plainly(value.get_ref()) {
                    return Err(self.error_at(value.span(), key, &refused(value.get_ref())));
                }
            }
        }
        Ok(())
    }

    /// How messages name the file: its path, or `agentry.toml`.
    pub fn label(&self) -> String {
        self.path.as_ref().map_or_else(
            || DEFAULT_FILE.to_owned(),
            |path| path.display().to_string(),
        )
    }

    /// `path:line: key: message`, at the byte range `span` of the text.
    pub fn error_at(&self, span: std::ops::Range<usize>, key: &str, message: &str) -> String {
        let line = self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        format!("{}:{line}: {key}: {message}", self.display())
    }

    /// `path:line: key: message`, at the line that sets `key` (`section.key`).
    fn error_at_key(&self, key: &str, message: &str) -> String {
        let (section, name) = key.rsplit_once('.').unwrap_or(("", key));
        let mut in_section = section.is_empty();
        let mut line_number = None;
        for (index, line) in self.text.lines().enumerate() {
            let line = line.trim();
            if line.starts_with('[') {
                in_section = line.trim_matches(|c| c == '[' || c == ']').trim() == section;
            } else if in_section
                && line
                    .split_once('=')
                    .is_some_and(|(left, _)| left.trim() == name)
            {
                line_number = Some(index + 1);
                break;
            }
        }
        match line_number {
            Some(line) => format!("{}:{line}: {key}: {message}", self.display()),
            None => format!("{}: {key}: {message}", self.display()),
        }
    }

    fn display(&self) -> String {
        self.path
            .as_deref()
            .map_or_else(|| DEFAULT_FILE.to_owned(), |p| p.display().to_string())
    }

    /// `path` as written in the file, made absolute against the file's directory.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        match self.path.as_deref().and_then(Path::parent) {
            Some(base) if path.is_relative() => base.join(path),
            _ => path.to_owned(),
        }
    }

    /// A path value of the file, resolved, and checked to exist.
    pub fn existing(&self, value: &Spanned<PathBuf>, key: &str) -> Result<PathBuf, String> {
        let path = self.resolve(value.get_ref());
        path.canonicalize()
            .map_err(|e| self.error_at(value.span(), key, &format!("{}: {e}", path.display())))
    }

    /// The hosts and page origins `[server]` admits.
    pub fn server_sites(
        &self,
    ) -> Result<
        (
            Vec<agentry_server::HostPattern>,
            Vec<agentry_server::OriginPattern>,
        ),
        String,
    > {
        let server = &self.file.server;
        let hosts = server
            .allow_hosts
            .iter()
            .map(|host| {
                host.get_ref()
                    .parse()
                    .map_err(|e| self.error_at(host.span(), "server.allow_hosts", &format!("{e}")))
            })
            .collect::<Result<_, _>>()?;
        let origins = server
            .allow_origins
            .iter()
            .map(|origin| {
                origin.get_ref().parse().map_err(|e| {
                    self.error_at(origin.span(), "server.allow_origins", &format!("{e}"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok((hosts, origins))
    }

    /// The API keys the file gives, written out or through `api_keys_env`.
    pub fn api_keys(&self) -> Result<Vec<String>, String> {
        let mut keys = self.file.server.api_keys.clone();
        if let Some(variable) = &self.file.server.api_keys_env {
            let value = std::env::var(variable.get_ref()).map_err(|_| {
                self.error_at(
                    variable.span(),
                    "server.api_keys_env",
                    &format!("${} is not set", variable.get_ref()),
                )
            })?;
            keys.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|k| !k.is_empty())
                    .map(str::to_owned),
            );
        }
        Ok(keys)
    }
}

/// `agentry init [PATH]`: write the commented starter file.
pub fn init(path: &Path, force: bool) -> Result<std::process::ExitCode, String> {
    if path.exists() && !force {
        return Err(format!(
            "{} exists; pass --force to overwrite it",
            path.display()
        ));
    }
    std::fs::write(path, STARTER).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!(
        "wrote {}: edit it, then `agentry chat`, `agentry run \"…\"` or `agentry serve`",
        path.display()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Loaded, String> {
        Loaded::parse(Path::new("conf/agentry.toml"), text.to_owned())
    }

    #[test]
    fn the_starter_file_parses_and_says_what_the_defaults_are() {
        let loaded = parse(STARTER).unwrap();
        let file = &loaded.file;
        assert_eq!(file.model.provider, Some(ProviderKind::Local));
        assert_eq!(file.agent.max_steps, Some(6));
        assert_eq!(file.agent.token_budget, Some(20_000));
        assert_eq!(
            file.model.gate_embedder,
            Some(crate::args::GateEmbedderArg::Minilm)
        );
        assert_eq!(file.agent.tools, Some(vec![ToolSet::Demo]));
        assert_eq!(
            (
                file.model.small_talk_margin,
                file.model.relevance_call_floor
            ),
            (
                Some(crate::definition::DEFAULT_SMALL_TALK_MARGIN),
                Some(crate::definition::DEFAULT_RELEVANCE_CALL_FLOOR)
            )
        );
        assert_eq!(
            file.memory.store.as_ref().map(|s| s.get_ref().as_str()),
            Some("agentry.db")
        );
        assert_eq!(file.server.listen, Some("127.0.0.1:8080".parse().unwrap()));
    }

    #[test]
    fn an_unknown_key_names_the_key_and_the_line() {
        let error = parse("[agent]\nmax_steps = 3\nmax_stepz = 4\n").unwrap_err();
        assert!(
            error.starts_with("conf/agentry.toml: TOML parse error at line 3"),
            "{error}"
        );
        assert!(error.contains("unknown field `max_stepz`"), "{error}");
    }

    #[test]
    fn a_bad_value_names_the_key_and_the_line() {
        let error = parse("name = \"x\"\n\n[model]\nprovider = \"gpt\"\n").unwrap_err();
        assert!(error.contains("line 4"), "{error}");
        assert!(error.contains("unknown variant `gpt`"), "{error}");
        let error = parse("[server]\nlisten = \"localhost\"\n").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
        let error = parse("[agent]\nmax_steps = -1\n").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn a_meaningless_value_names_the_key_and_the_line() {
        assert_eq!(
            parse("[model]\nprovider = \"offline\"\n\n[agent]\nmax_steps = 0\n").unwrap_err(),
            "conf/agentry.toml:5: agent.max_steps: must be at least 1"
        );
        let error =
            parse("[grants]\nnet = [\n  \"example.com\",\n  \"http://\",\n]\n").unwrap_err();
        assert!(
            error.starts_with("conf/agentry.toml:4: grants.net: "),
            "{error}"
        );
        let loaded = parse("[agent]\ndir = \"no/such/dir\"\n").unwrap();
        let dir = loaded.file.agent.dir.as_ref().unwrap();
        let error = loaded.existing(dir, "agent.dir").unwrap_err();
        assert!(
            error.starts_with("conf/agentry.toml:2: agent.dir: conf/no/such/dir: "),
            "{error}"
        );
    }

    #[test]
    fn the_readme_example_parses() {
        let readme = include_str!("../../../README.md");
        let section = readme
            .split("## Chat in the terminal")
            .nth(1)
            .expect("the README's chat section");
        let example = section
            .split("```toml\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("its agentry.toml example");
        let loaded = parse(example).unwrap();
        assert_eq!(loaded.file.name.as_deref(), Some("helper"));
        assert_eq!(loaded.file.server.requests_per_minute, Some(60));
        let servers = agentry_mcp::client::servers_from_toml(example).unwrap();
        assert_eq!(servers.len(), 1);
    }

    #[test]
    fn a_name_with_control_or_format_characters_is_refused_with_its_key_and_line() {
        assert_eq!(
            parse("name = \"helper\\nssh-ed25519 AAAA attacker@evil\\n\"\n").unwrap_err(),
            r#"conf/agentry.toml:1: name: must hold no control or format characters (it is "helper\nssh-ed25519 AAAA attacker@evil\n")"#
        );
        assert_eq!(
            parse("[model]\nprovider = \"offline\"\nname = \"m\\u001b[2K\"\n").unwrap_err(),
            r#"conf/agentry.toml:3: model.name: must hold no control or format characters (it is "m\u{1b}[2K")"#
        );
        assert_eq!(
            parse("[memory]\n\nstore = \"a\\u202eb.db\"\n").unwrap_err(),
            r#"conf/agentry.toml:3: memory.store: must hold no control or format characters (it is "a\u{202e}b.db")"#
        );
        assert_eq!(
            parse("[grants]\nenv = [\"HOME\", \"X\\rY\"]\n").unwrap_err(),
            r#"conf/agentry.toml:2: grants.env: must hold no control or format characters (it is "X\rY")"#
        );
    }

    #[test]
    fn relative_paths_are_relative_to_the_file() {
        let loaded = parse("").unwrap();
        assert_eq!(
            loaded.resolve(Path::new("skills")),
            Path::new("conf/skills")
        );
        assert_eq!(loaded.resolve(Path::new("/abs")), Path::new("/abs"));
    }

    #[test]
    fn api_keys_come_written_out_or_from_a_variable() {
        let loaded =
            parse("[server]\napi_keys = [\"a\"]\napi_keys_env = \"AGENTRY_TEST_NO_SUCH_VAR\"\n")
                .unwrap();
        assert_eq!(
            loaded.api_keys().unwrap_err(),
            "conf/agentry.toml:3: server.api_keys_env: $AGENTRY_TEST_NO_SUCH_VAR is not set"
        );
    }
}
