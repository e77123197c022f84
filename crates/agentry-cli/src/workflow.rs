//! `agentry workflow run|resume`: the `[workflow]` of `agentry.toml` over
//! its agents (`[agents.NAME]`, and `main` for `[agent]`), with the model
//! routing and judging; an approval step or a destructive call stops the
//! run with a checkpoint file that `resume` carries on from.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agentry::agent::durable::Decision;
use agentry::workflow::{
    Answer, Checkpoint, InterruptKind, Parts, Workflow, WorkflowOutcome, WorkflowRun,
};
use clap::Subcommand;

use crate::mcp::CliApprover;
use crate::run::RunFlags;

/// `agentry workflow …`.
#[derive(Subcommand)]
pub enum WorkflowCommand {
    /// Run the `[workflow]` of `agentry.toml` on INPUT.
    Run(WorkflowRunArgs),
    /// Go on with a run that stopped for a person, once answered.
    Resume(WorkflowResumeArgs),
}

/// Arguments of `agentry workflow run`.
#[derive(clap::Args)]
pub struct WorkflowRunArgs {
    /// The input.
    input: String,
    /// Where the checkpoint goes when the run stops for a person
    /// [default: agentry-workflow-ID.json here].
    #[arg(long, value_name = "PATH")]
    checkpoint: Option<PathBuf>,
    #[command(flatten)]
    run: RunFlags,
}

/// Arguments of `agentry workflow resume`.
#[derive(clap::Args)]
pub struct WorkflowResumeArgs {
    /// The checkpoint file the stopped run wrote (it is rewritten if the run
    /// stops again).
    checkpoint: PathBuf,
    /// Approve the text the run stopped at, or every call it waits on.
    #[arg(long, group = "answer")]
    approve: bool,
    /// Go on with this text instead of the one the run stopped at.
    #[arg(long, value_name = "TEXT", group = "answer")]
    edit: Option<String>,
    /// Stop the run there (or deny the calls it waits on), saying why.
    #[arg(long, value_name = "REASON", group = "answer")]
    reject: Option<String>,
    #[command(flatten)]
    run: RunFlags,
}

/// Run `agentry workflow …`.
pub async fn run(command: WorkflowCommand) -> Result<ExitCode, String> {
    match command {
        WorkflowCommand::Run(args) => {
            let flow = workflow(&args.run).await?;
            let id = format!(
                "wf-{:x}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
            );
            let path = args
                .checkpoint
                .unwrap_or_else(|| PathBuf::from(format!("agentry-workflow-{id}.json")));
            if path.exists() {
                return Err(format!(
                    "{} exists: a new run's checkpoint goes to a new file",
                    path.display()
                ));
            }
            let run = flow.run(id, args.input).await;
            if let WorkflowOutcome::Interrupted(_) = run.outcome {
                save(&run.checkpoint, &path)?;
            }
            report(&run, &path, args.run.json)
        }
        WorkflowCommand::Resume(args) => {
            let text = read_checkpoint(&args.checkpoint)?;
            let mut checkpoint: Checkpoint = serde_json::from_str(&text)
                .map_err(|e| format!("{} is not a checkpoint: {e}", args.checkpoint.display()))?;
            let flow = workflow(&args.run).await?;
            let Some(interrupt) = checkpoint.interrupt.clone() else {
                return Err("the run does not wait for anyone: nothing to resume".into());
            };
            match interrupt.kind {
                InterruptKind::Approval { .. } => {
                    let answer = match (args.approve, args.edit, args.reject) {
                        (true, _, _) => Answer::Approve,
                        (_, Some(text), _) => Answer::Edit { text },
                        (_, _, Some(reason)) => Answer::Reject { reason },
                        _ => {
                            return Err(
                                "answer with --approve, --edit TEXT or --reject REASON".into()
                            );
                        }
                    };
                    checkpoint.answer(answer)?;
                }
                InterruptKind::Calls { calls, .. } => {
                    if calls.is_empty() {
                        return Err("the checkpoint names no waiting calls".into());
                    }
                    let decision = match (args.approve, args.reject) {
                        (true, _) => Decision::Approve,
                        (_, Some(reason)) => Decision::Deny { reason },
                        _ => {
                            return Err(
                                "answer the waiting calls with --approve or --reject REASON".into(),
                            );
                        }
                    };
                    for waiting in &calls {
                        flow.decide(&checkpoint, &waiting.call.id, decision.clone())
                            .await?;
                    }
                }
            }
            let run = flow.resume(checkpoint).await;
            // Rewritten whatever the end: a finished run's checkpoint waits
            // for no one, and cannot be resumed again.
            save(&run.checkpoint, &args.checkpoint)?;
            report(&run, &args.checkpoint, args.run.json)
        }
    }
}

