//! # agentry-mcp
//!
//! MCP (the Model Context Protocol) for agentry, on [rmcp](https://docs.rs/rmcp).
//!
//! - [`McpClient`]: an MCP server's tools (and, opted in, its prompts and
//!   resources) become agentry [`Tool`](agentry_core::tool::Tool)s, namespaced
//!   by the server's name (`everything.echo`), with `pass_input` on. Give an
//!   agent the client as a [`ToolSource`](agentry_core::tool::ToolSource) and
//!   a changed tool list is picked up between steps.
//!   An [`Elicitor`] answers the server's questions.
//! - [`McpServer`]: a [`Toolbox`](agentry_core::tool::Toolbox) served over
//!   stdio or Streamable HTTP. A tool that needs the client (elicitation,
//!   sampling, roots, logging) finds it with
//!   [`Caller::of`](server::Caller::of), in either protocol era.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agentry_core::agent::Agent;
//! use agentry_core::model::OfflineModel;
//! use agentry_mcp::{McpClient, McpServerConfig};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let everything = McpServerConfig::stdio("everything", "npx -y @modelcontextprotocol/server-everything");
//! let client = McpClient::connect(everything).await?;
//! let agent = Agent::builder(OfflineModel)
//!     .tool_source(Arc::new(client))
//!     .allow_only(["everything.echo", "everything.get-sum"])
//!     .build()?;
//! # Ok(()) }
//! ```

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
