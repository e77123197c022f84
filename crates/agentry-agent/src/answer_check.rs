//! Answers that agree with the tool results they rest on.
//!
//! A small model that called the right tool still often answers with a
//! value the tool never returned (18.288 meters for a tool's 1.8288), names
//! another weekday than the clock tool did, or states nothing the tool said
//! at all ("The `convert_units` function returns the number of inches…").
//! With [`AgentBuilder::check_answers`](super::AgentBuilder::check_answers)
//! on, a final answer that follows tool calls is read against their
//! results ([`disagreement`]): numbers (as written, thousands separators
//! and rounding allowed for), weekdays, and names or codes the tools
//! returned. An answer that disagrees is replaced by the results
//! themselves, quoted ([`quoted`]), or, where it only left them out,
//! followed by them (and an answer that states some of several results
//! is followed by the others, [`left_out`]); with [`AnswerCheck::AskAgain`] the model is first
//! asked once more, the disagreement named and the results repeated
//! ([`reask_text`]).

use agentry_core::tool::ToolResult;

/// What a run does with a final answer that disagrees with the tool
/// results it rests on ([`AgentBuilder::check_answers`](super::AgentBuilder::check_answers)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AnswerCheck {
    /// Answers are not checked (the default).
    #[default]
    Off,
    /// The results are quoted: in place of an answer that contradicts them,
    /// after one that leaves them out.
    Quote,
    /// The model is asked once more, the disagreement named and the results
    /// repeated; a second answer that still disagrees is quoted as with
    /// [`Quote`](Self::Quote).
    AskAgain,
}

/// What an answer gets wrong about the tool results it rests on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Disagreement {
    /// The answer states a number that no result holds, and none that one does.
    Contradicts {
        /// The first such number, as written.
        stated: String,
    },
    /// The results hold numbers; the answer states none of them.
    Missing,
    /// The answer names a weekday that no result names, where one does.
    Weekday {
        /// The weekday the answer names.
        stated: &'static str,
    },
}

impl Disagreement {
    /// Whether the answer says something false (rather than leaving the results out).
    pub(crate) fn is_contradiction(&self) -> bool {
        !matches!(self, Self::Missing)
    }
}

/// The longest piece of one result that is repeated or quoted (in characters).
const QUOTED_CHARS: usize = 300;

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// How `answer` disagrees with `results` (each a tool's successful output
/// as text), given what the user asked (`asked`: numbers taken from the
/// request are not the tools' to confirm); `None` where it agrees, or where
/// the results hold nothing to check against.
pub(crate) fn disagreement(answer: &str, results: &[String], asked: &str) -> Option<Disagreement> {
    let all_results = results.join("\n");
    let returned_days = weekdays(&all_results);
    let stated_days = weekdays(answer);
    if let Some(stated) = stated_days
        .iter()
        .find(|day| !returned_days.is_empty() && !returned_days.contains(day))
    {
        return Some(Disagreement::Weekday { stated });
    }
    // A result's number that the request holds as such (an amount echoed
    // back) confirms nothing.
    let from_request = numbers(asked);
    let returned: Vec<Number> = results
        .iter()
        .flat_map(|r| numbers(r))
        .filter(|r| !from_request.iter().any(|q| q.value == r.value))
        .collect();
    if returned.is_empty() {
        return None;
    }
    let stated = numbers(answer);
    if stated
        .iter()
        .any(|a| returned.iter().any(|r| a.agrees_with(r.value)))
    {
        return None;
    }
    if let Some(number) = stated
        .iter()
        .find(|a| !from_request.iter().any(|q| a.agrees_with(q.value)))
    {
        return Some(Disagreement::Contradicts {
            stated: number.written.clone(),
        });
    }
    // No number of its own: a weekday, a name or a code the tools returned
    // (and the request did not hold) is what it states.
    let states_a_result = stated_days.iter().any(|day| returned_days.contains(day))
        || distinctive_words(&all_results)
            .difference(&distinctive_words(asked))
            .any(|word| words(answer).contains(word.as_str()));
    (!states_a_result).then_some(Disagreement::Missing)
}

/// Of several results the answer agrees with as a whole, the ones it
/// states nothing of (by index): "801" for `calculator` and nothing of
/// `convert_units`' 152.4 leaves the conversion out. A result that holds
/// nothing to check against counts as stated.
pub(crate) fn left_out(answer: &str, results: &[String], asked: &str) -> Vec<usize> {
    if results.len() < 2 {
        return Vec::new();
    }
    results
        .iter()
        .enumerate()
        .filter(|(_, result)| disagreement(answer, std::slice::from_ref(result), asked).is_some())
        .map(|(index, _)| index)
        .collect()
}

/// The words of `text`, split at anything but letters, digits, `@`, `.`
/// inside a word, `-` and `_`.
fn words(text: &str) -> std::collections::HashSet<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '@' | '.' | '-' | '_')))
        .map(|word| word.trim_matches(|c: char| matches!(c, '.' | '-' | '_')))
        .filter(|word| !word.is_empty())
        .collect()
}

