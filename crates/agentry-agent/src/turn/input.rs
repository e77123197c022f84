//! A turn's settings ([`TurnConfig`]) and input ([`TurnInput`]), and the
//! texts derived from an input: what is stored, what the model sees, and the
//! ids every reply event carries.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::events::{TurnEvent, TurnEvents};
use super::remote::TurnRunner;
use crate::Agent;
use crate::durable::RunJournal;
use agentry_core::memory::{Memory, RecallOpts};
use agentry_core::model::ChatModel;
use agentry_core::tool::{Identity, Session};

/// What writes a turn's reply.
#[derive(Clone)]
pub enum Replier {
    /// One streamed model call.
    Model(Arc<dyn ChatModel>),
    /// An agent's full loop: its tools, skills and limits, its model.
    Agent(Box<Agent>),
}

/// A turn's configuration, built once and
/// shared by every turn: the agent's name, the reply stream's label, the
/// base system prompt, what replies, and session memory.
#[derive(Clone)]
pub struct TurnConfig {
    /// The agent's name: the default `source` of stored records.
    pub agent_name: String,
    /// Label of the reply stream (carried by reply events).
    pub stream_label: String,
    /// The base system prompt; memory is appended to it. For an agent it
    /// starts as the agent's own system prompt.
    pub system_base: String,
    /// What writes the reply: a model, or an agent with tools and skills.
    pub replier: Replier,
    /// Session memory (store and embedder).
    pub memory: Memory,
    /// With an agent: run each turn's loop durably in this journal, so a
    /// destructive call waits for a person ([`TurnEvent::AwaitingDecision`])
    /// instead of being refused, and the run can be resumed from any process.
    pub runs: Option<Arc<dyn RunJournal>>,
    /// With an agent: hand each turn's loop to this runner (another
    /// process's workers) instead of running it here. It takes precedence
    /// over [`runs`](Self::runs).
    pub remote: Option<Arc<dyn TurnRunner>>,
    /// Where lifecycle and reply events go.
    pub events: TurnEvents,
}

impl TurnConfig {
    /// Turns answered by one streamed call of `model`, with an empty system
    /// base and no event listener.
    pub fn new(
        agent_name: impl Into<String>,
        model: impl ChatModel + 'static,
        memory: Memory,
    ) -> Self {
        Self::with_replier(
            agent_name.into(),
            String::new(),
            Replier::Model(Arc::new(model)),
            memory,
        )
    }

    /// Turns answered by `agent`'s full loop (its model, tools, skills and
    /// limits). The system base is the agent's own system prompt, so each
    /// turn's prompt is that prompt with the memory block added; the turn's
    /// request context is laid over the agent's, the turn's keys winning.
    pub fn for_agent(agent_name: impl Into<String>, agent: Agent, memory: Memory) -> Self {
        let system = agent.system().unwrap_or_default().to_owned();
        Self::with_replier(
            agent_name.into(),
            system,
            Replier::Agent(Box::new(agent)),
            memory,
        )
    }

    fn with_replier(
        agent_name: String,
        system_base: String,
        replier: Replier,
        memory: Memory,
    ) -> Self {
        Self {
            stream_label: agent_name.clone(),
            agent_name,
            system_base,
            replier,
            memory,
            runs: None,
            remote: None,
            events: TurnEvents::none(),
        }
    }

    /// Run each turn's agent loop durably in `journal` (see
    /// [`runs`](Self::runs)); the run's id is [`turn_run_id`].
    ///
    /// [`turn_run_id`]: super::turn_run_id
    pub fn durable_runs(mut self, journal: impl RunJournal + 'static) -> Self {
        self.runs = Some(Arc::new(journal));
        self
    }

    /// Hand each turn's agent loop to `runner` (see [`remote`](Self::remote));
    /// the run's id is [`turn_run_id`](super::turn_run_id).
    pub fn remote_runs(mut self, runner: Arc<dyn TurnRunner>) -> Self {
        self.remote = Some(runner);
        self
    }

    /// Set the base system prompt.
    pub fn system_base(mut self, system: impl Into<String>) -> Self {
        self.system_base = system.into();
        self
    }

