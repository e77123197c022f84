//! What the examples share: a `search` function and the local
//! model (or, when it is not pulled, the offline model).

#![allow(dead_code)] // each example uses a part

use std::sync::Arc;

use agentry::model::{ChatModel, OfflineModel};
use agentry::tool::{Tool, function};
use agentry_local::{LocalModel, fetch};
use serde_json::{Value, json};

/// A `search` function in the default `utils` namespace whose
/// handler returns `{"title": "Ax docs"}`.
pub fn search() -> Tool {
    function("search")
        .description("Search the documentation and policies for a query.")
        .arg::<String>("query", "What to look for")
        .returns_schema(json!({"type": "object", "properties": {"title": {"type": "string"}}}))
        .handler(|_: Value| Ok::<_, String>(json!({"title": "Ax docs"})))
        .build()
        .expect("a valid function")
}

/// Print each tool call of a run: `step N: name(input) => result`.
pub fn print_calls(steps: &[agentry::agent::StepRecord]) {
    for step in steps {
        for record in &step.calls {
            println!(
                "step {}: {}({}) => {}",
                step.index,
                record.call.name,
                record.call.input,
                record.result.output_text()
            );
        }
    }
}

/// Qwen2.5-Coder-0.5B from the cache, or the offline model when it is not pulled.
pub async fn local_or_offline() -> Arc<dyn ChatModel> {
    load_or_offline(&fetch::QWEN).await
}

/// The `agentry` program's default model (Qwen2.5-Coder-1.5B) from the
/// cache, or the offline model when it is not pulled.
pub async fn default_or_offline() -> Arc<dyn ChatModel> {
    load_or_offline(&fetch::QWEN_1_5B).await
}

async fn load_or_offline(spec: &fetch::ModelSpec) -> Arc<dyn ChatModel> {
    match fetch::installed(spec) {
        Some(path) => Arc::new(
            tokio::task::spawn_blocking(move || LocalModel::load(&path))
                .await
                .expect("loader")
                .expect("the model loads"),
        ),
        None => {
            eprintln!("(the local model is not pulled; answering offline)");
            Arc::new(OfflineModel)
        }
    }
}

/// For an example's test: whether the local model is there. Without it the
/// test says so loudly and skips, unless `AGENTRY_REQUIRE_MODEL=1` (set by
/// CI), which makes a missing model a failure.
pub fn local_model_present() -> bool {
    model_present(&fetch::QWEN)
}

/// [`local_model_present`] for the default model (Qwen2.5-Coder-1.5B).
pub fn default_model_present() -> bool {
    model_present(&fetch::QWEN_1_5B)
}

fn model_present(spec: &fetch::ModelSpec) -> bool {
    if fetch::installed(spec).is_some() {
        return true;
    }
    if std::env::var("AGENTRY_REQUIRE_MODEL").as_deref() == Ok("1") {
        panic!(
            "the local model {} is missing and AGENTRY_REQUIRE_MODEL=1",
            spec.id
        );
    }
    eprintln!(
        "\n*** SKIPPED: the local model is not pulled; run `agentry model pull {}` ***\n",
        spec.id
    );
    false
}

/// For an example's test: whether the npm peers (`npm ci --prefix npm`) are
/// there. Without them the test says so loudly and skips, unless
/// `AGENTRY_REQUIRE_NPM=1` (set by CI).
pub fn npm_peers_present() -> bool {
    let modules =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../npm/node_modules");
    if modules
        .join("@modelcontextprotocol/server-everything/dist/index.js")
        .exists()
    {
        return true;
    }
    if std::env::var("AGENTRY_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("the npm peers are not installed (npm ci --prefix npm) and AGENTRY_REQUIRE_NPM=1");
    }
    eprintln!("\n*** SKIPPED: run `npm ci --prefix npm` to run this example's test ***\n");
    false
}
