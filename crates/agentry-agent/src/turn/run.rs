//! [`TurnConfig::run`]: the memory-grounded chat turn, its five steps in
//! their load-bearing order, and the step functions it is made of.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde::Serialize;

use super::events::TurnEvent;
use super::input::{Replier, TurnConfig, TurnInput};
use super::remote::{TurnContext, TurnRun, TurnRunner};
use crate::durable::{JournalError, RunJournal, WaitingCall};
use crate::{Agent, AgentError, AgentEvent, Outcome};
use agentry_core::memory::{DEFAULT_MEMORY_HEADING, RecentOpts, Remember, with_memory_block};
use agentry_core::model::{ChatRequest, Message, ModelError, Step, StepAssembler, StreamEvent};
use agentry_core::tool::ToolContext;

/// A turn's reply: what the model (or agent) said, streamed as it came.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Reply {
    /// The reply's text (stored as the assistant turn unless empty).
    pub text: String,
}

/// Why a turn gave no reply. Its text is what the turn reports as `error`
/// (the source's own words); the source is kept.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TurnError {
    /// [`TurnConfig::run_until`]'s `stop` completed first. What was
    /// streamed before is `partial`, and it was stored as the assistant turn.
    #[error("stopped")]
    Stopped {
        /// The reply written before the stop.
        partial: String,
    },
    /// The model failed (the reply is then empty).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The turn's agent could not be set up with the turn's system prompt
    /// and context.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// A durable turn's journal failed; the run stopped.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The agent's event stream ended without its final event.
    #[error("the agent's event stream ended without its final event")]
    Unfinished,
}

impl TurnError {
    /// The reply written before the turn ended: the partial text of a
    /// stopped turn, else empty.
    pub fn partial(&self) -> &str {
        match self {
            Self::Stopped { partial } => partial,
            _ => "",
        }
    }
}

/// The memory-grounded chat turn.
///
/// Two turns on one session: the second turn's system prompt recalls what
/// is similar to its message from the first (the reply "Noted!" is not),
/// and every step reports an event.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use agentry_core::embed::KeywordEmbedder;
/// use agentry_core::memory::{InMemoryStore, Memory};
/// use agentry_core::model::{ScriptedModel, Step, Usage};
/// use agentry_core::tool::{Identity, Session};
/// use agentry_agent::turn::{TurnConfig, TurnEvent, TurnInput};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let reply = |text: &str| Step::Final { text: text.into(), tokens: Usage::new(9, 3) };
/// let model = Arc::new(ScriptedModel::new().reply(reply("Noted!")).reply(reply("Risotto.")));
/// let memory = Memory::new(InMemoryStore::new(), KeywordEmbedder::new(["risotto"]));
/// let events = Arc::new(Mutex::new(Vec::new()));
/// let log = events.clone();
/// let config = TurnConfig::new("chef", model.clone(), memory)
///     .system_base("You are a cook.")
///     .on_event(move |event| log.lock().unwrap().push(event.name()));
///
/// let turn = |text: &str| TurnInput::new(Session::new("s-1"), Identity::new("ana"), text);
/// assert_eq!(config.run(turn("I love risotto.")).await.unwrap().text, "Noted!");
/// let second = config.run(turn("What risotto do I like?")).await;
/// assert_eq!(second.unwrap().text, "Risotto.");
/// assert_eq!(
///     model.requests()[1].system.as_deref(),
///     Some("You are a cook.\n\n## Memory\n- user: I love risotto.")
/// );
/// assert_eq!(
///     events.lock().unwrap()[..7],
///     ["system_built", "user_persisted", "tool_context_bound", "reply:start", "reply:delta", "reply:end", "assistant_persisted"]
/// );
/// # });
/// ```
impl TurnConfig {
    /// Run one turn, in this order:
    ///
    /// 1. build the system prompt from memory as it stood before this turn
    ///    (so the new message cannot be recalled into its own prompt);
    /// 2. store the user turn (unless `persist_user` is false);
    /// 3. bind the request context for tools (unless `bind_tool_ctx` is false);
    /// 4. stream the reply as `reply:start` / `reply:delta` / `reply:end`, or
    ///    emit `fallback_text` without calling the model; with an agent, the
    ///    loop runs and the text of each of its steps streams as it comes;
    /// 5. store the assistant turn (unless empty or `persist_assistant` is false).
    ///
    /// Storage failures are logged and swallowed: the reply still goes out.
    pub async fn run(&self, input: TurnInput) -> Result<Reply, TurnError> {
        self.run_until(input, std::future::pending()).await
    }

