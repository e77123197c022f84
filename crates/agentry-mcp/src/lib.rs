//! # agentry-mcp
//!
//! MCP (the Model Context Protocol) for agentry, on [rmcp](https://docs.rs/rmcp).
//!
//! - [`McpClient`]: an MCP server's tools (and, opted in, its prompts and
//!   resources) become agentry [`Tool`](agentry_core::tool::Tool)s, namespaced
//!   by the server's name (`everything.echo`), with `pass_input` on. Give an
//!   agent the client as a [`ToolSource`](agentry_core::tool::ToolSource) and
//!   a changed tool list is picked up between steps.
//!   An [`Elicitor`] answers the server's questions; a server that needs
//!   OAuth is signed in to ([`McpOAuth`](client::McpOAuth), set with
//!   [`McpServerConfig::oauth`]).
//! - [`McpServer`]: a [`Toolbox`](agentry_core::tool::Toolbox) served over
//!   stdio or Streamable HTTP. A tool that needs the client (elicitation,
//!   sampling, roots, logging) finds it with
//!   [`Caller::of`](server::Caller::of), in either protocol era. It offers
//!   prompts, resources and resource templates too
//!   ([`McpServer::prompt`], [`McpServer::resource`],
//!   [`McpServer::resource_template`]), with completions and subscriptions.
//!
//! A toolbox served over Streamable HTTP, and an agent's view of it through
//! a client: the server's `math.add` becomes the namespaced tool
//! `calc.math.add`, validated on both sides.
//!
//! ```
//! use agentry_core::tool::{ToolCall, Toolbox, function};
//! use agentry_mcp::{HttpOptions, McpClient, McpServer, McpServerConfig};
//! use serde_json::{Value, json};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let add = function("add")
//!     .namespace("math")
//!     .description("Add two integers.")
//!     .arg::<i64>("x", "First")
//!     .arg::<i64>("y", "Second")
//!     .returns_field::<i64>("sum", "The sum")
//!     .handler(|a: Value| Ok::<_, String>(json!({"sum": a["x"].as_i64().unwrap_or(0) + a["y"].as_i64().unwrap_or(0)})))
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}/mcp", listener.local_addr()?);
//! let server = McpServer::new(Toolbox::for_agent([add])?);
//! tokio::spawn(server.serve_http(listener, HttpOptions::default(), std::future::pending()));
//!
//! let client = McpClient::connect(McpServerConfig::http("calc", url)).await?;
//! let tools = client.tools().await?;
//! assert_eq!(tools[0].name, "calc.math.add");
//! assert!(tools[0].hints.destructive, "an untrusted server's tools need approval");
//!
//! // Give `client` to an agent with `.tool_source(client)`; here its
//! // tools are dispatched directly.
//! let toolbox = Toolbox::for_agent(tools)?;
//! let sum = toolbox.dispatch(ToolCall::new("1", "calc.math.add", json!({"x": 2, "y": 40}))).await;
//! assert_eq!(sum.output, json!({"sum": 42}));
//! let bad = toolbox.dispatch(ToolCall::new("2", "calc.math.add", json!({"x": "two", "y": 1}))).await;
//! assert!(bad.is_error, "checked against the server's schema before it is sent");
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! `agentry run --mcp 'npx -y @modelcontextprotocol/server-everything'` gives
//! the CLI's agent a server's tools; `agentry mcp serve` serves agentry's.

pub mod client;
mod error;
pub mod server;

pub use client::{
    Answer, Elicitor, McpClient, McpProtocol, McpServerConfig, McpTransport, Question,
};
pub use error::McpError;
pub use server::McpServer;
pub use server::{HttpOptions, MCP_PATH};
/// Stops an HTTP endpoint's streams ([`McpServer::router`]).
pub use tokio_util::sync::CancellationToken;
