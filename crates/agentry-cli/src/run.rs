//! `agentry run "<question>"`: the offline agent demo. The agent answers with
//! the built-in tools, printing each tool call, its result, the answer and token usage.

use std::process::ExitCode;

use agentry::agent::durable::Waiting;
use agentry::agent::{Agent, DurableRuns, Outcome, RunOutcome, StepRecord};
use serde_json::json;

use crate::args::ModelArgs;
use crate::config::Loaded;
use crate::definition::{AgentArgs, MemoryArgs};
use crate::memory::Store;

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
    run: RunFlags,
    /// Write the run to the memory store step by step: it survives this
    /// process (`agentry runs resume ID`), and a destructive call waits for
    /// `agentry runs approve|deny ID CALL` instead of a terminal answer.
    #[arg(long, conflicts_with = "temporal")]
    durable: bool,
    #[command(flatten)]
    temporal: crate::temporal::TemporalArgs,
}

/// The agent a run uses, how it is shown, and where durable runs are kept:
/// the flags `agentry run` and `agentry runs resume` share.
#[derive(clap::Args)]
pub struct RunFlags {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    agent: AgentArgs,
    /// Approve destructive tool calls without asking (by default they are
    /// asked about on a terminal, and refused otherwise; a durable run
    /// waits for `agentry runs approve|deny` instead).
    #[arg(long)]
    yes: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    memory: MemoryArgs,
}

/// Run the demo agent.
pub async fn run(args: RunArgs) -> Result<ExitCode, String> {
    let flags = &args.run;
    if args.temporal.temporal.is_some() {
        return crate::temporal::run(&args.question, &args.temporal, flags.json).await;
    }
    if !args.durable {
        let (agent, _) = flags.build(false).await?;
        let outcome = agent.run(&args.question).await;
        return report(&outcome, None, flags.json);
    }
    let (runs, _) = flags.durable_runs(true).await?;
    let run = runs
        .start(&args.question)
        .await
        .map_err(|e| e.to_string())?;
    report(&run.outcome, Some(&run.id), flags.json)
}

impl RunFlags {
    /// The agent `agentry run` (and `agentry runs resume`) runs, and the
    /// definition file it came from. Destructive calls: approved with
    /// `--yes`, left to a person in a durable run, asked about on a
    /// terminal otherwise.
    pub async fn build(&self, durable: bool) -> Result<(Agent, Loaded), String> {
        let approver = crate::mcp::CliApprover {
            yes: self.yes,
            durable,
        };
        let (agent, loaded, _) = self.build_with(approver, true).await?;
        Ok((agent, loaded))
    }

    /// The agent, with `approver`, keeping local prompts on disk when
    /// `prompt_store`; its definition file and its model come too.
    pub async fn build_with(
        &self,
        approver: crate::mcp::CliApprover,
        prompt_store: bool,
    ) -> Result<(Agent, Loaded, std::sync::Arc<dyn agentry::model::ChatModel>), String> {
        let loaded = self.agent.load()?;
        crate::telemetry::start(&loaded)?;
        let choice = crate::definition::ModelChoice {
            prompt_store,
            ..self.model.choose(&loaded)
        };
        let chat_model = crate::providers::chat_model(&choice).await?;
        let built = self
            .agent
            .builder(&loaded, chat_model.clone(), &choice)
            .await?
            .approver(approver)
            .build()
            .map_err(|e| e.to_string())?;
        Ok((built, loaded, chat_model))
    }

    /// The run journal in the memory store (made when missing).
    pub async fn journal(
        &self,
        loaded: &Loaded,
    ) -> Result<std::sync::Arc<dyn agentry::agent::durable::RunJournal>, String> {
        let location = self.memory.location(loaded);
        Ok(Store::open(&location, loaded, true).await?.journal())
    }

    /// The agent definition's flags.
    pub fn agent_args(&self) -> &AgentArgs {
        &self.agent
    }

    /// The model flags.
    pub fn model_args(&self) -> &ModelArgs {
        &self.model
    }

    /// `--yes`: destructive calls are approved without asking.
    pub fn yes(&self) -> bool {
        self.yes
    }

    /// The agent's durable runs in the memory store (made when `create`).
    pub async fn durable_runs(&self, create: bool) -> Result<(DurableRuns, Loaded), String> {
        let (agent, loaded) = self.build(true).await?;
        let location = self.memory.location(&loaded);
        let journal = Store::open(&location, &loaded, create).await?.journal();
        Ok((agent.durable(journal), loaded))
    }
}

/// Print a run (trace or JSON); `run_id` for a durable run.
pub fn report(outcome: &RunOutcome, run_id: Option<&str>, json: bool) -> Result<ExitCode, String> {
    report_steps(outcome, run_id, json, true)
}

/// [`report`], with the steps' calls left out of the text when they were
/// printed already (a run followed as it went).
pub fn report_steps(
    outcome: &RunOutcome,
    run_id: Option<&str>,
    json: bool,
    steps: bool,
) -> Result<ExitCode, String> {
    if json {
        let mut value = as_json(outcome);
        if let Some(id) = run_id {
            value["run"] = json!(id);
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?
        );
    } else {
        if steps {
            outcome.steps.iter().for_each(print_step);
        }
        print_summary(outcome);
        if let Some(id) = run_id {
            println!("run: {id}");
            if let Outcome::AwaitingDecision(waiting) = &outcome.outcome {
                for call in waiting {
                    println!(
                        "waiting: {}({}) [{}]: agentry runs approve {id} {} | agentry runs deny {id} {} --reason TEXT",
                        call.call.name,
                        call.call.input,
                        waiting_reason(call.waiting),
                        call.call.id,
                        call.call.id
                    );
                }
            }
        }
    }
    Ok(match outcome.outcome {
        Outcome::ModelError(_) | Outcome::JournalFailed(_) | Outcome::GuardrailTripped(_) => {
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    })
}

/// Why a call waits, in a few words.
pub fn waiting_reason(waiting: Waiting) -> &'static str {
    match waiting {
        Waiting::Approval => "needs approval",
        Waiting::Interrupted => "started and never finished; it may have had its effect",
    }
}

fn as_json(run: &RunOutcome) -> serde_json::Value {
    let mut value = json!({
        "answer": run.text(),
        "outcome": run.outcome.kind(),
        "steps": run.steps,
        "usage": run.usage,
    });
    if let Outcome::AwaitingDecision(waiting) = &run.outcome {
        value["waiting"] = json!(waiting);
    }
    if !run.handoffs.is_empty() {
        value["handoffs"] = json!(run.handoffs);
        value["agent"] = json!(run.agent);
    }
    value
}

/// Print a step's calls, one line each: `step N: tool(input) => output`.
pub fn print_step(step: &StepRecord) {
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

/// Print a run's answer and what it spent.
fn print_summary(run: &RunOutcome) {
    for handoff in &run.handoffs {
        println!(
            "handed off: {} → {} ({})",
            handoff.from.as_deref().unwrap_or("?"),
            handoff.to,
            crate::memory::one_line(&handoff.reason)
        );
    }
    if let (false, Some(agent)) = (run.handoffs.is_empty(), &run.agent) {
        println!("answered by: {agent}");
    }
    println!("answer: {}", crate::memory::terminal_safe(&run.text()));
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