    /// [`run`](Self::run), stopping the reply when `stop` completes (the
    /// user pressed Ctrl-C, the client went away): the model call or agent
    /// loop is dropped, `reply:end` carries the text written so far, and that
    /// text is stored as the assistant turn (the user turn already is). The
    /// turn then ends with [`TurnError::Stopped`], holding that text.
    pub async fn run_until(
        &self,
        input: TurnInput,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Reply, TurnError> {
        let config = self;
        let events = &config.events;
        // A session an agent handed to goes on with that agent.
        let floor = session_floor(config, &input).await;
        let base = match &floor {
            Some(agent) => agent.system().unwrap_or_default(),
            None => config.system_base.as_str(),
        };
        let system = system_prompt(config, &input, base).await;
        events.emit(TurnEvent::SystemBuilt {
            system: system.clone(),
        });

        if input.persist_user.unwrap_or(true) {
            let ok = store_user_turn(config, &input).await;
            events.emit(TurnEvent::UserPersisted { ok });
        }

        let context = if input.bind_tool_ctx.unwrap_or(true) {
            events.emit(TurnEvent::ToolContextBound);
            ToolContext::new()
                .with_session(input.session.clone())
                .with_sender(input.sender.clone())
                .with_extras(input.ctx_extras.clone().unwrap_or_default())
        } else {
            ToolContext::default()
        };

        let (session_id, message_id) = input.reply_ids();
        events.emit(TurnEvent::ReplyStart {
            session_id: session_id.clone(),
            message_id: message_id.clone(),
            stream: config.stream_label.clone(),
        });
        let written = std::sync::Mutex::new(String::new());
        let delta = |text: &str| {
            if !text.is_empty() {
                if let Ok(mut written) = written.lock() {
                    written.push_str(text);
                }
                events.emit(TurnEvent::ReplyDelta {
                    session_id: session_id.clone(),
                    message_id: message_id.clone(),
                    text: text.to_owned(),
                });
            }
        };
        let prompt = input.prompt();
        let answered_by = std::sync::Mutex::new(None::<String>);
        let reply = async {
            match (&input.fallback_text, &config.replier) {
                (Some(fallback), _) => {
                    delta(fallback);
                    Ok(fallback.clone())
                }
                (None, Replier::Agent(agent)) => {
                    let agent = floor.as_ref().unwrap_or(agent);
                    let tools = |event: AgentEvent| {
                        let (session_id, message_id) = (session_id.clone(), message_id.clone());
                        match event {
                            AgentEvent::ToolCall { call, .. } => events.emit(TurnEvent::ToolCall {
                                session_id,
                                message_id,
                                call,
                            }),
                            AgentEvent::ToolResult { record, .. } => {
                                events.emit(TurnEvent::ToolResult {
                                    session_id,
                                    message_id,
                                    name: record.call.name,
                                    result: record.result,
                                })
                            }
                            _ => {}
                        }
                    };
                    let waiting = |run: String, calls: Vec<WaitingCall>| {
                        events.emit(TurnEvent::AwaitingDecision {
                            session_id: session_id.clone(),
                            message_id: message_id.clone(),
                            run,
                            calls,
                        })
                    };
                    let id = turn_run_id(&input.session.id, &message_id);
                    let place = match (&config.remote, &config.runs) {
                        (Some(runner), _) => Place::Remote(runner, id),
                        (None, Some(journal)) => Place::Journal(journal, id),
                        (None, None) => Place::Here,
                    };
                    let how = AgentTurn {
                        delta: &delta,
                        tools: &tools,
                        place,
                        waiting: &waiting,
                        answered_by: &answered_by,
                    };
                    run_agent(agent, system, context, prompt, how).await
                }
                (None, Replier::Model(_)) => stream_reply(config, &system, &prompt, &delta)
                    .await
                    .map_err(TurnError::from),
            }
        };
        let reply: Result<String, TurnError> =
            match futures_util::future::select(std::pin::pin!(reply), std::pin::pin!(stop)).await {
                futures_util::future::Either::Left((reply, _)) => reply,
                futures_util::future::Either::Right(((), _)) => {
                    tracing::info!(session = %input.session.id, "a chat turn was stopped");
                    // What was written before the stop is kept.
                    Err(TurnError::Stopped {
                        partial: written.lock().map(|w| w.clone()).unwrap_or_default(),
                    })
                }
            };
        if let Err(error) = &reply
            && !matches!(error, TurnError::Stopped { .. })
        {
            tracing::warn!(%error, "the model failed during a chat turn");
        }
        let text = match &reply {
            Ok(text) => text.clone(),
            Err(error) => error.partial().to_owned(),
        };
        events.emit(TurnEvent::ReplyEnd {
            session_id,
            message_id,
            text: text.clone(),
        });

        if input.persist_assistant.unwrap_or(true) {
            let by = answered_by.into_inner().ok().flatten();
            let outcome = store_assistant_turn(config, &input, &text, by).await;
            events.emit(TurnEvent::AssistantPersisted {
                ok: outcome == Some(true),
                skipped: outcome.is_none(),
            });
        }
        reply.map(|text| Reply { text })
    }
}

/// The metadata key of an assistant turn that names the agent that
/// answered it, when a handoff gave the session to it.
pub const FLOOR_KEY: &str = "agent";

/// The agent a handoff gave the session to, as its last assistant turn
/// says, when it is another than the turn's own agent (and one it may hand
/// to). Runs handed to a runner start with the turn's own agent.
async fn session_floor(config: &TurnConfig, input: &TurnInput) -> Option<Agent> {
    let Replier::Agent(agent) = &config.replier else {
        return None;
    };
    if agent.handoffs().is_empty() || config.remote.is_some() {
        return None;
    }
    let last = RecentOpts {
        include_roles: vec!["assistant".into()],
        limit: Some(1),
        ..RecentOpts::default()
    };
    let recent = match config.memory.store().recent(&input.session.id, &last).await {
        Ok(recent) => recent,
        Err(error) => {
            tracing::warn!(%error, "could not read who has the session; the turn's agent answers");
            return None;
        }
    };
    let name = recent.last()?.metadata.get(FLOOR_KEY)?.as_str()?.to_owned();
    if agent.name() == Some(name.as_str()) {
        return None;
    }
    agent.find_agent(&name).cloned()
}

/// Step 1: `system_override` when set; otherwise the base prompt with the
/// memory recalled for the user's prompt appended under the heading.
async fn system_prompt(config: &TurnConfig, input: &TurnInput, base: &str) -> String {
    if let Some(system) = &input.system_override {
        return system.clone();
    }
    let context = config
        .memory
        .build_context_safe(
            &input.session.id,
            &input.prompt(),
            input.recall_opts.unwrap_or_default(),
        )
        .await;
    let heading = input
        .memory_heading
        .as_deref()
        .unwrap_or(DEFAULT_MEMORY_HEADING);
    with_memory_block(base, heading, &context)
}

/// Step 2: store the user turn. Its role (and metadata `role`) is always
/// `user`. Returns whether the write succeeded; failures are logged.
async fn store_user_turn(config: &TurnConfig, input: &TurnInput) -> bool {
    let mut metadata = input.user_metadata.clone().unwrap_or_default();
    metadata.insert("role".into(), "user".into());
    let what = Remember {
        role: "user".into(),
        source: input
            .user_source
            .clone()
            .unwrap_or_else(|| config.agent_name.clone()),
        metadata,
    };
    match config
        .memory
        .remember(&input.session.id, &input.stored_body(), what)
        .await
    {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, session = %input.session.id, "could not store the user turn");
            false
        }
    }
}

