//! The workflow's effects, run on a worker ([`AgentActivities`]): the
//! model's step and one tool call, each through the worker's [`Agent`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use temporalio_macros::activities;
use temporalio_sdk::ApplicationFailure;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use crate::wire::{CallInput, ChildOf, Limits, PlanInput, Progress, TurnScope};
use crate::workflow::{HEARTBEAT_EVERY, MAX_TOOL_RESULT_BYTES, WORKFLOW_TYPE};
use agentry_agent::Agent;
use agentry_agent::stepwise::PlannedStep;
use agentry_core::tool::{Capabilities, ToolResult};

/// The model-step activity's type name.
pub const PLAN_STEP: &str = "agentry.plan_step";

/// The activities of [`AgentWorkflow`](crate::AgentWorkflow), carried out by
/// the agent a worker was started with, and by the child agents it
/// registers ([`AgentActivities::child`]).
pub struct AgentActivities {
    agent: Arc<Agent>,
    children: HashMap<String, Arc<Agent>>,
}

impl AgentActivities {
    /// The activities of `agent`.
    pub fn new(agent: Arc<Agent>) -> Self {
        Self {
            agent,
            children: HashMap::new(),
        }
    }

    /// Run each call of the tool `name` (a child agent, added to the agent
    /// with [`Agent::as_tool`]) as a child workflow carried out by `agent`:
    /// its own steps and calls, each an activity, with at most what both it
    /// and its parent grant, a token budget of what its parent has left
    /// (what it spends counts against the parent's), and the outermost
    /// agent's depth limit. Every worker of a task queue must register the
    /// same children. A child agent that is not registered runs as before:
    /// its whole loop inside the one call's activity.
    pub fn child(mut self, name: impl Into<String>, agent: Agent) -> Self {
        self.children.insert(name.into(), Arc::new(agent));
        self
    }

    /// The agent called `name` (`None`: the worker's own).
    fn agent(&self, name: Option<&str>) -> Result<&Arc<Agent>, ActivityError> {
        match name {
            None => Ok(&self.agent),
            Some(name) => self.children.get(name).ok_or_else(|| {
                ActivityError::application(ApplicationFailure::non_retryable(format!(
                    "this worker has no child agent \"{name}\" (AgentActivities::child registers one)"
                )))
            }),
        }
    }

    /// The agent called `name`, with a chat turn's system prompt and context
    /// when the run is a turn's.
    fn agent_for(
        &self,
        name: Option<&str>,
        turn: Option<&TurnScope>,
    ) -> Result<Cow<'_, Agent>, ActivityError> {
        let agent = self.agent(name)?;
        let Some(turn) = turn else {
            return Ok(Cow::Borrowed(agent.as_ref()));
        };
        let context = agent
            .context()
            .clone()
            .merged_with(&turn.context.to_context());
        agent
            .to_builder()
            .system(turn.system.clone())
            .context(context)
            .build()
            .map(Cow::Owned)
            .map_err(|e| {
                ActivityError::application(ApplicationFailure::non_retryable(format!(
                    "the turn's agent could not be set up: {e}"
                )))
            })
    }

    /// `agent`'s limits, with the child agents among its tools.
    fn limits_of(&self, agent: &Agent, grants: Capabilities) -> Limits {
        let mut children: Vec<String> = agent
            .toolbox()
            .names()
            .filter(|name| self.children.contains_key(*name))
            .map(str::to_owned)
            .collect();
        children.sort();
        Limits {
            max_steps: agent.max_steps(),
            token_budget: agent.token_budget(),
            max_calls_per_step: agent.max_calls_per_step(),
            max_depth: agent.max_depth(),
            children,
            grants,
        }
    }
}

impl From<Arc<Agent>> for AgentActivities {
    fn from(agent: Arc<Agent>) -> Self {
        Self::new(agent)
    }
}

impl From<Agent> for AgentActivities {
    fn from(agent: Agent) -> Self {
        Self::new(Arc::new(agent))
    }
}

#[activities]
impl AgentActivities {
    /// The agent's limits: steps, tokens, calls per step.
    #[activity(name = "agentry.limits")]
    pub async fn limits(self: Arc<Self>, ctx: ActivityContext) -> Result<Limits, ActivityError> {
        inside_agent_run(&ctx)?;
        Ok(self.limits_of(&self.agent, self.agent.grants().clone()))
    }

