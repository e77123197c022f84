//! `agentry runs list|show|approve|deny|resume`: durable runs (`agentry run
//! --durable`), kept in the memory store step by step (or, with
//! `--temporal`, the runs a Temporal server holds: `agentry run --temporal`). Any process may
//! decide on a waiting call; `resume` goes on from the last recorded step
//! with the agent the flags (or `agentry.toml`) define, as `run` did.
//!
//! What comes from the store (run ids, entries, a lease holder's name in
//! an error) is printed with its control and format characters escaped:
//! whoever can write the database must not drive the terminal.

use std::process::ExitCode;

use agentry::agent::durable::{self, Decision, RunEntry, RunStatus};
use agentry::model::Message;
use agentry_mcp::client::escaped;
use clap::Subcommand;

use crate::memory::Place;
use crate::run::RunFlags;

/// `agentry runs …`.
#[derive(Subcommand)]
pub enum RunsCommand {
    /// Every durable run in the store, oldest first, with where it stands.
    List {
        #[command(flatten)]
        place: Place,
        #[command(flatten)]
        temporal: crate::temporal::TemporalServer,
    },
    /// One run: where it stands, its steps and calls, and what waits.
    Show {
        /// The run's id.
        id: String,
        /// Print the journal's entries as JSON lines.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        place: Place,
        #[command(flatten)]
        temporal: crate::temporal::TemporalServer,
    },
    /// Approve a waiting call: it runs when the run is resumed.
    Approve {
        /// The run's id.
        id: String,
        /// The call's id (`agentry runs show ID` lists them).
        call: String,
        /// Run it with this input (JSON) instead of the model's.
        #[arg(long)]
        input: Option<String>,
        /// Approve this tool's later calls in the run too.
        #[arg(long, conflicts_with = "temporal")]
        remember: bool,
        #[command(flatten)]
        place: Place,
        #[command(flatten)]
        temporal: crate::temporal::TemporalServer,
    },
    /// Deny a waiting call: the model gets the reason as its result.
    Deny {
        /// The run's id.
        id: String,
        /// The call's id.
        call: String,
        /// Why, for the model.
        #[arg(long)]
        reason: String,
        /// Deny this tool's later calls in the run too.
        #[arg(long, conflicts_with = "temporal")]
        remember: bool,
        #[command(flatten)]
        place: Place,
        #[command(flatten)]
        temporal: crate::temporal::TemporalServer,
    },
    /// Go on with a run from its last recorded step.
    Resume(ResumeArgs),
}

/// `agentry runs resume`: the agent as `agentry run` builds it.
#[derive(clap::Args)]
pub struct ResumeArgs {
    /// The run's id.
    id: String,
    #[command(flatten)]
    run: RunFlags,
}

