//! `agentry`: run an agent (offline on a local model by default), manage
//! local models, and evaluate tool calling.

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

use clap::{Parser, Subcommand, ValueEnum};

/// Build and run LLM agents that call typed tools safely.
#[derive(Parser)]
#[command(name = "agentry", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Which model answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// The in-process llama.cpp model (default; pulled on first use).
    Local,
    /// An OpenAI-compatible server (`OPENAI_API_KEY`, `OPENAI_BASE_URL`).
    Openai,
    /// Anthropic (`ANTHROPIC_API_KEY`).
    Anthropic,
    /// No model: answers `[no llm provider]`.
    Offline,
}

/// How the local model is asked to write tool calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallSyntaxArg {
    /// The `<tool_call>` JSON blocks of the model's chat template (default).
    Template,
    /// A Python-style list, `[f(x=1), f(x=2)]`: several calls to one tool
    /// come out far more often, but the model also calls tools it was not
    /// asked to (see BENCHMARKS.md).
    Python,
    /// Python-style when a request offers exactly one tool, the template's
    /// JSON otherwise.
    Auto,
}

impl From<CallSyntaxArg> for agentry_local::CallSyntax {
    fn from(syntax: CallSyntaxArg) -> Self {
        match syntax {
            CallSyntaxArg::Python => Self::Python,
            CallSyntaxArg::Template => Self::Template,
            CallSyntaxArg::Auto => Self::Auto,
        }
    }
}

/// Options shared by commands that talk to a model.
#[derive(clap::Args, Clone, Debug)]
pub struct ModelArgs {
    /// Which model answers [default: local].
    #[arg(long, value_enum)]
    provider: Option<ProviderKind>,
    /// Local: a GGUF path or a known model id. Remote: the model name.
    #[arg(long)]
    model: Option<String>,
    /// Local: let the model write tool calls freely instead of under a grammar.
    #[arg(long)]
    no_grammar: bool,
    /// Local: read every prompt in full instead of reusing the cached prefix
    /// an earlier step, turn or run left (kept in memory, and on disk in the
    /// model cache's `prompts` folder; same answers, slower; for comparison).
    #[arg(long)]
    no_prompt_cache: bool,
    /// Local: leave a call the model wrote inside its text (a fenced or bare
    /// JSON object naming an offered tool) as text instead of reading it as a call.
    #[arg(long)]
    no_text_calls: bool,
    /// Local: how the model is asked to write tool calls [default: template].
    #[arg(long, value_enum, value_name = "SYNTAX")]
    call_syntax: Option<CallSyntaxArg>,
    /// Local, with `--call-syntax template`: leave out the system-prompt
    /// note that several calls are written as one JSON list.
    #[arg(long)]
    no_call_lists: bool,
    /// Local, with call lists: when a request offers one tool, hold the
    /// model's calls to a JSON list (more of the calls a request asks for,
    /// and more it did not ask for: see BENCHMARKS.md).
    #[arg(long)]
    one_tool_lists: bool,
    /// Local, with call lists: when a request offers one tool, open a JSON
    /// list of calls where the model gives a list at least this share of
    /// the probability against one bare call; 1 leaves the choice to the
    /// model [default: 0.05].
    #[arg(long, value_name = "SHARE")]
    list_floor: Option<f32>,
    /// Local: run a call the model writes twice word for word in one reply
    /// twice, instead of reading the repeats as one call.
    #[arg(long)]
    repeated_calls: bool,
    /// Local: run every call of a reply, instead of leaving out a later call
    /// that repeats an earlier one with its numbers in another order or
    /// brings in a number found nowhere in the conversation.
    #[arg(long)]
    ungrounded_calls: bool,
    /// Before the first step, answer in text when no tool's name and
    /// description is this close (cosine, all-MiniLM-L6-v2) to the request;
    /// 0 turns the gate off [default: 0.2 with the local model, off otherwise].
    #[arg(long, value_name = "COSINE")]
    relevance_floor: Option<f32>,
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
