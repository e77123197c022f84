//! The agent's runs on a Temporal server: `agentry worker --temporal`
//! carries them out (any number of workers, on any machines), `agentry run
//! --temporal` starts one and follows it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentry::agent::durable::Decision;
use agentry_mcp::client::escaped;
use agentry_temporal::{
    DEFAULT_TASK_QUEUE, Ending, Endpoint, RunInput, RunRecord, Status, TemporalRuns, Tls, serve,
};

use crate::run::{RunFlags, print_step, report_steps, waiting_reason};

/// Most runs `agentry runs list --temporal` shows.
const LIST_LIMIT: usize = 100;

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
    #[command(flatten)]
    pub connect: TemporalConnect,
}

/// A Temporal server's runs, for `agentry runs …`.
#[derive(clap::Args, Clone)]
pub struct TemporalServer {
    /// The runs on the Temporal server at HOST:PORT instead.
    #[arg(long, value_name = "HOST:PORT")]
    pub temporal: Option<String>,
    #[command(flatten)]
    pub connect: TemporalConnect,
}

impl TemporalServer {
    /// The server `--temporal` names (empty when it names none).
    pub fn endpoint(&self) -> Result<Endpoint, String> {
        self.connect
            .endpoint(self.temporal.as_deref().unwrap_or_default())
    }
}

/// How to reach a Temporal server past its address: the namespace, and for
/// a hosted one (Temporal Cloud) TLS and an API key. The environment
/// variables are the `temporal` CLI's own.
#[derive(clap::Args, Clone, Default)]
pub struct TemporalConnect {
    /// The Temporal namespace [default: default].
    #[arg(
        long = "temporal-namespace",
        env = "TEMPORAL_NAMESPACE",
        value_name = "NAMESPACE"
    )]
    namespace: Option<String>,
    /// An API key for the Temporal server (Temporal Cloud); implies TLS.
    #[arg(
        long = "temporal-api-key",
        env = "TEMPORAL_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    api_key: Option<String>,
    /// Reach the Temporal server over TLS (the system's roots are trusted
    /// unless --temporal-tls-ca names a CA).
    #[arg(long = "temporal-tls", env = "TEMPORAL_TLS")]
    tls: bool,
    /// The CA that signed the Temporal server's certificate (PEM); implies TLS.
    #[arg(
        long = "temporal-tls-ca",
        env = "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
        value_name = "PEM"
    )]
    tls_ca: Option<PathBuf>,
    /// This side's certificate for mutual TLS (PEM, with --temporal-tls-key); implies TLS.
    #[arg(
        long = "temporal-tls-cert",
        env = "TEMPORAL_TLS_CLIENT_CERT_PATH",
        value_name = "PEM"
    )]
    tls_cert: Option<PathBuf>,
    /// The private key of --temporal-tls-cert (PEM).
    #[arg(
        long = "temporal-tls-key",
        env = "TEMPORAL_TLS_CLIENT_KEY_PATH",
        value_name = "PEM"
    )]
    tls_key: Option<PathBuf>,
    /// The name the server's certificate must carry, when not the address's host.
    #[arg(
        long = "temporal-tls-server-name",
        env = "TEMPORAL_TLS_SERVER_NAME",
        value_name = "NAME"
    )]
    tls_server_name: Option<String>,
}

impl TemporalConnect {
    /// The server at `address`, reached as these flags say.
    pub fn endpoint(&self, address: &str) -> Result<Endpoint, String> {
        let mut endpoint = Endpoint::new(address);
        if let Some(namespace) = &self.namespace {
            endpoint = endpoint.namespace(namespace.clone());
        }
        if let Some(key) = &self.api_key {
            endpoint = endpoint.api_key(key.clone());
        }
        let tls_files = self.tls_ca.is_some() || self.tls_cert.is_some() || self.tls_key.is_some();
        if self.tls || tls_files || self.tls_server_name.is_some() {
            let mut tls = Tls::from_files(
                self.tls_ca.as_deref(),
                self.tls_cert.as_deref(),
                self.tls_key.as_deref(),
            )
            .map_err(|e| e.to_string())?;
            tls.server_name = self.tls_server_name.clone();
            endpoint = endpoint.tls(tls);
        }
        Ok(endpoint)
    }
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
    connect: TemporalConnect,
    #[command(flatten)]
    run: RunFlags,
}