/// Step 5: store the assistant turn (with the agent that answered, when
/// the turn's agent can hand off); `None` when skipped because `text` is
/// empty, else whether the write succeeded (failures are logged).
async fn store_assistant_turn(
    config: &TurnConfig,
    input: &TurnInput,
    text: &str,
    answered_by: Option<String>,
) -> Option<bool> {
    if text.is_empty() {
        return None;
    }
    let mut metadata = input.assistant_metadata.clone().unwrap_or_default();
    metadata.insert("role".into(), "assistant".into());
    if let (Replier::Agent(agent), Some(name)) = (&config.replier, answered_by)
        && !agent.handoffs().is_empty()
    {
        metadata.insert(FLOOR_KEY.into(), name.into());
    }
    let what = Remember {
        role: "assistant".into(),
        source: input
            .assistant_source
            .clone()
            .unwrap_or_else(|| config.agent_name.clone()),
        metadata,
    };
    match config.memory.remember(&input.session.id, text, what).await {
        Ok(()) => Some(true),
        Err(error) => {
            tracing::warn!(%error, session = %input.session.id, "could not store the assistant turn");
            Some(false)
        }
    }
}

/// The id of a durable turn's run ([`TurnConfig::durable_runs`]): the
/// session's id and the reply's message id, joined by `~`.
///
/// [`TurnConfig::durable_runs`]: super::TurnConfig::durable_runs
pub fn turn_run_id(session_id: &str, message_id: &str) -> String {
    format!("{session_id}~{message_id}")
}

/// Where an agent turn's events go, and where it runs.
struct AgentTurn<'a> {
    delta: &'a (dyn Fn(&str) + Sync),
    tools: &'a (dyn Fn(AgentEvent) + Sync),
    place: Place<'a>,
    /// A durable run stopped for these calls.
    waiting: &'a (dyn Fn(String, Vec<WaitingCall>) + Sync),
    /// Where the name of the agent that answered goes.
    answered_by: &'a std::sync::Mutex<Option<String>>,
}

