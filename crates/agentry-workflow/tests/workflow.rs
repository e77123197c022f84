//! Workflows on scripted models (loop logic only; `agentry workflow run`
//! runs one on the local model in agentry-cli's tests): each pattern, each
//! way a step fails, approvals and an agent's destructive call as
//! interrupts that a checkpoint resumes, and the `[workflow]` table.

use std::sync::Arc;

use agentry_agent::Agent;
use agentry_agent::durable::{Decision, InMemoryJournal};
use agentry_core::model::{ModelError, ScriptedModel, Step as ModelStep, Usage};
use agentry_core::tool::{ToolCall, ToolHints, function};
use agentry_workflow::{
    Answer, Checkpoint, InterruptKind, Loop, Parts, Route, Step, StepSpec, Workflow,
    WorkflowOutcome,
};
use serde_json::{Value, json};

fn final_step(text: &str) -> ModelStep {
    ModelStep::Final {
        text: text.into(),
        tokens: Usage::new(10, 2),
    }
}

/// An agent named `name` whose model says `replies` in turn.
fn agent(name: &str, replies: &[&str]) -> (Agent, Arc<ScriptedModel>) {
    let model = Arc::new(replies.iter().fold(ScriptedModel::new(), |model, text| {
        model.reply(final_step(text))
    }));
    let agent = Agent::builder(model.clone()).name(name).build().unwrap();
    (agent, model)
}

fn said(model: &ScriptedModel, n: usize) -> String {
    match &model.requests()[n].messages[0] {
        agentry_core::model::Message::User { text } => text.clone(),
        other => panic!("{other:?}"),
    }
}

fn done(text: &str) -> WorkflowOutcome {
    WorkflowOutcome::Done {
        output: text.into(),
    }
}

