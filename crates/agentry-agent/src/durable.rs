//! Durable runs: the loop written down step by step in a [`RunJournal`], so
//! that a run survives its process and can wait for a person.
//!
//! A durable run writes an entry before and after everything it does: the
//! model's step, each call "started" (before the tool runs) and each call
//! "finished". [`DurableRuns::resume`] reads the journal back in any process
//! and goes on from the last entry:
//!
//! - a call recorded as started but never finished runs again only when its
//!   tool is [`idempotent`](agentry_core::tool::ToolHints::idempotent); otherwise
//!   the run stops with [`Outcome::AwaitingDecision`] for a person to
//!   decide, so no tool runs twice by accident;
//! - a destructive call (or one the [`Approver`](super::Approver) defers
//!   with [`Approval::Defer`](super::Approval::Defer)) stops the run the same
//!   way until [`decide`] records approve, deny (the reason is fed back to
//!   the model) or edit, from this process or another; a decision can be
//!   remembered for the tool's later calls in the run;
//! - a model error leaves the run resumable (the step is asked again).
//!
//! One process at a time carries a run out: the holder of its lease in the
//! journal ([`RunJournal::acquire`]), renewed in the background while the
//! run goes on and released when it stops. Resuming (or deciding on) a run
//! whose lease another process holds is [`JournalError::Leased`], naming
//! the holder and until when: a call still running there is never taken as
//! interrupted. A holder that dies leaves its lease to expire
//! ([`DurableRuns::lease_ttl`]); then the run may be taken over, and every
//! write carries the lease's fencing token, so the old holder can append
//! nothing after that ([`JournalError::Fenced`]).
//!
//! The stores seal each entry ([`JournalKey`]: an HMAC chained from entry
//! to entry, under a key kept outside the database), so a journal changed
//! behind agentry's back is refused on replay ([`JournalError::Tampered`])
//! rather than carried out.
//!
//! ```
//! use std::sync::Arc;
//! use agentry_agent::{Agent, Outcome, durable::{Decision, InMemoryJournal, decide}};
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//! use agentry_core::tool::{ToolCall, ToolHints, function};
//! use serde_json::json;
//! #[derive(serde::Deserialize)]
//! struct File { path: String }
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let delete = function("delete_file")
//!     .arg::<String>("path", "the file")
//!     .hints(ToolHints { destructive: true, ..Default::default() })
//!     .handler(|args: File| Ok::<_, String>(format!("deleted {}", args.path)))
//!     .build()
//!     .unwrap()
//!     .with_name("delete_file");
//! let model = ScriptedModel::new()
//!     .reply(Step::Tool {
//!         calls: vec![ToolCall::new("c1", "delete_file", json!({"path": "old.log"}))],
//!         text: String::new(),
//!         tokens: Usage::new(10, 5),
//!     })
//!     .reply(Step::Final { text: "Deleted.".into(), tokens: Usage::new(10, 2) });
//! let agent = Agent::builder(model).tool(delete).build().unwrap();
//! let journal = Arc::new(InMemoryJournal::new());
//! let runs = agent.durable(journal.clone());
//!
//! // No tool runs yet: the destructive call waits for a person.
//! let run = runs.start("delete old.log").await.unwrap();
//! let Outcome::AwaitingDecision(waiting) = &run.outcome.outcome else { panic!() };
//! assert_eq!(waiting[0].call.id, "c1");
//!
//! // A person approves (from any process sharing the journal); the run goes on.
//! decide(journal.as_ref(), &run.id, "c1", Decision::Approve, false).await.unwrap();
//! let done = runs.resume(&run.id).await.unwrap();
//! assert_eq!(done.outcome.text(), "Deleted.");
//! assert_eq!(done.outcome.steps[0].calls[0].result.output, json!("deleted old.log"));
//! # });
//! ```

mod lease;
mod replay;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// The journal's types live in `agentry_core::journal` (the stores implement
// them without depending on the loop); they are named here too, beside the
// runner that writes them.
pub use agentry_core::journal::{
    Decision, InMemoryJournal, JournalError, JournalKey, Lease, RunEntry, RunJournal, Waiting,
};
pub use lease::{DEFAULT_LEASE_TTL, process_label};
use lease::{Keeper, Leasing};
pub(crate) use replay::{OpenStep, Replay};
pub use replay::{RunStatus, WaitingCall};

