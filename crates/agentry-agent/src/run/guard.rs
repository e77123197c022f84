//! The agent's guardrails in the loop (see [`crate::guardrail`]): the
//! user's message before the first step, the answer before it is given,
//! and untrusted tools' results before the model (or the journal) sees them.

use std::collections::HashMap;

use super::{Progress, text_step};
use crate::agent::Agent;
use crate::events::EventSink;
use crate::guardrail::{Guarded, Guardrail, GuardrailStage, GuardrailTripped, apply};
use crate::run_tools::RunTools;
use agentry_core::model::{Message, Usage};
use agentry_core::tool::{Capability, ToolCall, ToolResult};
use serde_json::Value;

/// An agent's guardrails, by where they stand.
#[derive(Clone, Default)]
pub(crate) struct Guardrails {
    pub input: Vec<Guardrail>,
    pub output: Vec<Guardrail>,
    pub tool_result: Vec<Guardrail>,
}

/// What the loop does with an answer after the output guardrails.
pub(super) enum Answer {
    /// Give this (rewritten or not).
    Give(String),
    /// The answer was recorded as a step and the model is told why it
    /// must try again.
    Again,
    /// A guardrail stopped the run.
    Tripped(GuardrailTripped),
}

/// The text a result shows a guardrail: a string as it is, else its JSON.
fn result_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl Agent {
    /// A fresh run's user message through the input guardrails: rewritten
    /// in place, or the run stops. A resumed run was checked when it began,
    /// and a durable run before its journal was written
    /// ([`Agent::guarded_input`]).
    pub(super) async fn guard_input(&self, run: &mut Progress) -> Result<(), GuardrailTripped> {
        if !run.steps.is_empty() {
            return Ok(());
        }
        let messages = std::mem::take(&mut run.messages);
        run.messages = self.guarded_input(messages).await?;
        Ok(())
    }

    /// `messages` with their last user message through the input
    /// guardrails (rewritten where one rewrote it), or why a guardrail
    /// stopped them.
    pub(crate) async fn guarded_input(
        &self,
        mut messages: Vec<Message>,
    ) -> Result<Vec<Message>, GuardrailTripped> {
        let guardrails = &self.settings.guardrails.input;
        if guardrails.is_empty() {
            return Ok(messages);
        }
        let Some(Message::User { text }) = messages
            .iter_mut()
            .rev()
            .find(|message| matches!(message, Message::User { .. }))
        else {
            return Ok(messages);
        };
        match apply(
            guardrails,
            text.clone(),
            GuardrailStage::Input,
            &HashMap::new(),
        )
        .await
        {
            Guarded::Pass(checked) => {
                *text = checked;
                Ok(messages)
            }
            Guarded::Tripped(tripped) => Err(tripped),
            Guarded::Retry { .. } => unreachable!("an input retry trips"),
        }
    }

    /// The model's answer through the output guardrails. A retry records
    /// the answer and tells the model what was wrong (not in durable runs,
    /// whose journal has the answer as the run's last word: there it trips).
    pub(super) async fn guard_output(
        &self,
        run: &mut Progress,
        durable: bool,
        text: String,
        tokens: Usage,
        sink: Option<&EventSink>,
    ) -> Answer {
        let guardrails = &self.settings.guardrails.output;
        if guardrails.is_empty() {
            return Answer::Give(text);
        }
        match apply(
            guardrails,
            text.clone(),
            GuardrailStage::Output,
            &run.guard_retries,
        )
        .await
        {
            Guarded::Pass(checked) => Answer::Give(checked),
            Guarded::Tripped(tripped) => Answer::Tripped(tripped),
            Guarded::Retry {
                guardrail,
                feedback,
            } if durable => Answer::Tripped(GuardrailTripped {
                guardrail,
                stage: GuardrailStage::Output,
                reason: feedback,
            }),
            Guarded::Retry {
                guardrail,
                feedback,
            } => {
                *run.guard_retries.entry(guardrail).or_default() += 1;
                text_step(run, text, tokens, sink);
                run.messages.push(Message::user(format!(
                    "Your answer was not accepted: {feedback}. Answer again."
                )));
                Answer::Again
            }
        }
    }

    /// A result of `call` through the tool-result guardrails, when its tool
    /// is one the agent does not control (a tool source's, marked
    /// `open_world`, or granted the network). On a trip the model gets an
    /// error in its place.
    pub(super) async fn guard_result(
        &self,
        run_tools: &RunTools,
        call: &ToolCall,
        result: ToolResult,
    ) -> (ToolResult, Option<GuardrailTripped>) {
        let guardrails = &self.settings.guardrails.tool_result;
        // A tool source's tool, or one that reaches beyond the agent's
        // world: marked `open_world`, or granted the network.
        let untrusted = run_tools.sourced.contains(&call.name)
            || run_tools
                .toolbox
                .find_for_call(&call.name)
                .is_some_and(|tool| {
                    tool.hints.open_world
                        || tool
                            .capabilities
                            .iter()
                            .any(|capability| matches!(capability, Capability::Net(_)))
                });
        if guardrails.is_empty() || !untrusted {
            return (result, None);
        }
        let text = result_text(&result.output);
        match apply(
            guardrails,
            text.clone(),
            GuardrailStage::ToolResult,
            &HashMap::new(),
        )
        .await
        {
            Guarded::Pass(checked) if checked == text => (result, None),
            Guarded::Pass(checked) => {
                let output = match &result.output {
                    Value::String(_) => Value::String(checked),
                    _ => serde_json::from_str(&checked).unwrap_or(Value::String(checked)),
                };
                (ToolResult { output, ..result }, None)
            }
            Guarded::Tripped(tripped) => {
                let withheld =
                    ToolResult::error(result.id, format!("the result was withheld: {tripped}"));
                (withheld, Some(tripped))
            }
            Guarded::Retry { .. } => unreachable!("a tool-result retry trips"),
        }
    }
}
