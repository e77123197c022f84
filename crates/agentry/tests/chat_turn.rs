//! The memory-grounded chat turn: order, defaults, fallback, override, failing stores,
//! session isolation and no self-poisoning. A scripted model and a keyword
//! embedder keep this about the turn's logic; the SQLite example and the
//! real-model tests cover the rest.

use std::sync::{Arc, Mutex};

use agentry::BoxFuture;
use agentry::agent::{Agent, AgentBuilder};
use agentry::embed::KeywordEmbedder;
use agentry::memory::*;
use agentry::model::{ModelError, ScriptedModel, Step, Usage};
use agentry::tool::{Identity, Session, ToolCall, ToolContext};
use agentry::turn::*;
use serde_json::{Value, json};

/// A store whose writes fail (reads work, and see nothing).
struct WriteFails;

impl MemoryStore for WriteFails {
    fn add<'a>(&'a self, _record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async { Err(MemoryError::refused("disk full")) })
    }
    fn recall<'a>(
        &'a self,
        _session: &'a str,
        _query: &'a [f32],
        _opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn recent<'a>(
        &'a self,
        _session: &'a str,
        _opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

fn final_step(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(3, 2),
    }
}

struct Harness {
    model: Arc<ScriptedModel>,
    store: Arc<InMemoryStore>,
    events: Arc<Mutex<Vec<TurnEvent>>>,
    config: TurnConfig,
}

fn harness(model: ScriptedModel) -> Harness {
    let model = Arc::new(model);
    let store = Arc::new(InMemoryStore::new());
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let config = TurnConfig::new(
        "chef",
        model.clone(),
        Memory::new(
            store.clone(),
            Arc::new(KeywordEmbedder::new(["pasta", "lima"]).with_bias(0.05)),
        ),
    )
    .system_base("You are a chef.")
    .on_event(move |event| sink.lock().unwrap().push(event.clone()));
    Harness {
        model,
        store,
        events,
        config,
    }
}

impl Harness {
    /// The harness's memory and event log, with `agent` writing the replies.
    fn agent_config(&self, agent: Agent) -> TurnConfig {
        TurnConfig {
            events: self.config.events.clone(),
            ..TurnConfig::for_agent("chef", agent, self.config.memory.clone())
        }
    }
}

fn input(session: &str, text: &str) -> TurnInput {
    TurnInput::new(Session::new(session), Identity::new("ana"), text)
}

fn names(events: &[TurnEvent]) -> Vec<&'static str> {
    events.iter().map(TurnEvent::name).collect()
}

#[tokio::test]
async fn the_five_steps_run_in_order_with_the_defaults() {
    let h = harness(ScriptedModel::new().reply(final_step("Try carbonara.")));
    let mut turn = input("s1", "Any pasta ideas?");
    turn.reply_session_id = Some("ui-7".into());
    turn.message_id = Some("m-1".into());
    let output = h.config.run(turn).await;
    assert_eq!(output.map(|reply| reply.text), Ok("Try carbonara.".into()));
    let events = h.events.lock().unwrap().clone();
    assert_eq!(
        names(&events),
        [
            "system_built",
            "user_persisted",
            "tool_context_bound",
            "reply:start",
            "reply:delta",
            "reply:end",
            "assistant_persisted"
        ]
    );
    assert_eq!(
        events[3],
        TurnEvent::ReplyStart {
            session_id: "ui-7".into(),
            message_id: "m-1".into(),
            stream: "chef".into()
        }
    );
    assert_eq!(
        events[5],
        TurnEvent::ReplyEnd {
            session_id: "ui-7".into(),
            message_id: "m-1".into(),
            text: "Try carbonara.".into()
        }
    );
    let stored = h.store.recent("s1", &RecentOpts::default()).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(
        (stored[0].role.as_str(), stored[0].text.as_str()),
        ("user", "Any pasta ideas?")
    );
    assert_eq!(
        stored[0].source, "chef",
        "source defaults to the agent's name"
    );
    assert_eq!(stored[0].metadata["role"], "user");
    assert_eq!(
        (stored[1].role.as_str(), stored[1].text.as_str()),
        ("assistant", "Try carbonara.")
    );
    assert_eq!(stored[1].metadata["role"], "assistant");
    // Nothing was in memory before this turn, so the prompt is the base alone.
    assert_eq!(
        h.model.requests()[0].system.as_deref(),
        Some("You are a chef.")
    );
}