use futures_util::Stream;
use serde::Serialize;

use super::agent::Agent;
use super::events::{AgentEvent, EventSink, event_stream};
use super::outcome::{Outcome, RunOutcome, StepRecord};
use super::run::Frame;
use agentry_core::journal::now_ms;
use agentry_core::model::{Message, Usage};
use agentry_core::tool::ToolCall;

/// The journal of one durable run while it runs: numbers its entries and
/// writes them one at a time, and holds the decisions people made.
pub(crate) struct Durable {
    journal: Arc<dyn RunJournal>,
    run: String,
    /// The fencing token of this process's lease on the run.
    token: u64,
    next: tokio::sync::Mutex<u64>,
    /// Shared with the lease's [`Keeper`], which records a lost lease.
    failure: Arc<Mutex<Option<JournalError>>>,
    /// Decisions on the open step's calls not yet carried out, by call id
    /// (models reuse call ids from step to step: each is used once).
    decisions: std::sync::Mutex<HashMap<String, Decision>>,
    /// Decisions repeated for a tool's later calls, by tool name.
    remembered: HashMap<String, Decision>,
}

impl Durable {
    /// Write the next entry. After one failure every write fails: the run
    /// must stop rather than do anything unrecorded.
    pub async fn write(&self, entry: RunEntry) -> Result<(), JournalError> {
        let mut next = self.next.lock().await;
        if let Some(error) = self.failure() {
            return Err(error);
        }
        match self
            .journal
            .append(&self.run, *next, &entry, self.token)
            .await
        {
            Ok(()) => {
                *next += 1;
                Ok(())
            }
            Err(error) => {
                *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.clone());
                Err(error)
            }
        }
    }

    /// The first write that failed, if one did.
    pub fn failure(&self) -> Option<JournalError> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A new step began: decisions left from the last one (on calls that
    /// were refused before they needed one) must not reach this step's
    /// calls, whose ids may repeat the last step's.
    pub(crate) fn new_step(&self) {
        self.decisions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// What a person decided for `call` (taken: it is carried out once), or
    /// (`remembered`) for its tool in this run.
    pub(crate) fn take_decision(&self, call: &ToolCall, remembered: bool) -> Option<Decision> {
        let decided = self
            .decisions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&call.id);
        decided.or_else(|| {
            remembered
                .then(|| self.remembered.get(&call.name).cloned())
                .flatten()
        })
    }
}

/// A durable run's id and where it stands.
#[derive(Debug, Clone)]
pub struct DurableRun {
    /// The run's id in the journal.
    pub id: String,
    /// How far it got: an answer (or another end), or
    /// [`Outcome::AwaitingDecision`] / [`Outcome::JournalFailed`] when it
    /// stopped before the end.
    pub outcome: RunOutcome,
    /// The run had ended before this call: nothing ran, and `outcome` is
    /// read from the journal.
    pub already_ended: bool,
}

/// Durable runs of one agent over one journal ([`Agent::durable`]).
///
/// A run is carried out under its lease ([`RunJournal::acquire`]): taken
/// when it starts or resumes, renewed in the background every third of
/// [`lease_ttl`](Self::lease_ttl), released when it stops. Resuming a run
/// another process holds is [`JournalError::Leased`], so a call still
/// running there is never taken as interrupted; a process that died leaves
/// the run to others once its lease expires.
#[derive(Clone)]
pub struct DurableRuns {
    agent: Agent,
    journal: Arc<dyn RunJournal>,
    leasing: Leasing,
}

impl Agent {
    /// Run this agent durably: every step written to `journal` (SQLite or
    /// PostgreSQL stores in `agentry-store`, or [`InMemoryJournal`]).
    pub fn durable(&self, journal: impl RunJournal + 'static) -> DurableRuns {
        DurableRuns {
            agent: self.clone(),
            journal: Arc::new(journal),
            leasing: Leasing::default(),
        }
    }
}

