//! Skills end to end: `customer-tone` declared on a function,
//! `generated-tone` built as a record, `receipt-analyzer` whose body function
//! reads `attachments` from ctx, and `apply_skill` where the harness's
//! `skill_context` wins over what the model passes.
//!
//! Run: `cargo run -p agentry --example skills`

use agentry::skill::{
    InMemoryResolver, Skill, SkillContext, build_index, builtin_tools, for_agent, load_body,
};
use agentry::tool::{ToolCall, Toolbox};
use serde_json::json;

fn skills() -> Vec<Skill> {
    let generated_tone = Skill::new("generated-tone", "A prompt-only generated skill")
        .when(["generated guidance"])
        .body("Use this body directly.");
    for_agent([
        myapp::customer_tone::skill(),
        generated_tone,
        myapp::receipt_analyzer::skill(),
    ])
    .expect("unique names")
}

async fn run() -> Vec<String> {
    let skills = skills();
    let mut lines = vec![build_index(&skills)];

    let receipt = &skills[2];
    lines.push(load_body(receipt, &SkillContext::new()).expect("a body"));
    let with_files = json!({"attachments": [{"name": "receipt.jpg"}, {"name": "page2.pdf"}]});
    lines.push(load_body(receipt, with_files.as_object().unwrap()).expect("a body"));

    // The harness stamps the inbound attachments into skill_context; the model
    // tries to pass its own, and loses.
    let harness = json!({"attachments": [{"name": "receipt.jpg"}]});
    let tools = Toolbox::for_agent(builtin_tools(
        InMemoryResolver::new(skills.clone()),
        harness.as_object().cloned(),
    ))
    .expect("built-ins");
    let call = ToolCall::new(
        "call_1",
        "apply_skill",
        json!({"name": "receipt-analyzer", "ctx": {"attachments": [1, 2, 3, 4, 5]}}),
    );
    let result = tools.dispatch(call).await;
    lines.push(result.output.as_str().unwrap_or_default().to_owned());

    let read = tools
        .dispatch(ToolCall::new(
            "call_2",
            "read_skill",
            json!({"name": "customer-tone"}),
        ))
        .await;
    lines.push(read.output.as_str().unwrap_or_default().to_owned());
    let unknown = tools
        .dispatch(ToolCall::new(
            "call_3",
            "read_skill",
            json!({"name": "nope"}),
        ))
        .await;
    lines.push(format!(
        "{} (is_error: {})",
        unknown.output, unknown.is_error
    ));
    lines
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    for line in run().await {
        println!("{line}\n");
    }
}

#[tokio::test]
async fn skills_behave_as_documented() {
    let lines = run().await;
    assert_eq!(
        lines[0],
        "Available skills you can read with read_skill(name):\n - customer-tone: Apply our customer voice rules (when: customer reply, marketing copy, support email)\n - generated-tone: A prompt-only generated skill (when: generated guidance)\n - receipt-analyzer: Extract line items from a receipt (when: receipt, expense) [modalities: image, pdf]"
    );
    assert_eq!(lines[1], "Ask the user to attach a receipt.");
    assert_eq!(
        lines[2],
        "Use any vision tools available to extract line items\nfrom the 2 attached file(s)."
    );
    assert_eq!(
        lines[3],
        "Use any vision tools available to extract line items\nfrom the 1 attached file(s)."
    );
    assert_eq!(
        lines[4],
        "Use a warm, plain-language tone. Avoid jargon. Always close\nwith a clear next step."
    );
    assert_eq!(
        lines[5],
        "\"tool \\\"read_skill\\\" failed: unknown skill \\\"nope\\\"; call list_skills to see the available skills\" (is_error: true)"
    );
}
