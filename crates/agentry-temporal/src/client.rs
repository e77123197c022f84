//! Starting, following and deciding on agent runs held by Temporal
//! ([`TemporalRuns`]), and serving them ([`serve`]).

use std::time::SystemTime;

use futures_util::StreamExt;
use temporalio_client::{
    Client, WorkflowCancelOptions, WorkflowDescribeOptions, WorkflowExecuteUpdateOptions,
    WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowGetResultOptions,
    WorkflowIdReusePolicy, WorkflowListOptions, WorkflowQueryOptions, WorkflowStartOptions,
    errors::WorkflowUpdateError,
};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::activities::AgentActivities;
use crate::activities::PLAN_STEP;
use crate::endpoint::Endpoint;
use crate::wire::{DecideInput, Ending, Progress, RunInput, RunRecord, Status};
use crate::workflow::AgentWorkflow;
use agentry_agent::RunOutcome;
use agentry_core::journal::Decision;

/// The task queue workers poll and runs start on, unless told otherwise.
pub const DEFAULT_TASK_QUEUE: &str = "agentry";
/// How often a model step's text so far reaches the server (its heartbeats).
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a run's next workflow task waits for the worker that last ran it
/// before any worker may take it (Temporal's default is 10 s).
pub const STICKY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// A run whose workflow task has failed this many times in a row is read
/// as stuck ([`TemporalRuns::record`]).
const STUCK_AFTER_ATTEMPTS: i32 = 3;
/// The namespace `temporal server start-dev` creates.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Why a Temporal operation failed. The words say which operation; the
/// source is the SDK's own error.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {detail}")]
pub struct TemporalError {
    what: String,
    detail: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl TemporalError {
    pub(crate) fn new(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        let source = source.into();
        Self {
            what: what.into(),
            detail: source.to_string(),
            source,
        }
    }

    /// A refused update: the workflow's own words, not the failure's debug form.
    fn update(what: String, error: WorkflowUpdateError) -> Self {
        let detail = match &error {
            WorkflowUpdateError::Failed(failure) => failure.message.clone(),
            other => other.to_string(),
        };
        Self {
            what,
            detail,
            source: Box::new(error),
        }
    }
}

/// One run in Temporal's list.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The workflow id (the run's id).
    pub id: String,
    /// Temporal's word for where it stands (`Running`, `Completed`, ...).
    pub status: String,
    /// When it started.
    pub started: Option<SystemTime>,
}

/// Agent runs on a Temporal server: start one, wait for its outcome, read
/// its record, decide on a waiting call, list them.
#[derive(Clone)]
pub struct TemporalRuns {
    client: Client,
    address: String,
    task_queue: String,
}

impl std::fmt::Debug for TemporalRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalRuns")
            .field("task_queue", &self.task_queue)
            .finish_non_exhaustive()
    }
}

impl TemporalRuns {
    /// Connect to the server at `address` (`host:port`, or a URL), in the
    /// `default` namespace, starting runs on [`DEFAULT_TASK_QUEUE`].
    pub async fn connect(address: &str) -> Result<Self, TemporalError> {
        Self::connect_to(&Endpoint::new(address)).await
    }

    /// Connect to the server `endpoint` describes (its namespace, TLS, API
    /// key), starting runs on [`DEFAULT_TASK_QUEUE`].
    pub async fn connect_to(endpoint: &Endpoint) -> Result<Self, TemporalError> {
        Ok(Self {
            client: endpoint.connect().await?,
            address: endpoint.address.clone(),
            task_queue: DEFAULT_TASK_QUEUE.to_owned(),
        })
    }

    /// Start runs on `task_queue` instead (the workers must poll it).
    pub fn task_queue(mut self, task_queue: impl Into<String>) -> Self {
        self.task_queue = task_queue.into();
        self
    }

    /// The server's address, as given to [`TemporalRuns::connect`].
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The SDK client, for what this type does not cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Start a run under the workflow id `id`; it goes on without this
    /// process. Refused when a run with this id exists or existed.
    pub async fn start(&self, id: &str, input: RunInput) -> Result<(), TemporalError> {
        // A run's id names one run, ever: an ended run's id is not reused.
        let options = WorkflowStartOptions::new(self.task_queue.clone(), id.to_owned())
            .id_reuse_policy(WorkflowIdReusePolicy::RejectDuplicate)
            .build();
        let input = serde_json::to_value(&input)
            .map_err(|e| TemporalError::new(format!("starting run \"{id}\""), e))?;
        self.client
            .start_workflow(AgentWorkflow::run, input, options)
            .await
            .map_err(|e| TemporalError::new(format!("starting run \"{id}\""), e))?;
        Ok(())
    }

