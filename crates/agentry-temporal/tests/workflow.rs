//! Agent runs as Temporal workflows on a real dev server (`temporal server
//! start-dev`), with a scripted model for the loop's logic: the same
//! outcome as an in-process run, the token budget, the step limit, and a
//! destructive call that waits for a person's update.

mod common;

use std::time::Duration;

use agentry_agent::{Agent, Outcome};
use agentry_core::journal::{Decision, Waiting};
use agentry_core::model::{
    ChatModel, ChatRequest, EventStream, FinishReason, ScriptedModel, Step, StreamEvent, Usage,
};
use agentry_core::tool::{ToolCall, function};
use agentry_temporal::{AgentWorkflow, RunInput, Status, TemporalRuns};
use futures_util::StreamExt;
use serde_json::json;

#[derive(serde::Deserialize)]
struct Add {
    x: i64,
    y: i64,
}

fn agent(model: ScriptedModel) -> Agent {
    let add = function("add")
        .arg::<i64>("x", "First addend")
        .arg::<i64>("y", "Second addend")
        .handler(|a: Add| Ok::<_, String>(a.x + a.y))
        .build()
        .unwrap()
        .with_name("add");
    Agent::builder(model)
        .tool(add)
        .tool(common::delete_file())
        .build()
        .unwrap()
}

fn add_then_answer() -> ScriptedModel {
    ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "add", json!({"x": 2, "y": 3}))],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "5".into(),
            tokens: Usage::new(12, 1),
        })
}

