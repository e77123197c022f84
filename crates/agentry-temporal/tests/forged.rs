//! The activities run only inside `agentry.AgentRun` workflows: a workflow
//! of another type that schedules `agentry.call_tool` itself (to run a
//! destructive call without an approval) is refused, and the tool does not run.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentry_agent::Agent;
use agentry_core::model::{Message, OfflineModel};
use agentry_core::tool::{ToolCall, ToolHints, function};
use agentry_temporal::{AgentActivities, CallInput, connect};
use serde_json::json;
use temporalio_client::{WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, Runtime, Worker, WorkerOptions, WorkflowContext, WorkflowResult,
};

/// A workflow that is not agentry's, calling agentry's tool activity directly.
#[workflow]
#[derive(Default)]
pub struct Rogue;

#[workflow_methods]
impl Rogue {
    #[run(name = "rogue")]
    pub async fn run(ctx: &mut WorkflowContext<Self>, input: CallInput) -> WorkflowResult<String> {
        let options = ActivityOptions::start_to_close_timeout(Duration::from_secs(10));
        Ok(
            match ctx
                .execute_activity(AgentActivities::call_tool, input, options)
                .await
            {
                Ok(result) => format!("ran: {}", result.output),
                Err(error) => format!("refused: {error:?}"),
            },
        )
    }
}

#[derive(serde::Deserialize)]
struct Path {
    #[allow(dead_code)]
    path: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_workflow_of_another_type_cannot_run_a_tool() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let effects = Arc::new(AtomicUsize::new(0));
    let counted = effects.clone();
    let delete = function("delete_file")
        .arg::<String>("path", "the file")
        .hints(ToolHints {
            destructive: true,
            ..Default::default()
        })
        .handler(move |_: Path| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>("deleted")
        })
        .build()
        .unwrap()
        .with_name("delete_file");
    let agent = Arc::new(Agent::builder(OfflineModel).tool(delete).build().unwrap());
    let address = server.address().to_owned();
    let worker_client = connect(&address, "default").await.unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let sdk = Runtime::from_current_tokio(Default::default()).unwrap();
            let options = WorkerOptions::new("forged")
                .register_workflow::<Rogue>()
                .unwrap()
                .register_activities(AgentActivities::new(agent))
                .build();
            let _ = Worker::new(&sdk, worker_client, options)
                .unwrap()
                .run()
                .await;
        });
    });
    let client = connect(&address, "default").await.unwrap();
    let input = CallInput {
        started: vec![Message::user("delete old.log")],
        call: ToolCall::new("c1", "delete_file", json!({"path": "old.log"})),
        agent: None,
        within: None,
        turn: None,
    };
    let handle = client
        .start_workflow(
            Rogue::run,
            input,
            WorkflowStartOptions::new("forged", "rogue-1").build(),
        )
        .await
        .unwrap();
    let said = handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .unwrap();
    assert!(
        said.starts_with("refused: ")
            && said.contains("run only inside agentry.AgentRun workflows"),
        "{said}"
    );
    assert_eq!(effects.load(Ordering::SeqCst), 0, "the tool did not run");
}