impl DurableRuns {
    /// How long a run's lease lasts unless renewed ([`DEFAULT_LEASE_TTL`]
    /// by default): how long a run whose process died stays unavailable.
    /// It is renewed every third of that while the run goes on.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.leasing.ttl = ttl;
        self
    }

    /// The label other processes see when they find a run this one holds
    /// ([`process_label`] by default): never a secret.
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.leasing.owner = owner.into();
        self
    }

    /// Start a run on one task, under a new id.
    pub async fn start(&self, task: impl Into<String>) -> Result<DurableRun, JournalError> {
        self.start_messages(new_run_id(), vec![Message::user(task)])
            .await
    }

    /// Start a run on a conversation under `id` (a run with that id must not
    /// exist yet).
    pub async fn start_messages(
        &self,
        id: String,
        messages: Vec<Message>,
    ) -> Result<DurableRun, JournalError> {
        // The input guardrails come first: the journal keeps what they let
        // through (a redaction, say), and a run they stop is never written.
        let messages = match self.agent.guarded_input(messages).await {
            Ok(messages) => messages,
            Err(tripped) => {
                return Ok(DurableRun {
                    id,
                    outcome: tripped_before_start(tripped),
                    already_ended: false,
                });
            }
        };
        let (replay, lease) = self.begin(&id, messages).await?;
        let outcome = self.go_on(&id, replay, lease, None).await;
        Ok(DurableRun {
            id,
            outcome,
            already_ended: false,
        })
    }

    /// [`start_messages`](Self::start_messages) as a stream of
    /// [`AgentEvent`]s, the last one [`AgentEvent::Final`] (whose outcome is
    /// [`Outcome::JournalFailed`] when the run could not be started).
    pub fn stream_messages(
        &self,
        id: String,
        messages: Vec<Message>,
    ) -> impl Stream<Item = AgentEvent> + Send + '_ {
        event_stream(move |sink| async move {
            let messages = match self.agent.guarded_input(messages).await {
                Ok(messages) => messages,
                Err(tripped) => return tripped_before_start(tripped),
            };
            match self.begin(&id, messages).await {
                Ok((replay, lease)) => self.go_on(&id, replay, lease, Some(sink)).await,
                Err(error) => failed(error),
            }
        })
    }

    /// Go on with run `id` from the last thing its journal holds. A run
    /// that has ended comes back as it ended; one waiting for a decision
    /// comes back waiting until every waiting call has one. A run another
    /// process is carrying out is [`JournalError::Leased`].
    pub async fn resume(&self, id: &str) -> Result<DurableRun, JournalError> {
        let (outcome, already_ended) = match self.take(id).await? {
            Taken::Ended(outcome) => (*outcome, true),
            Taken::Leased(replay, lease) => (self.go_on(id, *replay, lease, None).await, false),
        };
        Ok(DurableRun {
            id: id.to_owned(),
            outcome,
            already_ended,
        })
    }

    /// [`resume`](Self::resume) as a stream of [`AgentEvent`]s.
    pub fn stream_resume(&self, id: String) -> impl Stream<Item = AgentEvent> + Send + '_ {
        event_stream(move |sink| async move {
            match self.take(&id).await {
                Ok(Taken::Ended(outcome)) => *outcome,
                Ok(Taken::Leased(replay, lease)) => {
                    self.go_on(&id, *replay, lease, Some(sink)).await
                }
                Err(error) => failed(error),
            }
        })
    }

    /// Run `id` read back under its lease, or as it ended. An ended run
    /// needs no lease: nothing more is written to it.
    async fn take(&self, id: &str) -> Result<Taken, JournalError> {
        let replay = Replay::from_entries(self.journal.entries(id).await?);
        if let Some(outcome) = ended(&replay) {
            return Ok(Taken::Ended(Box::new(outcome)));
        }
        let lease = self.leasing.acquire(self.journal.as_ref(), id).await?;
        // Read again under the lease: the last holder may have written more.
        let read = self.journal.entries(id).await.map(Replay::from_entries);
        match read {
            Ok(replay) => match ended(&replay) {
                Some(outcome) => {
                    self.journal.release(id, lease.token).await?;
                    Ok(Taken::Ended(Box::new(outcome)))
                }
                None => Ok(Taken::Leased(Box::new(replay), lease)),
            },
            Err(error) => {
                let _ = self.journal.release(id, lease.token).await;
                Err(error)
            }
        }
    }

    /// Write a new run's first entry, under its lease.
    async fn begin(
        &self,
        id: &str,
        messages: Vec<Message>,
    ) -> Result<(Replay, Lease), JournalError> {
        let system = self.agent.system().map(str::to_owned);
        let started = RunEntry::Started {
            messages: messages.clone(),
            system: system.clone(),
            at_ms: now_ms(),
        };
        let lease = self.leasing.acquire(self.journal.as_ref(), id).await?;
        let written = self.journal.append(id, 0, &started, lease.token).await;
        if let Err(error) = written {
            let _ = self.journal.release(id, lease.token).await;
            return Err(match error {
                JournalError::Conflict { .. } => JournalError::Exists(id.to_owned()),
                other => other,
            });
        }
        let replay = Replay {
            messages,
            system,
            entries: 1,
            ..Replay::default()
        };
        Ok((replay, lease))
    }

    /// Carry the run on under `lease`, renewed meanwhile and released at
    /// the end (also when this future is dropped).
    async fn go_on(
        &self,
        id: &str,
        mut replay: Replay,
        lease: Lease,
        sink: Option<EventSink>,
    ) -> RunOutcome {
        let failure = Arc::new(Mutex::new(None));
        let keeper = Keeper::start(
            self.journal.clone(),
            id.to_owned(),
            lease.token,
            self.leasing.ttl,
            failure.clone(),
        );
        let durable = Durable {
            journal: self.journal.clone(),
            run: id.to_owned(),
            token: lease.token,
            next: tokio::sync::Mutex::new(replay.entries),
            failure,
            decisions: std::sync::Mutex::new(std::mem::take(&mut replay.decisions)),
            remembered: std::mem::take(&mut replay.remembered),
        };
        // The run goes on with the agent that had the floor, and the first
        // agent with the system prompt it started with.
        let mut agent = self.agent.clone();
        if replay.system.is_some() {
            agent.settings.system = replay.system.clone();
        }
        let mut frame = Frame::root(&agent);
        frame.spend.charge(replay.usage);
        if let Some(name) = replay.floor.clone() {
            let Some(found) = self.agent.find_agent(&name) else {
                keeper.finish().await;
                let error = JournalError::Store(format!(
                    "the run was handed to agent `{name}`, which is not among this agent's handoffs"
                ));
                return RunOutcome {
                    outcome: Outcome::JournalFailed(error),
                    ..ended_as_read(&replay)
                };
            };
            agent = found.clone();
            let whole = frame.spend.clone();
            frame = Frame {
                depth: replay.handoffs.len(),
                spend: crate::spend::Spend::child_of(&whole, agent.settings.token_budget),
                ..Frame::root(&agent)
            };
        }
        frame.durable = Some(Arc::new(durable));
        let outcome = agent
            .resume_frame(agent.model.as_ref(), &frame, replay, sink)
            .await;
        // Released before the outcome is seen: whoever it is shown to may
        // decide on the run at once.
        keeper.finish().await;
        outcome
    }
}

