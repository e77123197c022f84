//! What a server says on the side reaches `tracing`, not the terminal: its
//! progress notifications and its stderr (reference server, over stdio).

mod support;

use std::sync::{Arc, Mutex};

use agentry_core::tool::Toolbox;
use agentry_mcp::{McpClient, McpServerConfig};
use serde_json::json;
use support::{call, peers};
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// Every event's target and message.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<(String, String)>>>);

struct Message(String);
impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        let target = event.metadata().target().to_owned();
        self.0.lock().unwrap().push((target, message.0));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_and_stderr_go_to_tracing() {
    let Some((node, everything)) = peers() else {
        return;
    };
    let events = Events::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(events.clone()))
        .unwrap();
    let config = McpServerConfig::stdio("everything", &format!("{node} {everything} stdio"));
    let client = McpClient::connect(config).await.unwrap();
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let done = call(
        &toolbox,
        "everything.trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
    )
    .await;
    assert!(!done.is_error, "{done:?}");
    client.close().await;
    let seen = events.0.lock().unwrap().clone();
    let progress = seen
        .iter()
        .filter(|(_, message)| message == "MCP progress")
        .count();
    assert!(
        progress >= 3,
        "one event per progress notification: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|(target, _)| target == "agentry_mcp::stderr"),
        "the server's stderr lines are events: {seen:?}"
    );
}
