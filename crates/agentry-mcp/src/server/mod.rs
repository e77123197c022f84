//! placeholder
pub struct McpServer;
