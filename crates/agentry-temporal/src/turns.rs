//! Chat turns as workflows ([`TemporalTurns`]): an HTTP server hands each
//! turn's agent loop to the workers of a task queue, so the processes that
//! answer requests and the ones that run agents scale apart. The turn keeps
//! its own steps (memory, the system prompt, storing the reply); the run
//! carries the turn's system prompt and tool context ([`TurnScope`]).

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::client::{TemporalError, TemporalRuns};
use crate::wire::{MAX_RUN_INPUT_BYTES, RunInput, Status, TurnScope};
use crate::workflow::json_size;
use agentry_agent::turn::{RemoteRunError, TurnRun, TurnRunner};
use agentry_agent::{AgentEvent, Outcome, RunOutcome};
use agentry_core::journal::Decision;
use agentry_core::model::{ModelError, Usage};

/// How often a followed run's record and progress are read.
pub const FOLLOW_EVERY: Duration = Duration::from_millis(250);

/// How long reads of a followed run may keep failing (the server
/// restarting, no worker to answer, a workflow task that keeps failing)
/// before the follower gives up on it, saying why.
pub const READ_PATIENCE: Duration = Duration::from_secs(60);

/// Turns' agent loops as runs on a Temporal server ([`TurnRunner`]): each
/// turn starts a run under the turn's id ([`turn_run_id`](agentry_agent::turn::turn_run_id))
/// and follows it. The text of the step under way streams from its
/// heartbeats (about every second), each step's calls once it ends. A run
/// that waits for a person ends the turn with its waiting calls; it is
/// decided with [`TemporalRuns::decide`] (or `agentry runs approve
/// --temporal`) and then goes on by itself. A turn that is stopped (its
/// client went away) cancels its run.
#[derive(Debug, Clone)]
pub struct TemporalTurns {
    runs: TemporalRuns,
}

impl TemporalTurns {
    /// Turns started as runs of `runs` (its server and task queue).
    pub fn new(runs: TemporalRuns) -> Self {
        Self { runs }
    }
}

impl TurnRunner for TemporalTurns {
    fn run(&self, run: TurnRun) -> BoxStream<'static, AgentEvent> {
        let runs = self.runs.clone();
        spawned(move |events| async move {
            let (id, input) = match fitted(run) {
                Ok(fitted) => fitted,
                Err(why) => {
                    let _ = events.send(failed(why)).await;
                    return;
                }
            };
            match runs.start(&id, input).await {
                Ok(()) => follow_into(&runs, &id, &events).await,
                Err(error) => {
                    let _ = events.send(failed(error.to_string())).await;
                }
            }
        })
    }

    fn outcome(&self, id: String) -> BoxFuture<'static, Result<RunOutcome, RemoteRunError>> {
        let runs = self.runs.clone();
        Box::pin(async move {
            let record = runs.record(&id).await.map_err(|e| read_error(&id, e))?;
            Ok(record.outcome())
        })
    }

    fn decide(
        &self,
        id: String,
        call_id: String,
        decision: Decision,
    ) -> BoxFuture<'static, Result<(), RemoteRunError>> {
        let runs = self.runs.clone();
        Box::pin(async move {
            let record = runs.record(&id).await.map_err(|e| read_error(&id, e))?;
            if !record.waiting.iter().any(|w| w.call.id == call_id) {
                return Err(RemoteRunError::Refused(format!(
                    "call {call_id:?} of run {id:?} is not waiting for a decision"
                )));
            }
            // Refused by the workflow too when the call stopped waiting since.
            runs.decide(&id, &call_id, decision)
                .await
                .map_err(|e| RemoteRunError::Refused(e.to_string()))
        })
    }

    fn cancel(&self, id: String) -> BoxFuture<'static, Result<(), RemoteRunError>> {
        let runs = self.runs.clone();
        Box::pin(async move {
            runs.cancel(&id)
                .await
                .map_err(|e| RemoteRunError::Unavailable(e.to_string()))
        })
    }

    fn follow(&self, id: String) -> BoxStream<'static, AgentEvent> {
        self.runs.follow(&id)
    }
}

/// A failed read of run `id`: no such run, or the server could not answer.
fn read_error(id: &str, error: TemporalError) -> RemoteRunError {
    let text = error.to_string();
    if text.to_lowercase().contains("not found") {
        RemoteRunError::NotFound(id.to_owned())
    } else {
        RemoteRunError::Unavailable(text)
    }
}

impl TemporalRuns {
    /// Follow run `id` as [`AgentEvent`]s: each step's text (the step under
    /// way's as its heartbeats bring it), calls and results, and last
    /// [`AgentEvent::Final`] once it ends or waits for a person. The stream
    /// ends there; dropping it before cancels the run.
    pub fn follow(&self, id: &str) -> BoxStream<'static, AgentEvent> {
        let runs = self.clone();
        let id = id.to_owned();
        spawned(move |events| async move { follow_into(&runs, &id, &events).await })
    }
}

/// The events `task` sends, as a stream; `task` runs on a task of its own
/// and sees the stream dropped as its sender closing.
fn spawned<F, T>(task: F) -> BoxStream<'static, AgentEvent>
where
    F: FnOnce(mpsc::Sender<AgentEvent>) -> T,
    T: Future<Output = ()> + Send + 'static,
{
    let (events, received) = mpsc::channel(64);
    tokio::spawn(task(events));
    ReceiverStream::new(received).boxed()
}

