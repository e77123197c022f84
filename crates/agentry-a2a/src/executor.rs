//! The A2A executor: each task is one agent run. Its progress goes out as
//! `working` status updates (text as it comes, each tool call and result),
//! its answer as the `answer` artifact and the `completed` status; a
//! destructive call leaves the task `input-required` until the caller's next
//! message approves or denies it; `cancel` stops the run.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{
    A2AError, Artifact, Message as A2aMessage, Part, PartContent, Role, StreamResponse,
    TaskArtifactUpdateEvent, TaskId, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, ExecutorContext, ServiceParams};
use agentry_agent::{
    Agent, AgentEvent, Approval, ApprovalEvent as RunEvent, ApprovalRun, Outcome, RunHandle,
};
use agentry_core::model::Message;
use agentry_core::tool::ToolCall;
use futures_util::stream::{self, BoxStream};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::conversations::Conversations;

/// The header a keyed front end sets to the caller's id (overwriting any
/// the caller sent); without it every caller is `local`.
pub const PRINCIPAL_HEADER: &str = "x-agentry-principal";

/// Text pieces are sent on once this long (or at a step's end).
const TEXT_CHUNK: usize = 64;

/// The most of a tool's result a progress update quotes.
const RESULT_QUOTE: usize = 2_000;

/// Who is calling, as the front end said.
pub(crate) fn owner_of(params: &ServiceParams) -> String {
    params
        .get(PRINCIPAL_HEADER)
        .and_then(|values| values.first())
        .cloned()
        .unwrap_or_else(|| "local".to_owned())
}

/// A run waiting for the caller's decision on `call`.
struct Paused {
    events: mpsc::UnboundedReceiver<RunEvent>,
    decide: oneshot::Sender<Approval>,
    call: ToolCall,
    /// The caller and their words, remembered with the answer.
    asked: Option<(String, String)>,
}

/// A run not yet ended.
struct Live {
    owner: String,
    run: RunHandle,
    paused: Option<Paused>,
}

/// What the executor and the request handler share.
#[derive(Default)]
pub(crate) struct State {
    live: HashMap<TaskId, Live>,
    /// Who started each task, for the handler's owner checks.
    pub owners: Owners,
    conversations: Conversations,
}

/// Each task's owner, the oldest forgotten past a bound.
#[derive(Default)]
pub(crate) struct Owners {
    by_task: HashMap<TaskId, String>,
    order: VecDeque<TaskId>,
}

impl Owners {
    /// The most tasks whose owner is remembered.
    const KEPT: usize = 100_000;

    fn insert(&mut self, task: &str, owner: &str) {
        if self.by_task.contains_key(task) {
            return;
        }
        if self.order.len() >= Self::KEPT
            && let Some(oldest) = self.order.pop_front()
        {
            self.by_task.remove(&oldest);
        }
        self.by_task.insert(task.to_owned(), owner.to_owned());
        self.order.push_back(task.to_owned());
    }

    /// The owner of `task`, if it is known.
    pub fn get(&self, task: &str) -> Option<&str> {
        self.by_task.get(task).map(String::as_str)
    }
}

/// Runs the agent for each task.
pub(crate) struct Executor {
    pub agent: Arc<Agent>,
    pub state: Arc<Mutex<State>>,
    /// How long a destructive call waits for the caller's decision.
    pub wait: Duration,
    /// Runs one caller may have going at once.
    pub max_live_per_caller: usize,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn status(
    task: &TaskId,
    context: &str,
    state: TaskState,
    message: Option<A2aMessage>,
) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.clone(),
        context_id: context.to_owned(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(chrono::Utc::now()),
        },
        metadata: None,
    })
}

fn agent_message(task: &TaskId, context: &str, parts: Vec<Part>) -> A2aMessage {
    let mut message = A2aMessage::new(Role::Agent, parts);
    message.task_id = Some(task.clone());
    message.context_id = Some(context.to_owned());
    message
}

