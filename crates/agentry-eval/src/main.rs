//! `agentry-eval`: agentry's evaluations (BFCL, MetaTool, tool catalogs,
//! skill choice, the relevance gate), run from the repository.

use std::process::ExitCode;

use clap::Parser;

/// Evaluate agentry's tool calling, retrieval and gates on benchmarks.
#[derive(Parser)]
#[command(name = "agentry-eval", version, about)]
struct Cli {
    #[command(subcommand)]
    command: agentry_eval::Command,
}

#[tokio::main]
async fn main() -> ExitCode {
    match agentry_eval::run(Cli::parse().command).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