/// Send run `id`'s events to `events` until it ends or waits; cancel it if
/// the reader goes away first.
async fn follow_into(runs: &TemporalRuns, id: &str, events: &mpsc::Sender<AgentEvent>) {
    let mut shown_steps = 0;
    // The step under way and how much of its text was sent.
    let mut sent = (0, 0);
    let mut failing_since: Option<tokio::time::Instant> = None;
    loop {
        if events.is_closed() {
            let _ = runs.cancel(id).await;
            return;
        }
        let (record, progress) = match runs.read(id).await {
            Ok(read) => {
                failing_since = None;
                read
            }
            Err(error) => {
                let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() >= READ_PATIENCE {
                    let _ = events.send(failed(error.to_string())).await;
                    return;
                }
                tokio::time::sleep(FOLLOW_EVERY).await;
                continue;
            }
        };
        for step in record.steps.iter().skip(shown_steps) {
            let from = if sent.0 == step.index { sent.1 } else { 0 };
            let mut out = Vec::new();
            if let Some(rest) = step.text.get(from..)
                && !rest.is_empty()
            {
                out.push(AgentEvent::TextDelta {
                    step: step.index,
                    text: rest.to_owned(),
                });
            }
            let record = step.record();
            for call in &record.calls {
                out.push(AgentEvent::ToolCall {
                    step: step.index,
                    call: call.call.clone(),
                });
                out.push(AgentEvent::ToolResult {
                    step: step.index,
                    record: call.clone(),
                });
            }
            out.push(AgentEvent::StepEnd { step: record });
            for event in out {
                if events.send(event).await.is_err() {
                    let _ = runs.cancel(id).await;
                    return;
                }
            }
        }
        shown_steps = record.steps.len();
        if record.status != Status::Running {
            let _ = events
                .send(AgentEvent::Final {
                    run: Box::new(record.outcome()),
                })
                .await;
            return;
        }
        if let Some(progress) = progress
            && progress.step == shown_steps + 1
        {
            let from = if sent.0 == progress.step { sent.1 } else { 0 };
            if let Some(rest) = progress.text.get(from..)
                && !rest.is_empty()
            {
                let delta = AgentEvent::TextDelta {
                    step: progress.step,
                    text: rest.to_owned(),
                };
                if events.send(delta).await.is_err() {
                    let _ = runs.cancel(id).await;
                    return;
                }
                sent = (progress.step, progress.text.len());
            }
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
}

/// The run's id and input for `run`, its system prompt cut (from the end,
/// where the memory recalled for the turn is) so that the input fits in
/// [`MAX_RUN_INPUT_BYTES`]; a turn whose own messages do not fit is refused,
/// saying so.
fn fitted(run: TurnRun) -> Result<(String, RunInput), String> {
    const CUT: &str = "\n…(cut to fit a run's input on Temporal)";
    let input = |system: String| RunInput {
        messages: run.messages.clone(),
        turn: Some(TurnScope {
            system,
            context: run.context.clone(),
        }),
        ..RunInput::new("")
    };
    let whole = input(run.system.clone());
    let size = json_size(&whole);
    if size <= MAX_RUN_INPUT_BYTES {
        return Ok((run.id, whole));
    }
    // Cut from the end of the system prompt (JSON escapes can make the text
    // larger than its bytes: cut on until it fits).
    let mut keep = run.system.len().saturating_sub(size - MAX_RUN_INPUT_BYTES);
    loop {
        while !run.system.is_char_boundary(keep) {
            keep -= 1;
        }
        let trial = input(format!("{}{CUT}", &run.system[..keep]));
        let size = json_size(&trial);
        if size <= MAX_RUN_INPUT_BYTES {
            return Ok((run.id, trial));
        }
        if keep == 0 {
            return Err(format!(
                "the turn's messages are {size} bytes; a run on Temporal starts with at most {MAX_RUN_INPUT_BYTES}"
            ));
        }
        keep = keep.saturating_sub(keep / 8 + 1);
    }
}

/// The final event of a run that could not be started or followed.
fn failed(message: String) -> AgentEvent {
    AgentEvent::Final {
        run: Box::new(RunOutcome {
            outcome: Outcome::ModelError(ModelError::Transport(message)),
            usage: Usage::default(),
            steps: Vec::new(),
            messages: Vec::new(),
            relevance: None,
            agent: None,
            handoffs: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentry_agent::turn::TurnContext;
    use agentry_core::model::Message;

    fn turn(system: String, text: String) -> TurnRun {
        TurnRun {
            id: "s~m".into(),
            system,
            messages: vec![Message::user(text)],
            context: TurnContext::default(),
        }
    }

    #[test]
    fn a_turn_whose_memory_makes_it_too_large_is_cut_to_fit_from_the_end() {
        // Memory recalled into the system prompt (with characters JSON
        // escapes) past what a run takes: the end is cut, the start kept.
        let system = format!("You help.\n## Memory\n{}", "\"quoted\" ".repeat(20_000));
        let (id, input) = fitted(turn(system, "hi".into())).unwrap();
        assert_eq!(id, "s~m");
        let cut = &input.turn.as_ref().unwrap().system;
        assert!(cut.starts_with("You help.\n## Memory\n"));
        assert!(cut.ends_with("…(cut to fit a run's input on Temporal)"));
        assert!(json_size(&input) <= MAX_RUN_INPUT_BYTES);
        // A small one is left whole.
        let (_, input) = fitted(turn("You help.".into(), "hi".into())).unwrap();
        assert_eq!(input.turn.unwrap().system, "You help.");
        // A message too large by itself is refused, saying so.
        let error = fitted(turn(String::new(), "x".repeat(70_000))).unwrap_err();
        assert!(error.starts_with("the turn's messages are 70"), "{error}");
    }
}
