//! What can go wrong talking MCP.

/// An MCP failure, with a message a model or a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server's program could not be started.
    #[error("could not start the MCP server {program:?}: {message}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        message: String,
    },
    /// The handshake failed or timed out.
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    /// The configuration cannot be used.
    #[error("invalid MCP configuration: {0}")]
    Config(String),
    /// The server is down (crashed, or its connection closed).
    #[error("the MCP server {server} is down: {reason}")]
    Down {
        /// The server's name.
        server: String,
        /// What happened.
        reason: String,
    },
    /// Signing in to the server (OAuth) failed.
    #[error("signing in to the MCP server {server} failed: {reason}")]
    SignIn {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server answered with an error.
    #[error("the MCP server answered with an error: {0}")]
    Server(String),
    /// A request failed for another reason (timeout, unexpected answer).
    #[error("{0}")]
    Request(String),
    /// A tool's schema does not compile.
    #[error("unusable tool schema: {0}")]
    Schema(String),
    /// Serving failed.
    #[error("MCP serving failed: {0}")]
    Serve(String),
}
