//! The loop's pieces, one at a time, for an engine that drives the loop
//! itself (a workflow engine such as Temporal, where each model step and
//! each tool call is a separately recorded activity).
//!
//! [`Agent::run`] holds the loop in one process. An engine that records
//! every effect instead keeps the loop's state itself (the conversation,
//! the steps, the tokens spent, the decisions people made) and asks the
//! agent for two things:
//!
//! - [`Agent::plan_step`]: the model's next step for the conversation so
//!   far, asked as the loop asks it (the run's tools and system prompt, the
//!   first step's choice narrowed by the relevance gate, no tools past the
//!   limit on tool rounds), with what the agent's gate makes of each call
//!   ([`Admission`]): run it, refuse it, or wait for a person;
//! - [`Agent::call_tool`]: one admitted call, dispatched with the agent's
//!   grants (least-privilege dispatch and schema validation, as in a run).
//!
//! Both take the conversation the run started with, so a worker that never
//! saw the run before prepares the same tools. What this does not carry:
//! discovery's loaded set, skills activated by earlier steps, the answer
//! check (answers are taken as they are, as durable runs take them), and
//! the agent's guardrails (not yet applied on engine-driven runs).
//!
//! ```
//! use agentry_agent::Agent;
//! use agentry_agent::stepwise::{Admission, StepAt};
//! use agentry_core::model::{Message, ScriptedModel, Step, Usage};
//! use agentry_core::tool::{ToolCall, function};
//! use serde_json::json;
//! #[derive(serde::Deserialize)]
//! struct Add { x: i64, y: i64 }
//! let add = function("add")
//!     .arg::<i64>("x", "First addend")
//!     .arg::<i64>("y", "Second addend")
//!     .handler(|a: Add| Ok::<_, String>(a.x + a.y))
//!     .build()?
//!     .with_name("add");
//! let model = ScriptedModel::new().reply(Step::Tool {
//!     calls: vec![ToolCall::new("c1", "add", json!({"x": 2, "y": 3}))],
//!     text: String::new(),
//!     tokens: Usage::new(10, 5),
//! });
//! let agent = Agent::builder(model).tool(add).build()?;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let started = vec![Message::user("What is 2 + 3?")];
//! let planned = agent.plan_step(&started, &started, StepAt::first()).await.unwrap();
//! let call = &planned.calls[0];
//! assert!(matches!(call.admission, Admission::Run { .. }));
//! let result = agent.call_tool(&started, call.call.clone()).await;
//! assert_eq!(result.output, json!(5));
//! # });
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::agent::Agent;
use crate::policy::Approval;
use crate::run_tools::RunTools;
use futures_util::StreamExt;

use crate::run::StepState;
use agentry_core::model::{Message, ModelError, Step, StreamEvent, collect_step};
use agentry_core::tool::{Capabilities, ToolCall, ToolResult, gated_dispatch};

/// Where a run driven from outside stands before a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepAt {
    /// The step about to be taken, from 1.
    pub index: usize,
    /// Steps so far whose calls count against the limit on tool rounds
    /// ([`AgentBuilder::max_tool_rounds`](crate::AgentBuilder::max_tool_rounds)).
    pub tool_rounds: usize,
}

impl StepAt {
    /// Before the first step.
    pub fn first() -> Self {
        Self {
            index: 1,
            tool_rounds: 0,
        }
    }
}

/// The model's step, and what the agent's gate makes of each of its calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedStep {
    /// The step as the model gave it.
    pub step: Step,
    /// Its calls (none for an answer), in order, each with its admission.
    pub calls: Vec<PlannedCall>,
}

/// One call of a planned step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The call as the model made it.
    pub call: ToolCall,
    /// What the agent's gate makes of it.
    pub admission: Admission,
}

/// What the agent's gate makes of one call before it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "admission", rename_all = "snake_case")]
pub enum Admission {
    /// Run it ([`Agent::call_tool`]).
    Run {
        /// The tool may run twice with the same effect as once: an engine
        /// may retry it, and run it again after a crash.
        idempotent: bool,
        /// The tool's own time limit, in milliseconds, when it has one.
        timeout_ms: Option<u64>,
    },
    /// Do not run it: this error result goes back to the model.
    Refused {
        /// The error the model reads.
        message: String,
    },
    /// Its tool is destructive: run it only once a person approves (or
    /// edits) it; a denial's reason goes back to the model.
    NeedsApproval {
        /// As for [`Admission::Run`].
        idempotent: bool,
        /// As for [`Admission::Run`].
        timeout_ms: Option<u64>,
    },
}

