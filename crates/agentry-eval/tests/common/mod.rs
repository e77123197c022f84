//! What the `agentry-eval` binary's tests share: which models are installed
//! (a missing one skips loudly, or fails under CI's `AGENTRY_REQUIRE_MODEL`).

/// False (loudly), or a panic when `variable` is `1`, for a missing `what`.
fn missing(variable: &str, what: &str, how: &str) -> bool {
    if std::env::var(variable).as_deref() == Ok("1") {
        panic!("{what} is missing and {variable}=1: {how}");
    }
    eprintln!("\n*** SKIPPED: {what} is missing: {how} ***\n");
    false
}

/// True when the MiniLM embedder (and, with `chat`, the local chat model) is installed.
pub fn models_present(chat: bool) -> bool {
    let embedder =
        agentry_local::fetch::installed_embedding(&agentry_local::fetch::MINILM).is_some();
    let qwen = !chat || agentry_local::fetch::installed(&agentry_local::fetch::QWEN).is_some();
    embedder && qwen
        || missing(
            "AGENTRY_REQUIRE_MODEL",
            "a local model",
            "run `agentry model pull` (and all-minilm-l6-v2)",
        )
}
