//! Durable runs over HTTP ([`AgentServer::durable_runs`]): a chat turn whose
//! agent reaches a destructive call stops with a `run:waiting` event;
//! `GET /v1/runs/{id}` shows the run, `POST /v1/runs/{id}/approvals`
//! records a person's decision and, once no call waits, resumes the run
//! (in whichever server process gets the request: the journal is shared)
//! and stores its reply in the session's memory, and `POST
//! /v1/runs/{id}/resume` goes on with a run whose process stopped. A run
//! being carried out holds a lease in the journal: resuming or deciding on
//! it elsewhere is a 409 that names the holder (a process label, never a
//! key) and until when, and once a dead holder's lease expires it may be
//! taken over.
//!
//! A run's id is `{session}~{message_id}`: the session it belongs to (the
//! client's id) and the reply's message id. Runs belong to the API key
//! whose session they are in: another key gets 404.
//!
//! [`AgentServer::durable_runs`]: crate::AgentServer::durable_runs

use std::sync::Arc;

use agentry_agent::durable::{self, DecideError, Decision, JournalError, RunStatus, Waiting};
use agentry_agent::{Outcome, StepRecord};
use agentry_core::memory::Remember;
use agentry_core::tool::{Identity, Session, ToolContext};
use axum::Json;
use axum::extract::{Extension, Path, State};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::App;
use crate::auth::Principal;
use crate::checked::Checked;
use crate::error::{ApiError, ErrorBody};
use crate::remote_runs;
use crate::sessions::{ToolCallRecord, owned_session};

/// A call that waits for a person.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WaitingCallBody {
    /// The call's id: what an approval names.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The input the model gave it.
    #[schema(value_type = Object)]
    pub input: Value,
    /// Why it waits: `approval` (the tool is destructive) or `interrupted`
    /// (it was started and never finished, and may have had its effect).
    pub reason: String,
}

impl WaitingCallBody {
    pub(crate) fn list(calls: &[durable::WaitingCall]) -> Vec<Self> {
        calls
            .iter()
            .map(|waiting| WaitingCallBody {
                call_id: waiting.call.id.clone(),
                tool: waiting.call.name.clone(),
                input: waiting.call.input.clone(),
                reason: match waiting.waiting {
                    Waiting::Approval => "approval",
                    Waiting::Interrupted => "interrupted",
                }
                .to_owned(),
            })
            .collect()
    }
}

/// One finished step of a run.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunStep {
    /// 1-based step number.
    pub index: usize,
    /// The model's text in that step (the answer, in the last).
    pub text: String,
    /// Its tool calls and their results.
    pub calls: Vec<ToolCallRecord>,
}

/// A durable run.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunResponse {
    /// `{session}~{message_id}`.
    pub id: String,
    /// `waiting` (for the decisions in `waiting`), `ended`, or
    /// `incomplete` (running, or its process stopped: an approval resumes it).
    pub status: String,
    /// How it ended: `final`, `out_of_steps` or `over_budget`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The answer, once it ended with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The calls that wait for a decision.
    pub waiting: Vec<WaitingCallBody>,
    /// Its finished steps.
    pub steps: Vec<RunStep>,
    /// Why the run did not go on when this request resumed it (the model
    /// failed, say); resuming it again tries again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a person decided about a waiting call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run it.
    Approve,
    /// Do not run it; `reason` goes back to the model.
    Deny,
    /// Run it with `input` instead of the model's.
    Edit,
}

/// A person's decision on one waiting call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// The waiting call's id.
    pub call_id: String,
    /// Approve, deny or edit.
    pub decision: DecisionKind,
    /// Why (required to deny): the model gets it as the call's result.
    #[serde(default)]
    pub reason: Option<String>,
    /// The input to run with (required to edit).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub input: Option<Map<String, Value>>,
    /// Apply the same decision to this tool's later calls in the run.
    #[serde(default)]
    pub remember: Option<bool>,
}

/// The journal's id of run `id` for `principal`, and its session's memory
/// id; 400 for an id that is not `{session}~{message_id}`.
fn owned_run(principal: &Principal, id: &str) -> Result<(String, String), ApiError> {
    let bad = || {
        ApiError::bad_request(format!(
            "invalid run id {id:?}: expected SESSION~MESSAGE_ID, each 1 to 128 of A-Z a-z 0-9 - _ . :"
        ))
    };
    let (session, message) = id.split_once('~').ok_or_else(bad)?;
    let session = owned_session(principal, session).map_err(|_| bad())?;
    owned_session(principal, message).map_err(|_| bad())?;
    Ok((format!("{session}~{message}"), session))
}

