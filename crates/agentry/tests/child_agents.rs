//! Child agents as tools (`Agent::as_tool`): the child's tokens count
//! against the parent's budget, its tools get what both grant, its steps
//! sit in the parent's record and its spans under the parent's, a failing
//! child is an error result, and nesting stops at the depth limit. Loop logic
//! only, with scripted models; `agent_with_tools` runs it on the local model.

use std::sync::{Arc, Mutex};

use agentry::agent::{Agent, AgentBuilder, Outcome};
use agentry::model::{ModelError, ScriptedModel, Step, Usage};
use agentry::tool::{Capability, ToolCall, ToolContext};
use serde_json::{Value, json};

fn call(id: &str, name: &str, input: Value) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new(id, name, input)],
        text: String::new(),
        tokens: Usage::new(10, 5),
    }
}

fn answer(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(20, 4),
    }
}

/// Whether HOME may be read.
#[agentry::tool(name = "peek", env = "HOME")]
fn peek(ctx: &ToolContext) -> bool {
    ctx.env("HOME").is_ok()
}

/// Whether PATH may be read.
#[agentry::tool(name = "path", env = "PATH")]
fn path(ctx: &ToolContext) -> bool {
    ctx.env("PATH").is_ok()
}

fn child(model: ScriptedModel) -> AgentBuilder {
    Agent::builder(model).system("You look things up.")
}

/// A child that calls `peek` (10 + 5 tokens), then answers (20 + 4 tokens).
fn researcher() -> Agent {
    child(
        ScriptedModel::new()
            .reply(call("k1", "peek", json!({})))
            .reply(answer("Found it.")),
    )
    .tool(peek::tool())
    .build()
    .unwrap()
}

#[tokio::test]
async fn a_child_runs_its_own_loop_inside_the_parents_record_and_budget() {
    let researcher = child(
        ScriptedModel::new()
            .reply(Step::Tool {
                calls: vec![
                    ToolCall::new("k1", "peek", json!({})),
                    ToolCall::new("k2", "path", json!({})),
                ],
                text: String::new(),
                tokens: Usage::new(10, 5),
            })
            .reply(answer("Found it.")),
    )
    .tools([peek::tool(), path::tool()])
    .grant(Capability::env("HOME"))
    .grant(Capability::env("PATH"))
    .build()
    .unwrap();
    let parent_model = Arc::new(
        ScriptedModel::new()
            .reply(call(
                "p1",
                "researcher",
                json!({"task": "find the refund policy"}),
            ))
            .reply(answer("The policy says yes.")),
    );
    let parent = Agent::builder(parent_model.clone())
        .tool(researcher.as_tool("researcher", "Looks things up for you."))
        .grant(Capability::env("HOME"))
        .build()
        .unwrap();

    let run = parent.run("Can I get a refund?").await;
    assert_eq!(run.outcome, Outcome::Final("The policy says yes.".into()));
    let record = &run.steps[0].calls[0];
    assert_eq!(record.result.output, json!("Found it."));
    let child = record
        .child
        .as_ref()
        .expect("the child's run is in the record");
    assert_eq!(child.agent, "researcher");
    assert_eq!(child.outcome, Outcome::Final("Found it.".into()));
    assert_eq!(child.usage, Usage::new(30, 9));
    // The child's tools run with what both grant: HOME, not PATH.
    let results: Vec<_> = child.steps[0]
        .calls
        .iter()
        .map(|c| c.result.output.clone())
        .collect();
    assert_eq!(
        results,
        [
            json!(true),
            json!("tool \"path\" needs env(\"PATH\"), which this agent does not grant")
        ]
    );
    // Parent tokens: its two steps plus the child's.
    assert_eq!(run.usage, Usage::new(10 + 20 + 30, 5 + 4 + 9));
    // The child got the task as its only message.
    let task = serde_json::to_value(&parent_model.requests()[1].messages[1]).unwrap();
    assert_eq!(
        task["tool_calls"][0]["input"]["task"],
        "find the refund policy"
    );
}

