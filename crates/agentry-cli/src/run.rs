//! `agentry run "<question>"`: the offline agent demo. The agent answers with
//! the built-in tools, printing each tool call, its result, the answer and token usage.

use std::process::ExitCode;

use agentry::agent::{Outcome, RunOutcome};
use serde_json::json;

use crate::ModelArgs;
use crate::definition::AgentArgs;

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

/// Run the demo agent.
pub async fn run(args: RunArgs) -> Result<ExitCode, String> {
    let loaded = args.agent.load()?;
    let choice = crate::definition::ModelChoice {
        prompt_store: true, // the next run starts warm
        ..args.model.choose(&loaded)
    };
    let model = crate::providers::chat_model(&choice).await?;
    let agent = args.agent.builder(&loaded, model, &choice).await?;
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

fn as_json(run: &RunOutcome) -> serde_json::Value {
    let outcome = match &run.outcome {
        Outcome::Final(_) => "final",
        Outcome::OutOfSteps => "out_of_steps",
        Outcome::OverBudget => "over_budget",
        Outcome::ModelError(_) => "model_error",
        Outcome::AwaitingDecision(_) => "awaiting_decision",
        Outcome::JournalFailed(_) => "journal_failed",
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
    let cached = match run.usage.cached_input_tokens {
        0 => String::new(),
        cached => format!(" ({cached} from the prompt cache)"),
    };
    println!(
        "tokens: {} in{cached}, {} out, {} total over {} step{}",
        run.usage.input_tokens,
        run.usage.output_tokens,
        run.usage.total(),
        run.steps.len(),
        if run.steps.len() == 1 { "" } else { "s" }
    );
}
