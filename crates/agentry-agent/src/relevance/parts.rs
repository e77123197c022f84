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
//!
//! A part near the *one* tool called is asked of it again when the call
//! made took another part's values and none of this one's, and this one
//! holds a value of its own (a number or a name: "What time is it in Tokyo
//! and in New York?", "Convert 10 miles to km and 10 kg to pounds"): the
//! tool is called with that part named to the model ([`unserved_part`]).
//! What a part holds is read against the call's values
//! ([`reading::read`]): only what no other part holds counts, less common
//! words and the tool's own name, description and argument names. So "a
//! base of 10 and height of 5", one call's arguments, is answered by that
//! one call. Here a part may be one word if it is a name ("Lisbon and
//! Berlin"), and a part the gate would take for small talk ("and thanks,
//! Ana") is none. A message is read in at most [`MAX_PARTS`].

use std::collections::HashSet;

use agentry_core::model::Message;
use agentry_core::tool::{ToolCall, ToolSchema, Toolbox};
use serde::Serialize;

use super::Relevance;
use crate::agent::Settings;

mod reading;

/// A part of a request that asks several things at once, and the tool
/// nearest it ([`Relevance::parts`](super::Relevance::parts)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestPart {
    /// The part, as the user wrote it.
    pub text: String,
    /// The tool nearest it.
    pub tool: String,
    /// Their similarity.
    pub similarity: f32,
    /// The similarity of the gate's nearest small talk, when it has some:
    /// a part that the gate would answer in text as a request of its own
    /// ("and thanks, Ana") is not asked of its tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub small_talk: Option<f32>,
}

impl RequestPart {
    /// Whether the part reads as a request to its tool rather than as small
    /// talk, by the gate's own rule for a request: small talk nearer than
    /// the tool by more than `talk_margin` is small talk ("and thanks,
    /// Ana").
    fn is_request(&self, talk_margin: Option<f32>) -> bool {
        match (self.small_talk, talk_margin) {
            (Some(talk), Some(margin)) => self.similarity - talk >= margin,
            _ => true,
        }
    }
}

/// The most parts a message is read in: a longer list ("a and b and c
/// and …") is read as one request.
pub(crate) const MAX_PARTS: usize = 8;

/// Where one request in a message may end and the next begin, each with
/// blank space on both sides (matched in lower case).
const JOINS: [&str; 8] = [
    ", and ", " and ", " + ", " & ", "; ", ", also ", ", then ", " also ",
];

/// The parts of `request` with two words or more, or one word that is a
/// name (capitalised: "Lisbon and Berlin"), in order; the request whole
/// when it has more than [`MAX_PARTS`].
pub(super) fn named_parts(request: &str) -> Vec<String> {
    let parts: Vec<String> = pieces(request)
        .into_iter()
        .filter(|piece| {
            piece.split_whitespace().count() >= 2
                || piece.chars().next().is_some_and(char::is_uppercase)
        })
        .collect();
    if parts.len() > MAX_PARTS {
        vec![request.trim().to_owned()]
    } else {
        parts
    }
}

/// `request` split at every join, each piece trimmed, empty ones dropped.
fn pieces(request: &str) -> Vec<String> {
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
        .filter(|piece| !piece.is_empty())
        .collect()
}

/// `text` split at each `join` (ASCII), matched in lower case. Only ASCII
/// letters are lowered, so every byte offset of the lowered text is one of
/// `text` ("K and İİ" lowered in full would shift them).
fn split_ignoring_case(text: &str, join: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
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

/// A call the loop makes before the answer, for a part of the request no
/// call has answered yet ([`unserved_part`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unserved {
    /// The tool to call.
    pub tool: String,
    /// The part, when the tool was called already for another part: the
    /// model is shown it, so that it does not repeat the call it made.
    pub part: Option<String>,
}

impl Unserved {
    /// What the model is told for this step (not kept in the conversation).
    pub(crate) fn note(&self) -> Option<Message> {
        self.part
            .as_ref()
            .map(|part| Message::user(format!("Now this part of my request: {part}")))
    }
}

