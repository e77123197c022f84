//! Agents beside `[agent]` in `agentry.toml`: handoffs (`agentry run` on the
//! default local model hands a billing question to the billing agent and a
//! crash to support), a `[workflow]` routed by the local model whose
//! approval step stops the run until `agentry workflow resume`, and the
//! mistakes in such a file, named before anything runs.

mod common;

use std::process::{Command, Output};

use common::{AGENTRY, Dir, models_present};
use serde_json::Value;

const TEAM: &str = r#"
name = "desk"

[agent]
system = "You are the front desk. Hand every request to the agent for it: billing for invoices, charges, refunds and payments; support for technical problems, errors, crashes and log-ins."
tools = []
handoffs = ["billing", "support"]
first_call = "required"

[agents.billing]
description = "Billing: invoices, charges, double charges, refunds, payments."
system = "You are the billing agent. Tell the user briefly that a duplicate charge is refunded within 5 working days."
tools = []
history = "text"

[agents.support]
description = "Technical support: crashes, errors, bugs, log-in problems."
system = "You are the technical support agent. Tell the user briefly to update the app to version 2.4.1."
tools = []
history = "text"
"#;

const ROUTED: &str = r#"
[workflow]
sequence = [
    { route = [
        { name = "billing", description = "Invoices, charges, refunds, payments.", agent = "billing" },
        { name = "support", description = "Crashes, errors, bugs, log-in problems.", agent = "support" },
    ] },
    { approval = "Send this reply?" },
]
"#;

fn agentry(dir: &Dir, args: &[&str]) -> Output {
    Command::new(AGENTRY)
        .current_dir(&dir.0)
        .args(args)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn run_hands_each_request_to_the_agent_for_it_on_the_default_model() {
    if !models_present(true) {
        return;
    }
    let dir = Dir::new("team-run");
    std::fs::write(dir.0.join("agentry.toml"), TEAM).unwrap();
    for (request, agent) in [
        (
            "I was charged twice for invoice INV-1042. Can I get my money back?",
            "billing",
        ),
        (
            "The app crashes every time I open the settings page. How do I fix it?",
            "support",
        ),
    ] {
        let output = agentry(&dir, &["run", request, "--json"]);
        assert!(output.status.success(), "{}", stderr(&output));
        let run: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(run["agent"], agent, "{run:#}");
        assert_eq!(run["handoffs"][0]["from"], "desk");
        assert_eq!(run["handoffs"][0]["to"], agent);
        assert_eq!(run["outcome"], "final");
        assert!(!run["answer"].as_str().unwrap().trim().is_empty());
    }
}

#[test]
fn a_routed_workflow_stops_for_approval_and_resumes_on_the_default_model() {
    if !models_present(true) {
        return;
    }
    let dir = Dir::new("team-workflow");
    std::fs::write(dir.0.join("agentry.toml"), format!("{TEAM}{ROUTED}")).unwrap();
    let output = agentry(
        &dir,
        &[
            "workflow",
            "run",
            "My invoice INV-7 was charged twice",
            "--checkpoint",
            "cp.json",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("1/#route (route): billing\n1/billing (agent billing): "),
        "{}",
        stdout(&output)
    );
    assert!(
        stderr(&output).contains("waiting at step 2 (approval): agentry workflow resume cp.json"),
        "{}",
        stderr(&output)
    );
    let checkpoint: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.0.join("cp.json")).unwrap()).unwrap();
    assert_eq!(checkpoint["interrupt"]["kind"], "approval");
    let drafted = checkpoint["outputs"]["1/billing"]
        .as_str()
        .unwrap()
        .to_owned();

    let output = agentry(
        &dir,
        &["workflow", "resume", "cp.json", "--edit", "Refund sent."],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("1/billing (agent, from the checkpoint): "),
        "{text}"
    );
    assert!(text.ends_with("Refund sent.\n"), "{text}");
    assert!(!drafted.is_empty());
}