#[tokio::test]
async fn a_model_routes_among_named_routes_under_a_schema() {
    let router = Arc::new(ScriptedModel::new().reply(final_step(r#"{"route": "billing"}"#)));
    let (billing, _) = agent("billing", &["Refund issued."]);
    let (support, support_model) = agent("support", &[]);
    let flow = Workflow::new(
        "desk",
        Route::by_model(router.clone())
            .to("billing", "Invoices and refunds.", Step::agent(billing))
            .to("support", "Crashes and errors.", Step::agent(support)),
    );
    let run = flow.run("r", "I was charged twice").await;
    assert_eq!(run.outcome, done("Refund issued."));
    let schema = &router.requests()[0].response_format.clone().unwrap();
    assert_eq!(
        serde_json::to_value(schema).unwrap()["schema"]["properties"]["route"]["enum"],
        json!(["billing", "support"])
    );
    let steps: Vec<(&str, &str)> = run
        .trace
        .iter()
        .map(|t| (t.step.as_str(), t.kind))
        .collect();
    assert_eq!(steps, [("#route", "route"), ("billing", "agent")]);
    assert_eq!(run.trace[1].agent.as_deref(), Some("billing"));
    assert!(support_model.requests().is_empty());

    let lost = Arc::new(ScriptedModel::new().reply(final_step(r#"{"route": "sales"}"#)));
    let flow = Workflow::new(
        "desk",
        Route::by_model(lost).to("billing", "Invoices.", Step::agent(agent("b", &[]).0)),
    );
    let run = flow.run("r", "Buy more").await;
    assert_eq!(
        run.outcome,
        WorkflowOutcome::Failed {
            step: "#route".into(),
            error: r#"the router named no route: "{\"route\": \"sales\"}""#.into()
        }
    );
}

#[tokio::test]
async fn a_pipeline_feeds_each_step_the_last_ones_output() {
    let (first, _) = agent("first", &["one"]);
    let (second, second_model) = agent("second", &["two"]);
    let flow = Workflow::new(
        "pipe",
        Step::sequence([
            Step::agent(first),
            Step::program(
                "upper",
                |text: String| async move { Ok(text.to_uppercase()) },
            ),
            Step::agent(second),
        ]),
    );
    let run = flow.run("r", "go").await;
    assert_eq!(run.outcome, done("two"));
    assert_eq!(said(&second_model, 0), "ONE");
    assert_eq!(run.usage.total(), 24);
    assert_eq!(run.checkpoint.outputs["2"], "ONE");
}

#[tokio::test]
async fn branches_run_on_the_same_input_and_the_join_gets_them_all() {
    let (risks, risks_model) = agent("risks", &["Rates may rise."]);
    let (upside, _) = agent("upside", &["Demand is strong."]);
    let (editor, editor_model) = agent("editor", &["Balanced view."]);
    let flow = Workflow::new(
        "views",
        Step::parallel([
            ("risks", Step::agent(risks)),
            ("upside", Step::agent(upside)),
        ])
        .join(Step::agent(editor)),
    );
    let run = flow.run("r", "The housing market").await;
    assert_eq!(run.outcome, done("Balanced view."));
    assert_eq!(said(&risks_model, 0), "The housing market");
    assert_eq!(
        said(&editor_model, 0),
        "## risks\nRates may rise.\n\n## upside\nDemand is strong."
    );
}

#[tokio::test]
async fn a_loop_goes_round_with_the_checks_feedback_until_it_passes() {
    let (writer, writer_model) = agent("writer", &["A claim.", "A claim [source: ONS]."]);
    let flow = Workflow::new(
        "cited",
        Loop::until(Step::agent(writer), |text| {
            if text.contains("[source:") {
                Ok(())
            } else {
                Err("cite a source".into())
            }
        }),
    );
    let run = flow.run("r", "Write one claim").await;
    assert_eq!(run.outcome, done("A claim [source: ONS]."));
    let again = said(&writer_model, 1);
    assert!(again.starts_with("Write one claim\n\nYour last answer:\nA claim.\n\nIt did not pass the check: cite a source"), "{again}");
    assert_eq!(
        run.checkpoint.outputs["#round-1/#check"],
        "fail: cite a source"
    );

    let (stubborn, _) = agent("writer", &["No.", "No."]);
    let flow = Workflow::new(
        "cited",
        Loop::until(Step::agent(stubborn), |_| Err("cite a source".into())).max_rounds(2),
    );
    let run = flow.run("r", "Write one claim").await;
    assert_eq!(
        run.outcome,
        WorkflowOutcome::Failed {
            step: "workflow".into(),
            error: "the check did not pass in 2 rounds: cite a source".into()
        }
    );
}

#[tokio::test]
async fn a_judge_decides_when_a_loop_may_stop() {
    let (writer, _) = agent("writer", &["short", "long enough"]);
    let judge = Arc::new(
        ScriptedModel::new()
            .reply(final_step(r#"{"pass": false, "reason": "too short"}"#))
            .reply(final_step(r#"{"pass": true, "reason": "ok"}"#)),
    );
    let flow = Workflow::new(
        "judged",
        Loop::until_judged(Step::agent(writer), judge.clone(), "At least two words."),
    );
    let run = flow.run("r", "Write").await;
    assert_eq!(run.outcome, done("long enough"));
    assert!(judge.requests()[0].response_format.is_some());
    assert_eq!(run.usage.total(), 48, "the judge's tokens count");
}

#[tokio::test]
async fn a_failing_agent_or_program_fails_the_workflow_at_its_step() {
    let broken =
        Agent::builder(ScriptedModel::new().fail(ModelError::Transport("connection reset".into())))
            .name("broken")
            .build()
            .unwrap();
    let flow = Workflow::new(
        "f",
        Step::sequence([
            Step::program("fine", |text: String| async move { Ok(text) }),
            Step::agent(broken),
        ]),
    );
    let run = flow.run("r", "go").await;
    let WorkflowOutcome::Failed { step, error } = &run.outcome else {
        panic!("{:?}", run.outcome)
    };
    assert_eq!(step, "2");
    assert!(
        error.starts_with("agent broken did not answer: model error:"),
        "{error}"
    );

    let flow = Workflow::new(
        "f",
        Step::program(
            "parse",
            |_: String| async move { Err("not a number".into()) },
        ),
    );
    assert_eq!(
        flow.run("r", "x").await.outcome,
        WorkflowOutcome::Failed {
            step: "workflow".into(),
            error: "parse: not a number".into()
        }
    );
}

#[tokio::test]
async fn an_approval_interrupts_and_a_person_approves_or_rejects() {
    let (writer, writer_model) = agent("writer", &["Draft."]);
    let flow = Workflow::new(
        "send",
        Step::sequence([Step::agent(writer), Step::approval("Send it?")]),
    );
    let run = flow.run("r", "Write").await;
    let WorkflowOutcome::Interrupted(interrupt) = &run.outcome else {
        panic!("{:?}", run.outcome)
    };
    assert_eq!(interrupt.step, "2");
    assert_eq!(
        interrupt.kind,
        InterruptKind::Approval {
            question: "Send it?".into(),
            text: "Draft.".into()
        }
    );
    // The checkpoint is kept as JSON until someone answers.
    let saved = serde_json::to_string(&run.checkpoint).unwrap();
    let mut checkpoint: Checkpoint = serde_json::from_str(&saved).unwrap();
    let mut rejected = checkpoint.clone();
    checkpoint.answer(Answer::Approve).unwrap();
    let run = flow.resume(checkpoint).await;
    assert_eq!(run.outcome, done("Draft."));
    assert_eq!(
        writer_model.requests().len(),
        1,
        "the writer did not run again"
    );

    rejected
        .answer(Answer::Reject {
            reason: "off-brand".into(),
        })
        .unwrap();
    assert_eq!(
        flow.resume(rejected).await.outcome,
        WorkflowOutcome::Rejected {
            step: "2".into(),
            reason: "off-brand".into()
        }
    );
    let mut done_run = flow.run("r2", "Write").await.checkpoint;
    done_run.interrupt = None;
    assert_eq!(
        done_run.answer(Answer::Approve),
        Err("the run does not wait for an approval".into())
    );
}

#[tokio::test]
async fn an_agents_destructive_call_interrupts_until_decided() {
    let deleted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = deleted.clone();
    let delete = function("delete_draft")
        .arg::<String>("id", "The draft")
        .hints(ToolHints {
            destructive: true,
            ..Default::default()
        })
        .handler(move |_: Value| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>("deleted")
        })
        .build()
        .unwrap()
        .with_name("delete_draft");
    let model = ScriptedModel::new()
        .reply(ModelStep::Tool {
            calls: vec![ToolCall::new("c1", "delete_draft", json!({"id": "d-1"}))],
            text: String::new(),
            tokens: Usage::new(5, 1),
        })
        .reply(final_step("Deleted d-1."));
    let cleaner = Agent::builder(model)
        .name("cleaner")
        .tool(delete)
        .build()
        .unwrap();
    let (reporter, reporter_model) = agent("reporter", &["Done: d-1 is gone."]);
    let flow = Workflow::new(
        "clean",
        Step::sequence([Step::agent(cleaner), Step::agent(reporter)]),
    )
    .journal(InMemoryJournal::new());

    let run = flow.run("w-1", "Delete draft d-1").await;
    let WorkflowOutcome::Interrupted(interrupt) = &run.outcome else {
        panic!("{:?}", run.outcome)
    };
    let InterruptKind::Calls { run: id, calls } = &interrupt.kind else {
        panic!("{interrupt:?}")
    };
    assert_eq!(id, "w-1/1");
    assert_eq!(calls[0].call.name, "delete_draft");
    assert_eq!(deleted.load(std::sync::atomic::Ordering::SeqCst), 0);

    flow.decide(&run.checkpoint, "c1", Decision::Approve)
        .await
        .unwrap();
    let run = flow.resume(run.checkpoint).await;
    assert_eq!(run.outcome, done("Done: d-1 is gone."));
    assert_eq!(deleted.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(said(&reporter_model, 0), "Deleted d-1.");
}

#[tokio::test]
async fn a_workflow_written_in_toml_runs_as_written() {
    let spec: toml::Table = toml::from_str(
        r#"
        sequence = [
            { route = [
                { name = "short", description = "Short texts.", program = "echo" },
                { name = "long", description = "Long texts.", agent = "summariser" },
            ], router = "by_length" },
            { repeat = { program = "echo" }, until = { program = "non_empty" }, max_rounds = 2 },
        ]
        "#,
    )
    .unwrap();
    let spec: StepSpec = spec.try_into().unwrap();
    let (summariser, _) = agent("summariser", &["In short: fine."]);
    let parts = Parts::default()
        .agent("summariser", summariser)
        .program(
            "echo",
            Step::program("echo", |text: String| async move { Ok(text) }),
        )
        .check("non_empty", |text| {
            if text.is_empty() {
                Err("empty".into())
            } else {
                Ok(())
            }
        })
        .router("by_length", |text| {
            Some(if text.len() > 20 { "long" } else { "short" }.to_owned())
        });
    let flow = Workflow::new("written", spec.build(&parts).unwrap());
    let run = flow.run("r", "A rather long text about nothing").await;
    assert_eq!(run.outcome, done("In short: fine."));

    for (written, why) in [
        (
            "agent = \"a\"\nprogram = \"b\"",
            "a step has exactly one of agent, program",
        ),
        (
            "sequence = [{ agent = \"ghost\" }]",
            "sequence[1]: no agent is named `ghost`",
        ),
        (
            "parallel = [{ agent = \"summariser\" }]",
            "each parallel step has a name",
        ),
        (
            "route = [{ name = \"a\", agent = \"summariser\" }]",
            "a route needs a model or a router",
        ),
        ("repeat = { agent = \"summariser\" }", "repeat needs until"),
        (
            "approval = \"ok?\"\njoin = { agent = \"summariser\" }",
            "join goes with parallel",
        ),
    ] {
        let spec: StepSpec = toml::from_str::<toml::Table>(written)
            .unwrap()
            .try_into()
            .unwrap();
        let error = spec.build(&parts).unwrap_err();
        assert!(error.contains(why), "{written}: {error}");
    }
    let unknown = toml::from_str::<toml::Table>("agnet = \"a\"")
        .unwrap()
        .try_into::<StepSpec>()
        .unwrap_err();
    assert!(
        unknown.to_string().contains("unknown field `agnet`"),
        "{unknown}"
    );
}

#[tokio::test]
async fn a_checkpoint_resumes_only_its_own_workflow_and_the_text_it_showed() {
    let (writer, _) = agent("writer", &["Draft."]);
    let flow = Workflow::new(
        "send",
        Step::sequence([Step::agent(writer), Step::approval("Send it?")]),
    );
    let mut checkpoint = flow.run("r", "Write").await.checkpoint;
    checkpoint.answer(Answer::Approve).unwrap();

    // Another workflow (here: another question) does not take it.
    let (writer, _) = agent("writer", &[]);
    let other = Workflow::new(
        "send",
        Step::sequence([Step::agent(writer), Step::approval("Publish it?")]),
    );
    assert_eq!(
        other.resume(checkpoint.clone()).await.outcome,
        WorkflowOutcome::Failed {
            step: "workflow".into(),
            error: "the checkpoint was made by another workflow (its steps have changed since)"
                .into()
        }
    );

    // An approval holds only for the text that was shown.
    let mut forged = checkpoint.clone();
    forged.outputs.insert("1".into(), "Something else.".into());
    assert_eq!(
        flow.resume(forged).await.outcome,
        WorkflowOutcome::Failed {
            step: "2".into(),
            error: "the text to approve is not the one that was shown; run the workflow again"
                .into()
        }
    );
    assert_eq!(flow.resume(checkpoint).await.outcome, done("Draft."));
}

#[tokio::test]
async fn a_checkpoint_decides_only_on_its_own_waiting_run() {
    let flow = Workflow::new("w", Step::approval("ok?")).journal(InMemoryJournal::new());
    let mut checkpoint = flow.run("w-1", "x").await.checkpoint;
    checkpoint.interrupt = Some(agentry_workflow::Interrupt {
        step: "1".into(),
        kind: InterruptKind::Calls {
            run: "someone-elses-run".into(),
            calls: Vec::new(),
        },
    });
    assert_eq!(
        flow.decide(&checkpoint, "call_1", Decision::Approve).await,
        Err("the checkpoint's waiting run `someone-elses-run` is not its step 1's".into())
    );
}

#[tokio::test]
async fn names_the_workflow_uses_for_its_own_places_are_refused_in_code_too() {
    let (a, _) = agent("a", &["x"]);
    let flow = Workflow::new("w", Step::parallel([("#join", Step::agent(a))]));
    let WorkflowOutcome::Failed { error, .. } = flow.run("r", "x").await.outcome else {
        panic!()
    };
    assert!(
        error.starts_with("branch name `#join`: names are not empty"),
        "{error}"
    );
}
