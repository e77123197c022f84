//! The `agentry-eval` binary end to end on the repository's data, with no
//! chat model: skill choice on the offline provider, MetaTool retrieval with
//! BM25, and where the data is found.

use std::process::{Command, Output};

fn agentry_eval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentry-eval"))
        .args(args)
        .env_remove("AGENTRY_DATASETS")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn skill_choice_writes_a_report() {
    let dir = std::env::temp_dir().join(format!("agentry-skill-choice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let requests = dir.join("requests.jsonl");
    std::fs::write(
        &requests,
        "{\"request\": \"Write a status update.\", \"skill\": \"internal-comms\"}\n\
         {\"request\": \"Make a Slack GIF.\", \"skill\": \"slack-gif-creator\"}\n",
    )
    .unwrap();
    let out = dir.join("report.json");
    let output = agentry_eval(&[
        "skill-choice",
        "--provider",
        "offline",
        "--requests",
        requests.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // The offline model answers without reading anything.
    assert_eq!(report["requests"], 2);
    assert_eq!(report["name_enums"], true);
    assert_eq!(report["no_lookup"], 2);
    assert_eq!(report["right_first"], 0);
    assert_eq!(report["outcomes"][1]["expected"], "slack-gif-creator");
    let broken = dir.join("broken.jsonl");
    std::fs::write(&broken, "{\"request\": 1}\n").unwrap();
    let output = agentry_eval(&[
        "skill-choice",
        "--provider",
        "offline",
        "--requests",
        broken.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("broken.jsonl"),
        "{}",
        text(&output.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn metatool_writes_a_report() {
    let out = std::env::temp_dir().join(format!("agentry-metatool-{}.json", std::process::id()));
    let output = agentry_eval(&[
        "metatool",
        "--scorer",
        "bm25",
        "--limit",
        "50",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report["scorer"], "bm25");
    assert_eq!(report["tools"], 199);
    assert_eq!(report["queries"], 50);
    let (at1, at5) = (
        report["hits_at_1"].as_u64().unwrap(),
        report["hits_at_5"].as_u64().unwrap(),
    );
    assert!(at1 <= at5 && at5 <= 50);
    std::fs::remove_file(&out).unwrap();
}
