//! The local model's tool-call parsers (`<tool_call>` JSON and Python-style
//! lists) on any text: calls and text, never a panic. They live in
//! `agentry-local-calls`, apart from llama.cpp, so the target fuzzes exactly
//! the parsers the engine runs without building it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        agentry_local_calls::__fuzz::reply(text);
    }
});
