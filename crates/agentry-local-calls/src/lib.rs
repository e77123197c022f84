//! # agentry-local-calls
//!
//! The text side of agentry's local model, with no model in it: what
//! `agentry-local` writes into a prompt and reads back out of a reply.
//! Everything here is a pure function of text and JSON, so it is tested and
//! fuzzed without building llama.cpp.
//!
//! - [`template`]: the model's own Jinja chat template rendered to a
//!   [`Prompt`](template::Prompt), message texts kept apart from the
//!   template's special-token markers.
//! - [`tool_calls`]: the grammar that holds a reply to an answer or
//!   `<tool_call>` blocks naming offered tools, and the parser that reads
//!   calls back (also a bare or fenced JSON call an unconstrained model writes).
//! - [`python_calls`]: calls written as a Python-style list,
//!   `[get_weather(city="Paris")]`: the system prompt, grammar and parser.
//! - [`schema_echo`]: arguments a small model wrapped in its tool's schema,
//!   unwrapped.
//! - [`grounding`]: a reply's later calls that bring in numbers the
//!   conversation never gave, left out.
//! - [`list_opening`]: when a call block opens a list of calls rather than one.
//!
//! ```
//! use agentry_local_calls::python_calls::parse_python_calls;
//! use agentry_local_calls::tool_calls::parse_reply;
//! use serde_json::json;
//!
//! let reply = parse_reply(
//!     "Checking.<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
//! );
//! assert_eq!(reply.text, "Checking.");
//! assert_eq!(reply.calls, [("weather".to_owned(), json!({"city": "Paris"}))]);
//!
//! let calls = parse_python_calls(r#"[weather(city="Paris"), weather(city="Rome")]"#).unwrap();
//! assert_eq!(calls[1], ("weather".to_owned(), json!({"city": "Rome"})));
//! // Not a list of calls: no calls, rather than a guess.
//! assert_eq!(parse_python_calls("It is sunny in Paris."), None);
//! ```
#![warn(missing_docs)]

pub mod grounding;
pub mod list_opening;
pub mod python_calls;
pub mod schema_echo;
pub mod template;
pub mod tool_calls;

/// Entry point for the `local_tool_calls` fuzz target (`fuzz/`) and its
/// replay on stable: read `text` as a reply and assert what reading must
/// keep. Not a stable API.
#[doc(hidden)]
pub mod __fuzz {
    use crate::{python_calls, tool_calls};

    /// Every call read from `text` came from it (none invented), and
    /// Python-style calls written back (as earlier calls are shown to the
    /// model) read the same; panics otherwise.
    pub fn reply(text: &str) {
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
    }
}
