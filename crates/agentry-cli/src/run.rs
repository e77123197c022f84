//! `agentry run "<question>"`: the offline agent demo. The agent answers with
//! the built-in tools, printing each tool call, its result, the answer and token usage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentry::agent::{AgentBuilder, Outcome, RunOutcome};
use agentry::tool::Capability;
use serde_json::json;

use crate::ModelArgs;

/// The demo's system prompt.
pub const SYSTEM: &str = "You are a helpful assistant. Use a tool whenever it can give or check the answer \
(arithmetic, the time, unit conversion, reading files), then answer the user briefly using the tool results. \
When no tool fits the question, answer directly.";

/// Arguments of `agentry run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The question.
    question: String,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    agent: AgentArgs,
    /// Approve destructive tool calls without asking (by default they are
    /// asked about on a terminal, and refused otherwise).
    #[arg(long)]
    yes: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The demo agent's definition, shared by `agentry run` and `agentry serve`:
/// its file directory, limits, skills and MCP servers.
#[derive(clap::Args)]
pub struct AgentArgs {
    /// Directory the file reader may read (and nothing outside it).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Most model calls.
    #[arg(long, default_value_t = 6)]
    max_steps: usize,
    /// Token budget for the whole run.
    #[arg(long, default_value_t = 20_000)]
    budget: u64,
    /// Steps with tool calls before the model must answer in text (default: 1 for the local model, 4 otherwise).
    #[arg(long)]
    tool_rounds: Option<usize>,
    /// Give the agent the Agent Skills folders in this directory (listed in
    /// the system prompt, read on demand with `read_skill`).
    #[arg(long)]
    skills: Option<PathBuf>,
    /// Give the agent an MCP server's tools: `[NAME=]COMMAND_OR_URL`, a
    /// command line (run over stdio) or an http(s) URL (Streamable HTTP); the
    /// tools are named `NAME.tool` (the server's own name by default). Repeatable.
    #[arg(long = "mcp", value_name = "[NAME=]COMMAND_OR_URL")]
    mcp: Vec<String>,
    /// Also the MCP servers of this file's `[mcp.servers.NAME]` tables (see `agentry_mcp::client::servers_from_toml`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Believe the `--mcp` servers' tool annotations (read-only, destructive).
    /// Without it every MCP tool is treated as destructive.
    #[arg(long)]
    mcp_trusted: bool,
}

impl AgentArgs {
    /// The demo agent over `model` (answering through `provider`), with its
    /// skills and MCP servers' tools; the caller adds the approver.
    pub async fn builder(
        &self,
        model: Arc<dyn agentry::model::ChatModel>,
        provider: crate::ProviderKind,
    ) -> Result<AgentBuilder, String> {
        let dir = self
            .dir
            .canonicalize()
            .map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let agent = demo_agent(
            model,
            &dir,
            self.max_steps,
            self.budget,
            self.tool_rounds,
            provider,
        );
        with_skills_and_mcp(
            agent,
            self.skills.as_deref(),
            &self.mcp,
            self.mcp_trusted,
            self.config.as_deref(),
        )
        .await
    }
}

/// Run the demo agent.
pub async fn run(args: RunArgs) -> Result<ExitCode, String> {
    let model = crate::providers::chat_model(&args.model).await?;
    let agent = args.agent.builder(model, args.model.provider).await?;
    let agent = agent
        .approver(crate::mcp::CliApprover { yes: args.yes })
        .build()
        .map_err(|e| e.to_string())?;
    let outcome = agent.run(&args.question).await;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&as_json(&outcome)).map_err(|e| e.to_string())?
        );
    } else {
        print_trace(&outcome);
    }
    Ok(match outcome.outcome {
        Outcome::ModelError(_) => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    })
}

/// The demo agent: the built-in tools (files read from `dir` only), the
/// demo prompt, and the step, token and tool-round limits.
pub fn demo_agent(
    model: Arc<dyn agentry::model::ChatModel>,
    dir: &std::path::Path,
    max_steps: usize,
    budget: u64,
    tool_rounds: Option<usize>,
    provider: crate::ProviderKind,
) -> AgentBuilder {
    AgentBuilder::new(model)
        .tools(crate::demo_tools::all(dir))
        .system(SYSTEM)
        .grant(Capability::fs_read(dir))
        .max_steps(max_steps)
        .token_budget(budget)
        .max_tokens(512)
        .max_tool_rounds(tool_rounds.unwrap_or(match provider {
            crate::ProviderKind::Local => 1,
            _ => 4,
        }))
}

/// `agent` with a skills folder's skills and MCP servers' tools.
pub async fn with_skills_and_mcp(
    mut agent: AgentBuilder,
    skills: Option<&std::path::Path>,
    mcp: &[String],
    mcp_trusted: bool,
    config: Option<&std::path::Path>,
) -> Result<AgentBuilder, String> {
    if let Some(skills_dir) = skills {
        let report = crate::skills::load_and_warn(skills_dir)?;
        agent = agent.skills(report.to_skills());
    }
    let servers = crate::mcp::server_configs(mcp, mcp_trusted, config)?;
    for server in crate::mcp::connect_all(servers).await? {
        agent = agent.tool_source(Arc::new(server));
    }
    Ok(agent)
}

fn as_json(run: &RunOutcome) -> serde_json::Value {
    let outcome = match &run.outcome {
        Outcome::Final(_) => "final",
        Outcome::OutOfSteps => "out_of_steps",
        Outcome::OverBudget => "over_budget",
        Outcome::ModelError(_) => "model_error",
    };
    json!({
        "answer": run.text(),
        "outcome": outcome,
        "steps": run.steps,
        "usage": run.usage,
    })
}

fn print_trace(run: &RunOutcome) {
    for step in &run.steps {
        for record in &step.calls {
            let output = record.result.output_text();
            let mark = if record.result.is_error {
                "error"
            } else {
                "=>"
            };
            println!(
                "step {}: {}({}) {mark} {output}",
                step.index, record.call.name, record.call.input
            );
        }
    }
    println!("answer: {}", run.text());
    println!(
        "tokens: {} in, {} out, {} total over {} step{}",
        run.usage.input_tokens,
        run.usage.output_tokens,
        run.usage.total(),
        run.steps.len(),
        if run.steps.len() == 1 { "" } else { "s" }
    );
}
