//! Handoffs with scripted models (loop logic only; the local model runs the
//! triage example in `triage_local.rs`): who answers, what the agent handed
//! to sees and may use, the run's budget and depth limit across agents, the
//! event stream, the builder's checks, and a durable run that waits after a
//! handoff and resumes with the agent that had the floor.

use std::sync::Arc;

use agentry::agent::durable::{Decision, InMemoryJournal, RunEntry, RunJournal, decide};
use agentry::agent::handoff::filters;
use agentry::agent::{Agent, AgentEvent, Handoff, HandoffRecord, Outcome};
use agentry::model::{Message, ScriptedModel, Step, Usage};
use agentry::tool::{ToolCall, ToolHints, function};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn call(id: &str, name: &str, input: Value, tokens: u64) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new(id, name, input)],
        text: String::new(),
        tokens: Usage::new(tokens, 0),
    }
}

fn answer(text: &str, tokens: u64) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(tokens, 0),
    }
}

fn refund(hints: ToolHints) -> agentry::tool::Tool {
    function("refund")
        .arg::<String>("invoice", "The invoice")
        .hints(hints)
        .handler(|args: Value| Ok::<_, String>(format!("refunded {}", args["invoice"])))
        .build()
        .unwrap()
        .with_name("refund")
}

fn billing(model: Arc<ScriptedModel>) -> Agent {
    Agent::builder(model)
        .name("billing")
        .system("You handle billing.")
        .tool(refund(ToolHints::default()))
        .build()
        .unwrap()
}

fn transfer(to: &str, reason: &str) -> Step {
    call(
        "t1",
        &format!("transfer_to_{to}"),
        json!({"reason": reason}),
        10,
    )
}

#[tokio::test]
async fn the_agent_handed_to_carries_on_and_answers() {
    let billing_model = Arc::new(
        ScriptedModel::new()
            .reply(call("c1", "refund", json!({"invoice": "A-7"}), 20))
            .reply(answer("Refunded invoice A-7.", 5)),
    );
    let triage = Agent::builder(ScriptedModel::new().reply(transfer("billing", "a double charge")))
        .name("triage")
        .system("Route the request.")
        .handoff(
            Handoff::to(billing(billing_model.clone())).description("Billing: charges, refunds."),
        )
        .build()
        .unwrap();
    assert_eq!(
        triage.toolbox().names().collect::<Vec<_>>(),
        ["transfer_to_billing"]
    );

    let run = triage.run("I was charged twice for A-7").await;
    assert_eq!(run.outcome, Outcome::Final("Refunded invoice A-7.".into()));
    assert_eq!(run.agent.as_deref(), Some("billing"));
    assert_eq!(
        run.handoffs,
        [HandoffRecord {
            from: Some("triage".into()),
            to: "billing".into(),
            reason: "a double charge".into(),
            step: 1,
        }]
    );
    let indices: Vec<usize> = run.steps.iter().map(|step| step.index).collect();
    assert_eq!(indices, [1, 2, 3], "steps are numbered across agents");
    assert_eq!(
        run.steps[0].calls[0].result.output["transferred_to"],
        "billing"
    );
    assert_eq!(run.usage.total(), 35, "every agent's tokens");
    // The whole conversation, handoff included.
    assert_eq!(run.messages.len(), 6, "{:#?}", run.messages);

    // Billing ran with its own prompt and tools, on the history so far.
    let asked = &billing_model.requests()[0];
    assert_eq!(asked.system.as_deref(), Some("You handle billing."));
    let tools: Vec<&str> = asked.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["refund"]);
    assert_eq!(
        asked.messages.len(),
        3,
        "the user, the transfer, its result"
    );
    assert_eq!(
        asked.messages[0],
        Message::user("I was charged twice for A-7")
    );
}

#[tokio::test]
async fn an_input_filter_trims_what_the_agent_handed_to_sees() {
    let billing_model = Arc::new(ScriptedModel::new().reply(answer("On it.", 1)));
    let triage = Agent::builder(ScriptedModel::new().reply(transfer("billing", "money")))
        .name("triage")
        .handoff(
            Handoff::to(billing(billing_model.clone())).input_filter(filters::last_user_message),
        )
        .build()
        .unwrap();
    let history = vec![
        Message::user("hi"),
        Message::assistant("Hello!"),
        Message::user("Where is my refund?"),
    ];
    let run = triage.run_messages(history).await;
    assert_eq!(run.outcome, Outcome::Final("On it.".into()));
    assert_eq!(
        billing_model.requests()[0].messages,
        [Message::user("Where is my refund?")]
    );
}

