//! The `agentry` binary end to end (no model needed: the offline provider,
//! model listing, and configuration errors).

use std::process::Command;

fn agentry(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_agentry"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("the binary runs")
}

#[test]
fn offline_run_answers_no_llm_provider() {
    let output = agentry(&["run", "--provider", "offline", "What is 2+2?"]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "answer: [no llm provider]\ntokens: 0 in, 0 out, 0 total over 1 step\n"
    );
    let output = agentry(&["run", "--provider", "offline", "--json", "What is 2+2?"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["answer"], "[no llm provider]");
    assert_eq!(report["outcome"], "final");
    assert_eq!(
        report["usage"],
        serde_json::json!({"input_tokens": 0, "output_tokens": 0})
    );
}

#[test]
fn missing_keys_are_clear_errors() {
    let output = agentry(&["run", "--provider", "openai", "hi"]);
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: model is not configured: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)\n"
    );
    let output = agentry(&["run", "--provider", "anthropic", "hi"]);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: model is not configured: set ANTHROPIC_API_KEY\n"
    );
}

#[test]
fn model_list_names_the_known_models() {
    let output = agentry(&["model", "list"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("qwen2.5-coder-0.5b") && text.contains("smollm2-135m"),
        "{text}"
    );
    let output = agentry(&["model", "pull", "gpt-5"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid value 'gpt-5'"));
}

#[test]
fn a_missing_model_file_is_reported() {
    let output = agentry(&["run", "--model", "/nope/model.gguf", "hi"]);
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: model is not configured: no model file at /nope/model.gguf\n"
    );
}
