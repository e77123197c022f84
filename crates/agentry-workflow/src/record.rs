//! What a workflow run leaves: the [`Checkpoint`] it can be resumed from
//! (with a person's answers), how it ended, and what each step did.

use std::collections::BTreeMap;

use agentry_agent::durable::WaitingCall;
use agentry_core::model::Usage;
use serde::{Deserialize, Serialize};

/// Where a workflow run stands: the input, every finished step's output
/// (by its place: `2`, `2/billing`, `3/round-1`…), a person's answers to
/// approvals, and the interrupt it stopped at. It serialises, to be kept
/// until someone answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The run's id (agent steps' durable runs are `ID/PLACE`).
    pub id: String,
    /// The workflow's input.
    pub input: String,
    /// Finished steps' outputs, by place.
    pub outputs: BTreeMap<String, String>,
    /// A person's answers to approval steps, by place.
    pub answers: BTreeMap<String, Answer>,
    /// Where the run stopped for a person, if it did.
    pub interrupt: Option<Interrupt>,
    /// The texts people were asked to approve, by place: an approval holds
    /// only for the text that was shown.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shown: BTreeMap<String, String>,
    /// A digest of the workflow's steps: a checkpoint resumes only the
    /// workflow it was made by.
    #[serde(default)]
    pub workflow: String,
}

/// A person's answer to an approval step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// Go on with the text as it is.
    Approve,
    /// Go on with this text instead.
    Edit {
        /// The text.
        text: String,
    },
    /// Stop the workflow.
    Reject {
        /// Why.
        reason: String,
    },
}

/// Where a run stopped for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// The step's place.
    pub step: String,
    /// What the person is asked.
    #[serde(flatten)]
    pub kind: InterruptKind,
}

/// What an interrupt asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InterruptKind {
    /// An approval step: approve, edit or reject `text`.
    Approval {
        /// The step's question.
        question: String,
        /// The text to approve.
        text: String,
    },
    /// An agent step's durable run waits for decisions on these calls
    /// ([`Workflow::decide`](crate::Workflow::decide)).
    Calls {
        /// The durable run's id.
        run: String,
        /// The waiting calls.
        calls: Vec<WaitingCall>,
    },
}

/// How a workflow run ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkflowOutcome {
    /// Every step finished: the last one's output.
    Done {
        /// The output.
        output: String,
    },
    /// A person is asked; [`Workflow::resume`](crate::Workflow::resume) the checkpoint once answered.
    Interrupted(Interrupt),
    /// A person rejected an approval step.
    Rejected {
        /// The step's place.
        step: String,
        /// Why.
        reason: String,
    },
    /// A step failed: an agent did not answer, a program or router failed,
    /// a loop's check never passed.
    Failed {
        /// The step's place.
        step: String,
        /// Why.
        error: String,
    },
}

/// A step that finished in a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepTrace {
    /// Its place.
    pub step: String,
    /// `agent`, `program`, `route`, `check`, `approval` or `join`.
    pub kind: &'static str,
    /// What it gave.
    pub output: String,
    /// The agent that answered, for an agent step (after handoffs, the last one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Tokens it spent.
    pub usage: Usage,
    /// Its output came from the checkpoint (an earlier run did the work).
    pub cached: bool,
}

/// A workflow run's end: the outcome, the checkpoint to resume from, and
/// what each step did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkflowRun {
    /// How it ended.
    pub outcome: WorkflowOutcome,
    /// Where it stands.
    pub checkpoint: Checkpoint,
    /// The steps that finished, in the order they did.
    pub trace: Vec<StepTrace>,
    /// Tokens spent by this run's steps (not the checkpoint's).
    pub usage: Usage,
}

impl Checkpoint {
    /// Answer the approval the run stopped at; then resume it.
    pub fn answer(&mut self, answer: Answer) -> Result<(), String> {
        match &self.interrupt {
            Some(Interrupt {
                step,
                kind: InterruptKind::Approval { text, .. },
            }) => {
                let place = if step == "workflow" {
                    String::new()
                } else {
                    step.clone()
                };
                self.shown.insert(place.clone(), text.clone());
                self.answers.insert(place, answer);
                Ok(())
            }
            _ => Err("the run does not wait for an approval".into()),
        }
    }
}
