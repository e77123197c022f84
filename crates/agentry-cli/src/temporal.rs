//! The agent's runs on a Temporal server: `agentry worker --temporal`
//! carries them out (any number of workers, on any machines), `agentry run
//! --temporal` starts one and follows it.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentry_temporal::{
    DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, RunInput, Status, TemporalRuns, connect, serve,
};

use crate::run::{RunFlags, print_step, report_steps};

/// How often a started run's record is read while it goes on.
const POLL: Duration = Duration::from_millis(200);

/// Where the runs are: the Temporal server and the task queue.
#[derive(clap::Args, Clone)]
pub struct TemporalArgs {
    /// Carry the run out on the Temporal server at HOST:PORT (started
    /// there, carried out by `agentry worker --temporal` processes).
    #[arg(long, value_name = "HOST:PORT")]
    pub temporal: Option<String>,
    /// The Temporal task queue the workers poll.
    #[arg(long, default_value = DEFAULT_TASK_QUEUE, requires = "temporal")]
    pub task_queue: String,
}

/// Arguments of `agentry worker`.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// The Temporal server, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    temporal: String,
    /// The task queue to serve.
    #[arg(long, default_value = DEFAULT_TASK_QUEUE)]
    task_queue: String,
    #[command(flatten)]
    run: RunFlags,
}

/// `agentry worker`: serve the agent `agentry.toml` defines (model, tools,
/// MCP servers, grants) to the runs on the task queue, until stopped.
/// Destructive calls wait for `agentry runs approve|deny --temporal`.
pub async fn worker(args: WorkerArgs) -> Result<ExitCode, String> {
    let (agent, _) = args.run.build(true).await?;
    let client = connect(&args.temporal, DEFAULT_NAMESPACE)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "worker: carrying out runs from task queue \"{}\" on {}",
        args.task_queue, args.temporal
    );
    serve(Arc::new(agent), client, &args.task_queue)
        .await
        .map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// The runs on the server `args` names.
pub async fn runs(args: &TemporalArgs) -> Result<TemporalRuns, String> {
    let address = args.temporal.as_deref().unwrap_or_default();
    let runs = TemporalRuns::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    Ok(runs.task_queue(args.task_queue.clone()))
}

/// `agentry run --temporal`: start the run, print its calls as its steps
/// finish, then its answer (or the calls that wait for a person).
pub async fn run(question: &str, args: &TemporalArgs, json: bool) -> Result<ExitCode, String> {
    let runs = runs(args).await?;
    let id = new_run_id();
    runs.start(&id, RunInput::new(question))
        .await
        .map_err(|e| e.to_string())?;
    follow(&runs, &id, json).await
}

/// Follow run `id` until it ends or waits for a person, then report it.
pub async fn follow(runs: &TemporalRuns, id: &str, json: bool) -> Result<ExitCode, String> {
    let mut shown = 0;
    loop {
        let record = runs.record(id).await.map_err(|e| e.to_string())?;
        if !json {
            for step in record.steps.iter().skip(shown) {
                print_step(&step.record());
            }
        }
        shown = record.steps.len();
        if record.status != Status::Running {
            let outcome = record.outcome();
            return report_steps(&outcome, Some(id), json, false);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A run id no other run has: the time and this process.
fn new_run_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("run-{millis}-{}", std::process::id())
}
