//! The local model's tool-call parsers (`<tool_call>` JSON and Python-style
//! lists) on any text: calls and text, never a panic. They live in
//! `agentry-local-calls`, apart from llama.cpp, so the target fuzzes exactly
//! the parsers the engine runs without building it.
#![no_main]

use agentry_local_calls::{python_calls, tool_calls};
use libfuzzer_sys::fuzz_target;

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
        if let Some(calls) = python_calls::parse_python_calls(text) {
            for (name, _) in &calls {
                assert!(text.contains(name.as_str()));
            }
            // Calls written back (as earlier calls are shown to the model) read the same.
            let written =
                python_calls::write_python_calls(calls.iter().map(|(name, a)| (name.clone(), a)));
            assert_eq!(python_calls::parse_python_calls(&written), Some(calls));
        }
    }
});
