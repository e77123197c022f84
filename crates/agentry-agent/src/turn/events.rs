//! What a chat turn reports as it goes: its lifecycle steps, in their
//! order, and the `reply:start` / `reply:delta` / `reply:end` stream, with
//! `tool:call` and `tool:result` between when an agent replies with tools.

use std::sync::Arc;

use serde::Serialize;

use crate::durable::WaitingCall;
use agentry_core::tool::{ToolCall, ToolResult};

/// One event of a turn.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnEvent {
    /// Step 1: the system prompt, built from memory as it stood before this turn.
    SystemBuilt {
        /// The prompt.
        system: String,
    },
    /// Step 2: the user turn was stored (`ok: false` if the store failed).
    UserPersisted {
        /// Whether the write succeeded.
        ok: bool,
    },
    /// Step 3: the request context was bound for tools.
    ToolContextBound,
    /// Step 4 begins: `reply:start`.
    #[serde(rename = "reply:start")]
    ReplyStart {
        /// From the payload (default: the session's id).
        session_id: String,
        /// From the payload (default: empty).
        message_id: String,
        /// The stream's label.
        stream: String,
    },
    /// `reply:delta`: a piece of the reply.
    #[serde(rename = "reply:delta")]
    ReplyDelta {
        /// From the payload.
        session_id: String,
        /// From the payload.
        message_id: String,
        /// The piece.
        text: String,
    },
    /// `tool:call`: the agent replying asked for a tool call (before the
    /// gate decides whether it runs).
    #[serde(rename = "tool:call")]
    ToolCall {
        /// From the payload.
        session_id: String,
        /// From the payload.
        message_id: String,
        /// The call as the model made it.
        call: ToolCall,
    },
    /// `tool:result`: a tool call finished or was refused; what the model reads.
    #[serde(rename = "tool:result")]
    ToolResult {
        /// From the payload.
        session_id: String,
        /// From the payload.
        message_id: String,
        /// The tool called.
        name: String,
        /// The result (its `id` is the call's).
        result: ToolResult,
    },
    /// `run:waiting`: a durable turn's agent stopped for a person's decision on these
    /// calls ([`TurnConfig::durable_runs`]): decide with
    /// [`durable::decide`](crate::durable::decide) on run `run`, then
    /// resume it. Sent before `reply:end`.
    ///
    /// [`TurnConfig::durable_runs`]: super::TurnConfig::durable_runs
    #[serde(rename = "run:waiting")]
    AwaitingDecision {
        /// The session.
        session_id: String,
        /// The reply's message id.
        message_id: String,
        /// The durable run's id in the journal.
        run: String,
        /// The calls that wait, and why.
        calls: Vec<WaitingCall>,
    },
    /// `reply:end`: the whole reply.
    #[serde(rename = "reply:end")]
    ReplyEnd {
        /// From the payload.
        session_id: String,
        /// From the payload.
        message_id: String,
        /// The full text.
        text: String,
    },
    /// Step 5: the assistant turn was stored, or skipped (empty reply or opted out).
    AssistantPersisted {
        /// Whether the write succeeded (false when skipped).
        ok: bool,
        /// Whether it was skipped.
        skipped: bool,
    },
}

impl TurnEvent {
    /// The event's name: `system_built`, `reply:start`, ...
    pub fn name(&self) -> &'static str {
        match self {
            TurnEvent::SystemBuilt { .. } => "system_built",
            TurnEvent::UserPersisted { .. } => "user_persisted",
            TurnEvent::ToolContextBound => "tool_context_bound",
            TurnEvent::ReplyStart { .. } => "reply:start",
            TurnEvent::ReplyDelta { .. } => "reply:delta",
            TurnEvent::ToolCall { .. } => "tool:call",
            TurnEvent::ToolResult { .. } => "tool:result",
            TurnEvent::AwaitingDecision { .. } => "run:waiting",
            TurnEvent::ReplyEnd { .. } => "reply:end",
            TurnEvent::AssistantPersisted { .. } => "assistant_persisted",
        }
    }
}

type Listener = dyn Fn(&TurnEvent) + Send + Sync;

/// Where a turn's events go.
#[derive(Clone)]
pub struct TurnEvents(Option<Arc<Listener>>);

impl TurnEvents {
    /// Events go to `listener`.
    pub fn new(listener: impl Fn(&TurnEvent) + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(listener)))
    }

    /// Events go nowhere.
    pub fn none() -> Self {
        Self(None)
    }

    /// Deliver one event.
    pub fn emit(&self, event: TurnEvent) {
        if let Some(listener) = &self.0 {
            listener(&event);
        }
    }
}

impl std::fmt::Debug for TurnEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "TurnEvents(listener)"
        } else {
            "TurnEvents(none)"
        })
    }
}
