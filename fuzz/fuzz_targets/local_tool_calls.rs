//! The local model's tool-call parser on any text: calls and text, never a
//! panic. The module is compiled from `agentry-local`'s own source file, so
//! the target fuzzes exactly the parser the engine runs without building
//! llama.cpp.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/agentry-local/src/tool_calls.rs"]
mod tool_calls;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let parsed = tool_calls::parse_reply(text);
        // Everything the parser returns came from the input: no call is invented.
        if parsed.calls.is_empty() {
            assert!(parsed.text.len() <= text.len());
        }
        for (name, _) in &parsed.calls {
            assert!(text.contains(name.as_str()) || text.contains('\\'));
        }
    }
});
