//! # agentry-agui
//!
//! [AG-UI](https://docs.ag-ui.com) for agentry: `POST /agui` takes AG-UI's
//! `RunAgentInput` and streams the agent's run as AG-UI events over SSE:
//! `RUN_STARTED`, `TEXT_MESSAGE_START/CONTENT/END` as the model writes,
//! `TOOL_CALL_START/ARGS/END` and `TOOL_CALL_RESULT` for each call, a
//! `STATE_SNAPSHOT` of the run's steps and tokens, and `RUN_FINISHED` with
//! the answer (or `RUN_ERROR`). A destructive call ends the run with an
//! interrupt (`RUN_FINISHED`, outcome `interrupt`, reason `tool_call`); the
//! frontend resumes the thread with `{approved: bool, reason?}` and the
//! paused run goes on from the call.
//!
//! ```
//! use agentry_agent::Agent;
//! use agentry_agui::AguiServer;
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//!
//! let model = ScriptedModel::new().reply(Step::Final { text: "Hi!".into(), tokens: Usage::new(3, 1) });
//! let agent = Agent::builder(model).build().unwrap();
//! let app: axum::Router = AguiServer::new(agent).router(); // POST /agui
//! # let _ = app;
//! ```

#![warn(missing_docs)]

mod convert;
mod stream;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ag_ui::{ResumeStatus, RunAgentInput, SSE_MEDIA_TYPE, SseFormatter};
use agentry_agent::{Agent, Approval, ApprovalEvent, ApprovalRun, RunHandle};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// Where the endpoint is mounted.
pub const AGUI_PATH: &str = "/agui";

/// The header a keyed front end sets to the caller's id; without it every
/// caller is `local`.
pub const PRINCIPAL_HEADER: &str = "x-agentry-principal";

/// How long a destructive call waits for the frontend unless told otherwise.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(600);

/// Runs one caller may leave waiting at once unless told otherwise.
pub const DEFAULT_MAX_WAITING_PER_CALLER: usize = 8;

/// Runs one caller may have streaming at once unless told otherwise.
pub const DEFAULT_MAX_RUNNING_PER_CALLER: usize = 8;

/// A run waiting for the frontend's answer to its interrupt.
pub(crate) struct Paused {
    events: mpsc::UnboundedReceiver<ApprovalEvent>,
    decide: oneshot::Sender<Approval>,
    interrupt: String,
    announced: HashSet<String>,
    run: RunHandle,
}

/// The runs of each (caller, thread): the one going on now, or waiting.
#[derive(Default)]
pub(crate) struct Threads {
    paused: HashMap<(String, String), Paused>,
    /// Threads a run is streaming on now.
    running: HashSet<(String, String)>,
}

/// An agent served over AG-UI.
#[derive(Clone)]
pub struct AguiServer {
    agent: Arc<Agent>,
    threads: Arc<Mutex<Threads>>,
    approval_wait: Duration,
    max_waiting_per_caller: usize,
    max_running_per_caller: usize,
}

impl AguiServer {
    /// Serve `agent`.
    pub fn new(agent: Agent) -> Self {
        Self {
            agent: Arc::new(agent),
            threads: Arc::default(),
            approval_wait: DEFAULT_APPROVAL_WAIT,
            max_waiting_per_caller: DEFAULT_MAX_WAITING_PER_CALLER,
            max_running_per_caller: DEFAULT_MAX_RUNNING_PER_CALLER,
        }
    }

    /// Runs one caller may have streaming at once; one more is refused.
    pub fn max_running_per_caller(mut self, runs: usize) -> Self {
        self.max_running_per_caller = runs.max(1);
        self
    }

    /// How long a destructive call waits for the frontend before the run
    /// is stopped.
    pub fn approval_wait(mut self, wait: Duration) -> Self {
        self.approval_wait = wait;
        self
    }

    /// Runs one caller may leave waiting on interrupts at once.
    pub fn max_waiting_per_caller(mut self, runs: usize) -> Self {
        self.max_waiting_per_caller = runs.max(1);
        self
    }

    /// `POST /agui`. Mount it behind your key check; that check must set
    /// [`PRINCIPAL_HEADER`] to the caller's id, or every caller is one.
    pub fn router(self) -> Router {
        Router::new().route(AGUI_PATH, post(run)).with_state(self)
    }
}