/// Where an agent turn's loop runs: here, here durably (the journal and the
/// run's id), or handed to a runner (the runner and the run's id).
enum Place<'a> {
    Here,
    Journal(&'a Arc<dyn RunJournal>, String),
    Remote(&'a Arc<dyn TurnRunner>, String),
}

/// Step 4 with tools or skills: the agent's full loop, streamed. Its system
/// prompt is `system` (the agent's own prompt with memory, see
/// [`TurnConfig::for_agent`]); its tools get the agent's context with the
/// turn's laid over it. Text from every step goes to `delta` as it arrives,
/// with a blank line between steps; the reply is all of it, and a run that
/// ends without an answer ("out of steps", "over budget") ends the reply
/// with that text. A durable run that stops for a decision ends the reply
/// with what it wrote so far, and reports the waiting calls.
async fn run_agent(
    agent: &Agent,
    system: String,
    context: ToolContext,
    prompt: String,
    how: AgentTurn<'_>,
) -> Result<String, TurnError> {
    let mut reply = StreamedReply::default();
    let messages = vec![Message::user(prompt)];
    // Keep the turn's agent and the durable runner alive while their
    // stream is read.
    let turn_agent;
    let runs;
    let (mut events, run_id): (BoxStream<'_, AgentEvent>, Option<String>) = match how.place {
        Place::Remote(runner, id) => {
            let run = TurnRun {
                id: id.clone(),
                system,
                messages,
                context: TurnContext::of(&context),
            };
            (runner.run(run), Some(id))
        }
        Place::Here => {
            let context = agent.context().clone().merged_with(&context);
            turn_agent = agent.to_builder().system(system).context(context).build()?;
            (turn_agent.stream_messages(messages).boxed(), None)
        }
        Place::Journal(journal, id) => {
            let context = agent.context().clone().merged_with(&context);
            turn_agent = agent.to_builder().system(system).context(context).build()?;
            runs = turn_agent.durable(journal.clone());
            (runs.stream_messages(id.clone(), messages).boxed(), Some(id))
        }
    };
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::TextDelta { step, text } => reply.write(step, &text, how.delta),
            event @ (AgentEvent::ToolCall { .. } | AgentEvent::ToolResult { .. }) => {
                (how.tools)(event)
            }
            AgentEvent::Final { run } => {
                if let Ok(mut answered_by) = how.answered_by.lock() {
                    *answered_by = run.agent.clone();
                }
                return match run.outcome {
                    Outcome::ModelError(error) => Err(error.into()),
                    Outcome::JournalFailed(error) => Err(error.into()),
                    Outcome::Final(_) => Ok(reply.text),
                    Outcome::AwaitingDecision(calls) if let Some(id) = run_id => {
                        (how.waiting)(id, calls);
                        Ok(reply.text)
                    }
                    Outcome::OutOfSteps
                    | Outcome::OverBudget
                    | Outcome::AwaitingDecision(_)
                    | Outcome::GuardrailTripped(_) => {
                        reply.write(usize::MAX, &run.text(), how.delta);
                        Ok(reply.text)
                    }
                };
            }
            _ => {}
        }
    }
    Err(TurnError::Unfinished)
}

/// The text an agent run has streamed so far, with a blank line put between
/// the texts of different steps.
#[derive(Default)]
struct StreamedReply {
    text: String,
    last_step: Option<usize>,
}

impl StreamedReply {
    fn write(&mut self, step: usize, piece: &str, delta: &(dyn Fn(&str) + Sync)) {
        if piece.is_empty() {
            return;
        }
        if self.last_step.is_some_and(|last| last != step) {
            delta("\n\n");
            self.text.push_str("\n\n");
        }
        self.last_step = Some(step);
        delta(piece);
        self.text.push_str(piece);
    }
}

/// Step 4: stream the model's reply, passing each text piece to `delta`.
async fn stream_reply(
    config: &TurnConfig,
    system: &str,
    prompt: &str,
    delta: &(dyn Fn(&str) + Sync),
) -> Result<String, ModelError> {
    let request = ChatRequest {
        system: (!system.is_empty()).then(|| system.to_owned()),
        messages: vec![Message::user(prompt)],
        ..ChatRequest::default()
    };
    let Replier::Model(model) = &config.replier else {
        return Err(ModelError::Config(
            "a model reply needs a TurnConfig that replies with a model, not an agent".into(),
        ));
    };
    let read = async {
        let mut stream = model.stream(&request);
        let mut assembler = StepAssembler::new();
        while let Some(event) = stream.next().await {
            let event = event?;
            if let StreamEvent::TextDelta { text } = &event {
                delta(text);
            }
            assembler.push(&event);
        }
        // The text so far, finished or not: a reply cut short still counts.
        Ok(Step::Final {
            text: assembler.text().to_owned(),
            tokens: assembler.usage(),
        })
    };
    match crate::telemetry::traced_chat(model.as_ref(), &request, read).await? {
        Step::Final { text, .. } | Step::Tool { text, .. } => Ok(text),
    }
}