/// The words of `text` that name something: capitalised or holding a digit
/// or `@`, at least three characters long (`Ana`, `AF007`, `CHF`, an email).
fn distinctive_words(text: &str) -> std::collections::BTreeSet<String> {
    words(text)
        .into_iter()
        .filter(|word| word.chars().count() >= 3)
        .filter(|word| {
            word.chars().next().is_some_and(char::is_uppercase)
                || word.chars().any(|c| c.is_ascii_digit() || c == '@')
        })
        .map(str::to_owned)
        .collect()
}

/// The text a model is re-asked with: what is wrong, the results again,
/// and what to do.
pub(crate) fn reask_text(disagreement: &Disagreement, results: &[(String, String)]) -> String {
    let problem = match disagreement {
        Disagreement::Contradicts { stated } => {
            format!("Your answer says {stated}, which is not what the tools returned.")
        }
        Disagreement::Missing => "Your answer does not state what the tools returned.".to_owned(),
        Disagreement::Weekday { stated } => format!(
            "Your answer says {}, which is not the day the tools returned.",
            capitalised(stated)
        ),
    };
    format!(
        "{problem} The tool results were:\n{}\nAnswer my request again in one or two sentences, \
         using exactly these values.",
        quoted(results)
    )
}

/// The results as lines `name: output`, each cut to a few hundred characters.
pub(crate) fn quoted(results: &[(String, String)]) -> String {
    results
        .iter()
        .map(|(name, output)| {
            let output = output.trim();
            let cut: String = output.chars().take(QUOTED_CHARS).collect();
            let more = if cut.len() < output.len() { " …" } else { "" };
            format!("{name}: {cut}{more}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The final answer after a second disagreement: a contradiction gives way
/// to the results themselves; an answer that only left them out keeps its
/// text, the results after it.
pub(crate) fn repaired(
    answer: &str,
    disagreement: &Disagreement,
    results: &[(String, String)],
) -> String {
    if disagreement.is_contradiction() || answer.trim().is_empty() {
        format!("The tools returned:\n{}", quoted(results))
    } else {
        format!(
            "{}\n\nThe tools returned:\n{}",
            answer.trim_end(),
            quoted(results)
        )
    }
}

/// A successful result's output as text: a string as it is, anything else as JSON.
pub(crate) fn result_text(result: &ToolResult) -> String {
    match &result.output {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The weekdays `text` names, each once, in the week's order.
fn weekdays(text: &str) -> Vec<&'static str> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    WEEKDAYS
        .into_iter()
        .filter(|day| words.contains(day))
        .collect()
}

/// A number as written in a text.
#[derive(Debug, Clone, PartialEq)]
struct Number {
    value: f64,
    /// Digits after the point, as written.
    decimals: i32,
    written: String,
}

impl Number {
    /// Whether this number, as written, can be `exact` rounded (to the
    /// decimals written, or within 0.5%).
    fn agrees_with(&self, exact: f64) -> bool {
        let step = 10f64.powi(-self.decimals);
        let diff = (self.value - exact.abs()).abs();
        diff <= step / 2.0 + 1e-9 || diff <= exact.abs() * 0.005
    }
}

/// Every number written in `text` (without its sign: the sign of `-40` and
/// the dash of `2026-12-05` read alike), thousands separators read.
fn numbers(text: &str) -> Vec<Number> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut digits = String::new();
        let mut written = String::new();
        let mut j = i;
        while j < chars.len() {
            let c = chars[j];
            let digits_after = chars[j + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if c.is_ascii_digit() {
                digits.push(c);
            } else if c == ',' && digits_after == 3 && !digits.contains('.') {
                // A thousands separator: exactly three digits follow.
            } else if c == '.' && digits_after > 0 && !digits.contains('.') {
                digits.push('.');
            } else {
                break;
            }
            written.push(c);
            j += 1;
        }
        if let Ok(value) = digits.parse::<f64>() {
            let decimals = digits
                .split_once('.')
                .map_or(0, |(_, after)| after.len() as i32);
            found.push(Number {
                value,
                decimals,
                written,
            });
        }
        i = j.max(i + 1);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn a_rounded_value_agrees_and_a_misplaced_point_does_not() {
        let tool = results(&["1.8288 m"]);
        let asked = "How tall is 6 feet in meters?";
        assert_eq!(disagreement("About 1.83 meters.", &tool, asked), None);
        assert_eq!(disagreement("6 feet is 1.8288 m.", &tool, asked), None);
        assert_eq!(
            disagreement("6 feet is 18.288 meters.", &tool, asked),
            Some(Disagreement::Contradicts {
                stated: "18.288".into()
            })
        );
    }

    #[test]
    fn an_answer_that_states_nothing_the_tools_returned_is_missing_them() {
        let tool = results(&["{\"amount\":28.71,\"currency\":\"CHF\"}"]);
        let asked = "What's 30 euros in Swiss francs?";
        let answer = "The `convert_currency` function returns the amount in Swiss francs.";
        assert_eq!(
            disagreement(answer, &tool, asked),
            Some(Disagreement::Missing)
        );
        // Only the request's own number is no answer either.
        assert_eq!(
            disagreement("30 euros is a fair amount.", &tool, asked),
            Some(Disagreement::Missing)
        );
        assert_eq!(disagreement("That is 28.71 CHF.", &tool, asked), None);
        // The amount echoed back is no answer.
        let echoed = results(&["{\"amount\":30,\"converted\":28.71}"]);
        assert_eq!(
            disagreement("30 euros is a fair amount.", &echoed, asked),
            Some(Disagreement::Missing)
        );
    }

    #[test]
    fn thousands_separators_and_whole_numbers_are_read_as_written() {
        let tool = results(&["5728.549999999999"]);
        let asked = "add up 1,245.50 and 3,870.25 and 612.80";
        assert_eq!(disagreement("The total is 5,728.55.", &tool, asked), None);
        assert_eq!(disagreement("About 5729 in all.", &tool, asked), None);
        assert!(disagreement("The total is 5,782.55.", &tool, asked).is_some());
    }

    #[test]
    fn a_weekday_the_tools_did_not_return_is_a_contradiction() {
        let tool = results(&["Friday, 2026-11-27 22:04 (Europe/London)"]);
        let asked = "What day of the week is it in London?";
        assert_eq!(disagreement("It is Friday, the 27th.", &tool, asked), None);
        assert_eq!(
            disagreement("Today is Thursday, 27 November.", &tool, asked),
            Some(Disagreement::Weekday { stated: "thursday" })
        );
    }

    #[test]
    fn a_weekday_name_or_code_the_tools_returned_is_stated_without_a_number() {
        let clock = results(&["Saturday 2026-11-28 07:06:47 JST (+09:00)"]);
        let asked = "What day is it in Sydney?";
        assert_eq!(disagreement("It is Saturday there.", &clock, asked), None);
        let contacts = results(&["[{\"name\":\"Ana Souza\",\"phone\":\"+351 912 345 678\"}]"]);
        let asked = "find ana's number";
        assert_eq!(disagreement("I found Ana Souza.", &contacts, asked), None);
        // A name the request already held is not one the tools returned.
        let asked = "Is Ana in my contacts?";
        assert_eq!(
            disagreement("Ana is a contact.", &contacts, asked),
            Some(Disagreement::Missing)
        );
        let flights = results(&["{\"flights\":[{\"flight\":\"TP207\",\"price\":489}]}"]);
        assert_eq!(
            disagreement("Take TP207.", &flights, "flights to JFK"),
            None
        );
    }

    #[test]
    fn of_several_results_the_ones_the_answer_states_nothing_of_are_left_out() {
        let both = results(&["801.0", "152.4 cm"]);
        let asked = "Add 234 and 567, and tell me what 5 feet is in cm.";
        assert_eq!(disagreement("The answer is 801.0 cm.", &both, asked), None);
        assert_eq!(left_out("The answer is 801.0 cm.", &both, asked), vec![1]);
        assert_eq!(
            left_out("801 and 152.4 cm.", &both, asked),
            Vec::<usize>::new()
        );
        // One result: the whole check has said all there is to say.
        assert!(left_out("Nothing.", &results(&["801.0"]), asked).is_empty());
        // A result with nothing to check against is never left out.
        let plain = results(&["801.0", "Email sent."]);
        assert!(left_out("It is 801.", &plain, asked).is_empty());
    }

    #[test]
    fn results_without_numbers_or_days_have_nothing_to_check() {
        let tool = results(&["Roses are red, violets are blue."]);
        assert_eq!(
            disagreement("It is a poem.", &tool, "what is poem.txt"),
            None
        );
    }

    #[test]
    fn the_repair_quotes_the_results_and_keeps_an_answer_that_only_left_them_out() {
        let quotes = vec![("convert_units".to_owned(), "1.8288 m".to_owned())];
        let wrong = Disagreement::Contradicts {
            stated: "18.288".into(),
        };
        assert_eq!(
            repaired("It is 18.288 meters.", &wrong, &quotes),
            "The tools returned:\nconvert_units: 1.8288 m"
        );
        assert_eq!(
            repaired("Done.", &Disagreement::Missing, &quotes),
            "Done.\n\nThe tools returned:\nconvert_units: 1.8288 m"
        );
        let asked = reask_text(&wrong, &quotes);
        assert!(
            asked.starts_with("Your answer says 18.288, which is not"),
            "{asked}"
        );
        assert!(asked.contains("convert_units: 1.8288 m"), "{asked}");
    }

    #[test]
    fn long_results_are_cut_when_quoted() {
        let long = "x".repeat(1000);
        let text = quoted(&[("read_file".to_owned(), long)]);
        assert_eq!(text.chars().count(), "read_file: ".len() + QUOTED_CHARS + 2);
        assert!(text.ends_with(" …"));
    }
}
