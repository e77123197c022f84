//! # agentry-agent
//!
//! The runtime of [agentry](https://docs.rs/agentry): the safe loop, built
//! on the contracts of `agentry-core` (tools, models, memory, skills, the
//! run journal). An [`Agent`] lets a model choose tools but decides itself
//! whether they run: the allow-list, least-privilege capabilities
//! ([`gated_dispatch`](agentry_core::tool::gated_dispatch)), approval of
//! destructive calls, an audit trail, and a loop bounded by steps and a token
//! budget. Agents nest as each other's tools ([`Agent::as_tool`]); every run
//! can be read as a stream of [`AgentEvent`]s; a run can be made durable
//! ([`durable`]), a memory-grounded chat turn runs over it ([`turn`]), and a
//! typed request is a [`program`].
//!
//! ```
//! use agentry_agent::{Agent, Outcome};
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//! use agentry_core::tool::{ToolCall, function};
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
//! let model = ScriptedModel::new()
//!     .reply(Step::Tool {
//!         calls: vec![ToolCall::new("c1", "add", json!({"x": 2, "y": 3}))],
//!         text: String::new(),
//!         tokens: Usage::new(10, 5),
//!     })
//!     .reply(Step::Final { text: "5".into(), tokens: Usage::new(10, 1) });
//! let agent = Agent::builder(model).tool(add).build()?;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let run = agent.run("What is 2 + 3?").await;
//! assert_eq!(run.outcome, Outcome::Final("5".into()));
//! assert_eq!(run.steps[0].calls[0].result.output, json!(5));
//! # });
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod admit;
#[allow(clippy::module_inception)]
mod agent;
mod answer_check;
mod approval_run;
mod builder;
mod child;
mod discovery;
pub mod durable;
mod events;
pub mod guardrail;
pub mod handoff;
mod outcome;
mod policy;
mod prompt_schema;
mod relevance;
mod run;
mod run_tools;
mod skills;
mod sources;
mod spend;
pub mod stepwise;
mod telemetry;
pub mod verdict;

pub mod program;
pub mod turn;

pub use agent::{Agent, DEFAULT_MAX_CALLS_PER_STEP, DEFAULT_MAX_DEPTH, DEFAULT_MAX_STEPS};
pub use answer_check::AnswerCheck;
pub use approval_run::{ApprovalEvent, ApprovalRun, RunHandle};
pub use builder::{AgentBuilder, AgentError};
pub use child::CHILD_AGENT_TIMEOUT;
pub use discovery::{DISCOVER, SEARCH_BUDGET_BYTES, SEARCH_LIMIT, SEARCH_TOOLS};
pub use durable::{DurableRun, DurableRuns};
pub use events::AgentEvent;
pub use guardrail::{Guardrail, GuardrailStage, GuardrailTripped, Verdict};
pub use handoff::{HANDOFF_PREFIX, Handoff, HandoffRecord};
pub use outcome::{
    CallRecord, ChildRun, OUT_OF_STEPS_TEXT, Outcome, RunError, RunOutcome, StepRecord,
};
pub use policy::{
    Approval, Approver, AuditLog, AuditOutcome, AuditRecord, AuditSink, arguments_digest,
};
pub use prompt_schema::{PROMPT_SCHEMA_BYTES, first_sentence};
pub use relevance::{
    DEFAULT_RELEVANCE_FLOOR, FirstStep, Relevance, RelevanceGate, RequestPart, SMALL_TALK, ToolText,
};
pub(crate) use run::Frame;
