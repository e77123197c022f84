use clap::Subcommand;
use std::process::ExitCode;
/// Evaluation commands.
#[derive(Subcommand)]
pub enum EvalCommand {}
/// Run an evaluation command.
pub async fn run(command: EvalCommand) -> Result<ExitCode, String> {
    match command {}
}
