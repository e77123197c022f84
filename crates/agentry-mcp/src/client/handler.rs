//! What the client does with what a server tells it unasked: a changed tool
//! list marks the tools for reloading; progress goes to `tracing`; a question
//! (elicitation) goes to the configured [`Elicitor`], if any.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};

use super::McpServerConfig;
use super::elicit::Elicitor;

/// The client side of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) server: Arc<str>,
    pub(crate) changed: Arc<AtomicBool>,
    pub(crate) elicitor: Option<Elicitor>,
}

impl Handler {
    /// The handler for a connection to the server `config` describes.
    pub(crate) fn new(config: &McpServerConfig, changed: Arc<AtomicBool>) -> Self {
        Self {
            server: Arc::from(config.name.as_str()),
            changed,
            elicitor: config.elicitor.clone(),
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitor.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("agentry", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(match &self.elicitor {
            Some(elicitor) => elicitor.answer(&self.server, request).await,
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "the MCP server's tools changed");
        self.changed.store(true, Ordering::SeqCst);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::SeqCst);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.store(true, Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::info!(
            server = %self.server,
            progress = params.progress,
            total = ?params.total,
            detail = params.message.as_deref().unwrap_or(""),
            "MCP progress"
        );
    }
}
