//! Turning `--provider` and `--model` into a [`ChatModel`].

use std::sync::Arc;

use agentry::model::{ChatModel, OfflineModel};
use agentry::providers::{Anthropic, OpenAiCompatible};
use agentry_local::fetch::{self, Progress};
use agentry_local::{LocalConfig, LocalModel};
use indicatif::{ProgressBar, ProgressStyle};

use crate::{ModelArgs, ProviderKind};

/// The chat model the arguments select; a missing local model is pulled first.
pub async fn chat_model(args: &ModelArgs) -> Result<Arc<dyn ChatModel>, String> {
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

/// Load the local model named by `--model` (a path or an id), pulling it if needed.
pub async fn local_model(args: &ModelArgs) -> Result<LocalModel, String> {
    let wanted = args
        .model
        .clone()
        .unwrap_or_else(|| fetch::QWEN.id.to_owned());
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
        constrained: !args.no_grammar,
        ..LocalConfig::default()
    };
    tokio::task::spawn_blocking(move || LocalModel::load_with(&path, config))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Pull a model with a progress bar on stderr.
pub async fn pull_with_bar(spec: &fetch::ModelSpec) -> Result<std::path::PathBuf, String> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_message(spec.id);
    let result = fetch::pull(spec, |progress| match progress {
        Progress::Start { total } => bar.set_length(total),
        Progress::Advance { bytes } => bar.inc(bytes),
        Progress::Verifying => bar.set_message(format!("{} (verifying sha256)", spec.id)),
    })
    .await;
    bar.finish_and_clear();
    result.map_err(|e| e.to_string())
}