/// A worker for `agent` on its own task queue, in the background.
async fn worker(address: &str, queue: &str, agent: Agent) -> TemporalRuns {
    common::worker(address, queue, agent).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_on_temporal_gives_what_an_in_process_run_gives() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let local = agent(add_then_answer()).run("What is 2 + 3?").await;
    let runs = worker(server.address(), "same", agent(add_then_answer())).await;
    let remote = runs.run("same-1", "What is 2 + 3?").await.unwrap();
    assert_eq!(remote.outcome, Outcome::Final("5".into()));
    assert_eq!(remote.outcome, local.outcome);
    assert_eq!(remote.usage, local.usage);
    assert_eq!(remote.messages, local.messages);
    assert_eq!(remote.steps.len(), 2);
    assert_eq!(
        remote.steps[0].calls[0].result,
        local.steps[0].calls[0].result
    );
    assert_eq!(remote.steps[0].calls[0].result.output, json!(5));
    // The record reads the same through the query once the run has ended.
    let record = runs.record("same-1").await.unwrap();
    assert_eq!(record.status, Status::Ended);
    assert_eq!(record.usage, Usage::new(22, 6));
    // And the run is in the server's list.
    let listed = runs.list(10).await.unwrap();
    assert!(listed.iter().any(|run| run.id == "same-1"), "{listed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_destructive_call_waits_for_an_update_and_a_denial_reaches_the_model() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let delete = |id: &str| Step::Tool {
        calls: vec![ToolCall::new(id, "delete_file", json!({"path": "old.log"}))],
        text: String::new(),
        tokens: Usage::new(10, 5),
    };
    let model = ScriptedModel::new()
        .reply(delete("d1"))
        .reply(delete("d2"))
        .reply(Step::Final {
            text: "Done.".into(),
            tokens: Usage::new(10, 1),
        });
    let runs = worker(server.address(), "approvals", agent(model)).await;
    runs.start("approve-1", RunInput::new("delete old.log"))
        .await
        .unwrap();

    let record = common::record_until(&runs, "approve-1", |r| r.status == Status::Waiting).await;
    assert_eq!(record.waiting[0].call.id, "d1");
    assert_eq!(record.waiting[0].waiting, Waiting::Approval);
    // Temporal's UI shows what the run waits for (the workflow's current details).
    let metadata = std::process::Command::new(common::program().unwrap())
        .args([
            "workflow",
            "metadata",
            "--address",
            server.address(),
            "-w",
            "approve-1",
        ])
        .output()
        .unwrap();
    let metadata = String::from_utf8_lossy(&metadata.stdout);
    assert!(
        metadata.contains(
            "waiting for a person: call d1 delete_file({\"path\":\"old.log\"}) needs approval"
        ),
        "{metadata}"
    );
    // A decision on a call that does not wait is refused by the workflow.
    let wrong = runs.decide("approve-1", "nope", Decision::Approve).await;
    let wrong = wrong.unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "deciding on call \"nope\" of run \"approve-1\": no call \"nope\" waits for a decision"
    );

    runs.decide("approve-1", "d1", Decision::Approve)
        .await
        .unwrap();
    let record = common::record_until(&runs, "approve-1", |r| {
        r.waiting.iter().any(|w| w.call.id == "d2")
    })
    .await;
    assert_eq!(
        record.steps[0].calls[0].result.output,
        json!("deleted old.log")
    );
    let reason = "keep it for the audit".to_owned();
    runs.decide(
        "approve-1",
        "d2",
        Decision::Deny {
            reason: reason.clone(),
        },
    )
    .await
    .unwrap();

    let outcome = runs.outcome("approve-1").await.unwrap();
    assert_eq!(outcome.outcome, Outcome::Final("Done.".into()));
    let denied = &outcome.steps[1].calls[0].result;
    assert!(denied.is_error);
    assert_eq!(
        denied.output,
        json!(format!("tool \"delete_file\" was not approved: {reason}"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_step_limit_and_the_token_budget_hold() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let again = |id: &str, tokens| Step::Tool {
        calls: vec![ToolCall::new(id, "add", json!({"x": 1, "y": 1}))],
        text: String::new(),
        tokens,
    };
    let model = ScriptedModel::new()
        .reply(again("a", Usage::new(5, 5)))
        .reply(again("b", Usage::new(5, 5)))
        .reply(again("c", Usage::new(500, 5)))
        .reply(again("d", Usage::new(5, 5)));
    let runs = worker(server.address(), "limits", agent(model)).await;
    let input = RunInput {
        max_steps: Some(2),
        ..RunInput::new("add forever")
    };
    runs.start("steps-1", input).await.unwrap();
    let outcome = runs.outcome("steps-1").await.unwrap();
    assert_eq!(outcome.outcome, Outcome::OutOfSteps);
    assert_eq!(outcome.steps.len(), 2);

    // The third step spends past the budget of 100: its call is not run.
    let input = RunInput {
        token_budget: Some(100),
        ..RunInput::new("add forever")
    };
    runs.start("budget-1", input).await.unwrap();
    let outcome = runs.outcome("budget-1").await.unwrap();
    assert_eq!(outcome.outcome, Outcome::OverBudget);
    assert_eq!(outcome.steps.len(), 1);
    let refused = &outcome.steps[0].calls[0].result;
    assert_eq!(
        refused.output,
        json!("not run: the token budget is spent (505 tokens used)")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_or_oversized_input_fails_the_run_at_once_saying_why() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let runs = worker(server.address(), "malformed", agent(add_then_answer())).await;
    let big = "apple ".repeat(20_000);
    for (id, input, expected) in [
        (
            "negative",
            json!({"messages": [{"role": "user", "text": "hi"}], "max_steps": -1}),
            "the run's input is not a RunInput: invalid value: integer `-1`",
        ),
        (
            "no-messages",
            json!({"max_steps": 2}),
            "the run's input is not a RunInput: missing field `messages`",
        ),
        (
            "not-an-object",
            json!("hello"),
            "the run's input is not a RunInput: invalid type: string \"hello\"",
        ),
        (
            "empty",
            json!({"messages": []}),
            "the run's input holds no user message",
        ),
        (
            "big",
            json!({"messages": [{"role": "user", "text": big}]}),
            "the run's input is 120",
        ),
    ] {
        let options = temporalio_client::WorkflowStartOptions::new("malformed", id).build();
        runs.client()
            .start_workflow(AgentWorkflow::run, input, options)
            .await
            .unwrap();
        let error = runs.outcome(id).await.unwrap_err().to_string();
        assert!(error.contains(expected), "{id}: {error}");
    }
    // Its record reads as ended, saying why, and a follower gets its end at
    // once (it read as running for good, and callers waited for ever).
    let record = runs.record("big").await.unwrap();
    assert_eq!(record.status, Status::Ended);
    let text = record.text();
    assert!(
        text.contains("the run's workflow failed") && text.contains("the run's input is 120"),
        "{text}"
    );
    let events: Vec<_> = runs.follow("big").collect().await;
    match events.last() {
        Some(agentry_agent::AgentEvent::Final { run }) => {
            assert_eq!(run.outcome.kind(), "model_error")
        }
        other => panic!("{other:?}"),
    }
    // An ended run's id is not reused.
    let again = runs.start("big", RunInput::new("again")).await.unwrap_err();
    assert!(
        again.to_string().contains("starting run \"big\""),
        "{again}"
    );

    // A terminated run reads as ended, saying so.
    runs.start("cut", RunInput::new("delete old.log"))
        .await
        .unwrap();
    let handle = runs.client().get_workflow_handle::<AgentWorkflow>("cut");
    handle
        .terminate(temporalio_client::WorkflowTerminateOptions::default())
        .await
        .unwrap();
    let record = runs.record("cut").await.unwrap();
    assert_eq!(record.status, Status::Ended);
    assert!(
        record.text().contains("the run's workflow was terminated"),
        "{}",
        record.text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_decision_is_refused_and_the_run_still_waits() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let delete = Step::Tool {
        calls: vec![ToolCall::new(
            "d1",
            "delete_file",
            json!({"path": "old.log"}),
        )],
        text: String::new(),
        tokens: Usage::new(10, 5),
    };
    let model = ScriptedModel::new().reply(delete).reply(Step::Final {
        text: "Kept.".into(),
        tokens: Usage::new(10, 1),
    });
    let runs = worker(server.address(), "big-decision", agent(model)).await;
    runs.start("big-1", RunInput::new("delete old.log"))
        .await
        .unwrap();
    common::record_until(&runs, "big-1", |r| r.status == Status::Waiting).await;
    let reason = "no ".repeat(10_000);
    let refused = runs
        .decide("big-1", "d1", Decision::Deny { reason })
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("at most 16384 are taken"),
        "{refused}"
    );
    // Nothing was taken: the call still waits, and a decision of fair size ends it.
    let record = runs.record("big-1").await.unwrap();
    assert_eq!(record.waiting.len(), 1);
    let reason = "keep it".to_owned();
    runs.decide("big-1", "d1", Decision::Deny { reason })
        .await
        .unwrap();
    assert_eq!(
        runs.outcome("big-1").await.unwrap().outcome,
        Outcome::Final("Kept.".into())
    );
}

/// A model that says its answer a word every 400 ms.
struct Slow;

impl ChatModel for Slow {
    fn model_id(&self) -> &str {
        "slow"
    }

    fn stream<'a>(&'a self, _request: &'a ChatRequest) -> EventStream<'a> {
        let words = ["The ", "answer ", "is ", "five."];
        let deltas = futures_util::stream::iter(words).then(|word| async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            Ok(StreamEvent::TextDelta {
                text: word.to_owned(),
            })
        });
        let end = futures_util::stream::iter([
            Ok(StreamEvent::Usage {
                usage: Usage::new(10, 4),
            }),
            Ok(StreamEvent::Finish {
                reason: FinishReason::Stop,
            }),
        ]);
        deltas.chain(end).boxed()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_text_under_way_reaches_the_caller_through_heartbeats_not_history() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let runs = worker(server.address(), "progress", Agent::new(Slow)).await;
    runs.start("progress-1", RunInput::new("What is 2 + 3?"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    loop {
        if let Some(progress) = runs.progress("progress-1").await.unwrap() {
            assert_eq!(progress.step, 1);
            if seen.last() != Some(&progress.text) {
                seen.push(progress.text);
            }
        }
        if runs.record("progress-1").await.unwrap().status == Status::Ended {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Part of the answer was read while the model was still saying it.
    assert!(
        seen.iter()
            .any(|text| !text.is_empty() && text != "The answer is five."),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|text| "The answer is five.".starts_with(text.as_str())),
        "{seen:?}"
    );
    let outcome = runs.outcome("progress-1").await.unwrap();
    assert_eq!(
        outcome.outcome,
        Outcome::Final("The answer is five.".into())
    );
    // Nothing of the deltas is in the history: no progress once the step is done.
    assert_eq!(runs.progress("progress-1").await.unwrap(), None);
}

#[derive(serde::Deserialize)]
struct Size {
    kib: usize,
}

/// A conversation or a tool result too large for Temporal's payloads ends
/// the run, or reaches the model, saying so: nothing is left stuck.
#[tokio::test(flavor = "multi_thread")]
async fn results_and_conversations_past_temporals_payload_limit_say_so() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let big = || {
        function("big")
            .arg::<usize>("kib", "how many KiB of text")
            .handler(|a: Size| Ok::<_, String>("x".repeat(a.kib * 1024)))
            .build()
            .unwrap()
            .with_name("big")
    };
    let call = |id: &str, kib: usize| ToolCall::new(id, "big", json!({"kib": kib}));
    let ask = |calls: Vec<ToolCall>| Step::Tool {
        calls,
        text: String::new(),
        tokens: Usage::new(1, 1),
    };
    let done = || Step::Final {
        text: "done".into(),
        tokens: Usage::new(1, 1),
    };
    // A result past 256 KiB is an error result; three of 250 KiB (each held
    // twice in the record) leave no room for another step.
    let model = ScriptedModel::new()
        .reply(ask(vec![call("b0", 300)]))
        .reply(ask(vec![call("b1", 250)]))
        .reply(ask(vec![call("b2", 250)]))
        .reply(ask(vec![call("b3", 250)]))
        .reply(done());
    let agent = Agent::builder(model)
        .tool(big())
        .max_steps(10)
        .build()
        .unwrap();
    let runs = worker(server.address(), "payloads", agent).await;
    let outcome = runs.run("payloads-1", "make it big").await.unwrap();
    let first = &outcome.steps[0].calls[0].result;
    assert!(first.is_error);
    assert!(
        first.output_text().starts_with("the tool's result is 3072"),
        "{}",
        first.output_text()
    );
    assert_eq!(outcome.steps.len(), 4);
    match &outcome.outcome {
        Outcome::ModelError(error) => assert!(
            error
                .to_string()
                .contains("the model was not asked again: the run holds"),
            "{error}"
        ),
        other => panic!("{other:?}"),
    }

    // A call that could take the record past the limit is not run; the
    // model is told, and answers.
    let model = ScriptedModel::new()
        .reply(ask(vec![call("c1", 200)]))
        .reply(ask(vec![call("c2", 200)]))
        .reply(ask(vec![call("c3", 200), call("c4", 200)]))
        .reply(done());
    let agent = Agent::builder(model)
        .tool(big())
        .max_steps(10)
        .build()
        .unwrap();
    let runs = worker(server.address(), "payloads-calls", agent).await;
    let outcome = runs.run("payloads-2", "make it big").await.unwrap();
    assert_eq!(outcome.outcome, Outcome::Final("done".into()));
    let third = &outcome.steps[2].calls;
    assert!(!third[0].result.is_error);
    assert!(
        third[1]
            .result
            .output_text()
            .starts_with("not run: the run holds"),
        "{}",
        third[1].result.output_text()
    );
}