#[tokio::test]
async fn the_childs_tokens_count_against_the_parents_budget() {
    // The child alone spends 30 + 9 tokens; with the parent's first step
    // (15) the run is over its budget of 40 and stops there.
    let researcher = researcher();
    let parent = Agent::builder(
        ScriptedModel::new()
            .reply(call("p1", "researcher", json!({"task": "look"})))
            .reply(answer("never asked")),
    )
    .tool(researcher.as_tool("researcher", "Looks things up."))
    .token_budget(40)
    .build()
    .unwrap();
    let run = parent.run("go").await;
    assert_eq!(run.outcome, Outcome::OverBudget);
    assert_eq!(run.usage.total(), 15 + 39);
    assert_eq!(run.steps.len(), 1);
}

#[tokio::test]
async fn a_child_may_spend_only_what_its_parent_has_left() {
    // The parent has 10 tokens left after its first step; the child's first
    // step costs 15, so the child stops over budget before its second, and
    // the parent gets an error result, not a failure of its own.
    let researcher = researcher();
    let parent = Agent::builder(
        ScriptedModel::new()
            .reply(call("p1", "researcher", json!({"task": "look"})))
            .reply(answer("Sorry.")),
    )
    .tool(researcher.as_tool("researcher", "Looks things up."))
    .token_budget(25)
    .build()
    .unwrap();
    let run = parent.run("go").await;
    let record = &run.steps[0].calls[0];
    assert_eq!(
        record.result.error_message(),
        Some("tool \"researcher\" failed: agent \"researcher\" did not answer: over budget")
    );
    let child = record.child.as_ref().unwrap();
    assert_eq!(child.outcome, Outcome::OverBudget);
    assert_eq!(child.usage.total(), 15);
    assert_eq!(run.outcome, Outcome::OverBudget);
    assert_eq!(run.usage.total(), 15 + 15);
}

#[tokio::test]
async fn a_failing_child_is_an_error_result_and_the_parent_goes_on() {
    let broken = child(ScriptedModel::new().fail(ModelError::Provider("overloaded".into())))
        .build()
        .unwrap();
    let parent = Agent::builder(
        ScriptedModel::new()
            .reply(call("p1", "helper", json!({"task": "help"})))
            .reply(answer("I will answer myself.")),
    )
    .tool(broken.as_tool("helper", "Helps."))
    .build()
    .unwrap();
    let run = parent.run("go").await;
    assert_eq!(run.outcome, Outcome::Final("I will answer myself.".into()));
    let result = &run.steps[0].calls[0].result;
    assert!(result.is_error);
    assert_eq!(
        result.output_text(),
        "tool \"helper\" failed: agent \"helper\" did not answer: model error: provider error: overloaded"
    );
}

/// An agent that calls `next` (if it has such a tool), then answers "done".
fn link(next: Option<Agent>) -> Agent {
    let script = ScriptedModel::new();
    let builder = match next {
        Some(next) => Agent::builder(
            script
                .reply(call("n", "next", json!({"task": "go deeper"})))
                .reply(answer("done")),
        )
        .tool(next.as_tool("next", "The next agent down.")),
        None => Agent::builder(script.reply(answer("bottom"))),
    };
    builder.build().unwrap()
}

#[tokio::test]
async fn nesting_stops_at_the_depth_limit() {
    // top -> a -> b -> c -> bottom: four children deep, the limit is three.
    let chain = || link(Some(link(Some(link(Some(link(Some(link(None)))))))));
    let run = chain().run("go").await;
    assert_eq!(run.outcome, Outcome::Final("done".into()));
    let depth_of = |run: &[agentry::agent::StepRecord]| {
        let mut depth = 0;
        let mut steps = run.to_vec();
        loop {
            let Some(record) = steps.first().and_then(|s| s.calls.first()).cloned() else {
                return (depth, None);
            };
            match record.child {
                Some(child) => {
                    depth += 1;
                    steps = child.steps;
                }
                None => return (depth, record.result.error_message().map(str::to_owned)),
            }
        }
    };
    let (depth, refusal) = depth_of(&run.steps);
    assert_eq!(depth, 3, "three children ran below the top");
    assert_eq!(
        refusal.as_deref(),
        Some("tool \"next\" failed: agent \"next\" was not started: agents may nest only 3 deep")
    );

    // With a deeper limit the whole chain runs down to the bottom.
    let deep = chain().to_builder().max_depth(4).build().unwrap();
    let (depth, refusal) = depth_of(&deep.run("go").await.steps);
    assert_eq!((depth, refusal), (4, None));
}