/// A part of the request that no call since the user's last message has
/// answered, and the tool to call for it, with the agent's gate applied as
/// for step 1; only a read-only tool is called this way (a part read wrong
/// must not send an email). `known` is what the gate made of the request at
/// step 1, where the run kept it (the request has not changed since);
/// without it the gate reads the request again.
///
/// Two kinds: a part whose own tool ([`Relevance::part_tools`]) was not
/// called (a model that stops after one call has answered the first part,
/// so the parts are read from the last, and a part whose tool was called
/// counts as answered); else a part that holds a value no call has taken,
/// after a call that took another part's ([`RequestPart`]), for the tool
/// nearest it. `None` once as many calls were made as there are parts, or
/// when the gate stands aside.
pub(crate) async fn unserved_part(
    settings: &Settings,
    toolbox: &Toolbox,
    tools: &[ToolSchema],
    messages: &[Message],
    known: Option<&Relevance>,
) -> Option<Unserved> {
    let gate = settings.relevance_gate.as_ref()?;
    if super::stands_aside(settings) {
        return None;
    }
    let asked_at = messages
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }))?;
    let calls: Vec<&ToolCall> = messages[asked_at..]
        .iter()
        .flat_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .collect();
    let mut called: Vec<&str> = calls.iter().map(|call| call.name.as_str()).collect();
    called.sort_unstable();
    called.dedup();
    if called.is_empty() {
        return None;
    }
    let relevance = match known {
        Some(relevance) => relevance.clone(),
        None => gate.assess(messages, tools).await.ok()??,
    };
    let read_only = |tool: &str| {
        toolbox
            .find_by_name(tool)
            .is_some_and(|found| found.hints.read_only)
    };
    if called.len() < relevance.part_tools.len()
        && let Some(tool) = relevance
            .part_tools
            .iter()
            .rev()
            .find(|tool| !called.contains(&tool.as_str()) && read_only(tool))
    {
        return Some(Unserved {
            tool: tool.clone(),
            part: None,
        });
    }
    if relevance.parts.is_empty() || calls.len() >= relevance.parts.len() {
        return None;
    }
    let tool_words: HashSet<String> = tools
        .iter()
        .filter(|tool| called.contains(&tool.name.as_str()))
        .flat_map(reading::tool_words)
        .collect();
    let taken: HashSet<String> = calls
        .iter()
        .flat_map(|call| reading::tokens(&reading::values_text(&call.input)))
        .collect();
    let texts: Vec<&str> = relevance
        .parts
        .iter()
        .map(|part| part.text.as_str())
        .collect();
    let readings: Vec<reading::Reading> = (0..texts.len())
        .map(|at| reading::read(&texts, at, &tool_words, &taken))
        .collect();
    if !readings.iter().any(|r| r.answered == Some(true)) {
        // No call took any part's values: the parts are not requests the
        // calls can be told apart by.
        return None;
    }
    relevance
        .parts
        .iter()
        .zip(readings)
        .find(|(part, reading)| {
            reading.answered == Some(false)
                && reading.holds_value
                && part.is_request(gate.talk_margin())
                && called.contains(&part.tool.as_str())
                && read_only(&part.tool)
        })
        .map(|(part, _)| Unserved {
            tool: part.tool.clone(),
            part: Some(part.text.clone()),
        })
}

#[cfg(test)]
mod tests {
    use super::{MAX_PARTS, named_parts, split_ignoring_case};

    /// The parts of two words or more.
    fn parts(request: &str) -> Vec<String> {
        named_parts(request)
            .into_iter()
            .filter(|part| part.split_whitespace().count() >= 2)
            .collect()
    }

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
    fn a_part_of_one_word_is_kept_when_it_is_a_name() {
        assert_eq!(
            named_parts("Compare the weather in Lisbon and Berlin."),
            ["Compare the weather in Lisbon", "Berlin"]
        );
        assert_eq!(named_parts("Add 234 and 567"), ["Add 234"]);
    }

    #[test]
    fn a_long_list_is_read_as_one_request() {
        let list: Vec<String> = (0..=MAX_PARTS).map(|n| format!("city {n}")).collect();
        let request = list.join(" and ");
        assert_eq!(named_parts(&request), std::slice::from_ref(&request));
        let list = &list[..MAX_PARTS];
        assert_eq!(named_parts(&list.join(" and ")).len(), MAX_PARTS);
    }

    #[test]
    fn text_outside_ascii_is_split_where_it_lines_up() {
        // Lowered in full, the Kelvin sign and a dotted I change their byte
        // lengths and shift every offset after them.
        assert_eq!(
            split_ignoring_case("\u{212A} AND \u{130}\u{130}", " and "),
            ["\u{212A}", "\u{130}\u{130}"]
        );
        assert_eq!(
            named_parts("\u{212A} and \u{130}\u{130} and ok then"),
            ["\u{212A}", "\u{130}\u{130}", "ok then"]
        );
        assert_eq!(
            parts("Find Chloé's email and check the weather in Paris."),
            ["Find Chloé's email", "check the weather in Paris"]
        );
    }
}
