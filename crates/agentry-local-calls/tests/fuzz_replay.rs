//! The `local_tool_calls` fuzz target (`fuzz/`), replayed on stable with its
//! assertions: every seed reply and thousands of mutations of them read
//! into text and calls, no call invented, Python-style calls written back
//! read the same.

#[path = "../../../fuzz/replay.rs"]
mod replay;

#[test]
fn replies_mutated_read_back_without_inventing_calls() {
    replay::replay("local_tool_calls", |bytes| {
        if let Ok(text) = std::str::from_utf8(bytes) {
            agentry_local_calls::__fuzz::reply(text);
        }
    });
}