    /// Wait for run `id` to end and give its outcome, as [`Agent::run`](agentry_agent::Agent::run) gives it.
    pub async fn outcome(&self, id: &str) -> Result<RunOutcome, TemporalError> {
        let handle = self.client.get_workflow_handle::<AgentWorkflow>(id);
        let record = handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| TemporalError::new(format!("waiting for run \"{id}\""), e))?;
        Ok(record.outcome())
    }

    /// Start a run of `task` under `id` and wait for its outcome.
    pub async fn run(
        &self,
        id: &str,
        task: impl Into<String>,
    ) -> Result<RunOutcome, TemporalError> {
        self.start(id, RunInput::new(task)).await?;
        self.outcome(id).await
    }

    /// Run `id` as it stands now: steps, tokens, waiting calls. A run whose
    /// workflow closed without handing over its record (it failed, was
    /// terminated or cancelled, or timed out) reads as ended with a model
    /// error that says so. A run whose workflow task keeps failing (a
    /// payload Temporal refuses, an input the SDK cannot read) is an error
    /// that says so, as it cannot go on until a worker can carry it.
    pub async fn record(&self, id: &str) -> Result<RunRecord, TemporalError> {
        Ok(self.read(id).await?.0)
    }

    /// [`TemporalRuns::record`], and (for a run still under way) the
    /// progress of its step under way, from the one description of the
    /// workflow both need.
    pub(crate) async fn read(
        &self,
        id: &str,
    ) -> Result<(RunRecord, Option<Progress>), TemporalError> {
        let handle = self.client.get_workflow_handle::<AgentWorkflow>(id);
        let queried = handle
            .query(AgentWorkflow::record, (), WorkflowQueryOptions::default())
            .await
            .map_err(|e| TemporalError::new(format!("reading run \"{id}\""), e));
        if let Ok(record) = &queried
            && record.status == Status::Ended
        {
            return queried.map(|record| (record, None));
        }
        let description = handle
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(|e| TemporalError::new(format!("reading run \"{id}\""), e))?;
        let closed = match description.status() {
            WorkflowExecutionStatus::Completed => {
                return handle
                    .get_result(WorkflowGetResultOptions::default())
                    .await
                    .map(|record| (record, None))
                    .map_err(|e| TemporalError::new(format!("reading run \"{id}\""), e));
            }
            WorkflowExecutionStatus::Failed => "failed",
            WorkflowExecutionStatus::Terminated => "was terminated",
            WorkflowExecutionStatus::Canceled => "was cancelled",
            WorkflowExecutionStatus::TimedOut => "timed out",
            _ => {
                let attempts = description
                    .raw_description
                    .pending_workflow_task
                    .as_ref()
                    .map_or(0, |task| task.attempt);
                if attempts >= STUCK_AFTER_ATTEMPTS {
                    return Err(TemporalError::new(
                        format!("reading run \"{id}\""),
                        format!(
                            "its workflow task has failed {attempts} times (Temporal's UI or `temporal workflow describe` says why); it goes on only once a worker can carry it"
                        ),
                    ));
                }
                return queried.map(|record| (record, progress_of(&description)));
            }
        };
        let why = match handle.get_result(WorkflowGetResultOptions::default()).await {
            Err(error) => format!("the run's workflow {closed}: {error}"),
            Ok(_) => format!("the run's workflow {closed}"),
        };
        let mut record = queried.unwrap_or_default();
        record.status = Status::Ended;
        record.waiting.clear();
        record.ended = Some(Ending::ModelError(why));
        Ok((record, None))
    }

    /// What the model has said so far in run `id`'s step under way, read
    /// from the model-step activity's last heartbeat (about every second);
    /// `None` when no model step is under way.
    pub async fn progress(&self, id: &str) -> Result<Option<Progress>, TemporalError> {
        let handle = self.client.get_workflow_handle::<AgentWorkflow>(id);
        let description = handle
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(|e| TemporalError::new(format!("reading run \"{id}\""), e))?;
        Ok(progress_of(&description))
    }

    /// Decide on a call of run `id` that waits: approve, deny or edit. Refused
    /// (by the workflow) for a call that does not wait.
    pub async fn decide(
        &self,
        id: &str,
        call_id: &str,
        decision: Decision,
    ) -> Result<(), TemporalError> {
        let handle = self.client.get_workflow_handle::<AgentWorkflow>(id);
        let input = DecideInput {
            call_id: call_id.to_owned(),
            decision,
        };
        handle
            .execute_update(
                AgentWorkflow::decide,
                input,
                WorkflowExecuteUpdateOptions::default(),
            )
            .await
            .map_err(|e| {
                TemporalError::update(format!("deciding on call \"{call_id}\" of run \"{id}\""), e)
            })?;
        Ok(())
    }

    /// Cancel run `id`: its workflow is asked to stop, and its activity under
    /// way (a model step, a tool call) is cancelled and drops its work.
    pub async fn cancel(&self, id: &str) -> Result<(), TemporalError> {
        let handle = self.client.get_workflow_handle::<AgentWorkflow>(id);
        let options = WorkflowCancelOptions::builder()
            .reason("the turn was stopped".to_owned())
            .build();
        handle
            .cancel(options)
            .await
            .map_err(|e| TemporalError::new(format!("cancelling run \"{id}\""), e))
    }

    /// The agent runs the server holds, newest first (at most `limit`).
    pub async fn list(&self, limit: usize) -> Result<Vec<RunSummary>, TemporalError> {
        let query = format!("WorkflowType = '{}'", crate::workflow::WORKFLOW_TYPE);
        let options = WorkflowListOptions::builder().limit(limit).build();
        let mut stream = self.client.list_workflows(query, options);
        let mut runs = Vec::new();
        while let Some(execution) = stream.next().await {
            let execution = execution.map_err(|e| TemporalError::new("listing runs", e))?;
            runs.push(RunSummary {
                id: execution.id().to_owned(),
                status: format!("{:?}", execution.status()),
                started: execution.start_time(),
            });
        }
        Ok(runs)
    }
}

