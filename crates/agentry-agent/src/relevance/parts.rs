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
//! Parts near *one* tool are asked of it once each when the calls made
//! answered one part and left out another that holds a value of its own
//! (a number or a name: "What time is it in Tokyo and in New York?",
//! "Convert 10 miles to km and 10 kg to pounds"): the tool is called again
//! with that part named ([`unserved_part`]). A part is answered when at
//! least half of its words (less those of the tool's own text and a few
//! common ones) are among the values of a call; so "a base of 10 and
//! height of 5", one call's arguments, is answered by that one call. Here a
//! part may be one word if it is a name ("Lisbon and Berlin").

use std::collections::HashSet;

use agentry_core::model::Message;
use agentry_core::tool::{ToolCall, ToolSchema, Toolbox};
use serde::Serialize;

use super::{Relevance, ToolText};
use crate::agent::Settings;

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
}

/// Words that say nothing of what a part asks for.
const COMMON: [&str; 46] = [
    "a", "an", "the", "to", "in", "into", "on", "of", "for", "and", "or", "is", "are", "was",
    "what", "whats", "what's", "how", "much", "many", "me", "my", "i", "you", "your", "it", "at",
    "by", "from", "with", "please", "tell", "show", "give", "find", "get", "check", "also", "then",
    "there", "this", "that", "do", "does", "can", "now",
];

/// Where one request in a message may end and the next begin, each with
/// blank space on both sides (matched in lower case).
const JOINS: [&str; 8] = [
    ", and ", " and ", " + ", " & ", "; ", ", also ", ", then ", " also ",
];

/// The parts of `request` with two words or more, or one word that is a
/// name (capitalised: "Lisbon and Berlin"), in order.
pub(super) fn named_parts(request: &str) -> Vec<String> {
    pieces(request)
        .into_iter()
        .filter(|piece| {
            piece.split_whitespace().count() >= 2
                || piece.chars().next().is_some_and(char::is_uppercase)
        })
        .collect()
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
    if !relevance.part_tools.is_empty() {
        if called.len() >= relevance.part_tools.len() {
            return None;
        }
        return relevance
            .part_tools
            .into_iter()
            .rev()
            .find(|tool| !called.contains(&tool.as_str()) && read_only(tool))
            .map(|tool| Unserved { tool, part: None });
    }
    if calls.len() >= relevance.parts.len() {
        return None;
    }
    let called_text: HashSet<String> = tools
        .iter()
        .filter(|tool| called.contains(&tool.name.as_str()))
        .flat_map(|tool| tokens(&ToolText::WithArguments.of(tool)))
        .collect();
    let taken: HashSet<String> = calls
        .iter()
        .flat_map(|call| tokens(&values_text(&call.input)))
        .collect();
    let texts: Vec<&str> = relevance
        .parts
        .iter()
        .map(|part| part.text.as_str())
        .collect();
    let answered: Vec<bool> = (0..texts.len())
        .map(|at| answered(&texts, at, &called_text, &taken))
        .collect();
    if !answered.contains(&true) {
        // No call took any part's values: the parts are not requests the
        // calls can be told apart by.
        return None;
    }
    relevance
        .parts
        .iter()
        .zip(answered)
        .find(|(part, answered)| {
            !answered
                && holds_value(&part.text)
                && called.contains(&part.tool.as_str())
                && read_only(&part.tool)
        })
        .map(|(part, _)| Unserved {
            tool: part.tool.clone(),
            part: Some(part.text.clone()),
        })
}

/// Whether the part `parts[at]` was answered by a call that took `taken`
/// (its values' words): every number only this part holds is among them,
/// or at least half of the words only this part holds (less common words
/// and `tool_words`, the called tools' own text) are. A part with neither
/// counts as answered.
fn answered(
    parts: &[&str],
    at: usize,
    tool_words: &HashSet<String>,
    taken: &HashSet<String>,
) -> bool {
    let elsewhere: HashSet<String> = parts
        .iter()
        .enumerate()
        .filter(|(other, _)| *other != at)
        .flat_map(|(_, part)| tokens(part))
        .collect();
    let own: Vec<String> = tokens(parts[at])
        .into_iter()
        .filter(|token| !elsewhere.contains(token) && !COMMON.contains(&token.as_str()))
        .collect();
    let (numbers, words): (Vec<&String>, Vec<&String>) =
        own.iter().partition(|token| token.parse::<f64>().is_ok());
    if !numbers.is_empty() && numbers.iter().all(|number| taken.contains(*number)) {
        return true;
    }
    let words: Vec<&String> = words
        .into_iter()
        .filter(|word| !tool_words.contains(*word))
        .collect();
    let found = words.iter().filter(|word| taken.contains(**word)).count();
    if numbers.is_empty() {
        found * 2 >= words.len()
    } else {
        // A number of its own not taken: its words must say it was.
        !words.is_empty() && found * 2 >= words.len()
    }
}