#[tokio::test]
async fn memory_from_before_the_turn_grounds_the_prompt_without_self_poisoning() {
    let h = harness(
        ScriptedModel::new()
            .reply(final_step("Noted."))
            .reply(final_step("Carbonara, as you like.")),
    );
    h.config.run(input("s1", "I love pasta")).await.unwrap();
    h.config
        .run(input("s1", "What pasta should I cook?"))
        .await
        .unwrap();
    let second = h.model.requests()[1].system.clone().unwrap();
    assert_eq!(second, "You are a chef.\n\n## Memory\n- user: I love pasta");
    assert!(
        !second.contains("What pasta should I cook?"),
        "the new message must not be recalled into its own prompt"
    );
    // It would have been: now that it is stored, recall for it returns it.
    let memory = Memory::new(
        h.store.clone(),
        KeywordEmbedder::new(["pasta", "lima"]).with_bias(0.05),
    );
    let hits = memory
        .recall("s1", "What pasta should I cook?", RecallOpts::default())
        .await
        .unwrap();
    assert!(
        hits.iter()
            .any(|hit| hit.record.text == "What pasta should I cook?"),
        "{hits:?}"
    );
}

#[tokio::test]
async fn two_sessions_never_see_each_others_memory() {
    let h = harness(
        ScriptedModel::new()
            .reply(final_step("ok"))
            .reply(final_step("ok")),
    );
    h.config.run(input("alice", "I love pasta")).await.unwrap();
    h.config.run(input("bob", "pasta please")).await.unwrap();
    assert_eq!(
        h.model.requests()[1].system.as_deref(),
        Some("You are a chef.")
    );
}

#[tokio::test]
async fn fallback_text_skips_the_model_and_is_persisted() {
    let h = harness(ScriptedModel::new());
    let mut turn = input("s1", "hello");
    turn.fallback_text = Some("[no llm provider]".into());
    let output = h.config.run(turn).await.unwrap();
    assert_eq!(output.text, "[no llm provider]");
    assert!(h.model.requests().is_empty(), "the model is not called");
    let stored = h.store.recent("s1", &RecentOpts::default()).await.unwrap();
    assert_eq!(stored[1].text, "[no llm provider]");
}

#[tokio::test]
async fn system_override_replaces_the_memory_prompt() {
    let h = harness(
        ScriptedModel::new()
            .reply(final_step("ok"))
            .reply(final_step("summary")),
    );
    h.config.run(input("s1", "I love pasta")).await.unwrap();
    let mut turn = input("s1", "pasta summary");
    turn.system_override = Some("Summarise the week.".into());
    h.config.run(turn).await.unwrap();
    assert_eq!(
        h.model.requests()[1].system.as_deref(),
        Some("Summarise the week.")
    );
}

#[tokio::test]
async fn every_option_behaves_as_documented() {
    let h = harness(
        ScriptedModel::new()
            .reply(final_step("first"))
            .reply(final_step("second")),
    );
    h.config.run(input("s1", "I love pasta")).await.unwrap();
    h.events.lock().unwrap().clear();
    let mut turn = input("s1", "pasta again");
    turn.memory_heading = Some("### Notes".into());
    turn.recall_opts = Some(RecallOpts {
        limit: 1,
        min_score: 0.99,
    });
    turn.persist_user = Some(false);
    turn.persist_assistant = Some(false);
    turn.bind_tool_ctx = Some(false);
    turn.attachments = vec![Attachment::new("menu.pdf", "application/pdf")];
    let output = h.config.run(turn).await.unwrap();
    assert_eq!(output.text, "second");
    let system = h.model.requests()[1].system.clone().unwrap();
    assert_eq!(system, "You are a chef.\n\n### Notes\n- user: I love pasta");
    assert_eq!(
        h.model.requests()[1].messages,
        vec![agentry::model::Message::user(
            "pasta again\n\nAttachments:\n- menu.pdf (application/pdf)"
        )]
    );
    assert_eq!(
        names(&h.events.lock().unwrap()),
        ["system_built", "reply:start", "reply:delta", "reply:end"],
        "no persistence and no context binding"
    );
    assert_eq!(h.store.len(), 2, "only the first turn was stored");
}