fn say(task: &TaskId, context: &str, state: TaskState, text: impl Into<String>) -> StreamResponse {
    let message = agent_message(task, context, vec![Part::text(text)]);
    status(task, context, state, Some(message))
}

/// What a message says: its text parts, and its data parts as JSON.
pub(crate) fn message_text(message: Option<&A2aMessage>) -> String {
    let Some(message) = message else {
        return String::new();
    };
    let pieces: Vec<String> = message
        .parts
        .iter()
        .filter_map(|part| match &part.content {
            PartContent::Text(text) => Some(text.clone()),
            PartContent::Data(value) => Some(value.to_string()),
            PartContent::Url(url) => Some(format!("[file at {url}]")),
            PartContent::Raw(_) => part.filename.as_ref().map(|name| format!("[file {name}]")),
        })
        .collect();
    pieces.join("\n")
}

/// The caller's decision on a waiting call: a data part
/// `{"approved": bool, "reason"?: string}`, or text starting `approve`
/// (`yes`, `ok`) or `deny` (`no`) with the reason after it.
fn decision(message: Option<&A2aMessage>) -> Option<Approval> {
    let message = message?;
    for part in &message.parts {
        if let PartContent::Data(value) = &part.content
            && let Some(approved) = value.get("approved").and_then(Value::as_bool)
        {
            let reason = value.get("reason").and_then(Value::as_str).unwrap_or("");
            return Some(match approved {
                true => Approval::Approve,
                false => Approval::Deny(denial(reason)),
            });
        }
    }
    let text = message_text(Some(message));
    let text = text.trim();
    let lower = text.to_lowercase();
    let word = lower
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    match word {
        "approve" | "approved" | "yes" | "y" | "ok" => Some(Approval::Approve),
        "deny" | "denied" | "no" | "n" => {
            let reason = text[word.len()..].trim_start_matches([':', ',', '.', ' ']);
            Some(Approval::Deny(denial(reason)))
        }
        _ => None,
    }
}

fn denial(reason: &str) -> String {
    match reason.trim() {
        "" => "denied by the caller".to_owned(),
        reason => reason.to_owned(),
    }
}

/// What the caller is told about a call waiting for them.
fn asking(task: &TaskId, context: &str, call: &ToolCall) -> StreamResponse {
    let text = format!(
        "The agent wants to run {}({}), which needs your approval. Reply \"approve\", or \
         \"deny\" with a reason.",
        call.name, call.input
    );
    let data = json!({"approval": {"callId": call.id, "tool": call.name, "arguments": call.input}});
    let message = agent_message(task, context, vec![Part::text(text), Part::data(data)]);
    status(task, context, TaskState::InputRequired, Some(message))
}