/// Whether `part` holds a value of its own: a number, or a name (a
/// capitalised word that neither opens the part or one of its sentences
/// nor is `I`; or the part is that one word).
fn holds_value(part: &str) -> bool {
    if part.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    let words: Vec<&str> = part.split_whitespace().collect();
    let capitalised = |word: &str| word.chars().next().is_some_and(char::is_uppercase);
    if words.len() == 1 {
        return capitalised(words[0]);
    }
    words.windows(2).any(|pair| {
        let opens_sentence = pair[0].ends_with(['.', '!', '?']);
        let is_i = pair[1] == "I" || pair[1].starts_with("I'");
        capitalised(pair[1]) && !opens_sentence && !is_i
    })
}

/// The words and numbers of `text` in lower case: numbers read whole
/// (`1,245.50` is `1245.5`, as `1245.50` is), words split at anything but
/// letters and digits.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        if !chars[at].is_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        let numeric = chars[at].is_ascii_digit();
        while at < chars.len() {
            let c = chars[at];
            let between_digits = numeric
                && matches!(c, '.' | ',')
                && chars.get(at + 1).is_some_and(char::is_ascii_digit)
                && at > start;
            if c.is_alphanumeric() || between_digits {
                at += 1;
            } else {
                break;
            }
        }
        let token: String = chars[start..at].iter().filter(|c| **c != ',').collect();
        let token = token.to_lowercase();
        match token.parse::<f64>() {
            Ok(value) if numeric => found.push(value.to_string()),
            _ => found.push(token),
        }
    }
    found
}

/// A call's argument values (strings and numbers, not keys) as one text.
fn values_text(arguments: &serde_json::Value) -> String {
    match arguments {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Number(number) => number.to_string(),
        serde_json::Value::Array(items) => {
            items.iter().map(values_text).collect::<Vec<_>>().join(" ")
        }
        serde_json::Value::Object(map) => {
            map.values().map(values_text).collect::<Vec<_>>().join(" ")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::{answered, holds_value, named_parts, tokens};

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

    fn set(words: &[&str]) -> HashSet<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn a_part_is_answered_by_a_call_that_took_its_own_values() {
        let tool = set(&["convert", "units", "value", "from", "to"]);
        let parts = ["Convert 10 miles to km", "10 kg to pounds"];
        // convert_units(10, miles, km): the first part's, not the second's
        // (its 10 is the first part's too; its words are not taken).
        let taken = set(&["10", "miles", "km"]);
        assert!(answered(&parts, 0, &tool, &taken));
        assert!(!answered(&parts, 1, &tool, &taken));
        // A number of its own, taken, answers a chatty part.
        let parts = [
            "Doing my taxes, ugh. Could you add up 1,245.50",
            "612.80 for me",
        ];
        let taken: HashSet<String> = tokens("1245.50 + 3870.25 + 612.80").into_iter().collect();
        assert!(answered(&parts, 0, &HashSet::new(), &taken));
        assert!(answered(&parts, 1, &HashSet::new(), &taken));
        // One call's arguments: a base of 10 and a height of 5.
        let parts = ["a triangle with a base of 10", "height of 5"];
        let tool = set(&["triangle", "area", "base", "height"]);
        assert!(answered(&parts, 0, &tool, &set(&["10", "5"])));
        assert!(answered(&parts, 1, &tool, &set(&["10", "5"])));
        assert!(!answered(&parts, 1, &tool, &set(&["10"])));
    }

    #[test]
    fn a_value_is_a_number_or_a_name_inside_the_part() {
        assert!(holds_value("in New York"));
        assert!(holds_value("10 kg to pounds"));
        assert!(holds_value("Berlin"));
        assert!(!holds_value("show me the cheapest"));
        assert!(!holds_value("Tell me the forecast"));
        assert!(!holds_value(
            "I don't want to wake her up. What time is it there"
        ));
    }

    #[test]
    fn numbers_are_read_whole_and_by_value() {
        assert_eq!(tokens("1,245.50 and 1245.5"), ["1245.5", "and", "1245.5"]);
        assert_eq!(tokens("Asia/Tokyo, 12, 18"), ["asia", "tokyo", "12", "18"]);
        assert_eq!(
            tokens("3rd of 2026-12-10"),
            ["3rd", "of", "2026", "12", "10"]
        );
    }

    #[test]
    fn text_outside_ascii_is_split_where_it_lines_up() {
        assert_eq!(
            parts("Find Chloé's email and check the weather in Paris."),
            ["Find Chloé's email", "check the weather in Paris"]
        );
    }
}
