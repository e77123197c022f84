//! How the model may use tools in a step: the agent's setting, narrowed
//! by the relevance gate at step 1, a part of the request still to call a
//! tool for, the limit on tool rounds, and discovery.

use crate::agent::Agent;
use crate::relevance::Relevance;
use crate::run_tools::RunTools;
use agentry_core::model::{Message, ToolChoice};

impl Agent {
    /// How the model may use tools in the step `at` describes: a call to
    /// the tool of a part of the request no call has answered yet (the
    /// relevance gate's [`parts`](Relevance::parts)), with the part named
    /// to the model where its tool was called already; not at all past
    /// the limit on tool rounds or after an answer was re-asked; on the
    /// first step as the agent is set to (`Auto` narrowed by the relevance
    /// gate, whose reading comes back with it, and which later steps pass
    /// back as `known`); right after a step that only loaded functions, it
    /// must call one.
    pub(crate) async fn tool_choice(
        &self,
        run_tools: &RunTools,
        messages: &[Message],
        at: StepState,
        known: Option<&Relevance>,
    ) -> StepChoice {
        let settings = &self.settings;
        if at.index > 1
            && !at.rechecked
            && let Some(unserved) = crate::relevance::parts::unserved_part(
                settings,
                &run_tools.toolbox,
                &run_tools.advertised,
                messages,
                known,
            )
            .await
        {
            // A part of the request its tool has not answered yet: its call
            // comes before the answer, past the limit on tool rounds.
            return StepChoice {
                note: unserved.note(),
                tool_choice: ToolChoice::Tool(unserved.tool),
                relevance: None,
                for_part: true,
            };
        }
        let tool_choice = match settings.max_tool_rounds {
            _ if at.rechecked => ToolChoice::None,
            Some(limit) if at.tool_rounds >= limit => ToolChoice::None,
            _ if at.index <= 1 => settings.first_tool_choice.clone(),
            _ if at.discovered => ToolChoice::Required,
            _ => ToolChoice::Auto,
        };
        let (tool_choice, relevance) = match tool_choice {
            ToolChoice::Auto if at.index <= 1 => {
                crate::relevance::first_step_choice(settings, &run_tools.advertised, messages).await
            }
            other => (other, None),
        };
        StepChoice {
            tool_choice,
            relevance,
            note: None,
            for_part: false,
        }
    }
}

/// How the model may use tools in one step ([`Agent::tool_choice`]).
pub(crate) struct StepChoice {
    /// The tool choice.
    pub tool_choice: ToolChoice,
    /// What the relevance gate made of the request (step 1).
    pub relevance: Option<Relevance>,
    /// A message added to this step's request only: the part of the
    /// request its call is for.
    pub note: Option<Message>,
    /// The step calls a tool for a part of the request no call answered.
    pub for_part: bool,
}

/// Where a run stands before a step, as far as the tools on offer go.
#[derive(Clone, Copy)]
pub(crate) struct StepState {
    /// The step about to be taken, from 1.
    pub index: usize,
    /// Steps whose calls counted against the limit on tool rounds.
    pub tool_rounds: usize,
    /// The step before only loaded functions (discovery).
    pub discovered: bool,
    /// An answer was re-asked: no tools now.
    pub rechecked: bool,
}