#[tokio::test]
async fn the_runs_budget_holds_across_agents() {
    let billing_model = Arc::new(
        ScriptedModel::new()
            .reply(call("c1", "refund", json!({"invoice": "A-7"}), 60))
            .reply(answer("never asked", 1)),
    );
    let triage = Agent::builder(ScriptedModel::new().reply(transfer("billing", "money")))
        .name("triage")
        .token_budget(50)
        .handoff(Handoff::to(billing(billing_model.clone())))
        .build()
        .unwrap();
    let run = triage.run("refund A-7").await;
    assert_eq!(run.outcome, Outcome::OverBudget);
    assert_eq!(run.agent.as_deref(), Some("billing"));
    assert_eq!(
        billing_model.requests().len(),
        1,
        "no step past the run's budget"
    );
}

#[tokio::test]
async fn past_the_depth_limit_a_handoff_is_refused_and_the_agent_answers_itself() {
    let billing_model = Arc::new(ScriptedModel::new());
    let triage = Agent::builder(
        ScriptedModel::new()
            .reply(transfer("billing", "money"))
            .reply(answer("I'll answer myself.", 1)),
    )
    .name("triage")
    .max_depth(0)
    .handoff(Handoff::to(billing(billing_model.clone())))
    .build()
    .unwrap();
    let run = triage.run("refund A-7").await;
    assert_eq!(run.outcome, Outcome::Final("I'll answer myself.".into()));
    assert_eq!(run.agent.as_deref(), Some("triage"));
    assert_eq!(run.handoffs, []);
    let refused = &run.steps[0].calls[0].result;
    assert!(refused.is_error);
    assert_eq!(
        refused.output,
        json!(
            "tool \"transfer_to_billing\" failed: no handoff to billing: agents may hand off or nest only 0 deep; answer yourself"
        )
    );
    assert!(billing_model.requests().is_empty());
}

#[tokio::test]
async fn handoffs_chain_and_the_stream_announces_each() {
    let escalation = Agent::builder(ScriptedModel::new().reply(answer("A manager will call.", 1)))
        .name("escalation")
        .build()
        .unwrap();
    let support = Agent::builder(ScriptedModel::new().reply(transfer("escalation", "angry")))
        .name("support")
        .handoff(Handoff::to(escalation))
        .build()
        .unwrap();
    let triage = Agent::builder(ScriptedModel::new().reply(transfer("support", "broken")))
        .name("triage")
        .handoff(Handoff::to(support))
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = triage.stream("It's broken and I'm furious").collect().await;
    let handoffs: Vec<(Option<String>, String)> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Handoff { from, to, .. } => Some((from.clone(), to.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        handoffs,
        [
            (Some("triage".into()), "support".into()),
            (Some("support".into()), "escalation".into())
        ]
    );
    let Some(AgentEvent::Final { run }) = events.last() else {
        panic!("the stream ends with the run")
    };
    assert_eq!(run.agent.as_deref(), Some("escalation"));
    assert_eq!(run.handoffs.len(), 2);
    assert_eq!(run.outcome, Outcome::Final("A manager will call.".into()));
}

#[test]
fn a_handoff_needs_a_named_agent_and_one_handoff_per_agent() {
    let unnamed = Agent::new(ScriptedModel::new());
    let error = Agent::builder(ScriptedModel::new())
        .handoff(Handoff::to(unnamed))
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "handoff: the agent handed to has no name (AgentBuilder::name)"
    );
    let named = || billing(Arc::new(ScriptedModel::new()));
    let error = Agent::builder(ScriptedModel::new())
        .handoff(Handoff::to(named()))
        .handoff(Handoff::to(named()))
        .build()
        .unwrap_err();
    assert_eq!(error.to_string(), "handoff: two handoffs are to `billing`");
}

