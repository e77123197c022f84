//! # agentry-cli
//!
//! The `agentry` program: run an agent (offline on a local model by
//! default), chat, serve it over HTTP and MCP, manage local models, skills,
//! memory and durable runs. Its binary calls [`main`] and nothing else.
//!
//! The library also lends the workspace's evaluation harness
//! (`agentry-eval`, not published) what an evaluation must share with the
//! program to measure what the program does: the model flags ([`args`]),
//! the model they choose ([`ModelChoice`], [`chat_model`]), the relevance
//! gate, skills loading and ranking ([`skills`]), and the agent `agentry
//! run` builds ([`SYSTEM`], [`demo_tools()`]). None of it is a stable API.
//!
//! ```
//! use agentry_cli::args::{ModelArgs, ProviderKind};
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Flags {
//!     #[command(flatten)]
//!     model: ModelArgs,
//! }
//!
//! // The flags alone, without an `agentry.toml`: the local model behind its
//! // relevance gate by default; no gate before a remote model.
//! let local = Flags::parse_from(["eval"]).model.choose_from_flags();
//! assert_eq!(local.provider, ProviderKind::Local);
//! assert_eq!(local.relevance_floor, Some(0.2));
//! assert!(local.grammar);
//! let remote = Flags::parse_from(["eval", "--provider", "openai", "--no-grammar"]);
//! let remote = remote.model.choose_from_flags();
//! assert_eq!(remote.provider, ProviderKind::Openai);
//! assert_eq!(remote.relevance_floor, None);
//! assert!(!remote.grammar);
//! ```

#![warn(missing_docs)]

mod a2a;
pub mod args;
mod chat;
mod config;
mod definition;
mod demo_tools;
mod elicit;
mod eval;
mod mcp;
mod mcp_sign_in;
mod memory;
mod models;
mod providers;
mod run;
mod runs;
mod serve;
pub mod skills;
mod team;
mod telemetry;
mod temporal;
mod tools;
mod trust;
mod workflow;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use definition::{
    DEFAULT_MAX_STEPS, DEFAULT_MAX_TOKENS, MINILM_ID, ModelChoice, minilm, nomic, relevance_gate,
};
pub use providers::{DEFAULT_LOCAL_MODEL, chat_model, local_model};
pub use run::SYSTEM;

/// The agent `agentry run` builds when given no flags and no `agentry.toml`
/// (its limits, the local model's single tool round, the relevance gate the
/// model choice asks for), with the demo tools over `dir`, or with `tools`
/// and `system` in their place when `tools` is given: what the evaluation
/// harness measures. The caller adds the approver and builds it.
pub async fn run_agent(
    dir: std::path::PathBuf,
    model: std::sync::Arc<dyn agentry::model::ChatModel>,
    choice: &ModelChoice,
    tools: Option<(Vec<agentry::tool::Tool>, &str)>,
) -> Result<agentry::agent::AgentBuilder, String> {
    let mut loaded = config::Loaded::default();
    if let Some((_, system)) = &tools {
        loaded.file.agent.tools = Some(Vec::new());
        loaded.file.agent.system = Some((*system).to_owned());
    }
    let builder = definition::AgentArgs::in_dir(dir)
        .builder(&loaded, model, choice)
        .await?;
    Ok(match tools {
        Some((tools, _)) => builder.tools(tools),
        None => builder,
    })
}

/// The demo tools `agentry run` gives its agent: a calculator, the time in
/// a time zone, unit conversion, and a file reader confined to `dir`.
pub fn demo_tools(dir: &std::path::Path) -> Vec<agentry::tool::Tool> {
    demo_tools::all(dir)
}

/// Build and run LLM agents that call typed tools safely.
#[derive(Parser)]
#[command(name = "agentry", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ask a question; the agent may use the built-in demo tools.
    Run(run::RunArgs),
    /// Manage local models.
    Model {
        #[command(subcommand)]
        command: models::ModelCommand,
    },
    /// Work with Agent Skills folders.
    Skills {
        #[command(subcommand)]
        command: skills::SkillsCommand,
    },
    /// Chat with the agent in the terminal; sessions are remembered.
    Chat(chat::ChatArgs),
    /// See, search, forget, export and import what chat sessions remember.
    Memory {
        #[command(subcommand)]
        command: memory::MemoryCommand,
    },
    /// Durable runs (`agentry run --durable`): list, show, approve or deny a
    /// waiting call, resume.
    Runs {
        #[command(subcommand)]
        command: runs::RunsCommand,
    },
    /// Serve the agent over HTTP: chat sessions with memory (SSE), an OpenAI-compatible API.
    Serve(serve::ServeArgs),
    /// Turn API specifications into tools.
    Tools {
        #[command(subcommand)]
        command: tools::ToolsCommand,
    },
    /// Write a commented starter `agentry.toml`.
    Init {
        /// Where to write it.
        #[arg(default_value = config::DEFAULT_FILE)]
        path: PathBuf,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Serve agentry's tools over MCP.
    Mcp {
        #[command(subcommand)]
        command: mcp::McpCommand,
    },
    /// Carry out the agent's runs from a Temporal server's task queue (any
    /// number of workers, on any machines): `agentry run --temporal` starts them.
    Worker(temporal::WorkerArgs),
    /// Run the `[workflow]` of `agentry.toml`, or go on with one that
    /// stopped for a person.
    Workflow {
        #[command(subcommand)]
        command: workflow::WorkflowCommand,
    },
    /// Evaluate the agent on a cases file, or on BFCL's questions.
    Eval {
        #[command(subcommand)]
        command: eval::EvalCommand,
    },
    /// Trust an `agentry.toml` found in the current directory to start its
    /// MCP servers and widen grants (recorded by path and content: an edit
    /// takes the trust back).
    Trust(trust::TrustArgs),
}

/// Run the `agentry` program: read the command line, run the command, and
/// say on stderr why it failed, if it did.
#[tokio::main]
pub async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Model { command } => models::run(command).await,
        Command::Skills { command } => skills::run(command).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Memory { command } => memory::run(command).await,
        Command::Runs { command } => runs::run(command).await,
        Command::Mcp { command } => mcp::run(command).await,
        Command::Init { path, force } => config::init(&path, force),
        Command::Tools { command } => tools::run(command),
        Command::Trust(args) => trust::run(args),
        Command::Eval { command } => eval::run(command).await,
        Command::Workflow { command } => workflow::run(command).await,
        Command::Worker(args) => temporal::worker(args).await,
    };
    // Whatever a command's spans left buffered goes out before the exit.
    telemetry::finish();
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
