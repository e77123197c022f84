//! `myapp`: a small example application (`add`, `search`, `search_docs`, and
//! a few skills), written as plain Rust functions made into tools with
//! `#[agentry::tool]`. The examples under `crates/agentry/examples/` use it,
//! so tool names carry the application's path: `myapp::add`.

use agentry::tool;

// No doc comment on purpose: `add` is the tool without a description; the
// `tool_from_fn` example shows overriding one.
#[allow(missing_docs)]
#[tool]
pub fn add(x: i64, y: i64) -> i64 {
    x + y
}

// No doc comment on purpose: the `schema_from_fn` example shows a
// schema without a description, and the doc comment would become one.
#[allow(missing_docs)]
#[tool]
pub fn search(query: String, limit: i64) -> Vec<String> {
    let _ = limit;
    vec![query]
}

/// Search project documentation.
#[tool]
pub fn search_docs(query: String, limit: i64) -> Vec<String> {
    let _ = (query, limit);
    Vec::new()
}

/// `tone`: a prompt-only skill declared on a function. Its name falls back
/// to the function's path, `myapp::tone`.
#[agentry::skill(
    description = "Customer tone",
    when = ["reply"],
    body = "Use a warm, plain-language tone."
)]
pub fn tone() {}

/// `customer-tone`: the voice rules for customer-facing text.
#[agentry::skill(
    name = "customer-tone",
    description = "Apply our customer voice rules",
    when = ["customer reply", "marketing copy", "support email"],
    body = "Use a warm, plain-language tone. Avoid jargon. Always close\nwith a clear next step."
)]
pub fn customer_tone() {}

/// `receipt-analyzer`: the function is the body function, and its
/// `attachments` parameter is filled from the skill context by name.
#[agentry::skill(
    name = "receipt-analyzer",
    description = "Extract line items from a receipt",
    when = ["receipt", "expense"],
    modalities = ["image", "pdf"]
)]
pub fn receipt_analyzer(attachments: Option<Vec<serde_json::Value>>) -> String {
    let attachments = attachments.unwrap_or_default();
    if attachments.is_empty() {
        "Ask the user to attach a receipt.".to_owned()
    } else {
        format!(
            "Use any vision tools available to extract line items\nfrom the {} attached file(s).",
            attachments.len()
        )
    }
}