#[tokio::test]
async fn a_durable_run_resumes_with_the_agent_that_had_the_floor() {
    let billing_model = Arc::new(
        ScriptedModel::new()
            .reply(call("c1", "refund", json!({"invoice": "A-7"}), 20))
            .reply(answer("Refunded invoice A-7.", 5)),
    );
    // Refunds wait for a person.
    let billing = Agent::builder(billing_model.clone())
        .name("billing")
        .system("You handle billing.")
        .tool(refund(ToolHints {
            destructive: true,
            ..Default::default()
        }))
        .build()
        .unwrap();
    let triage_model = Arc::new(ScriptedModel::new().reply(transfer("billing", "a refund")));
    let triage = Agent::builder(triage_model.clone())
        .name("triage")
        .system("Route the request.")
        .handoff(Handoff::to(billing))
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let runs = triage.durable(journal.clone());
    let run = runs.start("Refund A-7 please").await.unwrap();
    assert!(
        matches!(run.outcome.outcome, Outcome::AwaitingDecision(_)),
        "{:?}",
        run.outcome.outcome
    );
    assert_eq!(run.outcome.agent.as_deref(), Some("billing"));
    let entries = journal.entries(&run.id).await.unwrap();
    assert!(entries.iter().any(|entry| matches!(
        entry,
        RunEntry::HandedOff { to, reason, .. } if to == "billing" && reason == "a refund"
    )));

    decide(journal.as_ref(), &run.id, "c1", Decision::Approve, false)
        .await
        .unwrap();
    // A fresh process: the first agent's definition, the journal.
    let resumed = triage
        .durable(journal.clone())
        .resume(&run.id)
        .await
        .unwrap();
    assert_eq!(
        resumed.outcome.outcome,
        Outcome::Final("Refunded invoice A-7.".into())
    );
    assert_eq!(resumed.outcome.agent.as_deref(), Some("billing"));
    assert_eq!(resumed.outcome.handoffs.len(), 1);
    assert_eq!(
        resumed.outcome.steps[1].calls[0].result.output,
        json!("refunded \"A-7\"")
    );
    assert_eq!(
        triage_model.requests().len(),
        1,
        "triage is not asked again"
    );
    let last = billing_model.requests().pop().unwrap();
    assert_eq!(last.system.as_deref(), Some("You handle billing."));
}

#[tokio::test]
async fn a_chat_session_goes_on_with_the_agent_handed_to() {
    use agentry::embed::KeywordEmbedder;
    use agentry::memory::{InMemoryStore, Memory};
    use agentry::tool::{Identity, Session};
    use agentry::turn::{FLOOR_KEY, TurnConfig, TurnInput};

    let billing_model = Arc::new(
        ScriptedModel::new()
            .reply(answer("Which invoice?", 5))
            .reply(answer("Refund on its way for A-7.", 5)),
    );
    let triage_model = Arc::new(ScriptedModel::new().reply(transfer("billing", "money")));
    let triage = Agent::builder(triage_model.clone())
        .name("triage")
        .system("Route the request.")
        .handoff(Handoff::to(billing(billing_model.clone())))
        .build()
        .unwrap();
    let store = Arc::new(InMemoryStore::new());
    let memory = Memory::new(store.clone(), KeywordEmbedder::new(["invoice"]));
    let config = TurnConfig::for_agent("desk", triage, memory);
    let turn = |text: &str| TurnInput::new(Session::new("s-1"), Identity::new("ana"), text);

    let first = config.run(turn("I want a refund")).await.unwrap();
    assert_eq!(first.text, "Which invoice?");
    let second = config.run(turn("Invoice A-7")).await.unwrap();
    assert_eq!(second.text, "Refund on its way for A-7.");
    assert_eq!(
        triage_model.requests().len(),
        1,
        "the second turn went to billing"
    );
    let asked = billing_model.requests().pop().unwrap();
    assert!(
        asked
            .system
            .as_deref()
            .unwrap()
            .starts_with("You handle billing."),
        "billing's own prompt (with the session's memory): {:?}",
        asked.system
    );
    let answered: Vec<Option<Value>> = store
        .records()
        .iter()
        .filter(|record| record.role == "assistant")
        .map(|record| record.metadata.get(FLOOR_KEY).cloned())
        .collect();
    assert_eq!(answered, [Some(json!("billing")), Some(json!("billing"))]);
}