impl AgentExecutor for Executor {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let owner = owner_of(&ctx.service_params);
        let (task, context) = ctx.task_info();
        let message = ctx.message.as_ref();
        let continuing = message.and_then(|m| m.task_id.clone()).is_some();
        let mut state = lock(&self.state);
        // Runs abandoned for want of a decision (or ended unread) go.
        state.live.retain(|_, live| !live.run.stop_if_over());
        state.owners.insert(&task, &owner);
        if continuing {
            match state.live.get_mut(&task).and_then(|l| l.paused.take()) {
                Some(paused) => {
                    let Some(approval) = decision(message) else {
                        // Not an answer: ask again.
                        let again = asking(&task, &context, &paused.call);
                        if let Some(live) = state.live.get_mut(&task) {
                            live.paused = Some(paused);
                        }
                        return Box::pin(stream::iter([Ok(again)]));
                    };
                    let _ = paused.decide.send(approval);
                    drop(state);
                    return follow(
                        self.state.clone(),
                        task,
                        context,
                        paused.events,
                        paused.asked,
                        None,
                    );
                }
                None if matches!(
                    ctx.stored_task.as_ref().map(|t| t.status.state.clone()),
                    Some(TaskState::InputRequired)
                ) =>
                {
                    let gone = say(
                        &task,
                        &context,
                        TaskState::Failed,
                        "The run that waited here was stopped (no decision came in time).",
                    );
                    return Box::pin(stream::iter([Ok(gone)]));
                }
                None => {}
            }
        }
        let running = state.live.values().filter(|l| l.owner == owner).count();
        if running >= self.max_live_per_caller {
            let refused = say(
                &task,
                &context,
                TaskState::Rejected,
                format!(
                    "{running} tasks of yours are running; at most {} may run at once.",
                    self.max_live_per_caller
                ),
            );
            return Box::pin(stream::iter([Ok(refused)]));
        }
        let text = message_text(message);
        let mut messages = state.conversations.of(&owner, &context);
        messages.push(Message::user(text.clone()));
        let run = match ApprovalRun::start(&self.agent, messages, self.wait) {
            Ok(run) => run,
            Err(error) => {
                let failed = say(&task, &context, TaskState::Failed, error.to_string());
                return Box::pin(stream::iter([Ok(failed)]));
            }
        };
        state.live.insert(
            task.clone(),
            Live {
                owner: owner.clone(),
                run: run.handle,
                paused: None,
            },
        );
        drop(state);
        // A new task starts with the task itself (SDKs expect it first).
        let first = a2a::Task {
            id: task.clone(),
            context_id: context.clone(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: Some(chrono::Utc::now()),
            },
            artifacts: None,
            history: ctx.message.clone().map(|m| vec![m]),
            metadata: None,
        };
        follow(
            self.state.clone(),
            task,
            context,
            run.events,
            Some((owner, text)),
            Some(first),
        )
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (task, context) = ctx.task_info();
        if let Some(live) = lock(&self.state).live.remove(&task) {
            live.run.stop();
        }
        Box::pin(stream::iter([Ok(say(
            &task,
            &context,
            TaskState::Canceled,
            "Canceled.",
        ))]))
    }
}

/// The state of a task's event stream.
struct Following {
    state: Arc<Mutex<State>>,
    task: TaskId,
    context: String,
    events: Option<mpsc::UnboundedReceiver<RunEvent>>,
    /// The caller and their words, to remember with the answer (carried
    /// over a pause to the stream that resumes it).
    asked: Option<(String, String)>,
    out: VecDeque<StreamResponse>,
    text: String,
    done: bool,
}

impl Drop for Following {
    fn drop(&mut self) {
        // Dropped before its end (the request handler stopped reading):
        // the run goes too, unless it waits for a decision.
        if !self.done {
            let mut state = lock(&self.state);
            if state
                .live
                .get(&self.task)
                .is_some_and(|l| l.paused.is_none())
                && let Some(live) = state.live.remove(&self.task)
            {
                live.run.stop();
            }
        }
    }
}

