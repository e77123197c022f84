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