/// A run read back for going on.
enum Taken {
    /// It had ended.
    Ended(Box<RunOutcome>),
    /// It goes on under this lease.
    Leased(Box<Replay>, Lease),
}

/// A run's record as read from its journal, its outcome aside.
fn ended_as_read(replay: &Replay) -> RunOutcome {
    RunOutcome {
        outcome: Outcome::OutOfSteps,
        usage: replay.usage,
        steps: replay.steps.clone(),
        messages: replay.messages.clone(),
        relevance: None,
        agent: replay.floor.clone(),
        handoffs: replay.handoffs.clone(),
    }
}

/// The outcome of a run that has ended, read from its journal.
fn ended(replay: &Replay) -> Option<RunOutcome> {
    let (outcome, detail) = replay.ended.as_ref()?;
    let outcome = match outcome.as_str() {
        "final" => Outcome::Final(detail.clone()),
        "out_of_steps" => Outcome::OutOfSteps,
        "over_budget" => Outcome::OverBudget,
        other => Outcome::JournalFailed(JournalError::Store(format!(
            "the run ended as {other}: {detail}"
        ))),
    };
    Some(RunOutcome {
        outcome,
        ..ended_as_read(replay)
    })
}

/// A run an input guardrail stopped before anything was written.
fn tripped_before_start(tripped: crate::GuardrailTripped) -> RunOutcome {
    nothing_done(Outcome::GuardrailTripped(tripped))
}