#[tokio::test]
async fn user_and_assistant_sources_metadata_and_attachment_summaries_are_stored() {
    let h = harness(ScriptedModel::new().reply(final_step("Got it.")));
    let mut turn = input("s1", "Here is the receipt");
    turn.attachments = vec![Attachment {
        name: "r.png".into(),
        mime_type: Some("image/png".into()),
        size: Some(2048),
        url: None,
    }];
    turn.user_source = Some("telegram".into());
    turn.user_metadata = json!({"role": "admin", "lang": "es"}).as_object().cloned();
    turn.assistant_source = Some("chef-bot".into());
    turn.assistant_metadata = json!({"model": "scripted"}).as_object().cloned();
    h.config.run(turn).await.unwrap();
    let stored = h.store.recent("s1", &RecentOpts::default()).await.unwrap();
    assert_eq!(
        stored[0].text,
        "Here is the receipt\n[attachment: r.png (image/png, 2048 bytes)]"
    );
    assert_eq!(stored[0].source, "telegram");
    assert_eq!(stored[0].role, "user");
    assert_eq!(
        Value::Object(stored[0].metadata.clone()),
        json!({"role": "user", "lang": "es"}),
        "the role is always user, whatever the caller's metadata says"
    );
    assert_eq!(stored[1].source, "chef-bot");
    assert_eq!(
        Value::Object(stored[1].metadata.clone()),
        json!({"model": "scripted", "role": "assistant"})
    );
}

#[tokio::test]
async fn a_store_that_fails_on_write_still_delivers_the_reply() {
    let model = Arc::new(ScriptedModel::new().reply(final_step("Still here.")));
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let config = TurnConfig::new(
        "chef",
        model,
        Memory::new(
            Arc::new(WriteFails),
            Arc::new(KeywordEmbedder::new(["pasta", "lima"]).with_bias(0.05)),
        ),
    )
    .on_event(move |e| sink.lock().unwrap().push(e.clone()));
    let output = config.run(input("s1", "hi")).await.unwrap();
    assert_eq!(output.text, "Still here.");
    let events = events.lock().unwrap().clone();
    assert!(events.contains(&TurnEvent::UserPersisted { ok: false }));
    assert!(events.contains(&TurnEvent::AssistantPersisted {
        ok: false,
        skipped: false
    }));
}

#[tokio::test]
async fn a_model_failure_is_reported_and_nothing_empty_is_stored() {
    let h = harness(ScriptedModel::new().fail(ModelError::Transport("connection reset".into())));
    let output = h.config.run(input("s1", "hi")).await;
    let error = output.unwrap_err();
    assert_eq!(error.partial(), "");
    assert!(matches!(error, TurnError::Model(_)), "{error:?}");
    assert!(error.to_string().contains("connection reset"));
    assert!(
        h.events
            .lock()
            .unwrap()
            .contains(&TurnEvent::AssistantPersisted {
                ok: false,
                skipped: true
            })
    );
    assert_eq!(
        h.store.len(),
        1,
        "the user turn is kept, the empty reply is not"
    );
}

/// Who is asking, from the bound request context.
#[agentry::tool(name = "whoami")]
fn whoami(ctx: &ToolContext) -> String {
    format!(
        "{} in {} ({})",
        ctx.sender().map_or("?", |s| s.id.as_str()),
        ctx.session().map_or("?", |s| s.id.as_str()),
        ctx.extra("tenant").and_then(Value::as_str).unwrap_or("?")
    )
}

/// A step in which the model calls `whoami`, saying `text` first.
fn whoami_step(text: &str) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new("c1", "whoami", json!({}))],
        text: text.into(),
        tokens: Usage::new(1, 1),
    }
}

