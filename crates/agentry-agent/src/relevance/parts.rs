//! A request that asks for several things at once ("Convert 200 EUR to USD
//! and tell me Tesla's share price"): its parts, split where one request
//! ends and the next begins, and the part no call has answered yet.
//!
//! A small model asked two things in one message opens one call and
//! stops after it, then answers the second part from memory or not at
//! all. The gate splits the request at the joins people write between
//! requests (`and`, `+`, `&`, `;`, `also`, `then`; not at a sentence's
//! end, which in a chatty request sets the scene: "My friend keeps
//! bragging about his Nvidia shares. How much is one worth?"). When two
//! or more *different* tools are each the nearest of a part
//! ([`part_tools`], kept in [`Relevance::part_tools`](super::Relevance::part_tools)),
//! the loop calls each read-only one the steps so far did not call before
//! the answer ([`unserved_part`]). Parts near one tool are left alone:
//! they are usually one call's arguments ("a base of 10 and height of
//! 5"). A part is kept only with two words or more, so "234 and 567" is
//! no split at all.

use agentry_core::model::Message;
use agentry_core::tool::{ToolSchema, Toolbox};

use super::Relevance;
use crate::agent::Settings;

/// Where one request in a message may end and the next begin, each with
/// blank space on both sides (matched in lower case).
const JOINS: [&str; 8] = [
    ", and ", " and ", " + ", " & ", "; ", ", also ", ", then ", " also ",
];

/// The parts of `request` with two words or more, in order; the request
/// itself (trimmed) when it has no join.
pub(super) fn parts(request: &str) -> Vec<String> {
    let mut pieces = vec![request.to_owned()];
    for join in JOINS {
        pieces = pieces
            .iter()
            .flat_map(|piece| split_ignoring_case(piece, join))
            .collect();
    }
    pieces
        .into_iter()
        .map(|piece| {
            piece
                .trim_matches(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '?' | '!'))
                .to_owned()
        })
        .filter(|piece| piece.split_whitespace().count() >= 2)
        .collect()
}

/// `text` split at each `join`, matched in lower case.
fn split_ignoring_case(text: &str, join: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    // Lower-casing can change byte lengths outside ASCII: split only where
    // the two line up.
    if lower.len() != text.len() {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    for (at, _) in lower.match_indices(join) {
        if at < start {
            continue;
        }
        pieces.push(text[start..at].to_owned());
        start = at + join.len();
    }
    pieces.push(text[start..].to_owned());
    pieces
}

/// The tool nearest each part (`near_parts`: each part's nearest tool, by
/// its place in `tools`, and their similarity) that is near one, in order
/// and each once, when there are two or more different ones; else none.
pub(super) fn part_tools(
    near_parts: &[(usize, f32)],
    tools: &[ToolSchema],
    floor: f32,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for &(at, sim) in near_parts {
        if sim >= floor && !names.contains(&tools[at].name) {
            names.push(tools[at].name.clone());
        }
    }
    if names.len() >= 2 { names } else { Vec::new() }
}

/// The tool of a part of the request that no call since the user's last
/// message has answered ([`Relevance::part_tools`]), with the agent's gate
/// applied as for step 1. A model that stops after one call has answered
/// the first part, so the parts are read from the last, and a part whose
/// tool was called counts as answered; only a read-only tool is called
/// this way (a part read wrong must not send an email). `None` once as
/// many tools were called as there are parts, or when the gate stands
/// aside. `known` is what the gate made of the request at step 1, where
/// the run kept it (the request has not changed since); without it the
/// gate reads the request again.
pub(crate) async fn unserved_part(
    settings: &Settings,
    toolbox: &Toolbox,
    tools: &[ToolSchema],
    messages: &[Message],
    known: Option<&Relevance>,
) -> Option<String> {
    let gate = settings.relevance_gate.as_ref()?;
    if super::stands_aside(settings) {
        return None;
    }
    let asked_at = messages
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }))?;
    let mut called: Vec<&str> = messages[asked_at..]
        .iter()
        .flat_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .map(|call| call.name.as_str())
        .collect();
    called.sort_unstable();
    called.dedup();
    if called.is_empty() {
        return None;
    }
    let part_tools = match known {
        Some(relevance) => relevance.part_tools.clone(),
        None => gate.assess(messages, tools).await.ok()??.part_tools,
    };
    if called.len() >= part_tools.len() {
        return None;
    }
    part_tools.into_iter().rev().find(|tool| {
        !called.contains(&tool.as_str())
            && toolbox
                .find_by_name(tool)
                .is_some_and(|found| found.hints.read_only)
    })
}

#[cfg(test)]
mod tests {
    use super::parts;

    #[test]
    fn two_requests_in_one_message_are_two_parts() {
        assert_eq!(
            parts("Convert 200 EUR to USD and tell me Tesla's share price."),
            ["Convert 200 EUR to USD", "tell me Tesla's share price"]
        );
        assert_eq!(
            parts("wether in lisbon + nvda price"),
            ["wether in lisbon", "nvda price"]
        );
        assert_eq!(
            parts("What's the date in Sydney, and what's 3 cubed?"),
            ["What's the date in Sydney", "what's 3 cubed"]
        );
        assert_eq!(
            parts("Read notes.txt, then add 2.5 and 3.5 for me!"),
            ["Read notes.txt", "add 2.5", "3.5 for me"]
        );
        assert_eq!(
            parts("My friend has Nvidia shares. How much is one worth?"),
            ["My friend has Nvidia shares. How much is one worth"]
        );
    }

    #[test]
    fn parts_of_one_word_are_left_out() {
        assert_eq!(parts("Add 234 and 567"), ["Add 234"]);
        assert_eq!(parts("What is 45 mod 7?"), ["What is 45 mod 7"]);
        assert_eq!(parts("hi!"), Vec::<String>::new());
        assert_eq!(parts("ANDROID AND IOS prices"), ["IOS prices"]);
    }

    #[test]
    fn text_outside_ascii_is_split_where_it_lines_up() {
        assert_eq!(
            parts("Find Chloé's email and check the weather in Paris."),
            ["Find Chloé's email", "check the weather in Paris"]
        );
    }
}
