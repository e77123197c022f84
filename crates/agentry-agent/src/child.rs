//! Child agents as tools: [`Agent::as_tool`]. A child runs its own bounded
//! loop inside one tool call of its parent, spends from the parent's token
//! budget, touches at most what both grant, shows up in the parent's trace,
//! and fails into an error result rather than failing its parent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::agent::Agent;
use super::outcome::{ChildRun, Outcome};
use super::run::Frame;
use super::spend::Spend;
use agentry_core::model::Message;
use agentry_core::tool::{Capabilities, Tool, ToolContext, ToolError, ToolHandler};

/// How long a child agent may run as a tool unless its tool says otherwise.
pub const CHILD_AGENT_TIMEOUT: Duration = Duration::from_secs(600);

/// What a tool call made by a run knows of that run: a child agent started
/// by the call reads its limits here and leaves its record here.
#[derive(Debug)]
pub(crate) struct CallScope {
    depth: usize,
    max_depth: usize,
    grants: Capabilities,
    spend: Arc<Spend>,
    child: Mutex<Option<ChildRun>>,
}

impl CallScope {
    /// The scope of one call made inside `frame`.
    pub(crate) fn new(frame: &Frame) -> Self {
        Self {
            depth: frame.depth,
            max_depth: frame.max_depth,
            grants: frame.grants.clone(),
            spend: frame.spend.clone(),
            child: Mutex::new(None),
        }
    }

    /// How deep the run making the call is (0 for the program's).
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// How deep agents may nest or hand off.
    pub(crate) fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The run of the child agent this call started, if any.
    pub(crate) fn take_child(&self) -> Option<ChildRun> {
        self.child
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }

    fn put_child(&self, run: ChildRun) {
        *self
            .child
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(run);
    }
}

impl Agent {
    /// This agent as a tool another agent can call: input `{"task": "…"}`,
    /// output the child's answer.
    ///
    /// - The child runs its own bounded loop (its steps, its tools).
    /// - Its tokens count against the parent's budget as it spends them
    ///   (even when it is cut off by its timeout), and it stops once its own
    ///   budget or any enclosing run's is spent.
    /// - Its tools get at most the capabilities both it and its parent grant.
    /// - Its steps and calls appear in the parent's [`CallRecord`](super::CallRecord)
    ///   (`child`) and its spans nest under the parent's `execute_tool` span.
    /// - A child that runs out of steps or budget, or whose model fails,
    ///   gives the parent an error result; the parent goes on.
    /// - Past the depth limit of the outermost agent (default
    ///   [`DEFAULT_MAX_DEPTH`](super::DEFAULT_MAX_DEPTH)) a child is not started.
    ///
    /// The tool's timeout is [`CHILD_AGENT_TIMEOUT`]; change it with [`Tool::with_timeout`].
    pub fn as_tool(&self, name: impl Into<String>, description: impl Into<String>) -> Tool {
        let name = name.into();
        let child = Arc::new((self.clone(), name.clone()));
        let input_schema = json!({
            "type": "object",
            "properties": {"task": {
                "type": "string",
                "description": "The whole task for this agent, with every detail it needs: it sees nothing else of the conversation."
            }},
            "required": ["task"]
        });
        let handler = ToolHandler::from_async(move |input: Value, ctx: ToolContext| {
            let child = child.clone();
            async move {
                let (agent, name) = child.as_ref();
                agent.run_as_child(name, input, ctx).await
            }
        });
        Tool::new(name, input_schema, handler)
            .with_description(description)
            .with_timeout(CHILD_AGENT_TIMEOUT)
    }

    async fn run_as_child(
        &self,
        name: &str,
        input: Value,
        ctx: ToolContext,
    ) -> Result<Value, ToolError> {
        let task = input["task"].as_str().unwrap_or_default().to_owned();
        let settings = &self.settings;
        let parent = ctx.state::<Arc<CallScope>>();
        let frame = Frame {
            depth: parent.map_or(1, |p| p.depth + 1),
            max_depth: parent.map_or(settings.max_depth, |p| p.max_depth),
            grants: match parent {
                Some(p) => settings.grants.intersection(&p.grants),
                None => settings.grants.clone(),
            },
            spend: match parent {
                Some(p) => Spend::child_of(&p.spend, settings.token_budget),
                None => Spend::root(settings.token_budget),
            },
            context: settings.context.clone().merged_with(&ctx),
            // A child agent's run is one call of its parent's: the parent's
            // journal records the call, not the child's steps.
            durable: None,
            name: Some(settings.name.clone().unwrap_or_else(|| name.to_owned())),
        };
        if frame.depth > frame.max_depth {
            return Err(ToolError::failed(format!(
                "agent \"{name}\" was not started: agents may nest only {} deep",
                frame.max_depth
            )));
        }
        let run = self
            .run_frame(self.model.as_ref(), &frame, vec![Message::user(task)], None)
            .await;
        let answer = match &run.outcome {
            Outcome::Final(text) => Ok(Value::String(text.clone())),
            _ => Err(ToolError::failed(format!(
                "agent \"{name}\" did not answer: {}",
                run.text()
            ))),
        };
        if let Some(parent) = parent {
            parent.put_child(ChildRun {
                agent: name.to_owned(),
                outcome: run.outcome,
                usage: run.usage,
                steps: run.steps,
            });
        }
        answer
    }
}