/// `agentry worker`: serve the agent `agentry.toml` defines (model, tools,
/// MCP servers, grants) to the runs on the task queue, until stopped.
/// Destructive calls wait for `agentry runs approve|deny --temporal`.
pub async fn worker(args: WorkerArgs) -> Result<ExitCode, String> {
    let (agent, _) = args.run.build(true).await?;
    let client = args
        .connect
        .endpoint(&args.temporal)?
        .connect()
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
    let runs = TemporalRuns::connect_to(&args.connect.endpoint(address)?)
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
            if json {
                return report_steps(&outcome, Some(id), true, false);
            }
            let code = report_steps(&outcome, None, false, false)?;
            println!("run: {id}");
            print_waiting(&record, id, runs.address());
            return Ok(code);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The calls of `record` that wait, each with the commands that decide on it.
fn print_waiting(record: &RunRecord, id: &str, address: &str) {
    for entry in &record.waiting {
        let call = &entry.call;
        println!(
            "waiting: {}({}) [{}]: agentry runs approve {id} {} --temporal {address} | agentry runs deny {id} {} --reason TEXT --temporal {address}",
            call.name,
            call.input,
            waiting_reason(entry.waiting),
            call.id,
            call.id
        );
    }
}

/// `agentry runs list --temporal`: the agent runs the server holds, newest first.
pub async fn list(endpoint: &Endpoint) -> Result<ExitCode, String> {
    let address = &endpoint.address;
    let runs = TemporalRuns::connect_to(endpoint)
        .await
        .map_err(|e| e.to_string())?;
    let listed = runs.list(LIST_LIMIT).await.map_err(|e| e.to_string())?;
    if listed.is_empty() {
        println!("no agent runs on {address}");
    }
    for run in listed {
        println!("{}  {}", escaped(&run.id), run.status);
    }
    Ok(ExitCode::SUCCESS)
}

/// `agentry runs show ID --temporal`: a run's steps, calls and where it stands.
pub async fn show(endpoint: &Endpoint, id: &str, json: bool) -> Result<ExitCode, String> {
    let address = &endpoint.address;
    let runs = TemporalRuns::connect_to(endpoint)
        .await
        .map_err(|e| e.to_string())?;
    let record = runs.record(id).await.map_err(|e| escaped(&e.to_string()))?;
    if json {
        let text = serde_json::to_string_pretty(&record).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    for step in &record.steps {
        for entry in &step.calls {
            let (call, result) = (&entry.call, &entry.result);
            println!(
                "{}",
                escaped(&format!(
                    "step {}: {} {}({})",
                    step.index, call.id, call.name, call.input
                ))
            );
            let mark = if result.is_error { "error" } else { "=>" };
            println!(
                "{}",
                escaped(&format!("  {} {mark} {}", call.id, result.output_text()))
            );
        }
        if step.calls.is_empty() {
            println!(
                "{}",
                escaped(&format!("step {}: answer: {}", step.index, step.text))
            );
        }
    }
    let status = match (&record.status, &record.ended) {
        (Status::Ended, Some(ending)) => {
            format!("ended: {}{}", ending.kind(), ending_detail(ending))
        }
        (Status::Waiting, _) => "waiting for a decision".to_owned(),
        _ => "running".to_owned(),
    };
    println!("status: {status}");
    print_waiting(&record, id, address);
    Ok(ExitCode::SUCCESS)
}

fn ending_detail(ending: &Ending) -> String {
    match ending {
        Ending::ModelError(message) => format!(": {}", escaped(message)),
        _ => String::new(),
    }
}

/// `agentry runs approve|deny ID CALL --temporal`: the decision goes to the
/// run's workflow, and its workers carry it out at once.
pub async fn decide(
    endpoint: &Endpoint,
    id: &str,
    call: &str,
    decision: Decision,
) -> Result<ExitCode, String> {
    let runs = TemporalRuns::connect_to(endpoint)
        .await
        .map_err(|e| e.to_string())?;
    runs.decide(id, call, decision)
        .await
        .map_err(|e| escaped(&e.to_string()))?;
    println!("recorded; the run's workers go on with it");
    Ok(ExitCode::SUCCESS)
}

/// A run id no other run has: the time and this process.
fn new_run_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("run-{millis}-{}", std::process::id())
}
