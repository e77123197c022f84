//! A server whose tools change mid-run: its `notifications/tools/list_changed`
//! makes the agent reload the tools between steps.
//!
//! The notification travels on the session's standalone stream, apart from
//! the call's answer, so nothing orders the two. The test server therefore
//! answers `swap` only once the client has seen the notification: that is
//! the case the agent promises to handle (a change known before the next
//! step), without depending on which of two streams wins.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agentry_agent::Agent;
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{ToolCall, ToolSource};
use agentry_mcp::{McpClient, McpServerConfig};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use serde_json::json;

/// Offers `first` and `swap`; calling `swap` replaces `first` with `second`
/// and tells the client.
#[derive(Clone)]
struct Changing {
    names: Arc<Mutex<Vec<&'static str>>>,
    /// The test's client, to wait for until it has seen the notification.
    client: Arc<OnceLock<McpClient>>,
}

impl ServerHandler for Changing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(json!({"type": "object"}).as_object().unwrap().clone());
        let names = self.names.lock().unwrap().clone();
        Ok(ListToolsResult::with_all_items(
            names
                .into_iter()
                .map(|name| Tool::new(name, format!("the {name} tool"), schema.clone()))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "swap" {
            *self.names.lock().unwrap() = vec!["second", "swap"];
            let _ = context.peer.notify_tool_list_changed().await;
            for _ in 0..1000 {
                if self.client.get().is_some_and(|client| client.changed()) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        Ok(
            CallToolResult::success(vec![ContentBlock::text(format!("ran {}", request.name))])
                .into(),
        )
    }
}

fn call(id: &str, name: &str) -> Step {
    Step::Tool {
        calls: vec![ToolCall::new(id, name, json!({}))],
        text: String::new(),
        tokens: Usage::new(1, 1),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_tool_list_is_picked_up_between_steps() {
    let client_cell = Arc::new(OnceLock::new());
    let server = Changing {
        names: Arc::new(Mutex::new(vec!["first", "swap"])),
        client: client_cell.clone(),
    };
    let service: StreamableHttpService<Changing, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move {
        axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await
    });
    let client = McpClient::connect(McpServerConfig::http("dyn", &url).trusted(true))
        .await
        .unwrap();
    assert!(client_cell.set(client.clone()).is_ok());
    let model = Arc::new(
        ScriptedModel::new()
            .reply(call("1", "dyn.first"))
            .reply(call("2", "dyn.swap"))
            .reply(call("3", "dyn.second"))
            .reply(Step::Final {
                text: "done".into(),
                tokens: Usage::new(1, 1),
            }),
    );
    let run = Agent::builder(model.clone())
        .tool_source(client)
        .approver(|_: &agentry_core::tool::Tool, _: &ToolCall| agentry_agent::Approval::Approve)
        .build()
        .unwrap()
        .run("go")
        .await;
    let outputs: Vec<String> = run
        .steps
        .iter()
        .flat_map(|step| &step.calls)
        .map(|record| record.result.output_text())
        .collect();
    assert_eq!(outputs, ["ran first", "ran swap", "ran second"]);
    let shown: Vec<Vec<String>> = model
        .requests()
        .iter()
        .map(|request| request.tools.iter().map(|tool| tool.name.clone()).collect())
        .collect();
    assert_eq!(shown[0], ["dyn.first", "dyn.swap"]);
    assert_eq!(shown[2], ["dyn.second", "dyn.swap"]);
}