fn journal(app: &App) -> Result<&Arc<dyn durable::RunJournal>, ApiError> {
    app.runs
        .as_ref()
        .ok_or_else(|| ApiError::not_found("this server keeps no durable runs"))
}

/// What a journal error means for run `id` (the client's id). The journal's
/// own id of the run (with the key's prefix) is never shown.
fn journal_error(id: &str, journal_id: &str, error: JournalError) -> ApiError {
    match error {
        JournalError::NotFound(_) => ApiError::not_found(format!("no run {id:?}")),
        JournalError::Exists(_) => ApiError::conflict(format!("a run {id:?} exists already")),
        JournalError::Conflict { .. } => ApiError::conflict(format!(
            "run {id:?} was written by another process at the same time; it is being run elsewhere"
        )),
        JournalError::Leased {
            owner, until_ms, ..
        } => {
            let left_ms = until_ms.saturating_sub(agentry_core::journal::now_ms());
            ApiError {
                retry_after_secs: Some(left_ms.div_ceil(1000).max(1)),
                ..ApiError::conflict(format!(
                    "run {id:?} is being run by {owner} (its lease lasts until {}, unix time {}, \
                     and is renewed while it runs); try again once it stops",
                    rfc3339(until_ms),
                    until_ms / 1000
                ))
            }
        }
        JournalError::Fenced { .. } => ApiError::conflict(format!(
            "run {id:?} was taken over by another process while this request ran it; \
             this request wrote nothing more"
        )),
        JournalError::Tampered { seq, why, .. } => ApiError::internal(format!(
            "run {id:?} fails its integrity check at entry {seq}: {why}; it is not replayed"
        )),
        JournalError::Store(message) => ApiError::internal(message.replace(journal_id, id)),
    }
}