#[test]
fn the_childs_spans_nest_under_the_parents_tool_span() {
    use tracing::span::{Attributes, Id};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    /// A span's name and its parent's.
    type Named = (String, Option<String>);

    /// Each span's name with its parent's name.
    #[derive(Clone, Default)]
    struct Parents(Arc<Mutex<Vec<Named>>>);
    impl<S> Layer<S> for Parents
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
            let parent = ctx
                .span(id)
                .and_then(|span| span.parent())
                .map(|parent| parent.name().to_owned());
            self.0
                .lock()
                .unwrap()
                .push((attrs.metadata().name().to_owned(), parent));
        }
    }

    let parents = Parents::default();
    let subscriber = tracing_subscriber::registry().with(parents.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let parent = link(Some(link(None)));
            parent.run("go").await;
        })
    });
    let spans = parents.0.lock().unwrap().clone();
    let named = |name: &str, parent: Option<&str>| (name.to_owned(), parent.map(str::to_owned));
    assert_eq!(
        spans,
        [
            named("invoke_agent", None),
            named("chat", Some("invoke_agent")),
            named("execute_tool", Some("invoke_agent")),
            named("invoke_agent", Some("execute_tool")),
            named("chat", Some("invoke_agent")),
            named("chat", Some("invoke_agent")),
        ]
    );
}

/// A model that answers its script, then never answers again.
struct Stalls(ScriptedModel, std::sync::atomic::AtomicUsize);

impl agentry::model::ChatModel for Stalls {
    fn model_id(&self) -> &str {
        "stalls"
    }
    fn stream<'a>(
        &'a self,
        request: &'a agentry::model::ChatRequest,
    ) -> agentry::model::EventStream<'a> {
        if self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            self.0.stream(request)
        } else {
            Box::pin(futures_util::stream::pending())
        }
    }
}

#[tokio::test]
async fn a_child_cut_off_by_its_timeout_is_still_charged() {
    let stalling = Agent::builder(Stalls(
        ScriptedModel::new().reply(call("k1", "peek", json!({}))),
        Default::default(),
    ))
    .tool(peek::tool())
    .build()
    .unwrap();
    let parent = Agent::builder(
        ScriptedModel::new()
            .reply(call("p1", "slow", json!({"task": "look"})))
            .reply(answer("Gave up on it.")),
    )
    .tool(
        stalling
            .as_tool("slow", "Never finishes.")
            .with_timeout(std::time::Duration::from_millis(50)),
    )
    .build()
    .unwrap();
    let run = parent.run("go").await;
    let record = &run.steps[0].calls[0];
    assert_eq!(
        record.result.error_message(),
        Some("tool \"slow\" timed out after 50ms")
    );
    assert!(record.child.is_none(), "a cut-off child leaves no record");
    // The child's one step (10 + 5) is in the parent's usage all the same.
    assert_eq!(run.usage, Usage::new(10 + 20 + 10, 5 + 4 + 5));
}

#[tokio::test]
async fn children_running_together_share_their_parents_budget() {
    let together = |name: &str| {
        let mut tool = researcher().as_tool(name, "Looks things up.");
        tool.hints.concurrency_safe = true;
        tool
    };
    let parent = Agent::builder(ScriptedModel::new().reply(Step::Tool {
        calls: vec![
            ToolCall::new("a", "first", json!({"task": "one"})),
            ToolCall::new("b", "second", json!({"task": "two"})),
        ],
        text: String::new(),
        tokens: Usage::new(10, 0),
    }))
    .tools([together("first"), together("second")])
    .token_budget(40)
    .build()
    .unwrap();
    let run = parent.run("go").await;
    assert_eq!(run.outcome, Outcome::OverBudget);
    let children: Vec<_> = run.steps[0]
        .calls
        .iter()
        .map(|c| c.child.as_ref().unwrap())
        .collect();
    // The first child spent 39 and took the parent over 40; the second,
    // seeing that, did not call its model at all.
    assert_eq!(children[0].usage.total(), 39);
    assert_eq!(children[1].outcome, Outcome::OverBudget);
    assert_eq!(children[1].usage.total(), 0);
    assert_eq!(run.usage.total(), 10 + 39);
}