fn owner_of(headers: &HeaderMap) -> String {
    headers
        .get(PRINCIPAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("local")
        .to_owned()
}

/// The decision a resume carries for `interrupt`, or why it carries none.
fn decision(input: &RunAgentInput, interrupt: &str) -> Result<Approval, String> {
    let entries = input.resume.as_deref().unwrap_or_default();
    let Some(entry) = entries.iter().find(|e| e.interrupt_id == interrupt) else {
        return Err(format!(
            "the resume does not answer the interrupt {interrupt}"
        ));
    };
    if let Some(other) = entries.iter().find(|e| e.interrupt_id != interrupt) {
        return Err(format!("no interrupt {} is open here", other.interrupt_id));
    }
    if entries.len() > 1 {
        return Err(format!(
            "the interrupt {interrupt} is answered more than once"
        ));
    }
    match entry.status {
        ResumeStatus::Cancelled => Ok(Approval::Deny("the user cancelled the call".into())),
        _ => {
            let payload = entry.payload.as_ref();
            match payload
                .and_then(|p| p.get("approved"))
                .and_then(Value::as_bool)
            {
                Some(true) => Ok(Approval::Approve),
                Some(false) => {
                    let reason = payload
                        .and_then(|p| p.get("reason"))
                        .and_then(Value::as_str)
                        .filter(|r| !r.trim().is_empty())
                        .unwrap_or("denied by the user");
                    Ok(Approval::Deny(reason.to_owned()))
                }
                None => Err("the resume's payload needs {\"approved\": true|false}".to_owned()),
            }
        }
    }
}

/// A run to follow: its events, its handle, and the calls the frontend
/// has seen announced (a resumed run's carry over).
type Admitted = (
    mpsc::UnboundedReceiver<ApprovalEvent>,
    RunHandle,
    HashSet<String>,
);

/// What a request on `key`'s thread gets: a run to follow (a waiting one
/// resumed, or a new one), or why not and its `RUN_ERROR` code.
fn admit(
    server: &AguiServer,
    threads: &mut Threads,
    key: &(String, String),
    input: &RunAgentInput,
) -> Result<Admitted, (String, &'static str)> {
    let owner = &key.0;
    if threads.running.contains(key) {
        return Err((
            "a run is going on on this thread; wait for its end".into(),
            "run_in_progress",
        ));
    }
    let running = threads.running.iter().filter(|(o, _)| o == owner).count();
    if running >= server.max_running_per_caller {
        return Err((
            format!(
                "{running} of your runs are going on; at most {} at once",
                server.max_running_per_caller
            ),
            "too_many_running",
        ));
    }
    match (input.is_resume(), threads.paused.remove(key)) {
        (true, None) => Err((
            "no run waits on this thread (it was answered, or waited too long)".into(),
            "no_interrupt",
        )),
        (true, Some(paused)) => match decision(input, &paused.interrupt) {
            Err(why) => {
                threads.paused.insert(key.clone(), paused);
                Err((why, "bad_resume"))
            }
            Ok(approval) => {
                let _ = paused.decide.send(approval);
                Ok((paused.events, paused.run, paused.announced))
            }
        },
        (false, Some(paused)) => {
            let why = format!(
                "a run on this thread waits: resume it with an answer to {}",
                paused.interrupt
            );
            threads.paused.insert(key.clone(), paused);
            Err((why, "interrupt_open"))
        }
        (false, None) => {
            let waiting = threads.paused.keys().filter(|(o, _)| o == owner).count();
            if waiting >= server.max_waiting_per_caller {
                return Err((
                    format!("{waiting} of your runs wait on interrupts; answer them first"),
                    "too_many_waiting",
                ));
            }
            let messages = convert::conversation(input).map_err(|why| (why, "bad_input"))?;
            let started = ApprovalRun::start(&server.agent, messages, server.approval_wait)
                .map_err(|e| (e.to_string(), "agent"))?;
            Ok((started.events, started.handle, HashSet::new()))
        }
    }
}

async fn run(
    State(server): State<AguiServer>,
    headers: HeaderMap,
    axum::Json(input): axum::Json<RunAgentInput>,
) -> Response {
    let thread = input.thread_id.as_str().to_owned();
    let run_id = input.run_id.as_str().to_owned();
    let key = (owner_of(&headers), thread.clone());
    let events = {
        let mut threads = server.threads.lock().unwrap_or_else(|p| p.into_inner());
        // Runs that waited too long (or were stopped) go.
        threads
            .paused
            .retain(|_, paused| !paused.run.stop_if_over());
        match admit(&server, &mut threads, &key, &input) {
            Err((why, code)) => stream::refused(&thread, &run_id, why, code),
            Ok((events, run, announced)) => {
                threads.running.insert(key.clone());
                stream::events(stream::Following {
                    threads: server.threads.clone(),
                    key,
                    thread_id: thread,
                    run_id,
                    events: Some(events),
                    stop: run,
                    announced,
                    out: Default::default(),
                    open: None,
                    done: false,
                })
            }
        }
    };
    let formatter = SseFormatter::new();
    let body = events.map(move |event| {
        let frame = formatter.encode_to_string(&event).unwrap_or_else(|e| {
            // Built as JSON, so the error's own words cannot break the frame.
            let error = serde_json::json!({"type": "RUN_ERROR", "message": e.to_string()});
            format!("data: {error}\n\n")
        });
        Ok::<_, std::convert::Infallible>(frame)
    });
    (
        [
            (header::CONTENT_TYPE, SSE_MEDIA_TYPE),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}