/// `ms` since the Unix epoch as an RFC 3339 time in UTC, to the millisecond.
fn rfc3339(ms: u64) -> String {
    let (days, in_day) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

/// The run as the API shows it.
async fn view(app: &App, id: &str, journal_id: &str) -> Result<RunResponse, ApiError> {
    let record = durable::record(journal(app)?.as_ref(), journal_id)
        .await
        .map_err(|error| journal_error(id, journal_id, error))?;
    let steps = record.steps.iter().map(step_body).collect();
    let (status, outcome, answer, waiting) = match &record.status {
        RunStatus::Ended { outcome, detail } => (
            "ended",
            Some(outcome.clone()),
            (outcome == "final").then(|| detail.clone()),
            Vec::new(),
        ),
        RunStatus::Waiting(calls) => ("waiting", None, None, WaitingCallBody::list(calls)),
        RunStatus::Incomplete => ("incomplete", None, None, Vec::new()),
    };
    Ok(RunResponse {
        id: id.to_owned(),
        status: status.to_owned(),
        outcome,
        answer,
        waiting,
        steps,
        error: None,
    })
}

pub(crate) fn step_body(step: &StepRecord) -> RunStep {
    RunStep {
        index: step.index,
        text: step.text.clone(),
        calls: step
            .calls
            .iter()
            .map(|record| ToolCallRecord {
                call: record.call.clone(),
                result: Some(record.result.clone()),
            })
            .collect(),
    }
}

/// Show a durable run.
#[utoipa::path(
    get,
    path = "/v1/runs/{id}",
    params(("id" = String, Path, description = "The run: SESSION~MESSAGE_ID", pattern = "^[A-Za-z0-9_.:-]{1,128}~[A-Za-z0-9_.:-]{1,128}$")),
    responses(
        (status = 200, description = "The run", body = RunResponse),
        (status = 400, description = "Invalid run id", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such run for this key, or the server keeps no durable runs", body = ErrorBody),
        (status = 429, description = "Too many requests running for this key, or over its rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn get_run(
    State(app): State<App>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<RunResponse>, ApiError> {
    let (journal_id, _) = owned_run(&principal, &id)?;
    if let Some(runner) = &app.remote {
        return Ok(Json(remote_runs::view(runner, &id, &journal_id).await?));
    }
    Ok(Json(view(&app, &id, &journal_id).await?))
}

/// Decide on a waiting call of a durable run; once no call waits, the run
/// goes on (in this request) and its answer is stored in the session.
#[utoipa::path(
    post,
    path = "/v1/runs/{id}/approvals",
    params(("id" = String, Path, description = "The run: SESSION~MESSAGE_ID", pattern = "^[A-Za-z0-9_.:-]{1,128}~[A-Za-z0-9_.:-]{1,128}$")),
    request_body = ApprovalRequest,
    responses(
        (status = 200, description = "The run after the decision: resumed to its end, or still waiting for other calls", body = RunResponse),
        (status = 400, description = "Invalid run id, or a deny without a reason or an edit without an input", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such run for this key, or the server keeps no durable runs", body = ErrorBody),
        (status = 409, description = "The call is not waiting for a decision, or another process is running the run (its lease is held: the message names the holder and until when; `Retry-After` says when it ends unless renewed)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "JSON of the wrong shape", body = ErrorBody),
        (status = 429, description = "Too many requests running for this key, or over its rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn post_approval(
    State(app): State<App>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    body: Result<Checked<ApprovalRequest>, ApiError>,
) -> Result<Json<RunResponse>, ApiError> {
    let (journal_id, session) = owned_run(&principal, &id)?;
    let Checked(request) = body?;
    let decision = match (request.decision, request.reason, request.input) {
        (DecisionKind::Approve, _, _) => Decision::Approve,
        (DecisionKind::Deny, Some(reason), _) if !reason.trim().is_empty() => {
            Decision::Deny { reason }
        }
        (DecisionKind::Deny, ..) => {
            return Err(ApiError::bad_request("a denial needs a `reason`"));
        }
        (DecisionKind::Edit, _, Some(input)) => Decision::Edit {
            input: Value::Object(input),
        },
        (DecisionKind::Edit, ..) => {
            return Err(ApiError::bad_request("an edit needs an `input`"));
        }
    };
    let permit = app.limits.acquire(&principal)?;
    if let Some(runner) = &app.remote {
        if request.remember == Some(true) {
            return Err(ApiError::bad_request(
                "`remember` is not kept for runs carried out elsewhere: decide on each call",
            ));
        }
        let run = (id.as_str(), journal_id.as_str(), session.as_str());
        let view =
            remote_runs::decide(&app, runner, run, &request.call_id, decision, permit).await?;
        return Ok(Json(view));
    }
    let journal = journal(&app)?.clone();
    let remember = request.remember.unwrap_or(false);
    durable::decide(
        journal.as_ref(),
        &journal_id,
        &request.call_id,
        decision,
        remember,
    )
    .await
    .map_err(|error| match error {
        DecideError::Journal(error) => journal_error(&id, &journal_id, error),
        DecideError::NotWaiting { .. } => ApiError::conflict(format!(
            "call {:?} of run {id:?} is not waiting for a decision",
            request.call_id
        )),
    })?;
    let still_waiting = matches!(
        durable::status(journal.as_ref(), &journal_id).await,
        Ok(RunStatus::Waiting(_))
    );
    let error = if still_waiting {
        drop(permit);
        None
    } else {
        resume_detached(
            &app,
            &principal,
            &journal,
            &id,
            &journal_id,
            &session,
            permit,
        )
        .await?
    };
    let mut view = view(&app, &id, &journal_id).await?;
    view.error = error;
    Ok(Json(view))
}

/// Go on with a run that is neither waiting nor ended: its process stopped
/// (a client that left, a crash, a model that failed). A call that was
/// started and not finished then waits for a decision unless its tool is
/// idempotent. A run still being carried out (its lease held) is a 409.
#[utoipa::path(
    post,
    path = "/v1/runs/{id}/resume",
    params(("id" = String, Path, description = "The run: SESSION~MESSAGE_ID", pattern = "^[A-Za-z0-9_.:-]{1,128}~[A-Za-z0-9_.:-]{1,128}$")),
    responses(
        (status = 200, description = "The run after going on: ended, or waiting for decisions (an ended run is shown as it is)", body = RunResponse),
        (status = 400, description = "Invalid run id", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such run for this key, or the server keeps no durable runs", body = ErrorBody),
        (status = 409, description = "Calls wait for decisions, or another process is running the run (its lease is held: the message names the holder and until when; `Retry-After` says when it ends unless renewed)", body = ErrorBody),
        (status = 429, description = "Too many requests running for this key, or over its rate", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
pub(crate) async fn post_resume(
    State(app): State<App>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<RunResponse>, ApiError> {
    let (journal_id, session) = owned_run(&principal, &id)?;
    if let Some(runner) = &app.remote {
        // Its runner's workers carry it on by themselves: shown as it is.
        return Ok(Json(remote_runs::view(runner, &id, &journal_id).await?));
    }
    let journal = journal(&app)?.clone();
    let status = durable::status(journal.as_ref(), &journal_id)
        .await
        .map_err(|error| journal_error(&id, &journal_id, error))?;
    let error = match status {
        RunStatus::Ended { .. } => None,
        RunStatus::Waiting(_) => {
            return Err(ApiError::conflict(format!(
                "run {id:?} waits for decisions: POST /v1/runs/{id}/approvals"
            )));
        }
        RunStatus::Incomplete => {
            let permit = app.limits.acquire(&principal)?;
            resume_detached(
                &app,
                &principal,
                &journal,
                &id,
                &journal_id,
                &session,
                permit,
            )
            .await?
        }
    };
    let mut view = view(&app, &id, &journal_id).await?;
    view.error = error;
    Ok(Json(view))
}

/// [`resume`] on a task of its own (as a turn is), holding `permit` until it
/// ends: a client that hangs up drops this request's future, and with it
/// the wait, never the run. Dropping the run mid-call would release its
/// lease and leave a call that did run with no end in the journal, shown
/// `interrupted`, so that approving it would run it twice.
async fn resume_detached(
    app: &App,
    principal: &Principal,
    journal: &Arc<dyn durable::RunJournal>,
    id: &str,
    journal_id: &str,
    session: &str,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<Option<String>, ApiError> {
    let (app, principal, journal) = (app.clone(), principal.clone(), journal.clone());
    let (id, journal_id, session) = (id.to_owned(), journal_id.to_owned(), session.to_owned());
    tokio::spawn(async move {
        let resumed = resume(&app, &principal, &journal, &id, &journal_id, &session).await;
        drop(permit);
        resumed
    })
    .await
    .map_err(|error| {
        tracing::error!(%error, "a resumed run's task failed");
        ApiError::internal("the run's task failed; resuming it again goes on")
    })?
}

/// Store run `run_id`'s answer `text` in `session`'s memory, as the
/// assistant's, naming the run (without the key's prefix); a failure is
/// logged.
pub(crate) async fn store_answer(app: &App, session: &str, run_id: &str, text: &str) {
    let client_run = run_id.split_once('/').map_or(run_id, |(_, id)| id);
    let what = Remember {
        role: "assistant".into(),
        source: app.name.clone(),
        metadata: Map::from_iter([
            ("role".to_owned(), json!("assistant")),
            ("run".to_owned(), json!(client_run)),
        ]),
    };
    if let Err(error) = app.turn.memory.remember(session, text, what).await {
        tracing::warn!(%error, session, "could not store a run's answer");
    }
}

/// Go on with a run, as the turn that started it would have (the session
/// and sender for its tools), and store its answer when this call produced
/// one. `Ok(Some(why))` when it could not go on for a reason worth showing
/// (the model failed); another process running it (its lease held) is a
/// 409 naming the holder and until when.
async fn resume(
    app: &App,
    principal: &Principal,
    journal: &Arc<dyn durable::RunJournal>,
    id: &str,
    journal_id: &str,
    session: &str,
) -> Result<Option<String>, ApiError> {
    let context = ToolContext::new()
        .with_session(Session::new(session))
        .with_sender(Identity::new(principal.id.clone()));
    let agent = app
        .agent
        .to_builder()
        .context(app.agent.context().clone().merged_with(&context))
        .build()
        .map_err(|error| ApiError::internal(error.to_string()))?;
    let run = agent
        .durable(journal.clone())
        .resume(journal_id)
        .await
        .map_err(|error| journal_error(id, journal_id, error))?;
    match run.outcome.outcome {
        // Stored once: by the request that carried the run to its answer.
        Outcome::Final(text) if !run.already_ended && !text.is_empty() => {
            store_answer(app, session, journal_id, &text).await;
            Ok(None)
        }
        Outcome::JournalFailed(error) => Err(journal_error(id, journal_id, error)),
        Outcome::ModelError(error) => Ok(Some(format!("the model failed: {error}"))),
        _ => Ok(None),
    }
}
