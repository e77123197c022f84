//! A run's journal: what a durable run writes down before and after each
//! thing it does ([`RunEntry`]), and where it writes it ([`RunJournal`]:
//! in memory here, SQLite and PostgreSQL in `agentry-store`).

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::BoxFuture;
use crate::model::{Message, Usage};
use crate::tool::{ToolCall, ToolResult};

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

/// Where durable runs are written down, entry by entry.
///
/// `append` must be durable when it returns (a process killed right after
/// finds the entry on resume) and must refuse an entry number that already
/// exists for the run, which is how two processes resuming one run are kept
/// from both running its calls.
pub trait RunJournal: Send + Sync {
    /// Write entry `seq` of run `run` (0 starts a new run).
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
    ) -> BoxFuture<'a, Result<(), JournalError>>;

    /// Every entry of `run`, in order; [`JournalError::NotFound`] for an
    /// unknown run.
    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>>;

    /// Every run's id, oldest first.
    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>>;
}

/// A journal in this process's memory: for tests, and for runs that only
/// need to pause for approval, not to survive the process.
#[derive(Debug, Default)]
pub struct InMemoryJournal {
    runs: Mutex<Runs>,
}

#[derive(Debug, Default)]
struct Runs {
    /// Run ids, oldest first.
    order: Vec<String>,
    entries: HashMap<String, Vec<RunEntry>>,
}

impl InMemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }
}

impl RunJournal for InMemoryJournal {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let mut guard = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let Runs { order, entries } = &mut *guard;
        let entries = entries.entry(run.to_owned()).or_default();
        let result = if entries.len() as u64 == seq {
            if seq == 0 {
                order.push(run.to_owned());
            }
            entries.push(entry.clone());
            Ok(())
        } else if (entries.len() as u64) > seq {
            Err(JournalError::Conflict {
                run: run.to_owned(),
                seq,
            })
        } else {
            Err(JournalError::Store(format!(
                "run \"{run}\" has {} entries; entry {seq} cannot follow",
                entries.len()
            )))
        };
        Box::pin(async move { result })
    }

    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        let guard = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let result = guard
            .entries
            .get(run)
            .cloned()
            .ok_or_else(|| JournalError::NotFound(run.to_owned()));
        Box::pin(async move { result })
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        let order = self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .order
            .clone();
        Box::pin(async move { Ok(order) })
    }
}

/// Checks every [`RunJournal`] must pass: order, numbering, conflicts,
/// unknown runs and listing. Call it from each implementation's tests, with
/// a run id no other run in the journal has (`run` and `run` + `-b` are used).
pub async fn check_journal(journal: &dyn RunJournal, run: &str) {
    let run = run.to_owned();
    let started = RunEntry::Started {
        messages: vec![Message::user("hello")],
        system: Some("Be brief.".into()),
        at_ms: 1,
    };
    assert_eq!(
        journal.entries(&run).await,
        Err(JournalError::NotFound(run.clone()))
    );
    journal
        .append(&run, 0, &started)
        .await
        .expect("first entry");
    let call = RunEntry::CallStarted {
        call_id: "c1".into(),
        input: serde_json::json!({"path": "a \"quoted\" name"}),
    };
    journal.append(&run, 1, &call).await.expect("second entry");
    assert_eq!(
        journal.append(&run, 1, &call).await,
        Err(JournalError::Conflict {
            run: run.clone(),
            seq: 1
        })
    );
    let decided = RunEntry::Decided {
        call_id: "c1".into(),
        decision: Decision::Deny {
            reason: "not today".into(),
        },
        remember: true,
    };
    assert!(
        matches!(
            journal.append(&run, 4, &decided).await,
            Err(JournalError::Store(_))
        ),
        "an entry cannot skip a number"
    );
    journal
        .append(&run, 2, &decided)
        .await
        .expect("third entry");
    assert_eq!(
        journal.entries(&run).await.expect("entries"),
        vec![started, call, decided]
    );
    let other = format!("{run}-b");
    let ended = RunEntry::Ended {
        outcome: "final".into(),
        detail: "done".into(),
    };
    journal
        .append(&other, 0, &ended)
        .await
        .expect("another run");
    let runs = journal.runs().await.expect("runs");
    let at = |id: &str| runs.iter().position(|r| r == id).expect("listed");
    assert!(at(&run) < at(&other), "oldest first: {runs:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_in_memory_journal_passes_the_checks() {
        check_journal(&InMemoryJournal::new(), "check").await;
    }

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
