//! [`AgentEvent`]: what a streamed run reports as it happens. The chat turn,
//! the server and the terminal chat all read this one stream.

use std::future::Future;

use futures_util::{Stream, StreamExt, stream};
use serde::Serialize;
use tokio::sync::mpsc;

use super::outcome::{CallRecord, RunOutcome, StepRecord};
use agentry_core::tool::ToolCall;

/// One event of a streamed run, in the order things happen. The last event
/// of every stream is [`Final`](AgentEvent::Final).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A piece of text the model wrote in step `step` (1-based), as it arrived.
    TextDelta {
        /// The step.
        step: usize,
        /// The text.
        text: String,
    },
    /// The model asked for a tool call; the gate decides next whether it runs.
    ToolCall {
        /// The step.
        step: usize,
        /// The call as the model made it.
        call: ToolCall,
    },
    /// A tool call finished (or was refused): the result fed back to the model.
    ToolResult {
        /// The step.
        step: usize,
        /// The call, its result, its duration and any child agent's run.
        record: CallRecord,
    },
    /// A step ended.
    StepEnd {
        /// The step's record.
        step: StepRecord,
    },
    /// An agent handed the conversation to another, which carries on.
    Handoff {
        /// The step whose call handed off.
        step: usize,
        /// The agent that handed off (`None` when it has no name).
        from: Option<String>,
        /// The agent handed to.
        to: String,
        /// Why, as the model said.
        reason: String,
    },
    /// The run ended: the same record [`Agent::run`](super::Agent::run) returns.
    Final {
        /// The run.
        run: Box<RunOutcome>,
    },
}

/// Where a streamed run sends its events.
#[derive(Clone, Debug)]
pub(crate) struct EventSink(mpsc::UnboundedSender<AgentEvent>);

impl EventSink {
    /// Send one event; a reader that went away is not an error of the run.
    pub(crate) fn emit(&self, event: AgentEvent) {
        let _ = self.0.send(event);
    }
}

/// Drive `run` and yield every event it emits, then its outcome as
/// [`AgentEvent::Final`]. The run makes progress only while the stream is polled.
pub(crate) fn event_stream<'a, F, Fut>(run: F) -> impl Stream<Item = AgentEvent> + Send + 'a
where
    F: FnOnce(EventSink) -> Fut + Send + 'a,
    Fut: Future<Output = RunOutcome> + Send + 'a,
{
    let (sender, receiver) = mpsc::unbounded_channel();
    let sink = EventSink(sender);
    let driver = async move {
        let last = sink.clone();
        let outcome = run(sink).await;
        last.emit(AgentEvent::Final {
            run: Box::new(outcome),
        });
    };
    let events = stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (event, receiver))
    });
    // The driver yields nothing; the stream ends once the driver is done and
    // every event it sent has been read (the channel closes with its last sender).
    let driver = stream::once(driver).filter_map(|()| async { None });
    stream::select(driver, events)
}
