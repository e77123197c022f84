//! The loop's gate for one model-chosen call: the allow-list, discovery's
//! loaded set, the decision on a call that needs one (a destructive call's
//! approval, an interrupted call of a durable run), the journal's "started"
//! entry, then the capability-checked dispatch.

use std::sync::Arc;

use super::agent::Agent;
use super::child::CallScope;
use super::durable::{Decision, RunEntry, Waiting};
use super::policy::{Approval, AuditOutcome};
use super::run::Frame;
use crate::run_tools::RunTools;
use agentry_core::tool::{ToolCall, ToolResult, gated_dispatch};

/// A call the gate ran or refused: the call (with the input it ran with),
/// its result and how it ended. The gate's `Err` is why a call waits.
type Gated = Result<(ToolCall, ToolResult, AuditOutcome), Waiting>;

impl Agent {
    /// The gate: allow-list, loaded (discovery), decisions and approval,
    /// then the capability-checked dispatch. `interrupted`: a process
    /// started this call before and never finished it.
    pub(crate) async fn admit(
        &self,
        run_tools: &RunTools,
        frame: &Frame,
        scope: &Arc<CallScope>,
        call: &ToolCall,
        interrupted: bool,
    ) -> Gated {
        let refused = |message: String, outcome| {
            Ok((
                call.clone(),
                ToolResult::error(call.id.clone(), message),
                outcome,
            ))
        };
        let tool = match run_tools.allowed_tool(self.settings.allow.as_deref(), &call.name) {
            Ok(tool) => tool,
            Err(message) => return refused(message, AuditOutcome::NotAllowed),
        };
        if let Err(message) = run_tools.loaded(&tool.name) {
            return refused(message, AuditOutcome::NotAllowed);
        }
        let durable = frame.durable.as_deref();
        let needs_decision = if interrupted {
            // It may have had its effect: only an idempotent tool runs again by itself.
            (!tool.hints.idempotent).then_some(Waiting::Interrupted)
        } else {
            tool.hints.destructive.then_some(Waiting::Approval)
        };
        // A decision remembered for the tool covers approval, never running
        // an interrupted call again.
        let decision = match (durable, needs_decision) {
            (Some(durable), Some(_)) => durable.take_decision(call, !interrupted),
            _ => None,
        };
        // A run whose journal failed runs nothing more: nobody is asked.
        if let Some(error) = durable.and_then(|durable| durable.failure()) {
            let message = format!("not run: the run's journal could not be written: {error}");
            return refused(message.clone(), AuditOutcome::Error(message));
        }
        let approval = match (needs_decision, &decision) {
            (None, _) => Approval::Approve,
            (Some(_), Some(Decision::Approve | Decision::Edit { .. })) => Approval::Approve,
            (Some(_), Some(Decision::Deny { reason })) => Approval::Deny(reason.clone()),
            (Some(Waiting::Interrupted), None) => Approval::Defer,
            (Some(Waiting::Approval), None) => match &self.settings.approver {
                Some(approver) => approver.review(tool, call).await,
                None if durable.is_some() => Approval::Defer,
                None => Approval::Deny("no approver is configured for destructive tools".into()),
            },
        };
        match approval {
            Approval::Approve => {}
            Approval::Deny(reason) => {
                let message = format!("tool \"{}\" was not approved: {reason}", tool.name);
                return refused(message, AuditOutcome::Denied(reason));
            }
            Approval::Defer if durable.is_some() => {
                return Err(needs_decision.unwrap_or(Waiting::Approval));
            }
            Approval::Defer => {
                let reason =
                    "it needs a person's approval, and only a durable run can wait for one";
                let message = format!("tool \"{}\" was not approved: {reason}", tool.name);
                return refused(message, AuditOutcome::Denied(reason.to_owned()));
            }
        }
        let mut call = call.clone();
        if let Some(Decision::Edit { input }) = decision {
            call.input = input;
        }
        if let Some(durable) = durable {
            let entry = RunEntry::CallStarted {
                call_id: call.id.clone(),
                input: call.input.clone(),
            };
            if let Err(error) = durable.write(entry).await {
                let message = format!("not run: the run's journal could not be written: {error}");
                return refused(message.clone(), AuditOutcome::Error(message));
            }
        }
        let context = frame.context.clone().with_state(scope.clone());
        let result =
            gated_dispatch(&run_tools.toolbox, call.clone(), &frame.grants, &context).await;
        let outcome = match result.error_message() {
            Some(message) => AuditOutcome::Error(message.to_owned()),
            None => AuditOutcome::Ok,
        };
        Ok((call, result, outcome))
    }
}
