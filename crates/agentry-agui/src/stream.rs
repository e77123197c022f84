//! One AG-UI run: the agent's events as AG-UI events, from `RUN_STARTED`
//! to `RUN_FINISHED` (or `RUN_ERROR`); a destructive call ends the run with
//! an interrupt and waits, its run kept for the resume.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use ag_ui::{Event, Interrupt, MessageId, RunFinishedEvent, TextMessageRole, TokenUsage};
use agentry_agent::{AgentEvent, Approval, ApprovalEvent, Outcome, RunHandle, RunOutcome};
use agentry_core::tool::ToolCall;
use futures_util::stream::{self, BoxStream};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use crate::{Paused, Threads};

/// The interrupt a waiting call is asked about under.
pub(crate) fn interrupt_id(call: &ToolCall) -> String {
    format!("approve-{}", call.id)
}

/// A message id unique in this process (AG-UI clients key messages by it).
fn new_id() -> MessageId {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    MessageId::from(format!("m-{}-{n}", std::process::id()))
}

/// Where a run stands while its events are read.
pub(crate) struct Following {
    pub threads: Arc<Mutex<Threads>>,
    pub key: (String, String),
    pub thread_id: String,
    pub run_id: String,
    pub events: Option<mpsc::UnboundedReceiver<ApprovalEvent>>,
    pub stop: RunHandle,
    /// Calls whose `TOOL_CALL_START..END` the frontend has seen.
    pub announced: HashSet<String>,
    pub out: VecDeque<Event>,
    /// The assistant text message open now.
    pub open: Option<MessageId>,
    pub done: bool,
}

impl Drop for Following {
    fn drop(&mut self) {
        // The frontend went away mid-run: the run goes too.
        if !self.done {
            self.stop.stop();
        }
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.running.remove(&self.key);
    }
}

impl Following {
    fn close_text(&mut self) {
        if let Some(id) = self.open.take() {
            self.out.push_back(Event::text_message_end(id));
        }
    }

    fn finish(&mut self, run: &RunOutcome) {
        self.close_text();
        self.done = true;
        match &run.outcome {
            Outcome::Final(answer) => {
                self.out.push_back(Event::state_snapshot(json!({
                    "steps": run.steps.len(),
                    "usage": {"inputTokens": run.usage.input_tokens,
                              "outputTokens": run.usage.output_tokens},
                })));
                let usage = TokenUsage {
                    input_tokens: Some(run.usage.input_tokens),
                    output_tokens: Some(run.usage.output_tokens),
                    ..TokenUsage::default()
                };
                self.out.push_back(
                    RunFinishedEvent::new(self.thread_id.as_str(), self.run_id.as_str())
                        .with_result(json!({"answer": answer}))
                        .with_usage(vec![usage])
                        .into(),
                );
            }
            outcome => self.out.push_back(
                ag_ui::RunErrorEvent::new(run.text())
                    .with_code(outcome.kind())
                    .into(),
            ),
        }
    }

    /// `TOOL_CALL_START`, `_ARGS`, `_END` for a call the frontend has not seen.
    fn announce(&mut self, call: &ToolCall) {
        self.close_text();
        if self.announced.insert(call.id.clone()) {
            self.out
                .push_back(Event::tool_call_start(call.id.as_str(), call.name.clone()));
            self.out.push_back(Event::tool_call_args(
                call.id.as_str(),
                call.input.to_string(),
            ));
            self.out.push_back(Event::tool_call_end(call.id.as_str()));
        }
    }

    fn wait(&mut self, call: ToolCall, decide: oneshot::Sender<Approval>) {
        // The call is asked about before the loop reports it: announce it
        // now, so the interrupt names a call the frontend knows.
        self.announce(&call);
        let id = interrupt_id(&call);
        let mut interrupt = Interrupt::new(id.clone(), "tool_call");
        interrupt.tool_call_id = Some(call.id.as_str().into());
        interrupt.message = Some(format!(
            "The agent wants to run {}({}), which needs your approval.",
            call.name, call.input
        ));
        let schema = json!({
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"],
        });
        interrupt.response_schema = schema.as_object().cloned();
        self.out.push_back(Event::run_finished_interrupt(
            self.thread_id.as_str(),
            self.run_id.as_str(),
            vec![interrupt],
        ));
        if let Some(events) = self.events.take() {
            let paused = Paused {
                events,
                decide,
                interrupt: id,
                announced: std::mem::take(&mut self.announced),
                run: self.stop.clone(),
            };
            let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
            // One run per thread is let start, so none waits here; if one
            // did, it is stopped, not left behind.
            if let Some(old) = threads.paused.insert(self.key.clone(), paused) {
                old.run.stop();
            }
        }
        self.done = true;
    }

    fn step(&mut self, event: Option<ApprovalEvent>) {
        match event {
            Some(ApprovalEvent::Agent(AgentEvent::TextDelta { text, .. })) if !text.is_empty() => {
                let id = match &self.open {
                    Some(id) => id.clone(),
                    None => {
                        let id = new_id();
                        self.out.push_back(Event::text_message_start(
                            id.clone(),
                            TextMessageRole::Assistant,
                        ));
                        self.open = Some(id.clone());
                        id
                    }
                };
                self.out.push_back(Event::text_message_content(id, text));
            }
            Some(ApprovalEvent::Agent(AgentEvent::StepEnd { .. })) => self.close_text(),
            Some(ApprovalEvent::Agent(AgentEvent::ToolCall { call, .. })) => self.announce(&call),
            Some(ApprovalEvent::Agent(AgentEvent::ToolResult { record, .. })) => {
                self.out.push_back(Event::tool_call_result(
                    new_id(),
                    record.call.id.as_str(),
                    record.result.output_text(),
                ));
            }
            Some(ApprovalEvent::Agent(AgentEvent::Final { run })) => self.finish(&run),
            Some(ApprovalEvent::Agent(_)) => {}
            Some(ApprovalEvent::Waiting { call, decide }) => self.wait(call, decide),
            Some(ApprovalEvent::Abandoned) => {
                self.close_text();
                self.done = true;
                self.out.push_back(
                    ag_ui::RunErrorEvent::new("No decision came in time; the run was stopped.")
                        .with_code("abandoned")
                        .into(),
                );
            }
            None => {
                self.close_text();
                self.done = true;
                self.out.push_back(
                    ag_ui::RunErrorEvent::new("The run stopped before it answered.")
                        .with_code("stopped")
                        .into(),
                );
            }
        }
    }
}

/// The run's AG-UI events.
pub(crate) fn events(mut following: Following) -> BoxStream<'static, Event> {
    following.out.push_back(Event::run_started(
        following.thread_id.as_str(),
        following.run_id.as_str(),
    ));
    Box::pin(stream::unfold(following, |mut f| async move {
        loop {
            if let Some(next) = f.out.pop_front() {
                return Some((next, f));
            }
            if f.done {
                return None;
            }
            let event = match f.events.as_mut() {
                Some(events) => events.recv().await,
                None => None,
            };
            f.step(event);
        }
    }))
}

/// A run that cannot start: `RUN_STARTED`, then `RUN_ERROR` saying why.
pub(crate) fn refused(
    thread_id: &str,
    run_id: &str,
    why: String,
    code: &str,
) -> BoxStream<'static, Event> {
    Box::pin(stream::iter([
        Event::run_started(thread_id, run_id),
        ag_ui::RunErrorEvent::new(why).with_code(code).into(),
    ]))
}
