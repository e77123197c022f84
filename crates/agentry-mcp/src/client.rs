//! The MCP client: an MCP server's tools (and, each opted in, its prompts,
//! resources and resource templates) as agentry [`Tool`]s, namespaced by the
//! server's name.
//!
//! A server that crashes or hangs never takes the agent down: a call that
//! times out is cancelled (`notifications/cancelled`) and gives an error
//! result, and the server is then pinged: one that does not answer is taken
//! as hung and stopped. A server that died or hung gives error results and is
//! restarted, at once and then with backoff, on the next call.

mod config;
mod convert;
mod elicit;
mod extras;
mod file;
mod handler;
mod link;
mod listing;
mod namespaces;
pub mod oauth;
mod rounds;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentry_core::BoxFuture;
use agentry_core::tool::{Tool, ToolError, ToolHandler, ToolSource};
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, JsonObject, PaginatedRequestParams, PingRequest,
    ServerCapabilities,
};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;
use tokio::sync::Mutex;

pub use config::{CONNECT_TIMEOUT, McpProtocol, McpServerConfig, McpTransport};
pub use elicit::{Answer, Elicitor, Question};
pub use file::servers_from_toml;
pub use listing::ListLimits;
pub use namespaces::{Connected, connect_all};
pub use oauth::{Authorizer, ClientCredentials, JwtAssertion, McpOAuth, SignIn, TokenStore};

use crate::McpError;
use handler::Handler;
use link::Link;

/// How much longer than the client's call time-out the toolbox waits
/// before it gives up on an MCP tool call itself.
const BACKSTOP_MARGIN: Duration = Duration::from_secs(2);

/// Longest a server may take to answer the ping sent after a call timed
/// out (less when the call time-out is shorter) before it counts as hung.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to one MCP server.
///
/// ```no_run
/// use agentry_mcp::{McpClient, McpServerConfig};
///
/// # async fn demo() -> Result<(), agentry_mcp::McpError> {
/// let config = McpServerConfig::stdio("everything", "npx -y @modelcontextprotocol/server-everything");
/// let client = McpClient::connect(config).await?;
/// let tools = client.tools().await?;
/// assert!(tools.iter().any(|tool| tool.name == "everything.echo"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpServerConfig,
    link: Mutex<Link>,
    /// Counts connections, so a hung session is only ever stopped while it
    /// is still the current one.
    generation: AtomicU64,
    changed: Arc<AtomicBool>,
    /// What the last listing left out for its name, one message each.
    left_out: std::sync::Mutex<Vec<String>>,
    capabilities: ServerCapabilities,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.inner.config.name)
            .field("transport", &self.inner.config.transport)
            .finish()
    }
}

