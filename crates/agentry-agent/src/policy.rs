//! Approval of destructive calls and the audit trail of every call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentry_core::BoxFuture;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use agentry_core::tool::{Tool, ToolCall};

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run the call.
    Approve,
    /// Do not run it; the reason is fed back to the model.
    Deny(String),
    /// Leave it to a person: a durable run ([`Agent::durable`]) stops with
    /// [`Outcome::AwaitingDecision`] until one decides; any other run
    /// refuses the call.
    ///
    /// [`Agent::durable`]: super::Agent::durable
    /// [`Outcome::AwaitingDecision`]: super::Outcome::AwaitingDecision
    Defer,
}

/// Decides whether a destructive call may run.
///
/// Any `Fn(&Tool, &ToolCall) -> Approval` is an approver; implement the trait
/// directly to ask asynchronously (a person in a UI, a policy service).
pub trait Approver: Send + Sync {
    /// Review one call.
    fn review<'a>(&'a self, tool: &'a Tool, call: &'a ToolCall) -> BoxFuture<'a, Approval>;
}

impl<F> Approver for F
where
    F: Fn(&Tool, &ToolCall) -> Approval + Send + Sync,
{
    fn review<'a>(&'a self, tool: &'a Tool, call: &'a ToolCall) -> BoxFuture<'a, Approval> {
        let answer = self(tool, call);
        Box::pin(async move { answer })
    }
}

/// How a call ended, for the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum AuditOutcome {
    /// The tool ran and returned a value.
    Ok,
    /// The tool ran (or dispatch tried to) and failed.
    Error(String),
    /// The name was not on the allow-list; nothing ran.
    NotAllowed,
    /// The approver refused; nothing ran.
    Denied(String),
}

/// One entry of the audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// The call id.
    pub call_id: String,
    /// The tool name the model used.
    pub tool: String,
    /// SHA-256 (hex) of the arguments' JSON text: proves what was passed without storing it.
    pub arguments_digest: String,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// Wall time from the gate to the result.
    #[serde(with = "duration_micros")]
    pub duration: Duration,
}

mod duration_micros {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.as_micros() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_micros(u64::deserialize(deserializer)?))
    }
}

/// SHA-256 of a call's arguments, as lowercase hex.
pub fn arguments_digest(call: &ToolCall) -> String {
    let digest = Sha256::digest(call.input.to_string().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Receives audit records.
pub trait AuditSink: Send + Sync {
    /// Store one record.
    fn record(&self, record: AuditRecord);
}

/// A shared sink is a sink (keep an `Arc<AuditLog>` to read it back).
impl<S: AuditSink + ?Sized> AuditSink for Arc<S> {
    fn record(&self, record: AuditRecord) {
        (**self).record(record)
    }
}

/// An in-memory audit trail.
#[derive(Debug, Default)]
pub struct AuditLog {
    records: Mutex<Vec<AuditRecord>>,
}

impl AuditLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record so far, in order.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl AuditSink for AuditLog {
    fn record(&self, record: AuditRecord) {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digests_are_sha256_of_the_arguments() {
        let call = ToolCall::new("1", "x", json!({}));
        assert_eq!(
            arguments_digest(&call),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
