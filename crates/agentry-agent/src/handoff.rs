//! Handoffs: an agent gives the conversation to another agent, which
//! carries on with its own tools, grants, budget and model. The model sees
//! each handoff as a tool, `transfer_to_<name>`, with a `reason`.
//!
//! Unlike a child agent ([`Agent::as_tool`]), which answers its parent and
//! returns, the agent handed to answers the user: the run goes on with it,
//! and its answer is the run's. The run records each handoff
//! ([`RunOutcome::handoffs`](super::RunOutcome::handoffs)) and who answered
//! ([`RunOutcome::agent`](super::RunOutcome::agent)).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::agent::Agent;
use super::child::CallScope;
use agentry_core::model::Message;
use agentry_core::tool::{Tool, ToolContext, ToolError, ToolHandler};

/// The start of every handoff tool's name.
pub const HANDOFF_PREFIX: &str = "transfer_to_";

type Filter = dyn Fn(&[Message]) -> Vec<Message> + Send + Sync;

/// A handoff an agent may make: to `target`, offered to the model as
/// `transfer_to_<target's name>`. Give it with
/// [`AgentBuilder::handoff`](super::AgentBuilder::handoff).
#[derive(Clone)]
pub struct Handoff {
    pub(crate) target: Arc<Agent>,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) filter: Option<Arc<Filter>>,
}

impl fmt::Debug for Handoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("to", &self.name)
            .field("description", &self.description)
            .field("filter", &self.filter.is_some())
            .finish()
    }
}

impl Handoff {
    /// A handoff to `target`, which must have a [`name`](super::AgentBuilder::name):
    /// its tool is `transfer_to_<name>` (the name lower-cased, other
    /// characters than letters, digits, `_` and `-` made `_`).
    pub fn to(target: Agent) -> Self {
        let name = target.settings.name.clone().unwrap_or_default();
        Self {
            target: Arc::new(target),
            name,
            description: None,
            filter: None,
        }
    }

    /// What the model is told the agent handed to is for ("Billing:
    /// invoices, refunds, charges."), the tool's description.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// What the agent handed to sees of the conversation: `filter` gets the
    /// whole history (the handoff's own call and result last) and returns
    /// what to keep. Without one it sees everything. [`filters`] has
    /// common ones.
    pub fn input_filter(
        mut self,
        filter: impl Fn(&[Message]) -> Vec<Message> + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// The agent handed to.
    pub fn agent(&self) -> &Agent {
        &self.target
    }

    /// The agent handed to's name.
    pub fn target_name(&self) -> &str {
        &self.name
    }

    /// The tool the model calls to hand off.
    pub fn tool_name(&self) -> String {
        tool_name(&self.name)
    }

    /// The history as the agent handed to gets it.
    pub(crate) fn history(&self, messages: &[Message]) -> Vec<Message> {
        match &self.filter {
            Some(filter) => filter(messages),
            None => messages.to_vec(),
        }
    }

    /// The tool the model sees: `transfer_to_<name>({reason})`. It refuses
    /// past the depth limit (a handoff runs the next agent one level down);
    /// otherwise it answers `{"transferred_to": name}` and the loop hands over.
    pub(crate) fn tool(&self) -> Tool {
        let name = self.name.clone();
        let description = self.description.clone().unwrap_or_else(|| {
            format!("Hand the conversation to the {name} agent, which answers the user from here.")
        });
        let schema = json!({
            "type": "object",
            "properties": {"reason": {
                "type": "string",
                "description": "Why this agent should take over, in one sentence."
            }},
            "required": ["reason"]
        });
        let handler = ToolHandler::sync(move |input: Value, ctx: &ToolContext| {
            if let Some(scope) = ctx.state::<Arc<CallScope>>()
                && scope.depth() + 1 > scope.max_depth()
            {
                return Err(ToolError::failed(format!(
                    "no handoff to {name}: agents may hand off or nest only {} deep; answer yourself",
                    scope.max_depth()
                )));
            }
            Ok(json!({"transferred_to": name, "reason": input["reason"]}))
        });
        Tool::new(self.tool_name(), schema, handler).with_description(description)
    }
}

/// `transfer_to_<name>`, the name made a tool name.
pub(crate) fn tool_name(agent: &str) -> String {
    let name: String = agent
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' | '-' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect();
    format!("{HANDOFF_PREFIX}{name}")
}

/// One handoff of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffRecord {
    /// The agent that handed off (`None` when it has no name).
    pub from: Option<String>,
    /// The agent handed to.
    pub to: String,
    /// Why, as the model said.
    pub reason: String,
    /// The step whose call handed off.
    pub step: usize,
}

/// Ready input filters for [`Handoff::input_filter`].
pub mod filters {
    use agentry_core::model::Message;

    /// Only the user's last message: the agent handed to starts afresh.
    pub fn last_user_message(messages: &[Message]) -> Vec<Message> {
        messages
            .iter()
            .rev()
            .find(|message| matches!(message, Message::User { .. }))
            .cloned()
            .into_iter()
            .collect()
    }

    /// The conversation without tool calls and their results (the
    /// handoff's own included): what the user and the agents said.
    pub fn without_tool_calls(messages: &[Message]) -> Vec<Message> {
        messages
            .iter()
            .filter_map(|message| match message {
                Message::User { .. } => Some(message.clone()),
                Message::Assistant { text, .. } if !text.trim().is_empty() => {
                    Some(Message::assistant(text.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_made_from_agent_names() {
        assert_eq!(tool_name("billing"), "transfer_to_billing");
        assert_eq!(tool_name("Tech Support"), "transfer_to_tech_support");
    }

    #[test]
    fn filters_keep_what_they_say() {
        use agentry_core::tool::{ToolCall, ToolResult};
        let history = vec![
            Message::user("hi"),
            Message::assistant("hello"),
            Message::user("I was charged twice"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::new("c1", "transfer_to_billing", json!({}))],
            },
            Message::tool(ToolResult::ok("c1", json!({}))),
        ];
        assert_eq!(
            filters::last_user_message(&history),
            [Message::user("I was charged twice")]
        );
        assert_eq!(filters::without_tool_calls(&history), history[..3]);
    }
}