impl McpClient {
    /// Start (or dial) the server and shake hands. With an empty name, the
    /// server's own name (lower-cased, `-` for anything but letters and digits)
    /// becomes the namespace.
    pub async fn connect(mut config: McpServerConfig) -> Result<Self, McpError> {
        let changed = Arc::new(AtomicBool::new(false));
        let handler = Handler::new(&config, changed.clone());
        let session = link::connect(&config, handler).await?;
        let info = session.peer_info();
        if config.name.is_empty() {
            let own = info
                .as_ref()
                .and_then(|info| info.server_info.as_ref().map(|server| server.name.clone()));
            config.name = namespace(own.as_deref().unwrap_or("mcp"));
        }
        let capabilities = info
            .map(|info| info.capabilities.clone())
            .unwrap_or_default();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                link: Mutex::new(Link::Up(session)),
                generation: AtomicU64::new(0),
                changed,
                left_out: std::sync::Mutex::default(),
                capabilities,
            }),
        })
    }

    /// The server's name: the namespace of its tools.
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// The server's tools as agentry tools (`NAME.tool`), with its prompts,
    /// resources and resource templates where the configuration opted in. Every page of
    /// `tools/list` is read, within the configuration's [`ListLimits`]. A
    /// name given twice (a tool listed twice, a tool named like a prompt's
    /// or a resource's tool) is offered once, the first time.
    pub async fn tools(&self) -> Result<Vec<Tool>, McpError> {
        self.inner.changed.store(false, Ordering::SeqCst);
        self.left_out_now().clear();
        let peer = self.peer().await?;
        let listed = self
            .list("tools", |params| {
                let peer = &peer;
                async move {
                    let page = peer.list_tools(Some(params)).await?;
                    Ok::<_, ServiceError>((page.tools, page.next_cursor))
                }
            })
            .await?;
        let mut tools = Vec::with_capacity(listed.len());
        let allowed = |name: &str| {
            let allow = self.inner.config.allow.as_ref();
            allow.is_none_or(|allow| allow.iter().any(|a| a == name))
        };
        for remote in listed.into_iter().filter(|remote| allowed(&remote.name)) {
            if !shown_plainly(&remote.name) {
                self.leave_out("tool", &remote.name);
                continue;
            }
            match self.tool(remote) {
                Ok(tool) => tools.push(tool),
                Err(error) => {
                    tracing::warn!(server = %self.name(), %error, "an MCP tool is left out")
                }
            }
        }
        if self.inner.config.prompts && self.inner.capabilities.prompts.is_some() {
            tools.extend(extras::prompts(self, &peer).await?);
        }
        if self.inner.capabilities.resources.is_some() {
            if self.inner.config.resources {
                tools.extend(extras::resources(self));
            }
            if self.inner.config.templates {
                tools.extend(extras::templates(self, &peer).await?);
            }
        }
        let mut seen = std::collections::HashSet::new();
        tools.retain(|tool| {
            let first = seen.insert(tool.name.clone());
            if !first {
                tracing::warn!(server = %self.name(), tool = %tool.name, "the MCP server gave this name twice; the second is left out");
            }
            first
        });
        Ok(tools)
    }

    /// Say (on `tracing`, escaped) that a `what` (tool, prompt, template)
    /// named `name`, which holds a control or format character, is left out:
    /// shown on a terminal, such a name could rewrite what is on the screen
    /// (an approval prompt, a listing).
    pub(crate) fn leave_out(&self, what: &str, name: &str) {
        let message = format!(
            "the MCP server {} lists a {what} whose name holds control or format characters, \
             {}; it is left out",
            escaped(self.name()),
            escaped(name),
        );
        tracing::warn!(server = %escaped(self.name()), name = %escaped(name), "{message}");
        self.left_out_now().push(message);
    }

    /// What the last listing ([`McpClient::tools`]) left out because its
    /// name holds control or format characters, one message each naming
    /// the server and the name (escaped), for a user to be told.
    pub fn left_out(&self) -> Vec<String> {
        self.left_out_now().clone()
    }

    fn left_out_now(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.inner
            .left_out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every page of one listing of `what` (`list_page` fetching a page),
    /// within the configuration's [`ListLimits`] and its call time-out.
    pub(crate) async fn list<T, Fut>(
        &self,
        what: &str,
        list_page: impl FnMut(PaginatedRequestParams) -> Fut,
    ) -> Result<Vec<T>, McpError>
    where
        T: serde::Serialize,
        Fut: std::future::Future<Output = Result<listing::Page<T>, ServiceError>>,
    {
        let limits = self.inner.config.list_limits;
        let listing = listing::all_pages(self.name(), what, limits, list_page);
        self.within(listing).await?.map_err(McpError::Request)
    }

    /// Close the connection (a child process is stopped).
    pub async fn close(&self) {
        let mut link = self.inner.link.lock().await;
        if let Link::Up(session) = &mut *link {
            let _ = session.close().await;
        }
        *link = Link::Down {
            since: Instant::now(),
            failures: u32::MAX,
            error: "closed".into(),
        };
    }

    /// One server tool as an agentry tool whose handler calls it.
    fn tool(&self, remote: rmcp::model::Tool) -> Result<Tool, McpError> {
        let name = format!("{}.{}", self.name(), remote.name);
        let input_schema = Value::Object(remote.input_schema.as_ref().clone());
        jsonschema::validator_for(&input_schema)
            .map_err(|error| McpError::Schema(format!("{name}: {error}")))?;
        let output_schema = remote
            .output_schema
            .as_ref()
            .map(|schema| Value::Object(schema.as_ref().clone()));
        let declares_output = output_schema.is_some();
        let client = self.clone();
        let remote_name = remote.name.to_string();
        let handler = ToolHandler::from_async(move |input: Value, _ctx| {
            let (client, remote_name) = (client.clone(), remote_name.clone());
            async move {
                let result = client.call(&remote_name, input).await?;
                convert::output(result, declares_output)
            }
        });
        let mut tool = Tool::new(name, input_schema, handler);
        tool.description = remote.description.map(|d| d.into_owned()).or(remote.title);
        tool.output_schema = output_schema;
        tool.pass_input = true;
        tool.hints = convert::hints(remote.annotations.as_ref(), self.inner.config.trusted);
        // The client's own time-out cancels the request and says so; the
        // toolbox's, a little later, is only the backstop (a restart that
        // hangs, say). With the same limit the two raced, and the plainer
        // "timed out" message could win.
        tool.hints.timeout = Some(self.inner.config.call_timeout + BACKSTOP_MARGIN);
        Ok(tool)
    }

    /// Call a server tool by its own name.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<rmcp::model::CallToolResult, ToolError> {
        let arguments: Option<JsonObject> = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::failed(format!(
                    "MCP tool arguments must be an object, got {other}"
                )));
            }
        };
        let peer = self.peer().await.map_err(ToolError::from_error)?;
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // The calling span's trace context, in `_meta` as MCP carries it.
        let trace = agentry_telemetry::context::current_fields();
        if !trace.is_empty() {
            let mut meta = rmcp::model::RequestMetaObject::default();
            for (name, value) in trace {
                meta.insert(name, Value::String(value));
            }
            params.meta = Some(meta);
        }
        let call = rounds::call_tool(
            &peer,
            self.name(),
            self.inner.config.elicitor.as_ref(),
            params,
        );
        self.within(call)
            .await
            .map_err(ToolError::from_error)?
            .map_err(ToolError::failed)
    }

    /// The live session's peer, restarting the server first when it is down
    /// and its backoff has passed.
    pub(crate) async fn peer(&self) -> Result<Peer<RoleClient>, McpError> {
        let mut link = self.inner.link.lock().await;
        if let Link::Up(session) = &*link
            && !session.is_closed()
        {
            return Ok(session.peer().clone());
        }
        let (since, failures, error) = match &*link {
            Link::Up(_) => (Instant::now(), 0, "the connection closed".to_owned()),
            Link::Down {
                since,
                failures,
                error,
            } => (*since, *failures, error.clone()),
        };
        if failures == u32::MAX {
            return Err(McpError::Down {
                server: self.name().to_owned(),
                reason: error,
            });
        }
        let retry_at = Link::retry_at(since, failures);
        let now = Instant::now();
        if now < retry_at {
            *link = Link::Down {
                since,
                failures,
                error: error.clone(),
            };
            return Err(McpError::Down {
                server: self.name().to_owned(),
                reason: format!(
                    "{error}; the next restart is in {} ms",
                    (retry_at - now).as_millis()
                ),
            });
        }
        tracing::warn!(server = %self.name(), %error, "restarting the MCP server");
        let handler = Handler::new(&self.inner.config, self.inner.changed.clone());
        match link::connect(&self.inner.config, handler).await {
            Ok(session) => {
                let peer = session.peer().clone();
                *link = Link::Up(session);
                self.inner.generation.fetch_add(1, Ordering::SeqCst);
                // Its tools may differ from the old process's.
                self.inner.changed.store(true, Ordering::SeqCst);
                Ok(peer)
            }
            Err(restart) => {
                *link = Link::Down {
                    since: Instant::now(),
                    failures: failures + 1,
                    error: restart.to_string(),
                };
                Err(McpError::Down {
                    server: self.name().to_owned(),
                    reason: restart.to_string(),
                })
            }
        }
    }

    /// A request's answer within the call timeout. On time-out the request
    /// is dropped, which sends `notifications/cancelled`, and the server is
    /// checked in the background ([`McpClient::stop_if_hung`]).
    pub(crate) async fn within<T>(
        &self,
        request: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        let limit = self.inner.config.call_timeout;
        match tokio::time::timeout(limit, request).await {
            Ok(answer) => answer.map_err(|error| self.failed(error)),
            Err(_) => {
                tokio::spawn(self.clone().stop_if_hung());
                Err(McpError::Request(format!(
                    "the MCP server {} did not answer within {limit:?}; the request was cancelled",
                    self.name()
                )))
            }
        }
    }

    /// Ping the server after a request timed out. A slow tool is no fault of
    /// the server's, but a server that cannot even answer a ping is hung: it
    /// is stopped (a child process is terminated) and marked down, so the next
    /// call restarts it.
    async fn stop_if_hung(self) {
        let (peer, generation) = {
            let link = self.inner.link.lock().await;
            match &*link {
                Link::Up(session) if !session.is_closed() => (
                    session.peer().clone(),
                    self.inner.generation.load(Ordering::SeqCst),
                ),
                _ => return,
            }
        };
        let limit = self.inner.config.call_timeout.min(PING_TIMEOUT);
        let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
        // Any answer, even an error, shows the server is reading its input.
        match tokio::time::timeout(limit, ping).await {
            Ok(Ok(_)) | Ok(Err(ServiceError::McpError(_))) => return,
            _ => {}
        }
        let mut link = self.inner.link.lock().await;
        if self.inner.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        tracing::warn!(server = %self.name(), "the MCP server does not answer a ping; it is stopped and will be restarted on the next call");
        if let Link::Up(session) = &mut *link {
            let _ = session.close_with_timeout(Duration::from_secs(10)).await;
        }
        *link = Link::Down {
            since: Instant::now(),
            failures: 0,
            error: format!("it stopped answering (no reply to a ping within {limit:?})"),
        };
    }

    /// A failed request as an error; a closed transport also marks the
    /// server down, to be restarted on the next call.
    pub(crate) fn failed(&self, error: ServiceError) -> McpError {
        let gone = matches!(
            error,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        );
        if gone && let Ok(mut link) = self.inner.link.try_lock() {
            *link = Link::Down {
                since: Instant::now(),
                failures: 0,
                error: error.to_string(),
            };
        }
        match error {
            ServiceError::McpError(data) => McpError::Server(data.message.to_string()),
            error if gone => McpError::Down {
                server: self.name().to_owned(),
                reason: format!("{error}; it will be restarted on the next call"),
            },
            error => McpError::Request(format!("the MCP request failed: {error}")),
        }
    }
}