impl Agent {
    /// The model's next step for `messages` (the conversation so far), asked
    /// as [`Agent::run`] asks it, and what the gate makes of each call.
    /// `started` is the conversation the run started with: the run's tools
    /// and system prompt come from it.
    pub async fn plan_step(
        &self,
        started: &[Message],
        messages: &[Message],
        at: StepAt,
    ) -> Result<PlannedStep, ModelError> {
        self.plan_step_with(started, messages, at, &|_| {}).await
    }

    /// [`Agent::plan_step`], with the model's text passed to `on_text` piece
    /// by piece as it arrives (the model is read as a stream).
    pub async fn plan_step_with(
        &self,
        started: &[Message],
        messages: &[Message],
        at: StepAt,
        on_text: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<PlannedStep, ModelError> {
        let run_tools = RunTools::prepare(self, self.model.as_ref(), started).await;
        let at = StepState {
            index: at.index,
            tool_rounds: at.tool_rounds,
            discovered: false,
            rechecked: false,
        };
        // Each step is planned on its own (an activity): the gate reads the
        // request again rather than keeping step 1's reading.
        let choice = self.tool_choice(&run_tools, messages, at, None).await;
        let mut messages = messages.to_vec();
        messages.extend(choice.note);
        let request = self.chat_request(&run_tools, messages, choice.tool_choice);
        let stream = self.model.stream(&request).inspect(|event| {
            if let Ok(StreamEvent::TextDelta { text }) = event
                && !text.is_empty()
            {
                on_text(text);
            }
        });
        let step = crate::telemetry::traced_chat(
            self.model.as_ref(),
            &request,
            collect_step(stream.boxed()),
        )
        .await?;
        let mut calls = Vec::new();
        if let Step::Tool { calls: made, .. } = &step {
            for call in made {
                let admission = self.admission(&run_tools, call).await;
                calls.push(PlannedCall {
                    call: call.clone(),
                    admission,
                });
            }
        }
        Ok(PlannedStep { step, calls })
    }

    /// Run one call the gate admitted (or a person approved), with the
    /// agent's grants: the allow-list is checked again, then the
    /// capability-checked, schema-validated dispatch. Every failure is an
    /// error result, as in a run.
    pub async fn call_tool(&self, started: &[Message], call: ToolCall) -> ToolResult {
        let span = crate::telemetry::tool_span(&call);
        let result = tracing::Instrument::instrument(
            self.dispatch(started, call, &self.settings.grants),
            span.clone(),
        )
        .await;
        crate::telemetry::end_tool(&span, &result);
        result
    }

    /// [`Agent::call_tool`] for a run of this agent as another's child:
    /// its tools get at most what both this agent and `within` (the
    /// parent's grants) allow, as [`Agent::as_tool`] gives them.
    pub async fn call_tool_within(
        &self,
        started: &[Message],
        call: ToolCall,
        within: &Capabilities,
    ) -> ToolResult {
        let grants = self.settings.grants.intersection(within);
        self.dispatch(started, call, &grants).await
    }

    async fn dispatch(
        &self,
        started: &[Message],
        call: ToolCall,
        grants: &Capabilities,
    ) -> ToolResult {
        let run_tools = RunTools::prepare(self, self.model.as_ref(), started).await;
        let allowed = run_tools.allowed_tool(self.settings.allow.as_deref(), &call.name);
        if let Err(message) = allowed.and_then(|tool| run_tools.loaded(&tool.name)) {
            return ToolResult::error(call.id.clone(), message);
        }
        let context = self.settings.context.clone();
        gated_dispatch(&run_tools.toolbox, call, grants, &context).await
    }

    /// The gate's word on `call` before it runs: refused when the
    /// allow-list or discovery keeps it out, waiting for a person when its
    /// tool is destructive (unless the agent's approver decides).
    async fn admission(&self, run_tools: &RunTools, call: &ToolCall) -> Admission {
        let tool = match run_tools.allowed_tool(self.settings.allow.as_deref(), &call.name) {
            Ok(tool) => tool,
            Err(message) => return Admission::Refused { message },
        };
        if let Err(message) = run_tools.loaded(&tool.name) {
            return Admission::Refused { message };
        }
        let idempotent = tool.hints.idempotent;
        let timeout_ms = tool.hints.timeout.map(|limit| limit.as_millis() as u64);
        if !tool.hints.destructive {
            return Admission::Run {
                idempotent,
                timeout_ms,
            };
        }
        let approval = match &self.settings.approver {
            Some(approver) => approver.review(tool, call).await,
            None => Approval::Defer,
        };
        match approval {
            Approval::Approve => Admission::Run {
                idempotent,
                timeout_ms,
            },
            Approval::Deny(reason) => Admission::Refused {
                message: format!("tool \"{}\" was not approved: {reason}", tool.name),
            },
            Approval::Defer => Admission::NeedsApproval {
                idempotent,
                timeout_ms,
            },
        }
    }
}