/// The model step's text so far, from the last heartbeat of the
/// model-step activity `description` shows under way.
fn progress_of(description: &WorkflowExecutionDescription) -> Option<Progress> {
    let pending = description.raw_description.pending_activities.iter();
    let details = pending
        .filter(|activity| {
            activity.activity_type.as_ref().map(|t| t.name.as_str()) == Some(PLAN_STEP)
        })
        .find_map(|activity| {
            activity
                .heartbeat_details
                .as_ref()?
                .payloads
                .first()
                .cloned()
        });
    details.and_then(|payload| serde_json::from_slice(&payload.data).ok())
}

/// Connect to the server at `address` in `namespace`, in plaintext
/// ([`Endpoint::connect`] for TLS and API keys).
pub async fn connect(address: &str, namespace: &str) -> Result<Client, TemporalError> {
    Endpoint::new(address).namespace(namespace).connect().await
}

/// Serve `agent`'s runs from `task_queue` until the worker is shut down or
/// fails: any number of workers, on any machines, may serve one queue.
/// `agent` is an [`Agent`](agentry_agent::Agent) (in an `Arc` or not), or [`AgentActivities`]
/// with the child agents that run as child workflows.
pub async fn serve(
    agent: impl Into<AgentActivities>,
    client: Client,
    task_queue: &str,
) -> Result<(), TemporalError> {
    let runtime = Runtime::from_current_tokio(Default::default())
        .map_err(|e| TemporalError::new("starting the Temporal runtime", e))?;
    let options = WorkerOptions::new(task_queue.to_owned())
        // Heartbeats carry the model's text so far (`TemporalRuns::progress`):
        // sent about every second rather than every 0.8 × the timeout.
        .max_heartbeat_throttle_interval(PROGRESS_EVERY)
        // A worker that dies leaves its runs' next workflow tasks on its own
        // (sticky) queue: they move to the shared queue after this.
        .sticky_queue_schedule_to_start_timeout(STICKY_TIMEOUT)
        .register_workflow::<AgentWorkflow>()
        .map_err(|e| TemporalError::new("registering the agent workflow", e))?
        .register_activities(agent.into())
        .build();
    let mut worker = Worker::new(&runtime, client, options)
        .map_err(|e| TemporalError::new(format!("starting a worker on \"{task_queue}\""), e))?;
    worker
        .run()
        .await
        .map_err(|e| TemporalError::new(format!("the worker on \"{task_queue}\""), e))
}