/// The workflow `agentry.toml` describes, over its agents, the model and
/// the memory store's journal (destructive calls stop the run for a person
/// unless `--yes`).
async fn workflow(flags: &RunFlags) -> Result<Workflow, String> {
    let approver = || CliApprover {
        yes: flags.yes(),
        durable: true,
    };
    let (main, loaded, model) = flags.build_with(approver(), false).await?;
    let Some(spec) = loaded.file.workflow.clone() else {
        return Err(format!("{} has no [workflow] table", loaded.label()));
    };
    let choice = flags.model_args().choose(&loaded);
    if let Some(name) = loaded
        .file
        .agents
        .keys()
        .find(|name| name.trim().is_empty() || name.chars().any(char::is_control))
    {
        return Err(format!(
            "{}: [agents.{name:?}]: an agent's name is not empty and has no control characters",
            loaded.label()
        ));
    }
    if loaded.file.agents.contains_key("main") {
        return Err(format!(
            "{}: [agents.main]: in a workflow `main` is [agent]; give the agent another name",
            loaded.label()
        ));
    }
    let mut parts = Parts::default().agent("main", main).model(model.clone());
    let gate = crate::definition::relevance_gate(&choice)
        .await?
        .map(Arc::new);
    for name in loaded.file.agents.keys() {
        let agent = crate::team::named_agent(
            flags.agent_args(),
            &loaded,
            name,
            model.clone(),
            &choice,
            approver(),
            gate.clone(),
        )
        .await?;
        parts = parts.agent(name.clone(), agent);
    }
    let step = spec
        .build(&parts)
        .map_err(|e| format!("{}: [workflow]: {e}", loaded.label()))?;
    let name = loaded
        .file
        .name
        .clone()
        .unwrap_or_else(|| "workflow".into());
    Ok(Workflow::new(name, step).journal(flags.journal(&loaded).await?))
}

/// The most a checkpoint file may hold: 64 MiB.
const MAX_CHECKPOINT_BYTES: u64 = 64 << 20;

/// A checkpoint file's text, of at most [`MAX_CHECKPOINT_BYTES`].
fn read_checkpoint(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(MAX_CHECKPOINT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > MAX_CHECKPOINT_BYTES {
        return Err(format!(
            "{} is over 64 MiB: not a checkpoint",
            path.display()
        ));
    }
    Ok(text)
}

/// Write a checkpoint to a fresh file beside `path`, then put it in
/// `path`'s place: a failed write leaves the old checkpoint whole.
fn save(checkpoint: &Checkpoint, path: &Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(checkpoint).map_err(|e| e.to_string())? + "\n";
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fresh = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&fresh, text).map_err(|e| {
        let _ = std::fs::remove_file(&fresh);
        format!("{}: {e}", path.display())
    })?;
    std::fs::rename(&fresh, path).map_err(|e| {
        let _ = std::fs::remove_file(&fresh);
        format!("{}: {e}", path.display())
    })
}

/// Print a run (its steps, then how it ended), keep its checkpoint when it
/// stopped for a person; the exit code.
fn report(run: &WorkflowRun, checkpoint: &Path, json: bool) -> Result<ExitCode, String> {
    let safe = crate::memory::terminal_safe;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(run).map_err(|e| e.to_string())?
        );
    } else {
        for step in &run.trace {
            let by = step
                .agent
                .as_deref()
                .map(|a| format!(" {a}"))
                .unwrap_or_default();
            let cached = if step.cached {
                ", from the checkpoint"
            } else {
                ""
            };
            println!(
                "{} ({}{by}{cached}): {}",
                crate::memory::one_line(&step.step),
                step.kind,
                crate::memory::one_line(&step.output)
            );
        }
    }
    let resume = |what: &str| {
        eprintln!(
            "waiting at {what}: agentry workflow resume {} --approve | --reject REASON{}",
            checkpoint.display(),
            if what.contains("approval") {
                " | --edit TEXT"
            } else {
                ""
            }
        )
    };
    Ok(match &run.outcome {
        WorkflowOutcome::Done { output } => {
            if !json {
                println!("{}", safe(output));
            }
            ExitCode::SUCCESS
        }
        WorkflowOutcome::Interrupted(interrupt) => {
            match &interrupt.kind {
                InterruptKind::Approval { question, text } => {
                    eprintln!("{}\n{}", safe(question), safe(text));
                    resume(&format!("step {} (approval)", interrupt.step));
                }
                InterruptKind::Calls { calls, .. } => {
                    if calls.is_empty() {
                        return Err("the checkpoint names no waiting calls".into());
                    }
                    for waiting in calls {
                        eprintln!(
                            "{}",
                            safe(&format!("{}({})", waiting.call.name, waiting.call.input))
                        );
                    }
                    resume(&format!("step {} (destructive calls)", interrupt.step));
                }
            }
            ExitCode::SUCCESS
        }
        WorkflowOutcome::Rejected { step, reason } => {
            eprintln!("{}", safe(&format!("rejected at step {step}: {reason}")));
            ExitCode::FAILURE
        }
        WorkflowOutcome::Failed { step, error } => {
            eprintln!("{}", safe(&format!("failed at step {step}: {error}")));
            ExitCode::FAILURE
        }
    })
}
