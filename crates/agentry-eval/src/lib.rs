//! # agentry-eval
//!
//! agentry's evaluation harness (not published): BFCL questions scored by
//! BFCL's rule, MetaTool tool retrieval and MetaTool end to end through an
//! agent (its 199 tools inline, or hidden in a catalog of real APIs'
//! operations behind discovery), what a tool catalog costs in every prompt,
//! which skill the agent reads, and what the relevance gate turns away.
//! Each goes through the `agentry` program's own model flags and agent
//! set-up ([`agentry_cli`]), so it measures what the program does, and
//! writes a JSON report.
//!
//! Its program, `agentry-eval`, runs from the repository, whose `datasets/`
//! and `benches/data/` it reads ([`datasets`] says how it finds them):
//! `cargo run --release -p agentry-eval -- bfcl --all`.
//!
//! BFCL's rule, as [`bfcl::calls_match`] applies it: each call names a
//! function of the question, passes no argument the answer does not list,
//! and gives each value the answer accepts (strings compared BFCL's way).
//!
//! ```
//! use agentry::tool::ToolCall;
//! use agentry_eval::bfcl::calls_match;
//! use serde_json::json;
//!
//! let answer: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_value(json!([
//!     {"triangle_area": {"base": [10], "height": [5], "unit": ["cm", ""]}}
//! ]))?;
//! let call = |input| ToolCall::new("call-1", "triangle_area", input);
//! // Numbers by value, strings without case; an optional argument may be left out.
//! assert!(calls_match(&[call(json!({"base": 10.0, "height": 5, "unit": "CM"}))], &answer));
//! assert!(calls_match(&[call(json!({"base": 10, "height": 5}))], &answer));
//! // A missing required argument, or one the answer does not list, fails.
//! assert!(!calls_match(&[call(json!({"base": 10}))], &answer));
//! assert!(!calls_match(&[call(json!({"base": 10, "height": 5, "color": "red"}))], &answer));
//! # Ok::<_, serde_json::Error>(())
//! ```

#![warn(missing_docs)]

pub mod bfcl;
mod catalog;
pub mod datasets;
mod everyday;
mod everyday_ask;
mod everyday_check;
mod everyday_tools;
mod metatool;
mod metatool_agent;
mod metatool_catalog;
mod relevance_gate;
mod skill_choice;
mod tool_prompt;

use std::path::Path;
use std::process::ExitCode;

use clap::Subcommand;
use serde::Serialize;

/// The evaluations.
#[derive(Subcommand)]
pub enum Command {
    /// Run BFCL questions and score them.
    Bfcl(bfcl::BfclArgs),
    /// Score skill/tool retrieval on MetaTool (recall@1, recall@5).
    Metatool(metatool::MetaToolArgs),
    /// MetaTool end to end through an agent: the share of queries whose first
    /// tool call names the right tool, 199 tools inline or a catalog behind discovery.
    MetatoolAgent(metatool_agent::MetaToolAgentArgs),
    /// Count the tokens a tool catalog costs per step, inline and with discovery.
    ToolPrompt(tool_prompt::ToolPromptArgs),
    /// Whether the agent reads the right skill for requests written from the
    /// shared skills' descriptions.
    SkillChoice(skill_choice::SkillChoiceArgs),
    /// How often the relevance gate turns requests away, on BFCL and
    /// MetaTool (embeddings only, no chat model).
    RelevanceGate(relevance_gate::RelevanceArgs),
    /// Everyday requests to the demo agent and to an assistant with
    /// real-world tools, scored on the call and the answer, by half.
    Everyday(everyday::EverydayArgs),
}

/// Run an evaluation: its report goes to stdout (or `--out`), its progress
/// to stderr.
pub async fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Bfcl(args) => bfcl::run(args).await,
        Command::Metatool(args) => metatool::run(args).await,
        Command::MetatoolAgent(args) => metatool_agent::run(args).await,
        Command::ToolPrompt(args) => tool_prompt::run(args).await,
        Command::SkillChoice(args) => skill_choice::run(args).await,
        Command::RelevanceGate(args) => relevance_gate::run(args).await,
        Command::Everyday(args) => everyday::run(args).await,
    }
}

/// Write an evaluation's JSON report to `out`, or to stdout without one.
fn write_report(report: &impl Serialize, out: Option<&Path>) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    match out {
        Some(path) => {
            std::fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))
        }
        None => {
            println!("{json}");
            Ok(())
        }
    }
}
