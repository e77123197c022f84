//! Seed 003's safe loop: an [`Agent`] that lets a model choose tools but
//! decides itself whether they run — allow-list, least-privilege capability
//! gate ([`call_tool`]), approval of destructive calls, an audit trail, and a
//! loop bounded by steps and a token budget. Agents nest as each other's
//! tools ([`Agent::as_tool`]), and every run can be read as a stream of
//! [`AgentEvent`]s.

#[allow(clippy::module_inception)]
mod agent;
mod builder;
mod call_gate;
mod child;
mod discovery;
pub mod durable;
mod events;
mod gate;
mod outcome;
mod policy;
mod prompt_schema;
mod relevance;
mod run;
mod skills;
mod sources;
mod spend;

pub use agent::{Agent, DEFAULT_MAX_CALLS_PER_STEP, DEFAULT_MAX_DEPTH, DEFAULT_MAX_STEPS};
pub use builder::{AgentBuilder, AgentError};
pub use child::CHILD_AGENT_TIMEOUT;
pub(crate) use child::CallScope;
pub use discovery::{
    DISCOVER, DISCOVER_ENUM_BYTES, MAX_LISTED_MODULES, SEARCH_BUDGET_BYTES, SEARCH_LIMIT,
    SEARCH_TOOLS,
};
pub use durable::{DurableRun, DurableRuns};
pub use events::AgentEvent;
pub use gate::{call, call_tool, gated_dispatch};
pub use outcome::{
    CallRecord, ChildRun, OUT_OF_STEPS_TEXT, Outcome, RunError, RunOutcome, StepRecord,
};
pub use policy::{
    Approval, Approver, AuditLog, AuditOutcome, AuditRecord, AuditSink, arguments_digest,
};
pub use prompt_schema::PROMPT_SCHEMA_BYTES;
pub use relevance::{DEFAULT_RELEVANCE_FLOOR, RelevanceGate, TOOL_VECTORS_KEPT, ToolText};
pub(crate) use run::Frame;
