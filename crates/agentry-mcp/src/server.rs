//! The MCP server: a [`Toolbox`] served over stdio or Streamable HTTP, in
//! both protocol eras rmcp speaks (2025-11-25 with `initialize` and
//! sessions; the stateless 2026-07-28). `tools/list` is in the toolbox's
//! order, in pages; calls are validated by agentry's dispatch (a bad argument
//! is an `isError` result), report progress, and stop when cancelled.

// MCP logging and roots are deprecated by SEP-2577, yet part of the 2025-11-25
// protocol this server speaks; they stay until the protocol drops them.
#![allow(deprecated)]

mod caller;
mod catalog;
mod convert;
#[doc(hidden)]
pub mod fuzz;
mod http;
mod offers;
mod state;

use std::sync::{Arc, Mutex};

use agentry_core::tool::{Progress, ToolCall, ToolContext, Toolbox};
use rmcp::RoleServer;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, InputRequiredResult,
    ListToolsResult, LoggingLevel, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ServerCapabilities, ServerConfig, SetLevelRequestParams,
};
use rmcp::service::{RequestContext, ServiceExt};
use serde_json::Value;

pub use caller::{Caller, INPUT_PENDING, elicitation, roots, sampling};
pub use catalog::{MAX_SUBSCRIBED_URI, MAX_SUBSCRIPTIONS};
pub use http::{HttpOptions, MCP_PATH};
pub use offers::{MAX_COMPLETIONS, Prompt, Resource, ResourceTemplate};
/// What prompts and resources are made of (rmcp's types).
pub use rmcp::model::{PromptMessage, ResourceContents, Role};

use crate::McpError;

/// A tool output that the MCP server sends as these content blocks (images,
/// audio, embedded resources, several texts) instead of as JSON. Inside
/// agentry it is an object with one key, `mcp_content`.
///
/// ```
/// use agentry_mcp::server::content;
/// use rmcp::model::ContentBlock;
///
/// let output = content(vec![ContentBlock::text("a tiny image"), ContentBlock::image("iVBORw0KGgo=", "image/png")]);
/// assert_eq!(output["mcp_content"][1]["mimeType"], "image/png");
/// ```
pub fn content(blocks: Vec<rmcp::model::ContentBlock>) -> Value {
    let blocks = serde_json::to_value(blocks).unwrap_or_default();
    serde_json::json!({ convert::CONTENT_KEY: blocks })
}

/// Tools per `tools/list` page unless told otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// A toolbox served over MCP.
///
/// ```no_run
/// use agentry_core::tool::{Toolbox, function};
/// use agentry_mcp::McpServer;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let add = function("add").namespace("math").arg::<i64>("x", "x").arg::<i64>("y", "y")
///     .handler(|a: serde_json::Value| Ok::<_, String>(a["x"].as_i64().unwrap_or(0) + a["y"].as_i64().unwrap_or(0)))
///     .build()?;
/// McpServer::new(Toolbox::for_agent([add])?).serve_stdio().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
    /// The least severe log level this session's client wants (2025-11-25
    /// sessions; `logging/setLevel` changes it).
    log_level: Arc<Mutex<LoggingLevel>>,
    /// Resource subscriptions, shared by every session.
    subscriptions: catalog::Subscriptions,
    /// This session's number (0 for the server itself).
    session: u64,
}

#[derive(Clone)]
struct Inner {
    toolbox: Toolbox,
    /// `(MCP name, agentry name)` in the toolbox's order.
    names: Vec<(String, String)>,
    name: String,
    version: String,
    instructions: Option<String>,
    page_size: usize,
    context: ToolContext,
    /// Signs the `requestState` of multi-round calls.
    state: state::StateSeal,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    templates: Vec<ResourceTemplate>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .field("tools", &self.inner.names.len())
            .finish()
    }
}