/// The outcome of a run whose journal could not be read or started.
fn failed(error: JournalError) -> RunOutcome {
    nothing_done(Outcome::JournalFailed(error))
}

/// A run that ended as `outcome` before any step.
fn nothing_done(outcome: Outcome) -> RunOutcome {
    RunOutcome {
        outcome,
        usage: Default::default(),
        steps: Vec::new(),
        messages: Vec::new(),
        relevance: None,
        agent: None,
        handoffs: Vec::new(),
    }
}

/// Where run `id` stands.
pub async fn status(journal: &dyn RunJournal, id: &str) -> Result<RunStatus, JournalError> {
    Ok(Replay::from_entries(journal.entries(id).await?).status())
}

/// What a run's journal says, for showing it: where it stands, its
/// finished steps and the tokens they used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// Where it stands.
    pub status: RunStatus,
    /// Its finished steps (a step whose calls wait is not among them).
    pub steps: Vec<StepRecord>,
    /// Tokens of every recorded step.
    pub usage: Usage,
}

/// Run `id` read from its journal.
pub async fn record(journal: &dyn RunJournal, id: &str) -> Result<RunRecord, JournalError> {
    let replay = Replay::from_entries(journal.entries(id).await?);
    Ok(RunRecord {
        status: replay.status(),
        steps: replay.steps,
        usage: replay.usage,
    })
}

/// Why [`decide`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecideError {
    /// The journal failed (or has no such run).
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The call is not waiting for a decision.
    #[error("call \"{call}\" of run \"{run}\" is not waiting for a decision")]
    NotWaiting {
        /// The run.
        run: String,
        /// The call.
        call: String,
    },
}

/// Record a person's decision on a call of run `id` that waits for one;
/// [`DurableRuns::resume`] then carries it out. With `remember`, the tool's
/// later calls in this run get the same decision without stopping. The
/// decision is written under the run's lease, taken for the moment
/// ([`JournalError::Leased`] while another process holds it).
pub async fn decide(
    journal: &dyn RunJournal,
    id: &str,
    call_id: &str,
    decision: Decision,
    remember: bool,
) -> Result<(), DecideError> {
    let not_waiting = || DecideError::NotWaiting {
        run: id.to_owned(),
        call: call_id.to_owned(),
    };
    let waits = |entries: Vec<RunEntry>| {
        matches!(Replay::from_entries(entries).status(), RunStatus::Waiting(calls)
            if calls.iter().any(|waiting| waiting.call.id == call_id))
    };
    // Refused without taking the lease when the call does not wait.
    if !waits(journal.entries(id).await?) {
        return Err(not_waiting());
    }
    let lease = Leasing::default().acquire(journal, id).await?;
    let decided = async {
        let entries = journal.entries(id).await?;
        let seq = entries.len() as u64;
        if !waits(entries) {
            return Err(not_waiting());
        }
        let entry = RunEntry::Decided {
            call_id: call_id.to_owned(),
            decision,
            remember,
        };
        journal.append(id, seq, &entry, lease.token).await?;
        Ok(())
    }
    .await;
    let released = journal.release(id, lease.token).await;
    decided?;
    Ok(released?)
}

/// A new run id: the time and a random part, so ids sort by start.
fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(nanos);
    format!("run-{:x}-{:08x}", nanos / 1_000_000, hasher.finish() as u32)
}
