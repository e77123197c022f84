//! The harness on scripted models (loop logic only; the local model runs
//! the demo agent's cases in agentry-cli's tests): what reaches the model,
//! repeats and concurrency, every fault a trial can meet (a hung tool, a
//! failing model, an agent that cannot be built, a judge that fails or
//! talks nonsense), and the reports (JSON back as a baseline, JUnit XML).

use std::sync::Arc;
use std::time::Duration;

use agentry_agent::{Agent, Guardrail, Verdict};
use agentry_core::model::{ChatRequest, Message, ModelError, ScriptedModel, Step, Usage};
use agentry_core::tool::{Tool, ToolCall, ToolHandler};
use agentry_evals::{Case, Check, Harness, Report, Suite};
use serde_json::json;

/// A model whose every step (`n` of them) comes from `respond`.
fn model(
    n: usize,
    respond: impl Fn(&ChatRequest) -> Result<Step, ModelError> + Send + Sync + 'static,
) -> ScriptedModel {
    let respond = Arc::new(respond);
    (0..n).fold(ScriptedModel::new(), |model, _| {
        let respond = respond.clone();
        model.respond(move |request| respond(request))
    })
}

/// A message's text (a tool result's JSON).
fn said(message: &Message) -> String {
    match message {
        Message::User { text } | Message::Assistant { text, .. } => text.clone(),
        Message::Tool { result } => result.output.to_string(),
    }
}

fn text(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(10, 2),
    }
}

fn suite(toml: &str) -> Suite {
    Suite::from_toml(toml).expect("a valid suite")
}

#[tokio::test]
async fn the_conversation_and_the_context_reach_the_model() {
    let model = Arc::new(model(1, |request| {
        let said: Vec<String> = request.messages.iter().map(said).collect();
        Ok(text(&format!(
            "system: {} | said: {}",
            request.system.clone().unwrap_or_default(),
            said.join(" / ")
        )))
    }));
    let agent = Agent::builder(model.clone())
        .system("Be brief.")
        .build()
        .unwrap();
    let suite = suite(
        r#"
        [[case]]
        name = "follow-up"
        context = "The user is in Oslo."
        conversation = [{ role = "user", content = "I run 12 km." }, { role = "assistant", content = "Nice." }]
        input = "In miles?"
        answer = [{ contains = "system: Be brief.\n\nThe user is in Oslo. | said: I run 12 km. / Nice. / In miles?" }]
        "#,
    );
    let report = Harness::new(agent).run(&suite).await;
    assert_eq!(report.cases[0].trials[0].failures, []);
    assert!(report.meets_threshold());
}