impl McpServer {
    /// Serve `toolbox`. Each tool is published under its own name when MCP
    /// accepts it (`A-Z a-z 0-9 _ . -`, at most 128), else under its wire name.
    pub fn new(toolbox: Toolbox) -> Self {
        let names = toolbox
            .tools()
            .map(|tool| {
                let published = if convert::is_mcp_name(&tool.name) {
                    tool.name.clone()
                } else {
                    toolbox
                        .wire_name(&tool.name)
                        .unwrap_or(&tool.name)
                        .to_owned()
                };
                (published, tool.name.clone())
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                toolbox,
                names,
                name: "agentry".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                instructions: None,
                page_size: DEFAULT_PAGE_SIZE,
                context: ToolContext::default(),
                state: state::StateSeal::random(),
                prompts: Vec::new(),
                resources: Vec::new(),
                templates: Vec::new(),
            }),
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
            subscriptions: catalog::Subscriptions::default(),
            session: 0,
        }
    }

    /// A copy for a new client session: the same tools and settings, its own
    /// log level.
    pub(crate) fn for_session(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
            subscriptions: self.subscriptions.clone(),
            session: catalog::next_subscriber(),
        }
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
    }

    /// The name and version the server gives in its handshake.
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let inner = self.inner_mut();
        inner.name = name.into();
        inner.version = version.into();
        self
    }

    /// Instructions for the host's model.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.inner_mut().instructions = Some(text.into());
        self
    }

    /// Tools per `tools/list` page.
    pub fn page_size(mut self, tools: usize) -> Self {
        self.inner_mut().page_size = tools.max(1);
        self
    }

    /// The context every call gets (state, extras, capabilities).
    pub fn context(mut self, context: ToolContext) -> Self {
        self.inner_mut().context = context;
        self
    }

    /// The key that signs the `requestState` of multi-round calls on the
    /// stateless revision (at least 32 bytes; a random key per server
    /// otherwise). Give every instance behind one load balancer the same key,
    /// so a retry may reach any of them.
    pub fn request_state_key(mut self, key: impl Into<Vec<u8>>) -> Result<Self, McpError> {
        self.inner_mut().state = state::StateSeal::new(key.into())?;
        Ok(self)
    }

    /// Offer a prompt (`prompts/list`, `prompts/get`, completions of its
    /// arguments).
    pub fn prompt(mut self, prompt: Prompt) -> Self {
        self.inner_mut().prompts.push(prompt);
        self
    }

    /// Offer a resource (`resources/list`, `resources/read`, subscriptions).
    pub fn resource(mut self, resource: Resource) -> Self {
        self.inner_mut().resources.push(resource);
        self
    }

    /// Offer the resources a template matches (`resources/templates/list`,
    /// `resources/read`, completions of its variables).
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.inner_mut().templates.push(template);
        self
    }

    /// The published names, in `tools/list` order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.inner
            .names
            .iter()
            .map(|(published, _)| published.as_str())
    }

    /// Serve on this process's stdin and stdout until the client leaves.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| McpError::Serve(error.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|error| McpError::Serve(error.to_string()))?;
        Ok(())
    }

    fn lookup(&self, published: &str) -> Option<&str> {
        self.inner
            .names
            .iter()
            .find(|(name, _)| name == published)
            .map(|(_, tool)| tool.as_str())
    }

    fn describe(&self, published: &str, tool: &str) -> Option<rmcp::model::Tool> {
        let tool = self.inner.toolbox.find_by_name(tool)?;
        Some(convert::tool(published, tool))
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let inner = &self.inner;
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        if !inner.prompts.is_empty() {
            capabilities.prompts = Some(rmcp::model::PromptsCapability::default());
        }
        if !inner.resources.is_empty() || !inner.templates.is_empty() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = Some(true);
            capabilities.resources = Some(resources);
        }
        if !inner.prompts.is_empty() || !inner.templates.is_empty() {
            capabilities.completions = Some(Default::default());
        }
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(&self.inner.name, &self.inner.version));
        if let Some(instructions) = &self.inner.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.page(request.and_then(|request| request.cursor))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let tool = self.lookup(name)?;
        self.describe(name, tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut forwarding = None;
        let mut progress = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (sink, done) = progress_sender(context.peer.clone(), token);
            progress = Some(sink);
            forwarding = Some(done);
        }
        let name = request.name.clone();
        let state = match request.request_state.as_deref() {
            Some(sealed) => Some(self.inner.state.open(sealed, &request)?),
            None => None,
        };
        let responses = request.input_responses.clone().unwrap_or_default();
        let caller = self.caller(&context, responses, state);
        let mut seal_for = CallToolRequestParams::new(request.name.clone());
        seal_for.arguments = request.arguments.clone();
        let span = tracing::info_span!(
            "tools/call",
            otel.name = format!("tools/call {name}"),
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %name,
        );
        // The caller's trace, from `_meta` (`traceparent`, `tracestate`).
        agentry_telemetry::context::set_parent(&span, |field| {
            context.meta.get(field).and_then(|v| v.as_str())
        });
        let call = tracing::Instrument::instrument(
            self.call(request, progress, Some(caller.clone())),
            span,
        );
        let result = tokio::select! {
            result = call => result?,
            _ = context.ct.cancelled() => {
                tracing::info!(tool = %name, "an MCP tool call was cancelled");
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        // Every progress report goes out before the result.
        if let Some(done) = forwarding {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), done).await;
        }
        let outcome = caller.take_outcome();
        if let Some(missing) = outcome.missing {
            return Err(ErrorData::missing_required_client_capability(missing));
        }
        if !outcome.pending.is_empty() {
            let state = outcome
                .next_state
                .map(|state| self.inner.state.seal(&state, &seal_for));
            return Ok(InputRequiredResult::new(Some(outcome.pending), state).into());
        }
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(self.prompt_list())
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let responses = request.input_responses.clone().unwrap_or_default();
        let caller = self.caller(&context, responses, None);
        self.prompt_get(request, caller).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(self.resource_list())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        Ok(self.template_list())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        self.resource_read(request).await.map(Into::into)
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let subscriber = catalog::Subscriber::Session(context.peer.clone());
        McpServer::subscribe(self, &request.uri, self.session, subscriber)
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        McpServer::unsubscribe(self, &request.uri, self.session);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        let offers = !self.inner.resources.is_empty() || !self.inner.templates.is_empty();
        offers.then(|| self.listen_filter(requested))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_to(context).await;
        Ok(())
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        Ok(self.completion(request))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.log_level.lock().unwrap_or_else(|p| p.into_inner()) = request.level;
        Ok(())
    }
}

