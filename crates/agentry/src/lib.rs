//! # agentry
//!
//! Turn plain typed Rust functions into tools a model can call safely.
//!
//! ```
//! use agentry::tool::{ToolCall, Toolbox};
//!
//! /// Add two integers.
//! #[agentry::tool]
//! fn add(x: i64, y: i64) -> i64 {
//!     x + y
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = Toolbox::for_agent([add::tool()])?;
//! let call: ToolCall = serde_json::from_str(r#"{"id":"call_1","name":"rust_out::add","input":{"x":2,"y":3}}"#)?;
//! # let call = ToolCall { name: add::NAME.into(), ..call };
//! let result = tools.dispatch(call).await;
//! assert_eq!(serde_json::to_string(&result)?, r#"{"id":"call_1","output":5,"is_error":false}"#);
//!
//! // Wrong input never reaches the function; the model gets a message it can act on.
//! let bad = tools.dispatch(ToolCall::new("call_2", add::NAME, serde_json::json!({"x": 2}))).await;
//! assert!(bad.is_error);
//! assert_eq!(add(2, 3), 5); // still a plain function
//! # Ok(())
//! # }
//! ```
//!
//! What is where:
//!
//! - [`macro@tool`]: `#[tool]` on a `fn` or `async fn` — schema from the signature,
//!   description from the doc comment, a companion module with `NAME`, `schema()` and `tool()`.
//! - [`tool`](mod@tool): [`Tool`](tool::Tool), [`ToolCall`](tool::ToolCall),
//!   [`ToolResult`](tool::ToolResult), the [`Toolbox`](tool::Toolbox) with validated
//!   `dispatch`, the [`function`](tool::function) builder for namespaced tools, wire names and
//!   [`ToolContext`](tool::ToolContext) with its capability-enforcing handles.
//! - [`model`]: the [`ChatModel`](model::ChatModel) trait, requests, streamed
//!   events and [`Step`](model::Step)s, the offline and scripted models.
//! - [`agent`]: the safe tool-calling loop — [`Agent`](agent::Agent), built with
//!   [`Agent::builder`](agent::Agent::builder), with allow-list, token budget,
//!   step limit, least-privilege capabilities, approval and audit;
//!   [`prompt`](agent::Agent::prompt) for the answer, [`stream`](agent::Agent::stream)
//!   for [`AgentEvent`](agent::AgentEvent)s, [`as_tool`](agent::Agent::as_tool)
//!   for child agents.
//! - [`program`]: typed one-shot requests — [`Program`](program::Program) from a
//!   signature such as `question:string -> answer:string` or from two Rust
//!   types, with the answer checked against the output schema and retried.
//! - [`skill`](mod@skill): instructions a model pulls in on demand —
//!   [`Skill`](skill::Skill), the index, the
//!   [`SkillResolver`](skill::SkillResolver) and the `list_skills` / `read_skill` /
//!   `apply_skill` / `search_skills` built-ins; [`macro@skill`] on a function.
//! - [`memory`] and [`turn`]: memory-grounded chat — the
//!   [`MemoryStore`](memory::MemoryStore) trait with an in-memory store, and the
//!   chat turn: [`TurnConfig::run`](turn::TurnConfig::run) takes a
//!   [`TurnInput`](turn::TurnInput), recalls memory into the prompt, stores
//!   both sides and returns a [`Reply`](turn::Reply) or a
//!   [`TurnError`](turn::TurnError).
//! - [`journal`]: what a durable run writes down before and after each thing
//!   it does
//!   ([`RunEntry`](journal::RunEntry)), where it writes it
//!   ([`RunJournal`](journal::RunJournal), with an in-memory journal here), and
//!   who may write it now ([`Lease`](journal::Lease)).
//! - [`embed`]: the [`Embedder`](embed::Embedder) trait, and
//!   [`KeywordEmbedder`](embed::KeywordEmbedder) for tests.
//! - [`BoxFuture`]: the one boxed future of every trait here.
//!
//! Optional features bring in the heavier crates: `openai` and `anthropic`
//! (on by default) for `agentry::providers`, each compiling only its own
//! provider; `net` (on by default) for `agentry::net`, the
//! capability-checked HTTP client tools use; `local` for `agentry::local`, the
//! in-process llama.cpp model and MiniLM embeddings, the offline default;
//! `store` for `agentry::store`, SQLite and PostgreSQL memory stores;
//! `skill-folders` for `agentry::skill_folders`, Agent Skills folders on disk;
//! `sandbox` for `agentry::sandbox`, tools confined by Landlock and seccomp;
//! `temporal` for `agentry::temporal`, agent runs as Temporal workflows.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub use agentry_agent as agent;
pub use agentry_agent::{program, turn};
pub use agentry_core::{BoxFuture, embed, journal, memory, model, skill, tool};
pub use agentry_macros::{skill, tool};

#[doc(hidden)]
pub use agentry_core::__private;

/// Model providers: OpenAI-compatible (feature `openai`) and Anthropic
/// (feature `anthropic`).
#[cfg(any(feature = "openai", feature = "anthropic"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "openai", feature = "anthropic"))))]
pub use agentry_providers as providers;

/// The capability-checked HTTP client tools use (feature `net`).
#[cfg(feature = "net")]
#[cfg_attr(docsrs, doc(cfg(feature = "net")))]
pub use agentry_net as net;

/// The offline stack: in-process llama.cpp model, model fetching and local
/// embeddings (feature `local`).
#[cfg(feature = "local")]
#[cfg_attr(docsrs, doc(cfg(feature = "local")))]
pub use agentry_local as local;

/// Persistent memory stores: SQLite and PostgreSQL with pgvector (feature `store`).
#[cfg(feature = "store")]
#[cfg_attr(docsrs, doc(cfg(feature = "store")))]
pub use agentry_store as store;

