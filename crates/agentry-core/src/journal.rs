//! A run's journal: what a durable run writes down before and after each
//! thing it does ([`RunEntry`]), and where it writes it ([`RunJournal`]:
//! in memory ([`InMemoryJournal`]), SQLite and
//! PostgreSQL in `agentry-store`), and who may write it now ([`Lease`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BoxFuture;
use crate::model::{Message, Usage};
use crate::tool::{ToolCall, ToolResult};

#[cfg(any(test, feature = "test-utils"))]
mod check;
mod memory;
mod seal;

#[cfg(any(test, feature = "test-utils"))]
pub use check::check_journal;
pub use memory::InMemoryJournal;
pub use seal::{JournalKey, KEY_ENV, SealedEntry, SealedHead};

/// One thing a durable run did, in the order it did them. Entries are
/// numbered from 0 per run; a journal never rewrites one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEntry {
    /// The run began with this conversation (the last message is the task).
    Started {
        /// The conversation the run was given.
        messages: Vec<Message>,
        /// The agent's system prompt for this run (a chat turn's has its
        /// memory block): a resumed run goes on with the same one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        system: Option<String>,
        /// When, in milliseconds since the Unix epoch.
        at_ms: u64,
    },
    /// The model answered: the run's last step and its end.
    Answer {
        /// 1-based step number.
        step: usize,
        /// The answer.
        text: String,
        /// Tokens the step used.
        tokens: Usage,
    },
    /// The model asked for tool calls.
    ToolStep {
        /// 1-based step number.
        step: usize,
        /// Text the model wrote beside the calls.
        text: String,
        /// The calls, in the model's order.
        calls: Vec<ToolCall>,
        /// Tokens the step used.
        tokens: Usage,
    },
    /// A call is about to run: written before the tool is invoked, so a
    /// call found started but not finished may have had its effect.
    CallStarted {
        /// The call's id.
        call_id: String,
        /// The input it runs with (the model's, or a person's edit).
        input: Value,
    },
    /// A call's result, run or refused.
    CallFinished {
        /// The result fed back to the model.
        result: ToolResult,
        /// How long the gate and the tool took, in milliseconds.
        duration_ms: u64,
        /// Tokens a child agent spent in the call (they count against the
        /// run's budget; the child's own steps are not kept).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        child_usage: Option<Usage>,
    },
    /// A call waits for a person's [`Decision`]; the run has stopped.
    AwaitingDecision {
        /// The call's id.
        call_id: String,
        /// Why.
        waiting: Waiting,
    },
    /// A person's decision on a call that waits for approval, or on a call
    /// that was started but never finished.
    Decided {
        /// The call's id.
        call_id: String,
        /// What to do with it.
        decision: Decision,
        /// Apply the same decision to this tool's later calls in the run.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        remember: bool,
    },
    /// An agent handed the conversation to another (a handoff): the run
    /// goes on with `to`, which was given `messages`.
    HandedOff {
        /// The step whose call handed off.
        step: usize,
        /// The agent that handed off (`None` when it has no name).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
        /// The agent handed to, by name.
        to: String,
        /// Why, as the model said.
        reason: String,
        /// The conversation as the agent handed to got it.
        messages: Vec<Message>,
    },
    /// The run ended without an answer (out of steps, over budget).
    Ended {
        /// `out_of_steps` or `over_budget`.
        outcome: String,
        /// The answer, or what went wrong.
        detail: String,
    },
}

/// Why a call waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Waiting {
    /// Its tool is destructive (or the approver deferred to a person).
    Approval,
    /// It was started and never finished (its process stopped), and its
    /// tool is not idempotent: it may have had its effect, so it is not run
    /// again without a person's say.
    Interrupted,
}

/// What a person decided about a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run it (again, for a call that was started but never finished).
    Approve,
    /// Do not run it; the model gets the reason as the call's error result.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Run it with this input instead of the model's. Remembered for the
    /// tool, an edit approves its later calls with their own input.
    Edit {
        /// The input to run with (checked against the tool's schema).
        input: Value,
    },
}

/// Why a journal could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JournalError {
    /// No run has this id.
    #[error("no run \"{0}\"")]
    NotFound(String),
    /// A run with this id exists already (starting one under it).
    #[error("a run \"{0}\" exists already")]
    Exists(String),
    /// Another writer added entry `seq` first: two processes run the same
    /// run, and this one must stop.
    #[error(
        "run \"{run}\" was written by another process (entry {seq} exists); it is being run elsewhere"
    )]
    Conflict {
        /// The run.
        run: String,
        /// The entry both wrote.
        seq: u64,
    },
    /// Another process holds the run's lease: it is running the run (or
    /// deciding on it) now. Try again once it stops, or once the lease
    /// expires if that process died.
    #[error(
        "run \"{run}\" is being run by {owner} (its lease lasts until {until_ms} ms since the Unix epoch unless renewed)"
    )]
    Leased {
        /// The run.
        run: String,
        /// Who holds the lease: a label of the process, not a secret.
        owner: String,
        /// When the lease ends unless its holder renews it, in
        /// milliseconds since the Unix epoch.
        until_ms: u64,
    },
    /// This process's lease on the run was lost (it expired and another
    /// process took the run over, or it was released): it may write
    /// nothing more, and stops.
    #[error(
        "run \"{run}\" is no longer leased to this process (another process took it over, or its lease lapsed); nothing more is written"
    )]
    Fenced {
        /// The run.
        run: String,
    },
    /// The journal fails its integrity check: an entry was changed,
    /// inserted, removed or reordered outside agentry, or the run carries
    /// no seals at all. It is not replayed.
    #[error("run \"{run}\" fails its integrity check at entry {seq}: {why}; it is not replayed")]
    Tampered {
        /// The run.
        run: String,
        /// The first entry that fails.
        seq: u64,
        /// What is wrong with it.
        why: String,
    },
    /// The store failed.
    #[error("the run journal failed: {0}")]
    Store(String),
}

