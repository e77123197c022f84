//! A workflow on the local model (Qwen2.5-Coder-1.5B, the default): the
//! model routes a customer's message to the billing or the support agent
//! (its answer held to the route names by a grammar), the reply goes round
//! until it is short enough, and a person approves it before it is sent.
//! The approval stops the run with a checkpoint; answered, the run resumes
//! without asking the agents again.
//!
//! Run: `cargo run -p agentry --example workflow` (after `agentry model
//! pull`; without the model the offline model answers and the route fails).

mod support;

use std::sync::Arc;

use agentry::agent::Agent;
use agentry::model::ChatModel;
use agentry::workflow::{Answer, Loop, Route, Step, Workflow, WorkflowOutcome, WorkflowRun};
use support::default_or_offline;

fn agent(model: &Arc<dyn ChatModel>, name: &str, system: &str) -> Step {
    Step::agent(
        Agent::builder(model.clone())
            .name(name)
            .system(system)
            .max_tokens(200)
            .build()
            .expect("a valid agent"),
    )
}

/// Route, draft until short, approve.
fn workflow(model: Arc<dyn ChatModel>) -> Workflow {
    let route = Route::by_model(model.clone())
        .to(
            "billing",
            "Invoices, charges, refunds and payments.",
            agent(&model, "billing", "You are the billing agent. Say that a duplicate charge is refunded within 5 working days."),
        )
        .to(
            "support",
            "Crashes, errors, bugs and log-in problems.",
            agent(&model, "support", "You are the technical support agent. Say to update the app to version 2.4.1."),
        );
    let short = Loop::until(route.into(), |reply| {
        let words = reply.split_whitespace().count();
        if words <= 80 {
            Ok(())
        } else {
            Err(format!("{words} words: keep it under 80"))
        }
    });
    Workflow::new(
        "reply",
        Step::sequence([short.into(), Step::approval("Send this reply?")]),
    )
}

async fn run(model: Arc<dyn ChatModel>) -> (WorkflowRun, WorkflowRun) {
    let flow = workflow(model);
    let stopped = flow
        .run(
            "reply-1",
            "I was charged twice for invoice INV-7. Can I get my money back?",
        )
        .await;
    for step in &stopped.trace {
        println!("{} ({}): {}", step.step, step.kind, step.output);
    }
    if let WorkflowOutcome::Interrupted(interrupt) = &stopped.outcome {
        println!("waiting at {}: {:?}", interrupt.step, interrupt.kind);
    }
    // A person approves (the checkpoint could have been saved as JSON meanwhile).
    let mut checkpoint = stopped.checkpoint.clone();
    let _ = checkpoint.answer(Answer::Approve);
    let done = flow.resume(checkpoint).await;
    println!("{:?}", done.outcome);
    (stopped, done)
}

#[tokio::main]
async fn main() {
    run(default_or_offline().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_routes_and_a_person_approves_the_reply() {
    if !support::default_model_present() {
        return;
    }
    let (stopped, done) = run(default_or_offline().await).await;
    let WorkflowOutcome::Interrupted(interrupt) = &stopped.outcome else {
        panic!("{:?}", stopped.outcome)
    };
    assert_eq!(interrupt.step, "2");
    assert_eq!(stopped.checkpoint.outputs["1/#round-1/#route"], "billing");
    let WorkflowOutcome::Done { output } = &done.outcome else {
        panic!("{:?}", done.outcome)
    };
    assert!(!output.trim().is_empty());
    assert!(
        done.trace
            .iter()
            .filter(|t| t.kind == "agent")
            .all(|t| t.cached),
        "the agents were not asked again"
    );
}
