//! A run across handoffs: when an agent's step calls `transfer_to_<name>`,
//! the agent handed to carries on with the conversation (as its handoff's
//! input filter lets it see it), inside the same run: the run's token budget
//! and depth limit hold across agents, a durable run's journal records the
//! handoff, and the record keeps every agent's steps in order.

use std::sync::Arc;

use super::{Frame, emit};
use crate::agent::Agent;
use crate::durable::RunEntry;
use crate::events::{AgentEvent, EventSink};
use crate::handoff::{Handoff, HandoffRecord};
use crate::outcome::{Outcome, RunOutcome, StepRecord};
use crate::spend::Spend;

/// One agent's part of a run, and the handoff that ended it, if one did.
pub(crate) struct Segment {
    pub run: RunOutcome,
    pub handoff: Option<Pending>,
}

/// A handoff a step made, not yet carried out.
pub(crate) struct Pending {
    handoff: Handoff,
    reason: String,
    step: usize,
}

/// The first handoff a finished step made: a call to a handoff tool of
/// `agent`'s that succeeded (one refused past the depth limit did not).
pub(super) fn called(agent: &Agent, step: &StepRecord) -> Option<Pending> {
    step.calls.iter().find_map(|record| {
        if record.result.is_error {
            return None;
        }
        let handoff = agent
            .settings
            .handoffs
            .iter()
            .find(|handoff| handoff.tool_name() == record.call.name)?;
        Some(Pending {
            handoff: handoff.clone(),
            reason: record.call.input["reason"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            step: step.index,
        })
    })
}

impl Agent {
    /// Carry out `segment`'s handoff, and every one after it: each agent
    /// handed to runs one level deeper than the one before, within its own
    /// budget and the run's, with its own grants, tools and model.
    pub(super) async fn follow_handoffs(
        &self,
        frame: &Frame,
        segment: Segment,
        sink: Option<&EventSink>,
    ) -> RunOutcome {
        let Segment {
            mut run,
            mut handoff,
        } = segment;
        let mut from = self.settings.name.clone();
        let mut depth = frame.depth;
        while let Some(Pending {
            handoff: to,
            reason,
            step,
        }) = handoff.take()
        {
            let target: Arc<Agent> = to.target.clone();
            let history = to.history(&run.messages);
            let record = HandoffRecord {
                from: from.clone(),
                to: to.name.clone(),
                reason,
                step,
            };
            if let Some(durable) = frame.durable.as_deref() {
                let entry = RunEntry::HandedOff {
                    step,
                    from: record.from.clone(),
                    to: record.to.clone(),
                    reason: record.reason.clone(),
                    messages: history.clone(),
                };
                if let Err(error) = durable.write(entry).await {
                    run.outcome = Outcome::JournalFailed(error);
                    return run;
                }
            }
            emit(sink, || AgentEvent::Handoff {
                step,
                from: record.from.clone(),
                to: record.to.clone(),
                reason: record.reason.clone(),
            });
            depth += 1;
            let next = Frame {
                depth,
                max_depth: frame.max_depth,
                grants: target.settings.grants.clone(),
                spend: Spend::child_of(&frame.spend, target.settings.token_budget),
                context: target.settings.context.clone().merged_with(&frame.context),
                durable: frame.durable.clone(),
                name: target.settings.name.clone(),
            };
            run.handoffs.push(record);
            let start = crate::durable::Replay {
                messages: history.clone(),
                before: run.steps.len(),
                handoffs: std::mem::take(&mut run.handoffs),
                ..Default::default()
            };
            let next_segment = target
                .segment(target.model.as_ref(), &next, start, sink)
                .await;
            // The conversation: everything so far, then what the agent
            // handed to added to what it was given.
            let mut messages = std::mem::take(&mut run.messages);
            messages.extend(next_segment.run.messages.into_iter().skip(history.len()));
            let mut steps = std::mem::take(&mut run.steps);
            steps.extend(next_segment.run.steps);
            run = RunOutcome {
                steps,
                messages,
                usage: frame.spend.usage(),
                ..next_segment.run
            };
            handoff = next_segment.handoff;
            from = target.settings.name.clone();
        }
        run.usage = frame.spend.usage();
        run
    }
}
