//! Tools cannot stall or exhaust the process: a sync tool runs on the
//! bounded tool pool under a deadline (unless declared `inline`), at most
//! `MAX_BLOCKING_TOOLS` run on threads at once, and one step runs at most
//! `max_calls_per_step` calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentry::agent::{Agent, DEFAULT_MAX_CALLS_PER_STEP};
use agentry::model::{ScriptedModel, Step, Usage};
use agentry::tool::{MAX_BLOCKING_TOOLS, ToolCall, Toolbox, function};
use serde_json::{Value, json};

/// Add one, cheaply: the kind of tool that may run inline.
#[agentry::tool(name = "inc", inline)]
fn inc(n: i64) -> i64 {
    n + 1
}

#[tokio::test(flavor = "current_thread")]
async fn a_blocking_tool_cannot_stall_the_executor() {
    let sleepy = function("sleepy")
        .handler(|_: Value| {
            std::thread::sleep(Duration::from_secs(2));
            Ok::<_, String>(1)
        })
        .build()
        .unwrap();
    let tools = Toolbox::for_agent([sleepy])
        .unwrap()
        .with_default_timeout(Duration::from_millis(100));
    // On this one-thread runtime, a tool run inline would stop the ticker
    // (and its own deadline) for two seconds.
    let ticks = Arc::new(AtomicUsize::new(0));
    let ticker = {
        let ticks = ticks.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                ticks.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let result = tools
        .dispatch(ToolCall::new("c", "utils.sleepy", json!({})))
        .await;
    ticker.abort();
    assert_eq!(
        result.error_message(),
        Some("tool \"utils.sleepy\" timed out after 100ms")
    );
    assert!(
        ticks.load(Ordering::SeqCst) >= 3,
        "the executor kept running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_the_pools_size_of_sync_tools_run_at_once() {
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let busy = {
        let (running, most) = (running.clone(), most.clone());
        function("busy")
            .handler(move |_: Value| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
                running.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, String>(())
            })
            .build()
            .unwrap()
    };
    let tools = Toolbox::for_agent([busy]).unwrap();
    let calls = (0..MAX_BLOCKING_TOOLS + 8)
        .map(|i| tools.dispatch(ToolCall::new(format!("c{i}"), "utils.busy", json!({}))));
    let results = futures_util::future::join_all(calls).await;
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    let most = most.load(Ordering::SeqCst);
    assert!(most <= MAX_BLOCKING_TOOLS, "{most} ran at once");
    assert!(most > 1, "they did run side by side");
}

#[tokio::test]
async fn a_step_runs_at_most_its_call_limit() {
    let step = |count: usize| Step::Tool {
        calls: (0..count)
            .map(|i| ToolCall::new(format!("c{i}"), "inc", json!({"n": i})))
            .collect(),
        text: String::new(),
        tokens: Usage::new(1, 1),
    };
    let final_step = Step::Final {
        text: "done".into(),
        tokens: Usage::new(1, 1),
    };
    let run = Agent::builder(
        ScriptedModel::new()
            .reply(step(40))
            .reply(final_step.clone()),
    )
    .tool(inc::tool())
    .build()
    .unwrap()
    .run("count")
    .await;
    let calls = &run.steps[0].calls;
    assert_eq!(calls.len(), 40);
    assert!(
        calls[..DEFAULT_MAX_CALLS_PER_STEP]
            .iter()
            .all(|c| !c.result.is_error)
    );
    assert_eq!(calls[31].result.output, json!(32));
    assert_eq!(
        calls[32].result.error_message(),
        Some("not run: a step may make at most 32 tool calls; make fewer at once")
    );
    let refused = calls.iter().filter(|c| c.result.is_error).count();
    assert_eq!(refused, 8);

    let run = Agent::builder(ScriptedModel::new().reply(step(3)).reply(final_step))
        .tool(inc::tool())
        .max_calls_per_step(2)
        .build()
        .unwrap()
        .run("count")
        .await;
    let errors: Vec<bool> = run.steps[0]
        .calls
        .iter()
        .map(|c| c.result.is_error)
        .collect();
    assert_eq!(errors, [false, false, true]);
}