/// An entry of run `run` from the JSON text a store keeps it as.
pub fn entry_from_json(run: &str, text: &str) -> Result<RunEntry, JournalError> {
    serde_json::from_str(text).map_err(|error| {
        JournalError::Store(format!(
            "run \"{run}\" has an entry that cannot be read: {error}"
        ))
    })
}

/// The right to write a run's journal: held by one process at a time,
/// until `until_ms` unless renewed ([`RunJournal::acquire`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The fencing token: larger for every new holder of the run's lease.
    /// Every append carries it; one older than the run's current token is
    /// refused ([`JournalError::Fenced`]).
    pub token: u64,
    /// Who holds it (a label, shown to whoever finds the run leased).
    pub owner: String,
    /// When it ends unless renewed, in milliseconds since the Unix epoch.
    pub until_ms: u64,
}

/// Where durable runs are written down, entry by entry.
///
/// A run is written by one process at a time: the holder of its lease
/// ([`acquire`](Self::acquire)), which renews it while the run goes on and
/// releases it when the run stops. A process that dies leaves its lease to
/// expire; then another may take the run over, and from then on the dead
/// one's token is refused.
///
/// `append` must be durable when it returns (a process killed right after
/// finds the entry on resume), must refuse a token that is not the run's
/// current, live one, and must refuse an entry number that already exists
/// for the run. The lease check and the write are one atomic step.
pub trait RunJournal: Send + Sync {
    /// Write entry `seq` of run `run` (0 starts a new run) under the lease
    /// whose token is `token`: [`JournalError::Fenced`] unless that lease is
    /// the run's current one and has not expired or been released.
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Every entry of `run`, in order; [`JournalError::NotFound`] for an
    /// unknown run, [`JournalError::Tampered`] for one whose entries were
    /// changed outside the journal (in stores that can be).
    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>>;

    /// Every run's id, oldest first.
    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>>;

    /// Take run `run`'s lease for `ttl` as `owner` (the run need not exist
    /// yet): a new token, larger than any before for the run.
    /// [`JournalError::Leased`] while another holder's lease is live.
    fn acquire<'a>(
        &'a self,
        run: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>>;

    /// Extend the lease `token` to `ttl` from now. [`JournalError::Fenced`]
    /// when it is no longer the run's lease (taken over, or released); a
    /// lease that expired without being taken over is extended again.
    fn renew<'a>(
        &'a self,
        run: &'a str,
        token: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>>;

    /// Give up the lease `token`, so the run may be taken at once. A token
    /// that is no longer the run's changes nothing.
    fn release<'a>(&'a self, run: &'a str, token: u64) -> BoxFuture<'a, Result<(), JournalError>>;
}

/// A shared journal is a journal (so `Arc<dyn RunJournal>` goes wherever
/// one is asked for).
impl<J: RunJournal + ?Sized> RunJournal for std::sync::Arc<J> {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        (**self).append(run, seq, entry, token)
    }

    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        (**self).entries(run)
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        (**self).runs()
    }

    fn acquire<'a>(
        &'a self,
        run: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        (**self).acquire(run, owner, ttl)
    }

    fn renew<'a>(
        &'a self,
        run: &'a str,
        token: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        (**self).renew(run, token, ttl)
    }

    fn release<'a>(&'a self, run: &'a str, token: u64) -> BoxFuture<'a, Result<(), JournalError>> {
        (**self).release(run, token)
    }
}

/// Whether entry `seq` may be appended to `run`, which has `next` entries:
/// [`JournalError::Conflict`] when another writer put an entry `seq` there
/// first, a [`JournalError::Store`] error when `seq` would leave a gap. What
/// every [`RunJournal::append`] checks, in the same words.
pub fn expect_next(run: &str, next: u64, seq: u64) -> Result<(), JournalError> {
    if next > seq {
        return Err(JournalError::Conflict {
            run: run.to_owned(),
            seq,
        });
    }
    if next < seq {
        return Err(JournalError::Store(format!(
            "run \"{run}\" has {next} entries; entry {seq} cannot follow"
        )));
    }
    Ok(())
}

/// Milliseconds since the Unix epoch, now (this machine's clock).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_as_json() {
        let entry = RunEntry::Decided {
            call_id: "c".into(),
            decision: Decision::Edit {
                input: serde_json::json!({"n": 1}),
            },
            remember: false,
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"decided","call_id":"c","decision":{"decision":"edit","input":{"n":1}}}"#
        );
        assert_eq!(serde_json::from_str::<RunEntry>(&text).unwrap(), entry);
    }
}