/// An agent over `model` with `whoami` as its one tool and a chef's prompt.
fn whoami_agent(model: Arc<ScriptedModel>) -> AgentBuilder {
    Agent::builder(model)
        .tool(whoami::tool())
        .system("You are a chef.")
}

#[tokio::test]
async fn with_tools_the_turn_runs_the_agent_loop_with_the_bound_context() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(whoami_step(""))
            .reply(final_step("You are ana.")),
    );
    let agent = whoami_agent(model.clone()).build().unwrap();
    let h = harness(ScriptedModel::new());
    let config = h.agent_config(agent);
    let mut turn = input("s1", "who am I?");
    turn.ctx_extras = json!({"tenant": "acme"}).as_object().cloned();
    let output = config.run(turn).await.unwrap();
    assert_eq!(output.text, "You are ana.");
    let requests = model.requests();
    assert_eq!(requests[0].system.as_deref(), Some("You are a chef."));
    let tool_message = &requests[1].messages[2];
    assert_eq!(
        serde_json::to_value(tool_message).unwrap()["result"]["output"],
        json!("ana in s1 (acme)")
    );
}

fn deltas(events: &[TurnEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::ReplyDelta { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn with_tools_every_step_streams_its_text_and_the_reply_is_what_streamed() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(whoami_step("Let me check."))
            .reply(final_step("You are ana.")),
    );
    let agent = whoami_agent(model).build().unwrap();
    let h = harness(ScriptedModel::new());
    let config = h.agent_config(agent);
    let output = config.run(input("s1", "who am I?")).await.unwrap();

    let events = h.events.lock().unwrap().clone();
    assert_eq!(deltas(&events), ["Let me check.", "\n\n", "You are ana."]);
    assert_eq!(output.text, "Let me check.\n\nYou are ana.");
    assert!(
        events
            .iter()
            .any(|event| matches!(event, TurnEvent::ReplyEnd { text, .. } if *text == output.text))
    );
    let stored = h.store.recent("s1", &RecentOpts::default()).await.unwrap();
    assert_eq!(stored.last().unwrap().text, output.text);
}

#[tokio::test]
async fn an_agent_run_out_of_steps_ends_the_reply_with_that_text() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(whoami_step(""))
            .reply(whoami_step("")),
    );
    let agent = whoami_agent(model).max_steps(2).build().unwrap();
    let h = harness(ScriptedModel::new());
    let config = h.agent_config(agent);
    let output = config.run(input("s1", "who am I?")).await.unwrap();
    assert_eq!(output.text, "out of steps");
    assert_eq!(deltas(&h.events.lock().unwrap()), ["out of steps"]);
}

#[tokio::test]
async fn an_agent_keeps_its_prompt_and_context_under_the_turns() {
    // Seen in a review: the turn used to replace the agent's system prompt
    // and its tool context. Now memory joins the agent's prompt, and the
    // turn's request data is laid over the agent's own context.
    let model = Arc::new(
        ScriptedModel::new()
            .reply(whoami_step(""))
            .reply(final_step("Noted.")),
    );
    let agent = whoami_agent(model.clone())
        .context(
            ToolContext::new()
                .with_extra("tenant", json!("agent-tenant"))
                .with_extra("kitchen", json!("north")),
        )
        .build()
        .unwrap();
    let h = harness(ScriptedModel::new());
    h.config
        .memory
        .remember(
            "s1",
            "ana loves pasta",
            Remember {
                role: "user".into(),
                ..Remember::default()
            },
        )
        .await
        .unwrap();
    let config = h.agent_config(agent);
    assert_eq!(config.system_base, "You are a chef.");
    let mut turn = input("s1", "pasta tonight?");
    turn.ctx_extras = json!({"tenant": "turn-tenant"}).as_object().cloned();
    let output = config.run(turn).await.unwrap();
    assert_eq!(output.text, "Noted.");
    let requests = model.requests();
    assert_eq!(
        requests[0].system.as_deref(),
        Some("You are a chef.\n\n## Memory\n- user: ana loves pasta")
    );
    // The turn's keys win; the agent's other keys stay.
    assert_eq!(
        serde_json::to_value(&requests[1].messages[2]).unwrap()["result"]["output"],
        json!("ana in s1 (turn-tenant)")
    );
}