    /// Set the reply stream's label.
    pub fn stream_label(mut self, label: impl Into<String>) -> Self {
        self.stream_label = label.into();
        self
    }

    /// Send events to `listener`.
    pub fn on_event(mut self, listener: impl Fn(&TurnEvent) + Send + Sync + 'static) -> Self {
        self.events = TurnEvents::new(listener);
        self
    }
}

/// A file that came with the user's message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// File name.
    pub name: String,
    /// MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Where it can be fetched, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl Attachment {
    /// An attachment with a name and MIME type.
    pub fn new(name: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            mime_type: Some(mime_type.into()),
            ..Self::default()
        }
    }

    /// One line: `name (mime, N bytes)`.
    pub fn summary(&self) -> String {
        let details: Vec<String> = self
            .mime_type
            .iter()
            .cloned()
            .chain(self.size.map(|n| format!("{n} bytes")))
            .collect();
        if details.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, details.join(", "))
        }
    }
}

/// Per-turn input. Every optional field's `None` means its documented default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnInput {
    /// The conversation (memory is keyed by its id).
    pub session: Session,
    /// Who is talking.
    pub sender: Identity,
    /// The user's message, raw.
    pub text: String,
    /// Files with the message: summarised into the stored body and woven into the prompt.
    pub attachments: Vec<Attachment>,
    /// The id of this message, carried by every reply event (default empty).
    /// A durable turn's run is named after it ([`turn_run_id`](super::turn_run_id)).
    pub message_id: Option<String>,
    /// The session id reply events carry, when it is not `session`'s id (a
    /// server shows its client the id the client gave, while memory is kept
    /// under its own).
    pub reply_session_id: Option<String>,
    /// Recall options (default `{limit: 5, min_score: 0.3}`).
    pub recall_opts: Option<RecallOpts>,
    /// Heading of the memory block (default `## Memory`).
    pub memory_heading: Option<String>,
    /// Store the user turn (default true).
    pub persist_user: Option<bool>,
    /// Store the assistant turn (default true).
    pub persist_assistant: Option<bool>,
    /// Give tools the session, sender and `ctx_extras` (default true).
    pub bind_tool_ctx: Option<bool>,
    /// Extra request context for tools.
    pub ctx_extras: Option<Map<String, Value>>,
    /// Source of the stored user record (default the agent's name).
    pub user_source: Option<String>,
    /// Metadata of the stored user record (its `role` is always `user`).
    pub user_metadata: Option<Map<String, Value>>,
    /// Source of the stored assistant record (default the agent's name).
    pub assistant_source: Option<String>,
    /// Metadata of the stored assistant record (its `role` is always `assistant`).
    pub assistant_metadata: Option<Map<String, Value>>,
    /// When set, the model is skipped and this is the reply.
    pub fallback_text: Option<String>,
    /// When set, replaces the memory-grounded system prompt.
    pub system_override: Option<String>,
}

impl TurnInput {
    /// An input with every option at its default.
    pub fn new(session: Session, sender: Identity, text: impl Into<String>) -> Self {
        Self {
            session,
            sender,
            text: text.into(),
            ..Self::default()
        }
    }
}

impl TurnInput {
    /// The text stored for a user turn: the message, then one `[attachment: …]`
    /// line per file.
    pub(crate) fn stored_body(&self) -> String {
        let mut body = self.text.clone();
        for attachment in &self.attachments {
            body.push_str(&format!("\n[attachment: {}]", attachment.summary()));
        }
        body
    }

    /// The prompt sent to the model: the message, then an `Attachments:` block.
    pub(crate) fn prompt(&self) -> String {
        if self.attachments.is_empty() {
            return self.text.clone();
        }
        let mut prompt = format!("{}\n\nAttachments:", self.text);
        for attachment in &self.attachments {
            prompt.push_str(&format!("\n- {}", attachment.summary()));
        }
        prompt
    }

    /// The ids reply events carry: the reply session id (default the
    /// session's id) and the message id (default empty).
    pub(crate) fn reply_ids(&self) -> (String, String) {
        (
            self.reply_session_id
                .clone()
                .unwrap_or_else(|| self.session.id.clone()),
            self.message_id.clone().unwrap_or_default(),
        )
    }
}