/// Run a `runs` command.
pub async fn run(command: RunsCommand) -> Result<ExitCode, String> {
    match command {
        RunsCommand::List { ref temporal, .. } if temporal.temporal.is_some() => {
            crate::temporal::list(&temporal.endpoint()?).await
        }
        RunsCommand::Show {
            ref id,
            json,
            ref temporal,
            ..
        } if temporal.temporal.is_some() => {
            crate::temporal::show(&temporal.endpoint()?, id, json).await
        }
        RunsCommand::List { place, .. } => {
            let journal = place.open(false).await?.journal();
            let runs = journal.runs().await.map_err(shown)?;
            if runs.is_empty() {
                println!("no durable runs");
            }
            for id in runs {
                // A run that fails its integrity check is listed, refused.
                match durable::status(journal.as_ref(), &id).await {
                    Ok(status) => println!("{}  {}", escaped(&id), escaped(&status_line(&status))),
                    Err(error) => println!("{}  refused: {}", escaped(&id), shown(error)),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        RunsCommand::Show {
            id, json, place, ..
        } => {
            let journal = place.open(false).await?.journal();
            let entries = journal.entries(&id).await.map_err(shown)?;
            if json {
                for entry in &entries {
                    println!(
                        "{}",
                        serde_json::to_string(entry).map_err(|e| e.to_string())?
                    );
                }
                return Ok(ExitCode::SUCCESS);
            }
            for entry in &entries {
                if let Some(line) = entry_line(entry) {
                    println!("{}", escaped(&line));
                }
            }
            let status = durable::status(journal.as_ref(), &id)
                .await
                .map_err(shown)?;
            println!("status: {}", escaped(&status_line(&status)));
            Ok(ExitCode::SUCCESS)
        }
        RunsCommand::Approve {
            id,
            call,
            input,
            remember,
            place,
            temporal,
        } => {
            let decision = match input {
                None => Decision::Approve,
                Some(text) => Decision::Edit {
                    input: serde_json::from_str(&text)
                        .map_err(|e| format!("--input is not JSON: {e}"))?,
                },
            };
            match &temporal.temporal {
                Some(address) => {
                    let endpoint = temporal.connect.endpoint(address)?;
                    crate::temporal::decide(&endpoint, &id, &call, decision).await
                }
                None => decide(place, &id, &call, decision, remember).await,
            }
        }
        RunsCommand::Deny {
            id,
            call,
            reason,
            remember,
            place,
            temporal,
        } => match &temporal.temporal {
            Some(address) => {
                let endpoint = temporal.connect.endpoint(address)?;
                crate::temporal::decide(&endpoint, &id, &call, Decision::Deny { reason }).await
            }
            None => decide(place, &id, &call, Decision::Deny { reason }, remember).await,
        },
        RunsCommand::Resume(args) => {
            let (runs, _) = args.run.durable_runs(false).await?;
            let run = runs.resume(&args.id).await.map_err(shown)?;
            crate::run::report(&run.outcome, Some(&run.id), args.run.json)
        }
    }
}

async fn decide(
    place: Place,
    id: &str,
    call: &str,
    decision: Decision,
    remember: bool,
) -> Result<ExitCode, String> {
    let journal = place.open(false).await?.journal();
    durable::decide(journal.as_ref(), id, call, decision, remember)
        .await
        .map_err(shown)?;
    println!(
        "recorded; `agentry runs resume {}` carries it out",
        escaped(id)
    );
    Ok(ExitCode::SUCCESS)
}

/// An error for the terminal: it may hold strings from the store.
fn shown(error: impl std::fmt::Display) -> String {
    escaped(&error.to_string())
}

/// Where a run stands, in one line.
fn status_line(status: &RunStatus) -> String {
    match status {
        RunStatus::Ended { outcome, detail } if detail.is_empty() => format!("ended: {outcome}"),
        RunStatus::Ended { outcome, detail } => format!("ended: {outcome}: {detail}"),
        RunStatus::Incomplete => "incomplete (running, or stopped: resume it)".into(),
        RunStatus::Waiting(calls) => {
            let calls: Vec<String> = calls
                .iter()
                .map(|waiting| {
                    format!(
                        "{} {}({}) [{}]",
                        waiting.call.id,
                        waiting.call.name,
                        waiting.call.input,
                        crate::run::waiting_reason(waiting.waiting)
                    )
                })
                .collect();
            format!("waiting for a decision on {}", calls.join(", "))
        }
    }
}

/// One journal entry for people; `None` for the ones `status` covers.
fn entry_line(entry: &RunEntry) -> Option<String> {
    Some(match entry {
        RunEntry::Started { messages, .. } => {
            let task = messages
                .iter()
                .rev()
                .find_map(|m| match m {
                    Message::User { text } => Some(text.as_str()),
                    _ => None,
                })
                .unwrap_or_default();
            format!("started: {task}")
        }
        RunEntry::ToolStep { step, calls, .. } => {
            let calls: Vec<String> = calls
                .iter()
                .map(|c| format!("{} {}({})", c.id, c.name, c.input))
                .collect();
            format!("step {step}: {}", calls.join(", "))
        }
        RunEntry::CallStarted { call_id, .. } => format!("  {call_id} started"),
        RunEntry::CallFinished { result, .. } => {
            let mark = if result.is_error { "error" } else { "=>" };
            format!("  {} {mark} {}", result.id, result.output_text())
        }
        RunEntry::AwaitingDecision { call_id, waiting } => {
            format!(
                "  {call_id} waits: {}",
                crate::run::waiting_reason(*waiting)
            )
        }
        RunEntry::Decided {
            call_id, decision, ..
        } => format!("  {call_id} decided: {}", decision_text(decision)),
        RunEntry::Answer { step, text, .. } => format!("step {step}: answer: {text}"),
        RunEntry::HandedOff {
            step, to, reason, ..
        } => {
            format!("step {step}: handed off to {to}: {reason}")
        }
        RunEntry::Ended { .. } => return None,
    })
}

fn decision_text(decision: &Decision) -> String {
    match decision {
        Decision::Approve => "approve".into(),
        Decision::Deny { reason } => format!("deny ({reason})"),
        Decision::Edit { input } => format!("run with {input}"),
    }
}
