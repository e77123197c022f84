//! Seed 003's safe loop: an [`Agent`] that lets a model choose tools but
//! decides itself whether they run — allow-list, least-privilege capability
//! gate ([`call_tool`]), approval of destructive calls, an audit trail, and a
//! loop bounded by steps and a token budget.

mod gate;
mod policy;
mod run;
mod skills;

pub use gate::{call, call_tool, gated_dispatch};
pub use policy::{
    Approval, Approver, AuditLog, AuditOutcome, AuditRecord, AuditSink, arguments_digest,
};
pub use run::{
    Agent, CallRecord, DEFAULT_MAX_STEPS, OUT_OF_STEPS_TEXT, Outcome, RunOutcome, StepRecord,
};
