//! # agentry-evals
//!
//! Evals for your own agent: cases of a request (with an optional earlier
//! conversation and context) and what a good run does (the tools it calls,
//! with their arguments by value, JSON Schema or pattern, in order or not,
//! or no call at all; the answer it gives, checked by text, pattern, JSON
//! Schema, number with a tolerance, or a judge model against a rubric; the
//! steps and tokens it may spend). A [`Harness`] runs a [`Suite`] of them
//! on an agent, several at once and repeated for variance, and gives a
//! [`Report`]: a table, JSON, JUnit XML for CI, a threshold, a comparison
//! with a saved baseline naming what regressed, and each trial's
//! trajectory (every step's calls and results).
//!
//! The `agentry eval run cases.toml` command runs a cases file on the agent
//! `agentry run` would use; [`bfcl`] turns BFCL's questions into a suite
//! for the same harness (`agentry eval bfcl`).
//!
//! ```
//! use agentry_agent::Agent;
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//! use agentry_core::tool::{ToolCall, function};
//! use agentry_evals::{Harness, Suite};
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize)]
//! struct Add { x: i64, y: i64 }
//! let add = function("add")
//!     .arg::<i64>("x", "First addend")
//!     .arg::<i64>("y", "Second addend")
//!     .handler(|a: Add| Ok::<_, String>(a.x + a.y))
//!     .build()?
//!     .with_name("add");
//! // A scripted model stands in for a real one here: it calls `add`, then answers.
//! let model = ScriptedModel::new()
//!     .reply(Step::Tool {
//!         calls: vec![ToolCall::new("c1", "add", json!({"x": 2, "y": 3}))],
//!         text: String::new(),
//!         tokens: Usage::new(40, 5),
//!     })
//!     .reply(Step::Final { text: "2 + 3 = 5".into(), tokens: Usage::new(60, 4) });
//! let agent = Agent::builder(model).tool(add).build()?;
//!
//! let suite = Suite::from_toml(r#"
//!     [[case]]
//!     name = "sum"
//!     input = "What is 2 + 3?"
//!     calls = [{ tool = "add", args = { x = 2, y = 3 } }]
//!     answer = [{ number = 5 }, { regex = "=\\s*5" }]
//!     max_steps = 2
//!     max_tokens = 100
//! "#)?;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let report = Harness::new(agent).run(&suite).await;
//! let trial = &report.cases[0].trials[0];
//! assert_eq!(trial.failures[0].check, "max_tokens");
//! assert_eq!(trial.failures[0].why, "spent 109 tokens, over 100");
//! assert_eq!(trial.trajectory[0].calls[0].result, json!(5));
//! assert!(!report.meets_threshold());
//! assert!(report.junit()?.contains(r#"<failure message="max_tokens: spent 109 tokens, over 100""#));
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod baseline;
pub mod bfcl;
mod case;
mod check;
mod harness;
pub mod judge;
mod report;
mod suite;

pub use baseline::{Change, Comparison};
pub use case::{AnswerCheck, Case, Check, ExpectedCall, Role, Turn};
pub use check::{Failure, distinct_match};
pub use harness::{DEFAULT_TRIAL_TIMEOUT, Harness};
pub use report::{CaseReport, Report, TrajectoryCall, TrajectoryStep, Trial};
pub use suite::{MAX_CONCURRENCY, MAX_FILE_BYTES, MAX_REPEATS, Suite, SuiteError};
