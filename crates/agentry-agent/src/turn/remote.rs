//! Turns whose agent loop runs somewhere else ([`TurnConfig::remote_runs`]):
//! on a workflow engine's workers, say, so that the processes answering
//! HTTP and the ones running agents scale apart. The turn keeps its own
//! steps (memory, the system prompt, events, storing the reply) and hands
//! the loop to a [`TurnRunner`].
//!
//! [`TurnConfig::remote_runs`]: super::TurnConfig::remote_runs

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::durable::Decision;
use crate::{AgentEvent, RunOutcome};
use agentry_core::model::Message;
use agentry_core::tool::{Identity, Session, ToolContext};

/// A turn's agent loop, as handed to a [`TurnRunner`]: what the loop needs
/// that the runner's agent does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRun {
    /// The run's id: [`turn_run_id`](super::turn_run_id) of the session
    /// and the reply's message id.
    pub id: String,
    /// The turn's system prompt: the agent's own, with what memory recalled
    /// for this turn.
    pub system: String,
    /// The conversation the loop starts with (the user's prompt).
    pub messages: Vec<Message>,
    /// The request context tools get, laid over the agent's own.
    pub context: TurnContext,
}

/// The part of a turn's [`ToolContext`] that can cross to another process:
/// the session, the sender and the extras.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnContext {
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Session>,
    /// Who sent the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<Identity>,
    /// The request's extra keys.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extras: Map<String, Value>,
}

impl TurnContext {
    /// What of `context` crosses.
    pub fn of(context: &ToolContext) -> Self {
        Self {
            session: context.session().cloned(),
            sender: context.sender().cloned(),
            extras: context.extras().clone(),
        }
    }

    /// The context again, as tools get it.
    pub fn to_context(&self) -> ToolContext {
        let mut context = ToolContext::new().with_extras(self.extras.clone());
        if let Some(session) = &self.session {
            context = context.with_session(session.clone());
        }
        if let Some(sender) = &self.sender {
            context = context.with_sender(sender.clone());
        }
        context
    }
}

/// Runs turns' agent loops somewhere else.
pub trait TurnRunner: Send + Sync {
    /// Start `run` and stream its events as far as the runner sees them:
    /// each step's text (as it comes, or once the step ends), its tool calls
    /// and results, and last [`AgentEvent::Final`] with the run's
    /// [`RunOutcome`](crate::RunOutcome). A run that stops for a person's
    /// decision ends the stream with [`Outcome::AwaitingDecision`](crate::Outcome::AwaitingDecision);
    /// the decision is then made where the runner keeps its runs. A failure
    /// to start or follow the run ends it with
    /// [`Outcome::ModelError`](crate::Outcome::ModelError). Dropping the stream
    /// (the turn was stopped) should stop the run.
    fn run(&self, run: TurnRun) -> BoxStream<'static, AgentEvent>;

    /// Run `id` as it stands: ended, waiting for decisions
    /// ([`Outcome::AwaitingDecision`](crate::Outcome::AwaitingDecision) with
    /// its calls), or still under way (`AwaitingDecision` with none).
    fn outcome(&self, id: String) -> BoxFuture<'static, Result<RunOutcome, RemoteRunError>> {
        Box::pin(async move { Err(RemoteRunError::Unsupported(id)) })
    }

    /// A person's decision on call `call_id` of run `id`, which waits for
    /// one; the run then goes on where the runner keeps it.
    fn decide(
        &self,
        id: String,
        call_id: String,
        decision: Decision,
    ) -> BoxFuture<'static, Result<(), RemoteRunError>> {
        let _ = (call_id, decision);
        Box::pin(async move { Err(RemoteRunError::Unsupported(id)) })
    }

    /// Stop run `id` where the runner keeps it (nobody will decide on it).
    fn cancel(&self, id: String) -> BoxFuture<'static, Result<(), RemoteRunError>> {
        Box::pin(async move { Err(RemoteRunError::Unsupported(id)) })
    }

    /// Follow run `id` on, as [`run`](Self::run) streams it, until it ends
    /// or waits again.
    fn follow(&self, id: String) -> BoxStream<'static, AgentEvent> {
        let _ = id;
        Box::pin(futures_util::stream::empty())
    }
}

/// Why a [`TurnRunner`] could not show or decide on a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteRunError {
    /// There is no such run.
    #[error("no run {0:?}")]
    NotFound(String),
    /// The decision was refused: the call does not wait for one.
    #[error("{0}")]
    Refused(String),
    /// The runner could not be reached, or failed.
    #[error("{0}")]
    Unavailable(String),
    /// This runner does not keep its runs where they can be read or decided.
    #[error("run {0:?} cannot be read or decided through this runner")]
    Unsupported(String),
}
