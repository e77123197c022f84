//! Reading a part of a request against the calls made for it: which of its
//! values a call took, and whether it holds a value of its own.

use std::collections::HashSet;

use agentry_core::tool::ToolSchema;

/// Words that say nothing of what a part asks for.
const COMMON: [&str; 45] = [
    "a", "an", "the", "to", "in", "into", "on", "of", "for", "and", "or", "is", "are", "was",
    "what", "whats", "how", "much", "many", "me", "my", "i", "you", "your", "it", "its", "at",
    "by", "from", "with", "please", "tell", "show", "give", "find", "get", "check", "also", "then",
    "there", "this", "that", "do", "does", "can",
];

/// What a part of a request comes to, given the calls made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reading {
    /// Whether a call took the part's own values; `None` when it has none
    /// to tell by (every word is common, the tool's, or another part's).
    pub answered: Option<bool>,
    /// Whether the part holds a value: a number, or a name (a capitalised
    /// word that neither opens the part or one of its sentences nor is `I`;
    /// or the part is that one word). It may be another part's too: in "10
    /// kg to pounds" after "Convert 10 miles to km" the units are what is
    /// its own.
    pub holds_value: bool,
}

/// How `parts[at]` reads against calls that took `taken` (their values'
/// [`tokens`]). Only what this part holds and no other counts. It is
/// answered when every number of its own is taken, or at least half of its
/// own words are (less common words and `tool_words`, the called tools'
/// names, descriptions and argument names; not their example values, which
/// may be a part's: "city, e.g. Paris").
pub(super) fn read(
    parts: &[&str],
    at: usize,
    tool_words: &HashSet<String>,
    taken: &HashSet<String>,
) -> Reading {
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
        own.iter().partition(|token| is_number(token));
    let words: Vec<&String> = words
        .into_iter()
        .filter(|word| !tool_words.contains(*word))
        .collect();
    let words_taken = !words.is_empty()
        && 2 * words.iter().filter(|word| taken.contains(**word)).count() >= words.len();
    let answered = if !numbers.is_empty() {
        // A number of its own not taken: its words must say it was.
        Some(numbers.iter().all(|number| taken.contains(*number)) || words_taken)
    } else if words.is_empty() {
        None
    } else {
        Some(words_taken)
    };
    let holds_value = tokens(parts[at]).iter().any(|token| is_number(token))
        || names(parts[at])
            .iter()
            .any(|name| !tool_words.contains(name));
    Reading {
        answered,
        holds_value,
    }
}

/// The words of a tool that say what it is, not what it is given: its name,
/// its description and its arguments' names.
pub(super) fn tool_words(tool: &ToolSchema) -> Vec<String> {
    let mut text = format!(
        "{} {}",
        tool.name.replace('_', " "),
        tool.description.as_deref().unwrap_or("")
    );
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
    {
        for name in properties.keys() {
            text.push(' ');
            text.push_str(&name.replace('_', " "));
        }
    }
    tokens(&text)
}

/// The names in `part`, as [`tokens`]: capitalised words that neither open
/// the part or one of its sentences nor are `I` (the whole part when it is
/// one capitalised word).
fn names(part: &str) -> Vec<String> {
    let words: Vec<&str> = part.split_whitespace().collect();
    let capitalised = |word: &str| {
        word.trim_start_matches(|c: char| !c.is_alphanumeric())
            .chars()
            .next()
            .is_some_and(char::is_uppercase)
    };
    let mut found = Vec::new();
    for (at, word) in words.iter().enumerate() {
        let opens = at == 0 || words[at - 1].ends_with(['.', '!', '?']);
        let bare = word.trim_matches(|c: char| !c.is_alphanumeric());
        let is_i = bare == "I" || bare.starts_with("I'") || bare.starts_with("I’");
        if capitalised(word) && !is_i && (!opens || words.len() == 1) {
            found.extend(tokens(word));
        }
    }
    found
}

fn is_number(token: &str) -> bool {
    token.starts_with(|c: char| c.is_ascii_digit()) && token.parse::<f64>().is_ok()
}

/// The words and numbers of `text` in lower case. A number is read whole
/// and by value: `1,245.50` is `1245.5`, as `1245.50` is (a comma only
/// between thousands: `1,2` is two numbers), and it ends where letters
/// start (`10kg` is `10` and `kg`). A word is split at anything but
/// letters, digits and an apostrophe inside it, which is dropped (`what's`
/// is `whats`).
pub(super) fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let digit_at = |at: usize| chars.get(at).is_some_and(char::is_ascii_digit);
    let mut found = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        if !chars[at].is_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        if chars[at].is_ascii_digit() {
            let mut point = false;
            while at < chars.len() {
                let c = chars[at];
                let thousands = c == ','
                    && !point
                    && (1..=3).all(|ahead| digit_at(at + ahead))
                    && !digit_at(at + 4);
                let decimal = c == '.' && !point && digit_at(at + 1);
                if c.is_ascii_digit() || thousands {
                    at += 1;
                } else if decimal {
                    point = true;
                    at += 1;
                } else {
                    break;
                }
            }
            let digits: String = chars[start..at].iter().filter(|c| **c != ',').collect();
            match digits.parse::<f64>() {
                Ok(value) => found.push(value.to_string()),
                Err(_) => found.push(digits),
            }
        } else {
            while at < chars.len() {
                let c = chars[at];
                let apostrophe = matches!(c, '\'' | '’')
                    && chars.get(at + 1).is_some_and(|n| n.is_alphanumeric());
                if c.is_alphanumeric() || apostrophe {
                    at += 1;
                } else {
                    break;
                }
            }
            let word: String = chars[start..at]
                .iter()
                .filter(|c| !matches!(c, '\'' | '’'))
                .collect();
            found.push(word.to_lowercase());
        }
    }
    found
}