#[test]
fn an_approval_workflow_runs_offline_and_a_rejection_fails_it() {
    let dir = Dir::new("team-offline");
    let write = |workflow: &str| {
        let file = format!(
            "[model]\nprovider = \"offline\"\n[agents.writer]\ntools = []\n[workflow]\n{workflow}\n"
        );
        std::fs::write(dir.0.join("agentry.toml"), file).unwrap();
    };
    write(r#"sequence = [{ agent = "writer" }, { program = "nothing" }]"#);
    let output = agentry(&dir, &["workflow", "run", "Write"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output)
            .ends_with("agentry.toml: [workflow]: sequence[2]: no program is named `nothing`\n"),
        "{}",
        stderr(&output)
    );
    write(r#"sequence = [{ agent = "writer" }, { approval = "Send it?" }]"#);
    let output = agentry(
        &dir,
        &["workflow", "run", "Write", "--checkpoint", "cp.json"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).starts_with("Send it?\n[no llm provider]\n"),
        "{}",
        stderr(&output)
    );
    let output = agentry(
        &dir,
        &["workflow", "resume", "cp.json", "--reject", "off-brand"],
    );
    assert!(!output.status.success());
    assert_eq!(stderr(&output), "rejected at step 2: off-brand\n");
    // A rejected run's checkpoint waits for no one: it cannot be resumed again.
    let output = agentry(&dir, &["workflow", "resume", "cp.json", "--approve"]);
    assert_eq!(
        stderr(&output),
        "error: the run does not wait for anyone: nothing to resume\n"
    );

    let output = agentry(
        &dir,
        &["workflow", "run", "Write", "--checkpoint", "agentry.toml"],
    );
    assert_eq!(
        stderr(&output),
        "error: agentry.toml exists: a new run's checkpoint goes to a new file\n"
    );
    let output = agentry(
        &dir,
        &["workflow", "run", "Write", "--checkpoint", "again.json"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let output = agentry(&dir, &["workflow", "resume", "again.json"]);
    assert_eq!(
        stderr(&output),
        "error: answer with --approve, --edit TEXT or --reject REASON\n"
    );
    // What is shown on the terminal carries no escape sequences.
    let output = agentry(
        &dir,
        &[
            "workflow",
            "resume",
            "again.json",
            "--edit",
            "ok\u{1b}]0;owned\u{7}\u{1b}[31m",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stdout(&output).contains('\u{1b}'), "{:?}", stdout(&output));
    assert!(
        stdout(&output).ends_with("ok?]0;owned??[31m\n"),
        "{:?}",
        stdout(&output)
    );
}

#[test]
fn handoffs_to_missing_or_circling_agents_are_refused() {
    let dir = Dir::new("team-mistakes");
    let write = |text: &str| std::fs::write(dir.0.join("agentry.toml"), text).unwrap();
    write("[model]\nprovider = \"offline\"\n[agent]\ntools = []\nhandoffs = [\"ghost\"]\n");
    let output = agentry(&dir, &["run", "hi"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("no [agents.ghost] table for the handoff to `ghost`"),
        "{}",
        stderr(&output)
    );
    write(
        "[model]\nprovider = \"offline\"\n[agent]\ntools = []\nhandoffs = [\"a\"]\n\
         [agents.a]\ntools = []\nhandoffs = [\"b\"]\n[agents.b]\ntools = []\nhandoffs = [\"a\"]\n",
    );
    let output = agentry(&dir, &["run", "hi"]);
    assert!(
        stderr(&output).contains("handoffs go round in a circle: agentry → a → b → a"),
        "{}",
        stderr(&output)
    );
    write("[model]\nprovider = \"offline\"\n[agents.a]\nhistory = \"some\"\n");
    let output = agentry(&dir, &["run", "hi"]);
    assert!(
        stderr(&output).contains("unknown variant `some`"),
        "{}",
        stderr(&output)
    );
}
