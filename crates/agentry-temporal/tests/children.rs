//! Child agents as child workflows on a real dev server: a call to a child
//! agent registered with `AgentActivities::child` starts a run of its own
//! (its steps and calls are activities of the child workflow), with what
//! both it and its parent grant, what its parent has left of the token
//! budget, and the outermost agent's depth limit; the outcome is the one
//! an in-process run of the same agents gives. A child's destructive call
//! waits in the child workflow and is decided there. Scripted models: loop
//! logic only.

mod common;

use std::sync::Arc;

use agentry_agent::{Agent, AgentBuilder, Outcome, RunOutcome};
use agentry_core::journal::{Decision, Waiting};
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{Capability, Tool, ToolCall, ToolContext, function};
use agentry_temporal::{AgentActivities, RunInput, Status, TemporalRuns};
use serde_json::{Value, json};

fn call(id: &str, name: &str, input: Value) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new(id, name, input)],
        text: String::new(),
        tokens: Usage::new(10, 5),
    }
}

fn answer(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(20, 4),
    }
}

#[derive(serde::Deserialize)]
struct NoArgs {}

/// A tool that says whether the environment variable `var` may be read.
fn peek(name: &str, var: &'static str) -> Tool {
    function(name)
        .capability(Capability::env(var))
        .handler(move |_: NoArgs, ctx: &ToolContext| Ok::<_, String>(ctx.env(var).is_ok()))
        .build()
        .unwrap()
        .with_name(name)
}

/// Calls `peek` and `path` in one step, then answers "Found it.": 30 + 9
/// tokens. It grants both HOME and PATH.
fn researcher() -> Agent {
    Agent::builder(
        ScriptedModel::new()
            .reply(Step::Tool {
                calls: vec![
                    ToolCall::new("k1", "peek", json!({})),
                    ToolCall::new("k2", "path", json!({})),
                ],
                text: String::new(),
                tokens: Usage::new(10, 5),
            })
            .reply(answer("Found it.")),
    )
    .system("You look things up.")
    .tools([peek("peek", "HOME"), peek("path", "PATH")])
    .grant(Capability::env("HOME"))
    .grant(Capability::env("PATH"))
    .build()
    .unwrap()
}

/// Calls the researcher once, then answers. It grants HOME only.
fn parent(child: &Agent) -> AgentBuilder {
    Agent::builder(
        ScriptedModel::new()
            .reply(call(
                "p1",
                "researcher",
                json!({"task": "find the refund policy"}),
            ))
            .reply(answer("The policy says yes.")),
    )
    .tool(child.as_tool("researcher", "Looks things up for you."))
    .grant(Capability::env("HOME"))
}

/// A worker for `agent` with `child` registered as the child agent
/// `researcher`, on its own task queue, in the background.
async fn worker(address: &str, queue: &str, agent: Agent, child: Agent) -> TemporalRuns {
    worker_of(address, queue, agent, vec![("researcher", child)]).await
}

/// A worker for `agent` with these child agents registered.
async fn worker_of(
    address: &str,
    queue: &str,
    agent: Agent,
    children: Vec<(&str, Agent)>,
) -> TemporalRuns {
    let mut activities = AgentActivities::new(Arc::new(agent));
    for (name, child) in children {
        activities = activities.child(name, child);
    }
    common::worker(address, queue, activities).await
}