    /// A child agent's limits, its grants narrowed to its parent's.
    #[activity(name = "agentry.child_limits")]
    pub async fn child_limits(
        self: Arc<Self>,
        ctx: ActivityContext,
        of: ChildOf,
    ) -> Result<Limits, ActivityError> {
        inside_agent_run(&ctx)?;
        let agent = self.agent(Some(&of.agent))?;
        let grants = agent.grants().intersection(&of.grants);
        let mut limits = self.limits_of(agent, grants);
        // The depth limit is the worker's own agent's: a child's run never
        // nests deeper, whatever its input claims.
        limits.max_depth = self.agent.max_depth();
        Ok(limits)
    }

    /// The model's next step, and the gate's word on each of its calls.
    /// A model error fails the attempt (Temporal tries again).
    #[activity(name = "agentry.plan_step")]
    pub async fn plan_step(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: PlanInput,
    ) -> Result<PlannedStep, ActivityError> {
        inside_agent_run(&ctx)?;
        let text = std::sync::Mutex::new(String::new());
        let on_text = |delta: &str| {
            text.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(delta)
        };
        let step = input.at.index;
        let progress = || Progress {
            step,
            text: text.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        };
        let agent = self.agent_for(input.agent.as_deref(), input.turn.as_ref())?;
        let work = agent.plan_step_with(&input.started, &input.messages, input.at, &on_text);
        Ok(alive(&ctx, work, progress).await??)
    }

    /// One admitted call, with the agent's grants. A tool's failure is an
    /// error result for the model, not a failed activity.
    #[activity(name = "agentry.call_tool")]
    pub async fn call_tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: CallInput,
    ) -> Result<ToolResult, ActivityError> {
        inside_agent_run(&ctx)?;
        let agent = self.agent_for(input.agent.as_deref(), input.turn.as_ref())?;
        let work = async {
            match &input.within {
                Some(within) => {
                    agent
                        .call_tool_within(&input.started, input.call.clone(), within)
                        .await
                }
                None => agent.call_tool(&input.started, input.call.clone()).await,
            }
        };
        let result = alive(&ctx, work, || ()).await?;
        let size = serde_json::to_vec(&result).map_or(usize::MAX, |json| json.len());
        if size > MAX_TOOL_RESULT_BYTES {
            return Ok(ToolResult::error(
                result.id,
                format!(
                    "the tool's result is {size} bytes; at most {MAX_TOOL_RESULT_BYTES} cross Temporal in one call: ask for less"
                ),
            ));
        }
        Ok(result)
    }
}

/// Refuse (for good, no retries) an activity that an `agentry.AgentRun`
/// workflow did not schedule: one started on its own (a standalone
/// activity) or by a workflow of another type. Only the workflow decides
/// what runs: its admission, approvals and limits are not bypassed by
/// scheduling a tool call directly.
fn inside_agent_run(ctx: &ActivityContext) -> Result<(), ActivityError> {
    match ctx.info().workflow_type.as_deref() {
        Some(WORKFLOW_TYPE) => Ok(()),
        other => Err(ActivityError::application(
            ApplicationFailure::non_retryable(format!(
                "agentry's activities run only inside {WORKFLOW_TYPE} workflows (this one came from {})",
                other.map_or("no workflow".to_owned(), |t| format!("a {t} workflow"))
            )),
        )),
    }
}

/// Run `work`, telling Temporal every [`HEARTBEAT_EVERY`] that this worker
/// still carries it out, with `details` (a worker that dies stops telling,
/// and the activity goes to another worker, or to a person, well before its
/// time limit).
async fn alive<T, D>(
    ctx: &ActivityContext,
    work: impl Future<Output = T>,
    details: impl Fn() -> D,
) -> Result<T, ActivityError>
where
    D: serde::Serialize + 'static,
{
    tokio::pin!(work);
    let mut beat = tokio::time::interval(HEARTBEAT_EVERY);
    loop {
        tokio::select! {
            done = &mut work => return Ok(done),
            // Cancelled (the run was terminated or timed out here): drop the
            // work, which stops the model or the tool as far as it can.
            () = ctx.cancelled() => return Err(ActivityError::cancelled()),
            _ = beat.tick() => {
                let _ = ctx.record_heartbeat(details()).await;
            }
        }
    }
}
