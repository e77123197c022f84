//! What the real-model tests share: loading the default model (or
//! saying loudly why not), asking it, a tool to offer, and how much of a prompt a cache can
//! supply.

use agentry::model::ChatRequest;
use agentry::tool::ToolSchema;
use agentry_local::{Generation, LocalConfig, LocalModel, fetch};

/// Where the default model is; `None`, after a loud message, when it is
/// not in the cache, unless `AGENTRY_REQUIRE_MODEL=1` (then it panics).
pub fn model_path() -> Option<std::path::PathBuf> {
    let Some(path) = fetch::installed(&fetch::QWEN) else {
        if std::env::var("AGENTRY_REQUIRE_MODEL").as_deref() == Ok("1") {
            panic!("{} is missing and AGENTRY_REQUIRE_MODEL=1", fetch::QWEN.id);
        }
        eprintln!(
            "\n*** SKIPPED: {} is not in {}; run `agentry model pull` to run this test ***\n",
            fetch::QWEN.id,
            fetch::cache_dir().display()
        );
        return None;
    };
    Some(path)
}

/// `loaded` (an embedding model pulled when missing), or `None` after a
/// loud message naming `what` and why it is not there, unless
/// `AGENTRY_REQUIRE_MODEL=1` (then it panics).
#[allow(dead_code)] // the embedder tests' helper; the cache tests include this module too
pub fn or_skip<T>(what: &str, loaded: Result<T, impl std::fmt::Display>) -> Option<T> {
    match loaded {
        Ok(model) => Some(model),
        Err(error) => {
            let message = format!(
                "{what} is not available in {} and could not be pulled: {error}",
                fetch::cache_dir().display()
            );
            if std::env::var("AGENTRY_REQUIRE_MODEL").as_deref() == Ok("1") {
                panic!("{message}");
            }
            eprintln!("\n*** SKIPPED: {message} ***\n");
            None
        }
    }
}

/// The default model with `config`; `None`, after a loud message, when it is
/// not in the cache, unless `AGENTRY_REQUIRE_MODEL=1` (then it panics).
pub fn load(config: LocalConfig) -> Option<LocalModel> {
    Some(LocalModel::load_with(model_path()?, config).expect("the model loads"))
}

/// The fewest tokens a prompt read has (`LocalConfig::prompt_cache`: the
/// last read after a cached prefix is at least this long).
pub const MIN_PROMPT_READ: u64 = 64;

/// Where a prompt read after a cached prefix starts: a multiple of this.
pub const PROMPT_ALIGN: u64 = 32;

/// How much of a prompt of `tokens` a cache holding `held` of its leading
/// tokens (read as a prompt) supplies: all but the last [`MIN_PROMPT_READ`]
/// at most, down to a multiple of [`PROMPT_ALIGN`].
pub fn reusable(tokens: u64, held: u64) -> u64 {
    held.min(tokens.saturating_sub(MIN_PROMPT_READ)) / PROMPT_ALIGN * PROMPT_ALIGN
}

/// `request` through `model` as the agent would send it (its template and
/// grammar), greedy, up to 60 tokens.
pub fn generate(model: &LocalModel, request: &ChatRequest) -> Generation {
    let prompt = model.render_prompt(request).unwrap();
    let grammar = model.grammar_for(request).unwrap();
    model
        .generate(&prompt, grammar.as_deref(), 60, None, &[], |_| true)
        .unwrap()
}

/// A one-argument tool the agent-step requests offer.
pub fn weather_tool() -> ToolSchema {
    ToolSchema {
        name: "weather".into(),
        description: Some("Current weather for a city.".into()),
        input_schema: serde_json::json!({"type": "object",
            "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        output_schema: None,
    }
}
