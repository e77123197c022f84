//! `myapp`: the application of the seed documents (`::myapp/add`,
//! `::myapp/search`, `::myapp/search-docs`), written as plain Rust functions
//! made into tools with `#[agentry::tool]`. The seed examples under
//! `crates/agentry/examples/` use it, so tool names read `myapp::add` exactly
//! as the seeds' `::myapp/add`.

use agentry::tool;

// No doc comment on purpose: the seed's `add` has no `meta {doc: ...}`, so
// its tool has no description; `from_fn` examples show overriding one.
#[allow(missing_docs)]
#[tool]
pub fn add(x: i64, y: i64) -> i64 {
    x + y
}

// No doc comment on purpose: seed 000's `schema-from-fn` example shows a
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

/// Seed 004's `tone`: a prompt-only skill declared on a function. Its name
/// falls back to the function's path, `myapp::tone` (the seed's `::myapp/tone`).
#[agentry::skill(
    description = "Customer tone",
    when = ["reply"],
    body = "Use a warm, plain-language tone."
)]
pub fn tone() {}

/// Seed 004's `customer-tone`.
#[agentry::skill(
    name = "customer-tone",
    description = "Apply our customer voice rules",
    when = ["customer reply", "marketing copy", "support email"],
    body = "Use a warm, plain-language tone. Avoid jargon. Always close\nwith a clear next step."
)]
pub fn customer_tone() {}

/// Seed 004's `receipt-analyzer`: the function is the body function, and its
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