/// `lead()` asked `task` in process and, with `children()` registered, on
/// Temporal as run `id` (on a queue of its own): the two give the same
/// outcome, tokens and results. The remote outcome, and the runs.
async fn both_ways(
    address: &str,
    id: &str,
    task: &str,
    lead: impl Fn() -> Agent,
    children: impl Fn() -> Vec<(&'static str, Agent)>,
) -> (RunOutcome, TemporalRuns) {
    let local = lead().run(task).await;
    let runs = worker_of(address, id, lead(), children()).await;
    let remote = runs.run(id, task).await.unwrap();
    assert_eq!(remote.outcome, local.outcome);
    assert_eq!(remote.usage, local.usage);
    assert_eq!(remote.messages, local.messages);
    assert_eq!(results(&remote), results(&local));
    (remote, runs)
}

/// Each step's calls' results, child runs' included (durations differ).
fn results(run: &RunOutcome) -> Vec<Value> {
    let mut out = Vec::new();
    for step in &run.steps {
        for record in &step.calls {
            out.push(record.result.output.clone());
            if let Some(child) = &record.child {
                out.push(
                    json!({"child": child.agent, "outcome": child.outcome.kind(),
                    "usage": [child.usage.input_tokens, child.usage.output_tokens]}),
                );
                for step in &child.steps {
                    for record in &step.calls {
                        out.push(record.result.output.clone());
                    }
                }
            }
        }
    }
    out
}

/// The history with event types as plain words: `childworkflowexecutioncompleted`.
fn plain(history: &str) -> String {
    history.to_lowercase().replace('_', "")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_agent_runs_as_a_child_workflow_with_what_both_grant() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let (remote, runs) = both_ways(
        server.address(),
        "kids-1",
        "Can I get a refund?",
        || parent(&researcher()).build().unwrap(),
        || vec![("researcher", researcher())],
    )
    .await;
    assert_eq!(
        remote.outcome,
        Outcome::Final("The policy says yes.".into())
    );
    assert_eq!(remote.usage, Usage::new(10 + 20 + 30, 5 + 4 + 9));
    // The child's tools ran with what both grant: HOME, not PATH.
    assert_eq!(
        results(&remote)[2..],
        [
            json!(true),
            json!("tool \"path\" needs env(\"PATH\"), which this agent does not grant")
        ]
    );

    // The child was a workflow of its own, its calls activities there.
    let child_id = "kids-1/step-1-call-1";
    let child = runs.record(child_id).await.unwrap();
    assert_eq!(child.status, Status::Ended);
    assert_eq!(child.usage, Usage::new(30, 9));
    assert_eq!(
        child.messages[0],
        agentry_core::model::Message::user("find the refund policy")
    );
    let history = plain(&server.history(child_id).unwrap());
    assert!(history.contains("agentry.calltool"), "{history}");
    let history = plain(&server.history("kids-1").unwrap());
    assert!(
        history.contains("childworkflowexecutioncompleted"),
        "{history}"
    );
    // The parent's record names it.
    let record = runs.record("kids-1").await.unwrap();
    let entry = record.steps[0].calls[0].child.as_ref().unwrap();
    assert_eq!(
        (entry.agent.as_str(), entry.workflow_id.as_str()),
        ("researcher", child_id)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_childs_tokens_count_against_the_parents_budget_and_nesting_stops_at_the_limit() {
    let Some(server) = common::dev_server() else {
        return;
    };
    // The child alone spends 30 + 9; with the parent's first step (15) the
    // run is past its budget of 40 and stops there, as in process.
    let (remote, runs) = both_ways(
        server.address(),
        "budget-1",
        "go",
        || parent(&researcher()).token_budget(40).build().unwrap(),
        || vec![("researcher", researcher())],
    )
    .await;
    assert_eq!(remote.outcome, Outcome::OverBudget);
    // The child was given what the parent had left: 40 − 15.
    let child = runs.record("budget-1/step-1-call-1").await.unwrap();
    assert_eq!(child.usage, Usage::new(30, 9));

    // No nesting allowed: the child is not started, the parent goes on.
    let (remote, runs) = both_ways(
        server.address(),
        "depth-1",
        "go",
        || parent(&researcher()).max_depth(0).build().unwrap(),
        || vec![("researcher", researcher())],
    )
    .await;
    assert_eq!(
        remote.steps[0].calls[0].result.output,
        json!(
            "tool \"researcher\" failed: agent \"researcher\" was not started: agents may nest only 0 deep"
        )
    );
    assert!(runs.record("depth-1/step-1-call-1").await.is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_childs_destructive_call_waits_in_the_child_workflow_and_is_decided_there() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let cleaner = Agent::builder(
        ScriptedModel::new()
            .reply(call("d1", "delete_file", json!({"path": "old.log"})))
            .reply(answer("Deleted old.log.")),
    )
    .tool(common::delete_file())
    .build()
    .unwrap();
    let lead = Agent::builder(
        ScriptedModel::new()
            .reply(call("p1", "researcher", json!({"task": "delete old.log"})))
            .reply(answer("It is gone.")),
    )
    .tool(cleaner.as_tool("researcher", "Cleans up."))
    .build()
    .unwrap();
    let runs = worker(server.address(), "careful", lead, cleaner).await;
    runs.start("careful-1", RunInput::new("clean up"))
        .await
        .unwrap();
    let child_id = "careful-1/step-1-call-1";
    let waiting = common::record_until(&runs, child_id, |r| r.status == Status::Waiting).await;
    assert_eq!(waiting.waiting[0].call.id, "d1");
    assert_eq!(waiting.waiting[0].waiting, Waiting::Approval);
    // The parent runs on, waiting for its child.
    assert_eq!(
        runs.record("careful-1").await.unwrap().status,
        Status::Running
    );

    runs.decide(child_id, "d1", Decision::Approve)
        .await
        .unwrap();
    let outcome = runs.outcome("careful-1").await.unwrap();
    assert_eq!(outcome.outcome, Outcome::Final("It is gone.".into()));
    let child = outcome.steps[0].calls[0].child.as_ref().unwrap();
    assert_eq!(
        child.steps[0].calls[0].result.output,
        json!("deleted old.log")
    );
    assert_eq!(
        outcome.steps[0].calls[0].result.output,
        json!("Deleted old.log.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_child_is_an_error_result_and_grandchildren_stop_at_the_outermost_limit() {
    let Some(server) = common::dev_server() else {
        return;
    };
    // lead (depth limit 1) → middle → bottom: bottom would be 2 deep, so
    // middle's call to it is refused and middle answers without it.
    let bottom = || {
        Agent::builder(ScriptedModel::new().reply(answer("from the bottom")))
            .build()
            .unwrap()
    };
    let middle = |bottom: &Agent| {
        Agent::builder(
            ScriptedModel::new()
                .reply(call("m1", "bottom", json!({"task": "dig"})))
                .reply(answer("nothing below")),
        )
        .tool(bottom.as_tool("bottom", "Digs."))
        .build()
        .unwrap()
    };
    let lead = |middle: &Agent| {
        Agent::builder(
            ScriptedModel::new()
                .reply(call("l1", "middle", json!({"task": "look below"})))
                .reply(answer("done")),
        )
        .tool(middle.as_tool("middle", "Looks below."))
        .max_depth(1)
        .build()
        .unwrap()
    };
    let (remote, _) = both_ways(
        server.address(),
        "deep-1",
        "go",
        || lead(&middle(&bottom())),
        || vec![("middle", middle(&bottom())), ("bottom", bottom())],
    )
    .await;
    assert_eq!(remote.outcome, Outcome::Final("done".into()));
    let refused = &remote.steps[0].calls[0].child.as_ref().unwrap().steps[0].calls[0];
    assert_eq!(
        refused.result.output,
        json!(
            "tool \"bottom\" failed: agent \"bottom\" was not started: agents may nest only 1 deep"
        )
    );

    // A child whose model fails: an error result, and the parent goes on.
    let broken = || {
        // Every try of its step fails (Temporal tries a model step 3 times).
        let reset = || agentry_core::model::ModelError::Transport("connection reset".into());
        Agent::builder(
            ScriptedModel::new()
                .fail(reset())
                .fail(reset())
                .fail(reset()),
        )
        .build()
        .unwrap()
    };
    let runs = worker(
        server.address(),
        "broken",
        parent(&broken()).build().unwrap(),
        broken(),
    )
    .await;
    let remote = runs.run("broken-1", "go").await.unwrap();
    assert_eq!(
        remote.outcome,
        Outcome::Final("The policy says yes.".into())
    );
    let failed = &remote.steps[0].calls[0];
    let message = failed.result.error_message().unwrap();
    assert!(
        message.starts_with("tool \"researcher\" failed: agent \"researcher\" did not answer:")
            && message.contains("connection reset"),
        "{message}"
    );
    assert_eq!(failed.child.as_ref().unwrap().outcome.kind(), "model_error");
}