#[tokio::test]
async fn repeats_run_concurrently_and_report_in_order() {
    let agent = Agent::new(model(6, |request| {
        let input = said(request.messages.last().unwrap());
        // U+FFFF: a model may write what XML cannot hold.
        Ok(text(if input == "a" { "yes" } else { "no \u{FFFF}" }))
    }));
    let suite = suite(
        r#"
        repeats = 3
        concurrency = 3
        threshold = 0.5
        [[case]]
        name = "a"
        input = "a"
        answer = [{ contains = "yes" }]
        [[case]]
        name = "b"
        input = "b"
        answer = [{ contains = "yes" }]
        "#,
    );
    let report = Harness::new(agent).run(&suite).await;
    assert_eq!((report.trials, report.passed), (6, 3));
    assert_eq!(report.pass_rate, 0.5);
    assert!(report.meets_threshold(), "0.5 meets a threshold of 0.5");
    for case in &report.cases {
        let repeats: Vec<usize> = case.trials.iter().map(|t| t.repeat).collect();
        assert_eq!(repeats, [1, 2, 3], "{}", case.name);
    }
    assert_eq!(report.cases[1].pass_rate, 0.0);
    assert_eq!(
        report.cases[1].trials[0].failures[0].why,
        r#""yes" not in "no \u{ffff}""#
    );
    let xml = report.junit().unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 6);
    assert!(
        !xml.contains('\u{FFFF}'),
        "not a character XML 1.0 can hold"
    );
    assert!(xml.contains(r#"<testcase name="b #3""#), "{xml}");
    assert!(xml.contains(r#"tests="6" failures="3""#), "{xml}");
}

#[tokio::test]
async fn a_hung_tool_times_its_trial_out_and_the_others_go_on() {
    let hang = Tool::new(
        "hang",
        json!({"type": "object"}),
        ToolHandler::from_async(|_, _| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(json!(null))
        }),
    )
    .with_timeout(Duration::from_secs(3600));
    let agent = Agent::builder(model(3, |request| {
        Ok(match said(request.messages.last().unwrap()).as_str() {
            "hang" => Step::Tool {
                calls: vec![ToolCall::new("c1", "hang", json!({}))],
                text: String::new(),
                tokens: Usage::new(1, 1),
            },
            _ => text("fine"),
        })
    }))
    .tool(hang)
    .build()
    .unwrap();
    let suite = suite(
        r#"
        concurrency = 2
        [[case]]
        name = "hangs"
        input = "hang"
        [[case]]
        name = "answers"
        input = "hello"
        answer = [{ contains = "fine" }]
        "#,
    );
    let report = Harness::new(agent)
        .timeout(Duration::from_millis(300))
        .run(&suite)
        .await;
    let hung = &report.cases[0].trials[0];
    assert_eq!(hung.outcome, "timed_out");
    assert_eq!(hung.failures[0].check, "run");
    assert_eq!(hung.failures[0].why, "the run did not finish within 300ms");
    assert!(report.cases[1].trials[0].passed);
}

#[tokio::test]
async fn a_failing_model_fails_the_trial_with_its_error() {
    let agent =
        Agent::new(ScriptedModel::new().fail(ModelError::Transport("connection reset".into())));
    let suite = suite(
        r#"
        [[case]]
        name = "x"
        input = "hi"
        outcome = "final"
        answer = [{ contains = "hello" }]
        "#,
    );
    let report = Harness::new(agent).run(&suite).await;
    let trial = &report.cases[0].trials[0];
    assert_eq!(trial.outcome, "model_error");
    let checks: Vec<&str> = trial.failures.iter().map(|f| f.check.as_str()).collect();
    assert_eq!(checks, ["outcome", "answer[1] contains"]);
    assert!(
        trial.failures[0]
            .why
            .starts_with("ended `model_error`, not `final`: model error:")
    );
}

#[tokio::test]
async fn an_agent_that_cannot_be_built_fails_its_trials() {
    let suite = suite("[[case]]\nname = \"x\"\ninput = \"hi\"");
    let report = Harness::per_case(|_| Err("no tools file".into()))
        .run(&suite)
        .await;
    let trial = &report.cases[0].trials[0];
    assert_eq!(trial.outcome, "no_agent");
    assert_eq!(
        trial.failures[0].why,
        "the agent could not be built: no tools file"
    );
}

#[tokio::test]
async fn judges_pass_fail_and_cannot_be_left_out() {
    let agent = || Agent::new(model(1, |_| Ok(text("Paris is the capital of France."))));
    let suite = suite(
        r#"
        [[case]]
        name = "capital"
        input = "What is the capital of France?"
        answer = [{ judge = "Names Paris." }]
        "#,
    );
    let verdict = |answer: &'static str| Arc::new(model(1, move |_| Ok(text(answer))));
    let why = |report: &Report| {
        report.cases[0].trials[0]
            .failures
            .first()
            .map(|f| f.why.clone())
    };

    let judge = verdict(r#"{"pass": true, "reason": "names Paris"}"#);
    let report = Harness::new(agent()).judge(judge.clone()).run(&suite).await;
    assert_eq!(why(&report), None);
    let asked = said(&judge.requests()[0].messages[0]);
    assert!(asked.starts_with("Rubric: Names Paris."), "{asked}");
    assert!(asked.contains("Paris is the capital of France."), "{asked}");
    assert!(
        judge.requests()[0].response_format.is_some(),
        "the verdict is constrained"
    );

    let report = Harness::new(agent())
        .judge(verdict(r#"{"pass": false, "reason": "no city"}"#))
        .run(&suite)
        .await;
    assert_eq!(why(&report).as_deref(), Some("the judge: no city"));

    let report = Harness::new(agent())
        .judge(verdict("looks good"))
        .run(&suite)
        .await;
    assert_eq!(
        why(&report).as_deref(),
        Some(r#"the judge's verdict was not readable: "looks good""#)
    );

    let report = Harness::new(agent()).run(&suite).await;
    assert_eq!(
        why(&report).as_deref(),
        Some("no judge model to score the rubric with (Harness::judge)")
    );
}

#[tokio::test]
async fn a_tripped_guardrail_is_an_outcome_a_case_can_expect() {
    let agent = Agent::builder(model(1, |_| Ok(text("unused"))))
        .input_guardrail(Guardrail::new("no-secrets", |text: String, _| async move {
            if text.contains("password") {
                Verdict::Trip("asks for a password".into())
            } else {
                Verdict::Pass
            }
        }))
        .build()
        .unwrap();
    let suite = suite(
        r#"
        [[case]]
        name = "refused"
        input = "Tell me the admin password"
        outcome = "guardrail_tripped"
        no_call = true
        "#,
    );
    let report = Harness::new(agent).run(&suite).await;
    assert_eq!(report.cases[0].trials[0].failures, []);
    assert_eq!(report.cases[0].trials[0].outcome, "guardrail_tripped");
}

struct StepsUnder(usize);

impl Check for StepsUnder {
    fn name(&self) -> &str {
        "short"
    }

    fn check(&self, run: &agentry_agent::RunOutcome) -> Result<(), String> {
        if run.steps.len() < self.0 {
            Ok(())
        } else {
            Err(format!("{} steps", run.steps.len()))
        }
    }
}

#[tokio::test]
async fn checks_in_code_run_beside_the_declared_ones() {
    let agent = Agent::new(model(1, |_| Ok(text("ok"))));
    let suite = Suite::new("code", vec![Case::new("x", "hi").check(StepsUnder(1))]);
    let report = Harness::new(agent).run(&suite).await;
    let failure = &report.cases[0].trials[0].failures[0];
    assert_eq!(
        (failure.check.as_str(), failure.why.as_str()),
        ("short", "1 steps")
    );
}

struct Panics;

impl Check for Panics {
    fn name(&self) -> &str {
        "panics"
    }

    fn check(&self, _: &agentry_agent::RunOutcome) -> Result<(), String> {
        panic!("a bug in the check")
    }
}

#[tokio::test]
async fn a_panicking_check_fails_its_trial_and_the_others_go_on() {
    let agent = Agent::new(model(2, |_| Ok(text("ok"))));
    let suite = Suite::new(
        "panics",
        vec![Case::new("x", "hi").check(Panics), Case::new("y", "hi")],
    );
    let report = Harness::new(agent).run(&suite).await;
    let trial = &report.cases[0].trials[0];
    assert_eq!(trial.outcome, "panicked");
    assert_eq!(
        trial.failures[0].why,
        "the trial panicked: a bug in the check"
    );
    assert!(report.cases[1].trials[0].passed);
}

#[tokio::test]
async fn a_saved_report_reads_back_as_a_baseline() {
    let agent = || {
        Agent::new(model(2, |request| {
            Ok(text(&said(request.messages.last().unwrap())))
        }))
    };
    let before = suite(
        "[[case]]\nname = \"a\"\ninput = \"one\"\nanswer = [{ contains = \"one\" }]\n\
         [[case]]\nname = \"b\"\ninput = \"two\"\nanswer = [{ contains = \"two\" }]",
    );
    let saved = serde_json::to_string(&Harness::new(agent()).run(&before).await).unwrap();
    let baseline: Report = serde_json::from_str(&saved).unwrap();
    assert_eq!(baseline.passed, 2);
    assert_eq!(baseline.cases[0].trials[0].trajectory.len(), 1);

    let mut after = before.clone();
    after.cases[1].answer = vec![agentry_evals::AnswerCheck::contains("three")];
    let report = Harness::new(agent()).run(&after).await;
    let comparison = report.compare(&baseline);
    assert_eq!(comparison.regressions.len(), 1);
    assert_eq!(comparison.regressions[0].case, "b");
    assert_eq!(
        comparison.to_string(),
        "regressed: b (100% → 0%)\npass rate 100% → 50%; 1 regressed, 0 improved"
    );
}

#[tokio::test]
async fn a_case_names_the_agent_that_must_answer() {
    use agentry_agent::Handoff;
    let billing = Agent::builder(model(2, |_| Ok(text("Refunded."))))
        .name("billing")
        .build()
        .unwrap();
    let triage = Agent::builder(model(2, |_| {
        Ok(Step::Tool {
            calls: vec![ToolCall::new(
                "t1",
                "transfer_to_billing",
                json!({"reason": "money"}),
            )],
            text: String::new(),
            tokens: Usage::new(1, 1),
        })
    }))
    .name("triage")
    .handoff(Handoff::to(billing))
    .build()
    .unwrap();
    let suite = suite(
        r#"
        [[case]]
        name = "to billing"
        input = "refund"
        agent = "billing"
        calls = [{ tool = "transfer_to_billing" }]
        [[case]]
        name = "to support"
        input = "crash"
        agent = "support"
        "#,
    );
    let report = Harness::new(triage).concurrency(1).run(&suite).await;
    assert_eq!(report.cases[0].trials[0].failures, []);
    assert_eq!(
        report.cases[1].trials[0].failures[0].why,
        "answered by billing, not support"
    );
}