/// The task's events from `events` until the run ends or waits.
fn follow(
    state: Arc<Mutex<State>>,
    task: TaskId,
    context: String,
    events: mpsc::UnboundedReceiver<RunEvent>,
    asked: Option<(String, String)>,
    first: Option<a2a::Task>,
) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
    // A new task's stream opens with the task, a resumed one with `working`.
    let opening = match first {
        Some(first) => StreamResponse::Task(first),
        None => status(&task, &context, TaskState::Working, None),
    };
    let following = Following {
        state,
        task,
        context,
        events: Some(events),
        asked,
        out: VecDeque::from([opening]),
        text: String::new(),
        done: false,
    };
    Box::pin(stream::unfold(following, |mut f| async move {
        loop {
            if let Some(next) = f.out.pop_front() {
                return Some((Ok(next), f));
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

impl Following {
    fn flush(&mut self) {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.out
                .push_back(say(&self.task, &self.context, TaskState::Working, text));
        }
    }

    fn progress(&mut self, data: Value) {
        let message = agent_message(&self.task, &self.context, vec![Part::data(data)]);
        self.out.push_back(status(
            &self.task,
            &self.context,
            TaskState::Working,
            Some(message),
        ));
    }

    fn end(&mut self, last: StreamResponse) {
        self.flush();
        self.out.push_back(last);
        self.done = true;
        if let Some(live) = lock(&self.state).live.remove(&self.task) {
            live.run.stop();
        }
    }

    fn step(&mut self, event: Option<RunEvent>) {
        match event {
            Some(RunEvent::Agent(AgentEvent::TextDelta { text, .. })) => {
                self.text.push_str(&text);
                if self.text.len() >= TEXT_CHUNK {
                    self.flush();
                }
            }
            Some(RunEvent::Agent(AgentEvent::StepEnd { .. })) => self.flush(),
            Some(RunEvent::Agent(AgentEvent::ToolCall { call, .. })) => {
                self.flush();
                self.progress(json!({"toolCall": {"id": call.id, "name": call.name,
                                                  "arguments": call.input}}));
            }
            Some(RunEvent::Agent(AgentEvent::ToolResult { record, .. })) => {
                let output = crate::clip(record.result.output_text(), RESULT_QUOTE);
                self.progress(json!({"toolResult": {"id": record.call.id,
                    "name": record.call.name, "output": output,
                    "isError": record.result.is_error}}));
            }
            Some(RunEvent::Agent(AgentEvent::Final { run })) => {
                self.finish(&run.outcome, run.text())
            }
            Some(RunEvent::Agent(_)) => {}
            Some(RunEvent::Waiting { call, decide }) => {
                self.flush();
                self.out.push_back(asking(&self.task, &self.context, &call));
                let mut state = lock(&self.state);
                if let (Some(live), Some(events)) =
                    (state.live.get_mut(&self.task), self.events.take())
                {
                    live.paused = Some(Paused {
                        events,
                        decide,
                        call,
                        asked: self.asked.take(),
                    });
                }
                self.done = true;
            }
            Some(RunEvent::Abandoned) => self.end(say(
                &self.task,
                &self.context,
                TaskState::Failed,
                "No decision came in time; the run was stopped.",
            )),
            None => {
                // Canceled: the cancel said so; nothing more to say.
                let canceled = !lock(&self.state).live.contains_key(&self.task);
                if canceled {
                    self.flush();
                    self.done = true;
                } else {
                    self.end(say(
                        &self.task,
                        &self.context,
                        TaskState::Failed,
                        "The run stopped before it answered.",
                    ));
                }
            }
        }
    }

    fn finish(&mut self, outcome: &Outcome, text: String) {
        let Outcome::Final(answer) = outcome else {
            self.end(say(&self.task, &self.context, TaskState::Failed, text));
            return;
        };
        if let Some((owner, asked)) = self.asked.take() {
            lock(&self.state)
                .conversations
                .remember(&owner, &self.context, asked, answer.clone());
        }
        // Structured output (a JSON object or list) as data, else text.
        let part = match serde_json::from_str::<Value>(answer) {
            Ok(value @ (Value::Object(_) | Value::Array(_))) => {
                Part::data(value).with_media_type("application/json")
            }
            _ => Part::text(answer.clone()),
        };
        self.flush();
        self.out
            .push_back(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: self.task.clone(),
                context_id: self.context.clone(),
                artifact: Artifact {
                    artifact_id: "answer".to_owned(),
                    name: Some("answer".to_owned()),
                    description: Some("The agent's answer.".to_owned()),
                    parts: vec![part],
                    metadata: None,
                    extensions: None,
                },
                append: Some(false),
                last_chunk: Some(true),
                metadata: None,
            }));
        self.end(say(
            &self.task,
            &self.context,
            TaskState::Completed,
            answer.clone(),
        ));
    }
}
