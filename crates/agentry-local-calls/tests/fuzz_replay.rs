//! The `local_tool_calls` fuzz target (`fuzz/`), replayed on stable with its
//! assertions: every seed reply and thousands of mutations of them read
//! into text and calls, no call invented, Python-style calls written back
//! read the same.

use agentry_local_calls::{python_calls, tool_calls};

#[path = "../../../fuzz/replay.rs"]
mod replay;

#[test]
fn replies_mutated_read_back_without_inventing_calls() {
    replay::replay("local_tool_calls", |bytes| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let parsed = tool_calls::parse_reply(text);
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
            let written =
                python_calls::write_python_calls(calls.iter().map(|(name, a)| (name.clone(), a)));
            assert_eq!(python_calls::parse_python_calls(&written), Some(calls));
        }
    });
}
