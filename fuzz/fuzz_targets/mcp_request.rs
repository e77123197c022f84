//! An MCP client's message of any bytes, parsed as rmcp parses it and handled
//! by agentry's MCP server logic (tools/list pages, tools/call through
//! validated dispatch): a result or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    agentry_mcp::server::fuzz::handle(data);
});
