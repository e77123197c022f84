//! Runs handed to a [`TurnRunner`] ([`AgentServer::remote_runs`]) over the
//! same routes as durable runs: `GET /v1/runs/{id}` reads the run where the
//! runner keeps it, and `POST /v1/runs/{id}/approvals` decides there, then
//! follows the run on (to its end, or its next wait) and stores its answer
//! in the session's memory, as a durable run's approval does. The run goes
//! on in the runner's workers whether or not anyone follows it.
//!
//! [`AgentServer::remote_runs`]: crate::AgentServer::remote_runs

use std::sync::Arc;
use std::time::Duration;

use agentry_agent::durable::Decision;
use agentry_agent::turn::{RemoteRunError, TurnRunner};
use agentry_agent::{AgentEvent, Outcome, RunOutcome};
use futures_util::StreamExt;

use crate::App;
use crate::error::ApiError;
use crate::runs::{RunResponse, WaitingCallBody, step_body, store_answer};

/// How long a decided call may still show as waiting (the runner records
/// the decision a moment later) before the run is shown as it stands.
const DECISION_SEEN_WITHIN: Duration = Duration::from_secs(10);

/// The run as the API shows it, read where the runner keeps it.
pub(crate) async fn view(
    runner: &Arc<dyn TurnRunner>,
    id: &str,
    run_id: &str,
) -> Result<RunResponse, ApiError> {
    let run = runner
        .outcome(run_id.to_owned())
        .await
        .map_err(|error| remote_error(id, run_id, error))?;
    Ok(response(id, &run))
}

/// Decide on call `call_id`, follow the run on, and store its answer in
/// `session`'s memory once it has one. The following runs on a task of its
/// own holding `permit`: a client that hangs up stops neither the run nor
/// the storing of its answer.
pub(crate) async fn decide(
    app: &App,
    runner: &Arc<dyn TurnRunner>,
    (id, run_id, session): (&str, &str, &str),
    call_id: &str,
    decision: Decision,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<RunResponse, ApiError> {
    runner
        .decide(run_id.to_owned(), call_id.to_owned(), decision)
        .await
        .map_err(|error| remote_error(id, run_id, error))?;
    let (task_app, task_runner) = (app.clone(), runner.clone());
    let (task_run, session, call_id) = (run_id.to_owned(), session.to_owned(), call_id.to_owned());
    let followed = tokio::spawn(async move {
        let (app, runner, run_id) = (task_app, task_runner, task_run);
        let run = follow_past(&runner, &run_id, &call_id).await;
        if let Some(RunOutcome {
            outcome: Outcome::Final(text),
            ..
        }) = &run
            && !text.is_empty()
        {
            store_answer(&app, &session, &run_id, text).await;
        }
        drop(permit);
        run
    })
    .await
    .map_err(|error| {
        tracing::error!(%error, "a decided run's task failed");
        ApiError::internal("following the run failed; GET /v1/runs/{id} shows it")
    })?;
    match followed {
        Some(run) => {
            let mut view = response(id, &run);
            if let Outcome::ModelError(error) = &run.outcome {
                view.error = Some(format!("the model failed: {error}"));
            }
            Ok(view)
        }
        None => view(runner, id, run_id).await,
    }
}

/// The run followed on until it ends, or waits for calls other than
/// `call_id` (which a moment ago still waited); `None` if the runner's
/// stream ended without a final event.
async fn follow_past(
    runner: &Arc<dyn TurnRunner>,
    run_id: &str,
    call_id: &str,
) -> Option<RunOutcome> {
    let deadline = tokio::time::Instant::now() + DECISION_SEEN_WITHIN;
    loop {
        let mut events = runner.follow(run_id.to_owned());
        let mut last = None;
        while let Some(event) = events.next().await {
            if let AgentEvent::Final { run } = event {
                last = Some(*run);
            }
        }
        let still_waiting = matches!(
            &last,
            Some(RunOutcome { outcome: Outcome::AwaitingDecision(calls), .. })
                if calls.iter().any(|w| w.call.id == call_id)
        );
        if !still_waiting || tokio::time::Instant::now() > deadline {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `run` as the API shows it: one still under way reads `incomplete`.
fn response(id: &str, run: &RunOutcome) -> RunResponse {
    let (status, outcome, answer, waiting) = match &run.outcome {
        Outcome::AwaitingDecision(calls) if !calls.is_empty() => {
            ("waiting", None, None, WaitingCallBody::list(calls))
        }
        Outcome::AwaitingDecision(_) => ("incomplete", None, None, Vec::new()),
        Outcome::Final(text) => (
            "ended",
            Some("final".to_owned()),
            Some(text.clone()),
            Vec::new(),
        ),
        other => ("ended", Some(other.kind().to_owned()), None, Vec::new()),
    };
    RunResponse {
        id: id.to_owned(),
        status: status.to_owned(),
        outcome,
        answer,
        waiting,
        steps: run.steps.iter().map(step_body).collect(),
        error: None,
    }
}

/// What a runner's error means for run `id` (the client's id). The
/// runner's own id of the run (with the key's prefix) is never shown, nor
/// is the runner's address.
fn remote_error(id: &str, run_id: &str, error: RemoteRunError) -> ApiError {
    match error {
        RemoteRunError::NotFound(_) => ApiError::not_found(format!("no run {id:?}")),
        RemoteRunError::Refused(message) => ApiError::conflict(message.replace(run_id, id)),
        RemoteRunError::Unavailable(message) => {
            tracing::warn!(run = %id, error = %message, "the runs' server failed");
            ApiError::internal(format!(
                "the server that keeps run {id:?} did not answer; try again"
            ))
        }
        RemoteRunError::Unsupported(_) => {
            ApiError::not_found("this server's runs cannot be read or decided here")
        }
    }
}
