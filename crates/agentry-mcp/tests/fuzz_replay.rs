//! The `mcp_request` fuzz target (`fuzz/`), replayed on stable: every seed
//! JSON-RPC message and thousands of mutations of them, parsed as rmcp
//! parses them and handled by the server's logic, never a panic.

#[path = "../../../fuzz/replay.rs"]
mod replay;

#[test]
fn mcp_requests_mutated_never_panic() {
    replay::replay("mcp_request", agentry_mcp::server::fuzz::handle);
}
