//! A triage agent on the local model (Qwen2.5-Coder-1.5B, the default) hands each request to the agent for
//! it: a billing question to a billing agent, a technical one to a support
//! agent. Each of those has its own prompt and tool, looks the case up, and
//! answers the user; the run records who answered.
//!
//! Run: `cargo run -p agentry --example triage` (after `agentry model
//! pull`; without the model the offline model answers).

mod support;

use std::sync::Arc;

use agentry::agent::{Agent, Handoff, RunOutcome};
use agentry::model::{ChatModel, ToolChoice};
use agentry::tool::{Tool, function};
use serde_json::{Value, json};
use support::{default_or_offline, print_calls};

/// A specialist: its name, prompt and one lookup, which it calls first,
/// then answers.
fn specialist(model: Arc<dyn ChatModel>, name: &str, system: &str, lookup: Tool) -> Agent {
    Agent::builder(model)
        .name(name)
        .system(system)
        .tool(lookup)
        .first_tool_choice(ToolChoice::Required)
        .max_tool_rounds(1)
        .build()
        .expect("a valid agent")
}

/// The billing agent: it looks invoices up.
fn billing(model: Arc<dyn ChatModel>) -> Agent {
    let invoice = function("look_up_invoice")
        .description("Look an invoice up: its amount, how often it was charged, and its status.")
        .arg::<String>("invoice", "The invoice number, such as INV-1042")
        .handler(|input: Value| {
            Ok::<_, String>(json!({
                "invoice": input["invoice"],
                "amount": "49.00 EUR",
                "times_charged": 2,
                "status": "duplicate charge found; a refund of 49.00 EUR was issued today"
            }))
        })
        .build()
        .expect("a valid function");
    let system = "You are the billing agent. Look the invoice up, then tell the user briefly \
                  what you found and what happens next.";
    specialist(model, "billing", system, invoice)
}

/// The support agent: it checks known issues.
fn support_agent(model: Arc<dyn ChatModel>) -> Agent {
    let issues = function("known_issues")
        .description("Look up known technical issues of a part of the app.")
        .arg::<String>(
            "component",
            "The part of the app, such as settings or login",
        )
        .handler(|input: Value| {
            Ok::<_, String>(json!({
                "component": input["component"],
                "issue": "the app crashes when settings open, in version 2.4.0",
                "fix": "update the app to version 2.4.1"
            }))
        })
        .build()
        .expect("a valid function");
    let system = "You are the technical support agent. Check the known issues, then tell the \
                  user briefly how to fix the problem.";
    specialist(model, "support", system, issues)
}

/// The triage agent: it answers nothing itself; it hands over.
pub fn triage(model: Arc<dyn ChatModel>) -> Agent {
    Agent::builder(model.clone())
        .name("triage")
        .system(
            "You are the front desk. Hand every request to the agent for it: billing for \
             invoices, charges, refunds and payments; support for technical problems, \
             errors, crashes and log-ins.",
        )
        .handoff(
            Handoff::to(billing(model.clone()))
                .description("Billing: invoices, charges, double charges, refunds, payments."),
        )
        .handoff(
            Handoff::to(support_agent(model))
                .description("Technical support: crashes, errors, bugs, log-in problems."),
        )
        .first_tool_choice(ToolChoice::Required)
        .build()
        .expect("a valid agent")
}

async fn run(model: Arc<dyn ChatModel>) -> (RunOutcome, RunOutcome) {
    let agent = triage(model);
    let mut runs = Vec::new();
    for request in [
        "I was charged twice for invoice INV-1042. Can I get my money back?",
        "The app crashes every time I open the settings page. How do I fix it?",
    ] {
        let run = agent.run(request).await;
        println!("> {request}");
        print_calls(&run.steps);
        println!(
            "{} answered: {}\n",
            run.agent.as_deref().unwrap_or("?"),
            run.text()
        );
        runs.push(run);
    }
    let support = runs.pop().expect("two runs");
    (runs.pop().expect("two runs"), support)
}

#[tokio::main]
async fn main() {
    run(default_or_offline().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_hands_billing_to_billing_and_a_crash_to_support() {
    if !support::default_model_present() {
        return;
    }
    let (billing, support) = run(default_or_offline().await).await;
    for (run, agent, tool) in [
        (&billing, "billing", "look_up_invoice"),
        (&support, "support", "known_issues"),
    ] {
        assert_eq!(run.agent.as_deref(), Some(agent), "{:#?}", run.steps);
        assert_eq!(run.handoffs.len(), 1);
        assert_eq!(run.handoffs[0].from.as_deref(), Some("triage"));
        assert!(
            !run.handoffs[0].reason.is_empty(),
            "the model gave a reason"
        );
        let called: Vec<&str> = run.calls().map(|r| r.call.name.as_str()).collect();
        // The lookup is in the default `utils` namespace.
        assert_eq!(
            called,
            [format!("transfer_to_{agent}"), format!("utils.{tool}")]
        );
        assert!(matches!(run.outcome, agentry::agent::Outcome::Final(_)));
    }
    assert!(billing.text().contains("49"), "{}", billing.text());
    assert!(support.text().contains("2.4.1"), "{}", support.text());
}
