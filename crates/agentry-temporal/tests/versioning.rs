//! A run started on one version of the workflow finishes after its worker
//! is upgraded. The upgrade is the first patch (`LIMITS_AS_LOCAL_ACTIVITY`),
//! guarded with Temporal's patching API. A worker process plays the old
//! version (it never asks for the patch); the run waits for an approval;
//! that worker is killed and a worker of the new version replays the run's
//! history and finishes it. New code without the guard cannot replay the
//! same history: the run does not move until a guarded worker takes over.

mod common;

use common::{ChildWorker, record_until};

use std::time::Duration;

use agentry_agent::{Agent, Outcome};
use agentry_core::journal::Decision;
use agentry_core::model::{ChatRequest, Message, ScriptedModel, Step, Usage};
use agentry_core::tool::ToolCall;
use agentry_temporal::{RunInput, Status, TemporalRuns};
use serde_json::json;

/// Set in a worker child: `ADDRESS|QUEUE|VERSION` (before, guarded, unguarded).
const CHILD: &str = "AGENTRY_TEMPORAL_VERSION_WORKER";

fn agent() -> Agent {
    let mut model = ScriptedModel::new();
    for _ in 0..16 {
        model = model.respond(|request: &ChatRequest| {
            let done = request
                .messages
                .iter()
                .any(|m| matches!(m, Message::Tool { .. }));
            Ok(if done {
                Step::Final {
                    text: "Deleted.".into(),
                    tokens: Usage::new(10, 1),
                }
            } else {
                Step::Tool {
                    calls: vec![ToolCall::new(
                        "d1",
                        "delete_file",
                        json!({"path": "old.log"}),
                    )],
                    text: String::new(),
                    tokens: Usage::new(10, 5),
                }
            })
        });
    }
    Agent::builder(model)
        .tool(common::delete_file())
        .build()
        .unwrap()
}

/// Not a test: the worker process the upgrade test starts and kills.
#[test]
fn worker_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return; // only a helper: see `a_run_started_before_an_upgrade_finishes_after_it`
    };
    let version = spec.rsplit('|').next().unwrap();
    agentry_temporal::__workflow_version(version == "before", version == "unguarded");
    common::serve_child(&spec, agent());
}

fn worker(address: &str, queue: &str, version: &str) -> ChildWorker {
    ChildWorker::start(CHILD, format!("{address}|{queue}|{version}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_started_before_an_upgrade_finishes_after_it() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let address = server.address().to_owned();
    let runs = TemporalRuns::connect(&address)
        .await
        .unwrap()
        .task_queue("upgrade");

    // Version 1 starts two runs; both wait for an approval.
    let old = worker(&address, "upgrade", "before");
    for id in ["old-1", "old-2"] {
        runs.start(id, RunInput::new("delete old.log"))
            .await
            .unwrap();
        record_until(&runs, id, |r| r.status == Status::Waiting).await;
        // Version 1's history: the limits as a remote activity, no patch marker.
        let old = server.history(id).unwrap();
        assert!(old.contains("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"), "{old}");
        assert!(!old.contains("\"core_patch\""), "{old}");
    }
    drop(old);

    // New code without the guard cannot replay what version 1 wrote: the
    // approval is not carried out while it is the only worker.
    let unguarded = worker(&address, "upgrade", "unguarded");
    let stuck = tokio::time::timeout(
        Duration::from_secs(15),
        runs.decide("old-1", "d1", Decision::Approve),
    )
    .await;
    assert!(
        !matches!(stuck, Ok(Ok(()))),
        "an unguarded upgrade replayed an old run: {stuck:?}"
    );
    drop(unguarded);

    // The guarded version replays both runs and finishes them.
    let _new = worker(&address, "upgrade", "guarded");
    if !matches!(stuck, Ok(Ok(()))) {
        // The server may still hold the approval that timed out and hand it
        // to the new worker first: then this one is refused as a repeat.
        if let Err(error) = runs.decide("old-1", "d1", Decision::Approve).await {
            let error = error.to_string();
            assert!(
                error.contains("was decided already") || error.contains("waits for a decision"),
                "{error}"
            );
        }
    }
    runs.decide("old-2", "d1", Decision::Approve).await.unwrap();
    for id in ["old-1", "old-2"] {
        let outcome = runs.outcome(id).await.unwrap();
        assert_eq!(outcome.outcome, Outcome::Final("Deleted.".into()), "{id}");
        assert_eq!(
            outcome.steps[0].calls[0].result.output,
            json!("deleted old.log")
        );
    }

    // A run started on the new version records the patch and takes its path.
    runs.start("new-1", RunInput::new("delete old.log"))
        .await
        .unwrap();
    record_until(&runs, "new-1", |r| r.status == Status::Waiting).await;
    let new = server.history("new-1").unwrap();
    assert!(
        new.contains("\"core_patch\"") && new.contains("\"core_local_activity\""),
        "{new}"
    );
    runs.decide("new-1", "d1", Decision::Approve).await.unwrap();
    assert_eq!(
        runs.outcome("new-1").await.unwrap().outcome,
        Outcome::Final("Deleted.".into())
    );
}
