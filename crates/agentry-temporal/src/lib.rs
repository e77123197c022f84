//! # agentry-temporal
//!
//! An [agentry](https://docs.rs/agentry) agent run as a
//! [Temporal](https://temporal.io) workflow, so that runs outlive their
//! workers and any number of workers on any machines carry them out.
//!
//! - The loop's decisions are the workflow ([`AgentWorkflow`]):
//!   deterministic, replayed from Temporal's history on whichever worker
//!   picks the run up. The step limit and the token budget are counted in
//!   the workflow, so they hold across worker restarts.
//! - Each model step and each tool call is an activity ([`AgentActivities`]),
//!   carried out by the worker's [`Agent`](agentry_agent::Agent) with its
//!   allow-list and grants ([`agentry_agent::stepwise`]). A tool's own time limit
//!   is its activity's; idempotent tools are retried, others run at most
//!   once by themselves: one whose worker died mid-call waits for a person
//!   (approve runs it again, deny tells the model). Activities heartbeat, so
//!   a dead worker's call is noticed in seconds.
//! - A destructive call waits for a person's decision, an update
//!   ([`TemporalRuns::decide`]): approve, deny with a reason, or edit.
//! - A child agent registered with [`AgentActivities::child`] runs as a
//!   child workflow, with what both it and its parent grant and what the
//!   parent has left of its token budget.
//! - A chat turn's loop can be handed to the workers ([`TemporalTurns`], a
//!   [`TurnRunner`](agentry_agent::turn::TurnRunner)): `agentry serve
//!   --temporal` answers HTTP and keeps memory, the workers run agents.
//! - What crosses the server is bounded by Temporal's payloads: a run's
//!   input ([`MAX_RUN_INPUT_BYTES`]), a tool's result
//!   ([`MAX_TOOL_RESULT_BYTES`]) and its record ([`MAX_RECORD_BYTES`]).
//! - The run's record is a query ([`TemporalRuns::record`]) and its
//!   outcome is the [`RunOutcome`](agentry_agent::RunOutcome) an in-process
//!   run gives ([`TemporalRuns::outcome`]).
//!
//! A server that asks for TLS, a client certificate or an API key is
//! reached through an [`Endpoint`].
//!
//! A worker serves the agent's runs from a task queue (any number of
//! workers, on any machines); a caller starts runs and reads their outcome.
//! [`serve`] runs until the worker stops, on the thread that awaits it:
//!
//! ```no_run
//! use std::sync::Arc;
//! use agentry_agent::Agent;
//! use agentry_core::model::OfflineModel;
//! use agentry_temporal::{DEFAULT_TASK_QUEUE, TemporalRuns, connect, serve};
//!
//! // In the worker process:
//! async fn worker() -> Result<(), agentry_temporal::TemporalError> {
//!     let agent = Arc::new(Agent::new(OfflineModel));
//!     let client = connect("127.0.0.1:7233", "default").await?;
//!     serve(agent, client, DEFAULT_TASK_QUEUE).await
//! }
//!
//! // Anywhere else:
//! async fn caller() -> Result<(), agentry_temporal::TemporalError> {
//!     let runs = TemporalRuns::connect("127.0.0.1:7233").await?;
//!     let outcome = runs.run("run-1", "What is 17.5 times 4, plus 12?").await?;
//!     println!("{}", outcome.text());
//!     Ok(())
//! }
//! ```
//!
//! What crosses the server is plain data: a run's input, with limits the
//! worker's agent lowers no further than asked, and its record, which reads
//! back as the [`RunOutcome`](agentry_agent::RunOutcome) an in-process run gives:
//!
//! ```
//! use agentry_agent::Outcome;
//! use agentry_temporal::{Ending, Limits, RunInput, RunRecord, Status};
//!
//! let agents = Limits {
//!     max_steps: 8,
//!     token_budget: 20_000,
//!     max_calls_per_step: 8,
//!     max_depth: 3,
//!     children: Vec::new(),
//!     grants: Default::default(),
//! };
//! let input = RunInput { max_steps: Some(3), ..RunInput::new("What is 2 + 3?") };
//! assert_eq!(agents.lowered(&input).max_steps, 3);
//! assert_eq!(agents.lowered(&input).token_budget, 20_000);
//!
//! let ended = RunRecord {
//!     status: Status::Ended,
//!     ended: Some(Ending::Final("5".into())),
//!     ..RunRecord::default()
//! };
//! assert_eq!(ended.outcome().outcome, Outcome::Final("5".into()));
//! assert_eq!(ended.text(), "5");
//! ```
#![warn(missing_docs)]

// The SDK's macros add an undocumented marker constant per workflow method
// and activity; everything written here is documented.
#[allow(missing_docs)]
mod activities;
mod calls;
mod client;
mod dev_server;
mod endpoint;
mod turns;
mod wire;
#[allow(missing_docs)]
mod workflow;

pub use activities::{AgentActivities, PLAN_STEP};
pub use client::{
    DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, PROGRESS_EVERY, RunSummary, STICKY_TIMEOUT,
    TemporalError, TemporalRuns, connect, serve,
};
pub use dev_server::{DevServer, DevServerError, START_ATTEMPTS, START_TIMEOUT};
pub use endpoint::{Endpoint, Tls};
pub use turns::{FOLLOW_EVERY, TemporalTurns};
pub use wire::{
    CallEntry, CallInput, ChildEntry, ChildOf, DecideInput, Ending, Limits, MAX_DECISION_BYTES,
    MAX_RUN_INPUT_BYTES, PlanInput, Progress, RunInput, RunRecord, Status, StepEntry, TurnScope,
    WaitingEntry,
};
#[doc(hidden)]
pub use workflow::__workflow_version;
pub use workflow::{
    ATTEMPTS, AgentWorkflow, HEARTBEAT_EVERY, HEARTBEAT_TIMEOUT, LIMITS_AS_LOCAL_ACTIVITY,
    MAX_RECORD_BYTES, MAX_TOOL_RESULT_BYTES, MODEL_STEP_TIMEOUT, TOOL_TIMEOUT, WORKFLOW_TYPE,
};