impl McpServer {
    /// The client of one request, as a tool or a prompt sees it.
    fn caller(
        &self,
        context: &RequestContext<RoleServer>,
        responses: rmcp::model::InputResponses,
        state: Option<Value>,
    ) -> Caller {
        let stateless = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let log_level = if stateless {
            context.meta.log_level()
        } else {
            Some(*self.log_level.lock().unwrap_or_else(|p| p.into_inner()))
        };
        Caller::new(
            context.peer.clone(),
            stateless,
            context.client_capabilities().unwrap_or_default(),
            log_level,
            responses,
            state,
        )
    }

    /// One `tools/list` page, from `cursor` (the index of its first tool).
    pub(crate) fn page(&self, cursor: Option<String>) -> Result<ListToolsResult, ErrorData> {
        let start = match cursor {
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|start| *start < self.inner.names.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None)
                })?,
            None => 0,
        };
        let end = (start + self.inner.page_size).min(self.inner.names.len());
        let page = self.inner.names[start..end]
            .iter()
            .filter_map(|(published, tool)| self.describe(published, tool))
            .collect();
        let mut result = ListToolsResult::with_all_items(page);
        result.next_cursor = (end < self.inner.names.len()).then(|| end.to_string());
        Ok(result)
    }

    /// One `tools/call`: dispatched (validated) with the server's context
    /// and the `caller`, progress going to `progress`; the context and sink
    /// are dropped before it returns, so every report is sent first.
    pub(crate) async fn call(
        &self,
        request: CallToolRequestParams,
        progress: Option<agentry_core::tool::ProgressSink>,
        caller: Option<Caller>,
    ) -> Result<rmcp::model::CallToolResult, ErrorData> {
        let Some(tool_name) = self.lookup(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        };
        let declares_output = self
            .inner
            .toolbox
            .find_by_name(tool_name)
            .is_some_and(|tool| tool.output_schema.is_some());
        let input = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new("mcp", tool_name, input);
        let mut ctx = self.inner.context.clone();
        if let Some(sink) = progress {
            ctx = ctx.with_progress(sink);
        }
        if let Some(caller) = caller {
            ctx = ctx.with_state(caller);
        }
        let result = self.inner.toolbox.dispatch_with(call, &ctx).await;
        drop(ctx);
        Ok(convert::result(result, declares_output))
    }
}

/// A progress sink that sends `notifications/progress` for `token`, in
/// order, and the task doing it, which ends once every sink is dropped.
fn progress_sender(
    peer: rmcp::service::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
) -> (
    agentry_core::tool::ProgressSink,
    tokio::task::JoinHandle<()>,
) {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let done = tokio::spawn(async move {
        while let Some(progress) = receiver.recv().await {
            let mut params = ProgressNotificationParam::new(token.clone(), progress.progress);
            if let Some(total) = progress.total {
                params = params.with_total(total);
            }
            if let Some(message) = progress.message {
                params = params.with_message(message);
            }
            if peer.notify_progress(params).await.is_err() {
                break;
            }
        }
    });
    let sink: agentry_core::tool::ProgressSink = Arc::new(move |progress| {
        let _ = sender.send(progress);
    });
    (sink, done)
}
