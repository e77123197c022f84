//! One agent run behind an A2A task: driven on a task of its own so that it
//! outlives the request that started it, its events read by whichever
//! request streams the task now, and its destructive calls waiting for the
//! caller's decision (the task's `input-required`).

use std::sync::Arc;
use std::time::Duration;

use agentry_agent::{Agent, AgentEvent, Approval, Approver};
use agentry_core::BoxFuture;
use agentry_core::model::Message;
use agentry_core::tool::{Tool, ToolCall};
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};

/// What a run reports to the task.
pub(crate) enum RunEvent {
    /// An event of the agent's run.
    Agent(AgentEvent),
    /// A destructive call waits: send the decision on `decide`.
    Waiting {
        call: ToolCall,
        decide: oneshot::Sender<Approval>,
    },
    /// Nobody decided in time: the run was stopped.
    Abandoned,
}

/// A running agent: its events, and the handle that stops it.
pub(crate) struct Run {
    pub events: mpsc::UnboundedReceiver<RunEvent>,
    pub stop: tokio::task::AbortHandle,
}

/// Asks the task's caller, through the run's events, about each
/// destructive call; denies it when nobody answers within `wait`.
struct AskTheCaller {
    events: mpsc::UnboundedSender<RunEvent>,
    wait: Duration,
}

impl Approver for AskTheCaller {
    fn review<'a>(&'a self, _tool: &'a Tool, call: &'a ToolCall) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let (decide, decided) = oneshot::channel();
            let waiting = RunEvent::Waiting {
                call: call.clone(),
                decide,
            };
            if self.events.send(waiting).is_err() {
                return Approval::Deny("nobody is there to approve the call".to_owned());
            }
            match tokio::time::timeout(self.wait, decided).await {
                Ok(Ok(approval)) => approval,
                Ok(Err(_)) | Err(_) => {
                    let _ = self.events.send(RunEvent::Abandoned);
                    // The run stops here: its driver is aborted by whoever
                    // reads `Abandoned`, or ends with no one reading.
                    std::future::pending().await
                }
            }
        })
    }
}

/// Start `agent` on `messages`, asking about destructive calls through the
/// run's events and waiting at most `wait` for each answer.
pub(crate) fn start(agent: &Agent, messages: Vec<Message>, wait: Duration) -> Result<Run, String> {
    let (sender, events) = mpsc::unbounded_channel();
    let agent = agent
        .to_builder()
        .approver(AskTheCaller {
            events: sender.clone(),
            wait,
        })
        .build()
        .map_err(|e| e.to_string())?;
    let agent = Arc::new(agent);
    let driver = tokio::spawn(async move {
        let mut stream = std::pin::pin!(agent.stream_messages(messages));
        while let Some(event) = stream.next().await {
            if sender.send(RunEvent::Agent(event)).is_err() {
                break;
            }
        }
    });
    Ok(Run {
        events,
        stop: driver.abort_handle(),
    })
}
