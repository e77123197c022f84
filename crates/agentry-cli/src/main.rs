//! `agentry`: run an agent (offline on a local model by default), manage
//! local models, and evaluate tool calling.

mod args;
mod catalog;
mod chat;
mod config;
mod definition;
mod demo_tools;
mod elicit;
mod eval;
mod mcp;
mod memory;
mod metatool;
mod metatool_agent;
mod metatool_catalog;
mod models;
mod providers;
mod relevance_eval;
mod run;
mod runs;
mod serve;
mod skill_choice;
mod skills;
mod tool_prompt;
mod tools;
mod trust;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// Evaluate tool calling on a benchmark.
    Eval {
        #[command(subcommand)]
        command: eval::EvalCommand,
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
    /// Trust an `agentry.toml` found in the current directory to start its
    /// MCP servers and widen grants (recorded by path and content: an edit
    /// takes the trust back).
    Trust(trust::TrustArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Model { command } => models::run(command).await,
        Command::Eval { command } => eval::run(command).await,
        Command::Skills { command } => skills::run(command).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Memory { command } => memory::run(command).await,
        Command::Runs { command } => runs::run(command).await,
        Command::Mcp { command } => mcp::run(command).await,
        Command::Init { path, force } => config::init(&path, force),
        Command::Tools { command } => tools::run(command),
        Command::Trust(args) => trust::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The single-tool agent tasks in BFCL's layout (`benches/data/agent-tools`, written for
/// agentry: tools described as agents' tools are, with example values).
pub fn default_agent_tools() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../benches/data/agent-tools")
}

/// The directory datasets are read from by default: `datasets/` at the root of the repository
/// this program was built from (BFCL, MetaTool and Agent Skills folders, with their licences).
pub fn default_datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets")
}
