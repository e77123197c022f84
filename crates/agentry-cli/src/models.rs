//! `agentry model pull|list`.

use std::process::ExitCode;

use agentry_local::fetch;
use clap::Subcommand;

/// Model commands.
#[derive(Subcommand)]
pub enum ModelCommand {
    /// Fetch a known model into the user cache (verifying size and sha256).
    Pull {
        /// Which model.
        #[arg(default_value = fetch::QWEN.id, value_parser = clap::builder::PossibleValuesParser::new(fetch::MODELS.iter().map(|m| m.id)))]
        id: String,
    },
    /// Show the known models and which are present.
    List,
}

/// Run a model command.
pub async fn run(command: ModelCommand) -> Result<ExitCode, String> {
    match command {
        ModelCommand::Pull { id } => {
            let spec = fetch::find(&id).expect("clap checked the id");
            let path = crate::providers::pull_with_bar(spec).await?;
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
                    "  {:<20} {:>7.1} MB  {state}",
                    spec.id,
                    spec.size as f64 / 1e6
                );
            }
            println!("any other GGUF file can be used with --model PATH");
        }
    }
    Ok(ExitCode::SUCCESS)
}