/// Agent Skills folders: loading, validation and search (feature `skill-folders`).
#[cfg(feature = "skill-folders")]
#[cfg_attr(docsrs, doc(cfg(feature = "skill-folders")))]
pub use agentry_skills as skill_folders;

/// Search over tool catalogs and skills: BM25 fused with embeddings
/// (feature `search`); `search::ToolSearch` answers discovery's `search_tools`.
#[cfg(feature = "search")]
#[cfg_attr(docsrs, doc(cfg(feature = "search")))]
pub use agentry_search as search;

/// OpenAPI specifications as tools: one per operation, called through the
/// capability-checked HTTP client (feature `openapi`).
#[cfg(feature = "openapi")]
#[cfg_attr(docsrs, doc(cfg(feature = "openapi")))]
pub use agentry_openapi as openapi;

/// MCP: servers' tools as agentry tools, and a toolbox served over MCP (feature `mcp`).
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub use agentry_mcp as mcp;

/// The HTTP API: chat sessions streamed as server-sent events, an
/// OpenAI-compatible API, API keys (feature `server`).
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub use agentry_server as server;

/// Tools confined by the operating system: each call of a `#[tool(sandbox)]`
/// tool runs in a child process under Landlock, seccomp and resource
/// limits (feature `sandbox`).
#[cfg(feature = "sandbox")]
#[cfg_attr(docsrs, doc(cfg(feature = "sandbox")))]
pub use agentry_sandbox as sandbox;

/// Agent runs as Temporal workflows: each model step and tool call an
/// activity, approvals as updates, runs that outlive their workers (feature
/// `temporal`).
#[cfg(feature = "temporal")]
#[cfg_attr(docsrs, doc(cfg(feature = "temporal")))]
pub use agentry_temporal as temporal;

/// A2A (Agent2Agent 1.0): an agent served over A2A, and remote A2A agents
/// as tools (feature `a2a`).
#[cfg(feature = "a2a")]
#[cfg_attr(docsrs, doc(cfg(feature = "a2a")))]
pub use agentry_a2a as a2a;
/// Evals for your own agent: cases, expectations, a harness, and reports
/// as a table, JSON and JUnit XML (feature `evals`).
#[cfg(feature = "evals")]
#[cfg_attr(docsrs, doc(cfg(feature = "evals")))]
pub use agentry_evals as evals;
/// Ready guardrails: PII redaction, denied topics and patterns, JSON-Schema
/// answers with retries, a model as judge (feature `guardrails`).
#[cfg(feature = "guardrails")]
#[cfg_attr(docsrs, doc(cfg(feature = "guardrails")))]
pub use agentry_guardrails as guardrails;
/// Workflows of agents and programs: a router, a pipeline, a parallel
/// fan-out, a loop until a check passes, approvals as interrupts (feature
/// `workflow`).
#[cfg(feature = "workflow")]
#[cfg_attr(docsrs, doc(cfg(feature = "workflow")))]
pub use agentry_workflow as workflow;

/// AG-UI 1.0: a run streamed to a frontend as AG-UI events, destructive
/// calls as interrupts (feature `agui`).
#[cfg(feature = "agui")]
#[cfg_attr(docsrs, doc(cfg(feature = "agui")))]
pub use agentry_agui as agui;

/// OpenTelemetry: OTLP export of the GenAI spans and metrics, trace context
/// across calls, the opt-in for content on spans (feature `telemetry`).
#[cfg(feature = "telemetry")]
#[cfg_attr(docsrs, doc(cfg(feature = "telemetry")))]
pub use agentry_telemetry as telemetry;

/// The [`Tool`](tool::Tool) of a `#[tool]` function,
/// by path. Same as `f::tool()`; override fields with struct-update syntax.
///
/// ```
/// /// Add two integers.
/// #[agentry::tool]
/// fn add(x: i64, y: i64) -> i64 { x + y }
///
/// # fn main() {
/// let tool = agentry::from_fn!(add);
/// assert_eq!(tool.description.as_deref(), Some("Add two integers."));
/// # }
/// ```
#[macro_export]
macro_rules! from_fn {
    ($($segment:ident)::+) => {
        $($segment)::+::tool()
    };
}

/// The registered
/// [`ToolSchema`](tool::ToolSchema) of a `#[tool]` function, by path. Same as `f::schema()`.
///
/// ```
/// #[agentry::tool]
/// fn search(query: String, limit: i64) -> Vec<String> { vec![query; limit as usize] }
///
/// # fn main() {
/// let schema = agentry::schema_from_fn!(search);
/// assert_eq!(schema.input_schema["required"], serde_json::json!(["query", "limit"]));
/// # }
/// ```
#[macro_export]
macro_rules! schema_from_fn {
    ($($segment:ident)::+) => {
        $($segment)::+::schema()
    };
}

/// The names most programs need.
pub mod prelude {
    pub use agentry_agent::program::{Program, ProgramError};
    pub use agentry_agent::turn::{Reply, TurnConfig, TurnError, TurnInput};
    pub use agentry_agent::{Agent, AgentEvent, Outcome, RunError, RunOutcome};
    pub use agentry_core::embed::Embedder;
    pub use agentry_core::memory::{Memory, MemoryStore};
    pub use agentry_core::model::{ChatModel, ChatRequest, Message, OfflineModel, Step, Usage};
    pub use agentry_core::skill::{Skill, SkillResolver};
    pub use agentry_core::tool::{
        Capability, State, Tool, ToolCall, ToolContext, ToolError, ToolResult, Toolbox, function,
    };
    pub use agentry_macros::{skill, tool};
}

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