/// A server's own name as a namespace: its last `/`-separated part, lower
/// case, `-` for anything but letters and digits (`mcp-servers/everything`
/// gives `everything`).
fn namespace(name: &str) -> String {
    let last = name
        .rsplit('/')
        .find(|part| !part.trim().is_empty())
        .unwrap_or("");
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches('-').to_owned();
    if name.is_empty() { "mcp".into() } else { name }
}

/// Whether `name` holds no character that could change what a terminal
/// shows: no control character (C0, DEL, C1: escape sequences, carriage
/// returns, newlines) and no Unicode format character that reorders or hides
/// text (zero-width U+200B–U+200F, line and paragraph separators and bidi
/// embeddings U+2028–U+202E, word joiners and bidi isolates U+2060–U+2069,
/// U+FEFF).
pub fn shown_plainly(name: &str) -> bool {
    !name.chars().any(unprintable)
}

/// A control or format character ([`shown_plainly`]).
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// `text` with each control or format character written as Rust escapes it
/// (`\u{1b}`, `\r`, `\n`), so that it shows as it is on a terminal.
pub fn escaped(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if unprintable(c) {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

impl ToolSource for McpClient {
    fn name(&self) -> &str {
        McpClient::name(self)
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>, String>> {
        Box::pin(async move { McpClient::tools(self).await.map_err(|e| e.to_string()) })
    }

    fn changed(&self) -> bool {
        self.inner.changed.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_with_control_or_format_characters_are_not_shown_plainly() {
        assert!(super::shown_plainly("read_file"));
        assert!(super::shown_plainly("lire_le_fichier_é"));
        for name in [
            "zap\u{1b}[2K\r",
            "a\nb",
            "a\u{9b}b",
            "a\u{202e}b",
            "a\u{200b}b",
            "a\u{2066}b",
        ] {
            assert!(!super::shown_plainly(name), "{name:?}");
        }
        assert_eq!(
            super::escaped("zap\u{1b}[2K\rapprove\u{202e}é"),
            "zap\\u{1b}[2K\\rapprove\\u{202e}é"
        );
    }

    #[test]
    fn server_names_become_namespaces() {
        assert_eq!(super::namespace("mcp-servers/everything"), "everything");
        assert_eq!(super::namespace("My Server!"), "my-server");
        assert_eq!(super::namespace("///"), "mcp");
    }
}
