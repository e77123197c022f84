//! A run whose destructive calls are decided by whoever reads its events:
//! driven on a task of its own so that it outlives the request that started
//! it (a protocol's task or run), its events read by whichever request
//! follows it now, each destructive call waiting in the stream for a
//! decision sent back on a channel. What A2A's `input-required` and AG-UI's
//! interrupts are built on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agentry_core::BoxFuture;
use agentry_core::model::Message;
use agentry_core::tool::{Tool, ToolCall};
use futures_util::StreamExt;

use crate::{Agent, AgentEvent, Approval, Approver};
use tokio::sync::{mpsc, oneshot};

/// What an [`ApprovalRun`] reports.
#[derive(Debug)]
pub enum ApprovalEvent {
    /// An event of the agent's run.
    Agent(AgentEvent),
    /// A destructive call waits: send the decision on `decide`.
    Waiting {
        /// The call.
        call: ToolCall,
        /// Where the decision goes.
        decide: oneshot::Sender<Approval>,
    },
    /// Nobody decided in time: the run is over (its handle says so too).
    Abandoned,
}

/// Stops a run, and says whether it is over (ended, stopped, or abandoned
/// for want of a decision): what a holder of paused runs sweeps by.
#[derive(Debug, Clone)]
pub struct RunHandle {
    stop: tokio::task::AbortHandle,
    abandoned: Arc<AtomicBool>,
}

impl RunHandle {
    /// Stop the run now.
    pub fn stop(&self) {
        self.stop.abort();
    }

    /// Whether the run has ended, was stopped, or waited past its limit.
    pub fn is_over(&self) -> bool {
        self.stop.is_finished() || self.abandoned.load(Ordering::SeqCst)
    }

    /// Stop the run if it is over, and say whether it was: what a holder
    /// of runs sweeps its map with (`map.retain(|_, r| !r.stop_if_over())`).
    pub fn stop_if_over(&self) -> bool {
        let over = self.is_over();
        if over {
            self.stop();
        }
        over
    }
}

/// A running agent: its events, and the handle that stops it.
#[derive(Debug)]
pub struct ApprovalRun {
    /// What the run reports, its last event [`AgentEvent::Final`] (or
    /// [`ApprovalEvent::Abandoned`]).
    pub events: mpsc::UnboundedReceiver<ApprovalEvent>,
    /// Stops the run; says whether it is over.
    pub handle: RunHandle,
}

/// Asks the task's caller, through the run's events, about each
/// destructive call. When nobody answers within `wait` (or the decision's
/// sender is dropped) the run is abandoned: [`ApprovalEvent::Abandoned`] is
/// sent and the run ends there, its events closing after it.
struct AskTheCaller {
    events: mpsc::UnboundedSender<ApprovalEvent>,
    wait: Duration,
    abandoned: Arc<AtomicBool>,
    end: Arc<tokio::sync::Notify>,
}

impl Approver for AskTheCaller {
    fn review<'a>(&'a self, _tool: &'a Tool, call: &'a ToolCall) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let (decide, decided) = oneshot::channel();
            let waiting = ApprovalEvent::Waiting {
                call: call.clone(),
                decide,
            };
            if self.events.send(waiting).is_err() {
                return Approval::Deny("nobody is there to approve the call".to_owned());
            }
            match tokio::time::timeout(self.wait, decided).await {
                Ok(Ok(approval)) => approval,
                Ok(Err(_)) | Err(_) => {
                    self.abandoned.store(true, Ordering::SeqCst);
                    let _ = self.events.send(ApprovalEvent::Abandoned);
                    // The run goes no further: its driver, told, ends it
                    // (and this future with it).
                    self.end.notify_one();
                    std::future::pending().await
                }
            }
        })
    }
}

impl ApprovalRun {
    /// Start `agent` on `messages` (on the current tokio runtime), asking about
    /// destructive calls through the run's events and waiting at most `wait`
    /// for each answer; the agent's own approver is set aside.
    pub fn start(
        agent: &Agent,
        messages: Vec<Message>,
        wait: Duration,
    ) -> Result<Self, crate::AgentError> {
        let (sender, events) = mpsc::unbounded_channel();
        let abandoned = Arc::new(AtomicBool::new(false));
        let end = Arc::new(tokio::sync::Notify::new());
        let agent = agent
            .to_builder()
            .approver(AskTheCaller {
                events: sender.clone(),
                wait,
                abandoned: abandoned.clone(),
                end: end.clone(),
            })
            .build()?;
        let agent = Arc::new(agent);
        let driver = tokio::spawn(async move {
            let mut stream = std::pin::pin!(agent.stream_messages(messages));
            loop {
                let event = tokio::select! {
                    event = stream.next() => event,
                    () = end.notified() => None,
                };
                let Some(event) = event else { break };
                if sender.send(ApprovalEvent::Agent(event)).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            events,
            handle: RunHandle {
                stop: driver.abort_handle(),
                abandoned,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentry_core::model::{ScriptedModel, Step, Usage};
    use agentry_core::tool::{ToolHints, function};
    use serde_json::{Value, json};

    fn agent() -> Agent {
        let delete = function("delete")
            .arg::<String>("path", "The file")
            .hints(ToolHints {
                destructive: true,
                ..ToolHints::default()
            })
            .handler(|_: Value| Ok::<_, String>("deleted"))
            .build()
            .unwrap();
        let model = ScriptedModel::new()
            .reply(Step::Tool {
                calls: vec![ToolCall::new("c1", "utils.delete", json!({"path": "x"}))],
                text: String::new(),
                tokens: Usage::new(1, 1),
            })
            .reply(Step::Final {
                text: "done".into(),
                tokens: Usage::new(1, 1),
            });
        Agent::builder(model).tool(delete).build().unwrap()
    }

    #[tokio::test]
    async fn a_decision_that_never_comes_ends_the_run() {
        let mut run = ApprovalRun::start(
            &agent(),
            vec![Message::user("delete x")],
            Duration::from_millis(50),
        )
        .unwrap();
        let mut seen = Vec::new();
        // Read to the end: the stream closes by itself after Abandoned.
        while let Some(event) = run.events.recv().await {
            seen.push(match event {
                ApprovalEvent::Waiting { .. } => "waiting",
                ApprovalEvent::Abandoned => "abandoned",
                ApprovalEvent::Agent(AgentEvent::Final { .. }) => "final",
                ApprovalEvent::Agent(_) => "agent",
            });
        }
        assert!(seen.contains(&"waiting"), "{seen:?}");
        assert_eq!(seen.last(), Some(&"abandoned"), "nothing after: {seen:?}");
        assert!(run.handle.is_over());
    }

    #[tokio::test]
    async fn an_approved_call_runs_and_the_run_answers() {
        let mut run = ApprovalRun::start(
            &agent(),
            vec![Message::user("delete x")],
            Duration::from_secs(5),
        )
        .unwrap();
        let mut answer = None;
        while let Some(event) = run.events.recv().await {
            match event {
                ApprovalEvent::Waiting { decide, .. } => {
                    let _ = decide.send(Approval::Approve);
                }
                ApprovalEvent::Agent(AgentEvent::Final { run }) => answer = Some(run.text()),
                _ => {}
            }
        }
        assert_eq!(answer.as_deref(), Some("done"));
    }
}