/// A call's argument values (strings and numbers, not keys) as one text.
pub(super) fn values_text(arguments: &serde_json::Value) -> String {
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
    use super::*;

    fn set(words: &[&str]) -> HashSet<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn taken(text: &str) -> HashSet<String> {
        tokens(text).into_iter().collect()
    }

    #[test]
    fn a_value_shared_with_another_part_still_makes_a_request() {
        let tool = set(&["convert", "units", "value", "from", "to"]);
        let parts = ["Convert 10 miles to km", "10 kg to pounds"];
        let reading = read(&parts, 1, &tool, &taken("10 miles km"));
        assert_eq!(reading.answered, Some(false));
        assert!(reading.holds_value);
    }

    #[test]
    fn a_part_is_answered_by_a_call_that_took_its_own_values() {
        let tool = set(&["convert", "units", "value", "from", "to"]);
        let parts = ["Convert 10 miles to km", "10 kg to pounds"];
        // convert_units(10, miles, km): the first part's, not the second's
        // (its 10 is the first part's too; its words are not taken).
        let call = taken("10 miles km");
        assert_eq!(read(&parts, 0, &tool, &call).answered, Some(true));
        assert_eq!(read(&parts, 1, &tool, &call).answered, Some(false));
        // A number of its own, taken, answers a chatty part.
        let parts = [
            "Doing my taxes, ugh. Could you add up 1,245.50",
            "612.80 for me",
        ];
        let call = taken("1245.50 + 3870.25 + 612.80");
        assert_eq!(read(&parts, 0, &set(&[]), &call).answered, Some(true));
        assert_eq!(read(&parts, 1, &set(&[]), &call).answered, Some(true));
        // One call's arguments: a base of 10 and a height of 5.
        let parts = ["a triangle with a base of 10", "height of 5"];
        let tool = set(&["triangle", "area", "base", "height"]);
        assert_eq!(read(&parts, 1, &tool, &taken("10 5")).answered, Some(true));
        assert_eq!(read(&parts, 1, &tool, &taken("10")).answered, Some(false));
    }

    #[test]
    fn a_part_with_nothing_of_its_own_is_neither_answered_nor_not() {
        let parts = ["What time is it in Tokyo", "is it daytime in Tokyo"];
        let tool = set(&["current", "time", "timezone", "daytime"]);
        // Tokyo is the other part's too, and daytime the tool's: nothing
        // tells whether the call answered it, so it is not asked again.
        let reading = read(&parts, 1, &tool, &taken("Asia/Tokyo"));
        assert_eq!(reading.answered, None);
    }

    #[test]
    fn example_values_in_a_tool_do_not_hide_a_part() {
        let tool = ToolSchema {
            name: "get_weather".into(),
            description: Some("Current weather for a city.".into()),
            input_schema: serde_json::json!({"properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"}
            }}),
            output_schema: None,
        };
        let words: HashSet<String> = tool_words(&tool).into_iter().collect();
        assert!(words.contains("weather") && words.contains("city"));
        assert!(!words.contains("paris"));
        let parts = ["Weather in London", "in Paris"];
        let reading = read(&parts, 1, &words, &taken("London"));
        assert_eq!(reading.answered, Some(false));
        assert!(reading.holds_value);
    }

    #[test]
    fn a_value_is_a_number_or_a_name_inside_the_part() {
        let none = set(&[]);
        let holds = |part: &str| read(&[part, "other"], 0, &none, &none).holds_value;
        assert!(holds("in New York"));
        assert!(holds("10 kg to pounds"));
        assert!(holds("Berlin"));
        assert!(!holds("show me the cheapest"));
        assert!(!holds("Tell me the forecast"));
        assert!(!holds("I don't want to wake her up. What time is it there"));
    }

    #[test]
    fn numbers_are_read_whole_and_by_value() {
        assert_eq!(tokens("1,245.50 and 1245.5"), ["1245.5", "and", "1245.5"]);
        assert_eq!(tokens("1,2,3 or 1,5"), ["1", "2", "3", "or", "1", "5"]);
        assert_eq!(tokens("10kg, 2.5lb"), ["10", "kg", "2.5", "lb"]);
        assert_eq!(tokens("Asia/Tokyo, 12, 18"), ["asia", "tokyo", "12", "18"]);
        assert_eq!(tokens("what's AF007"), ["whats", "af007"]);
        assert_eq!(tokens("3.4.5"), ["3.4", "5"]);
        assert_eq!(tokens(""), Vec::<String>::new());
    }
}
