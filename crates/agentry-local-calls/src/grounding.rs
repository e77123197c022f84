//! Which of a reply's later calls the conversation grounds.
//!
//! A small model that writes several calls in one reply adds calls nobody
//! asked for: the same call with its numbers swapped (`math.gcd(40, 50)`,
//! then `math.gcd(50, 40)`) or with a number it made up
//! (`math.factorial(5)`, then `math.factorial(10)` for "the factorial of 5").
//! [`grounded_calls`] keeps a reply's first call as it is and leaves out a
//! later call that repeats an earlier one with its numbers in another order,
//! or that brings in a number found nowhere in the conversation
//! (agentry-local's `LocalConfig::ungrounded_calls` turns this off).
//! Strings are not checked: agents' tools take values the conversation
//! names another way (`Australia/Sydney` for "Sydney", `lb` for "pounds").
//! A call left out costs at most a step: the model sees the results of the
//! calls that ran and can make it again.

use std::sync::LazyLock;

use agentry_core::model::{ChatRequest, Message};
use regex::Regex;
use serde_json::Value;

/// How a number in a call may be written differently in the conversation:
/// as itself, as a percentage (`5%` for 0.05), or in thousands, millions,
/// billions or trillions (`1.341 billion` for 1341000000).
const SCALES: [f64; 11] = [
    1.0, 100.0, 0.01, 1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 1e12, 1e-12,
];

/// `calls` (name and arguments, in the reply's order) without the later
/// ones that `conversation` does not ground (see the module docs). The
/// first call is always kept.
pub fn grounded_calls(calls: Vec<(String, Value)>, conversation: &str) -> Vec<(String, Value)> {
    let numbers = numbers_in(conversation);
    let mut kept: Vec<(String, Value)> = Vec::new();
    for call in calls {
        if !kept.is_empty() {
            let reordered = kept
                .iter()
                .any(|(name, arguments)| name == &call.0 && numbers_reordered(arguments, &call.1));
            let made_up = new_values(&kept, &call)
                .flat_map(numbers_of)
                .any(|number| !grounded(number, &numbers));
            if reordered || made_up {
                continue;
            }
        }
        kept.push(call);
    }
    kept
}

/// The text a request's calls may take their values from: the system
/// prompt, every message's text, earlier calls' arguments and tool results.
pub fn conversation_text(request: &ChatRequest) -> String {
    let mut text = request.system.clone().unwrap_or_default();
    for message in &request.messages {
        text.push('\n');
        match message {
            Message::User { text: said } => text.push_str(said),
            Message::Assistant {
                text: said,
                tool_calls,
            } => {
                text.push_str(said);
                for call in tool_calls {
                    text.push('\n');
                    text.push_str(&call.input.to_string());
                }
            }
            Message::Tool { result } => match &result.output {
                Value::String(output) => text.push_str(output),
                output => text.push_str(&output.to_string()),
            },
        }
    }
    text
}

/// The argument values of `call` that no kept call of the same tool gave
/// the same argument.
fn new_values<'a>(
    kept: &'a [(String, Value)],
    call: &'a (String, Value),
) -> impl Iterator<Item = &'a Value> + 'a {
    let arguments = call.1.as_object().into_iter().flatten();
    arguments.filter_map(move |(name, value)| {
        let seen = kept.iter().any(|(tool, earlier)| {
            tool == &call.0 && earlier.get(name).is_some_and(|earlier| earlier == value)
        });
        (!seen).then_some(value)
    })
}

/// Every number inside `value` (not inside strings).
fn numbers_of(value: &Value) -> Vec<f64> {
    match value {
        Value::Number(number) => number.as_f64().into_iter().collect(),
        Value::Array(items) => items.iter().flat_map(numbers_of).collect(),
        Value::Object(fields) => fields.values().flat_map(numbers_of).collect(),
        _ => Vec::new(),
    }
}

/// Whether `later` has `earlier`'s arguments with only numbers changed, and
/// the changed numbers (at least two) are the same numbers in another order.
fn numbers_reordered(earlier: &Value, later: &Value) -> bool {
    let (Some(earlier), Some(later)) = (earlier.as_object(), later.as_object()) else {
        return false;
    };
    if earlier.len() != later.len() || earlier.keys().any(|name| !later.contains_key(name)) {
        return false;
    }
    let mut before = Vec::new();
    let mut after = Vec::new();
    for (name, value) in earlier {
        let other = &later[name];
        if value == other {
            continue;
        }
        match (value.as_f64(), other.as_f64()) {
            (Some(a), Some(b)) => {
                before.push(a);
                after.push(b);
            }
            _ => return false,
        }
    }
    before.sort_by(f64::total_cmp);
    after.sort_by(f64::total_cmp);
    // A call repeated word for word is `repeated_calls`' business, not this.
    !before.is_empty() && before == after
}

/// Whether `number` is 0, 1 or -1, or is written in the conversation (as
/// itself or at one of the [`SCALES`], either sign).
fn grounded(number: f64, conversation: &[f64]) -> bool {
    if [0.0, 1.0, -1.0].contains(&number) {
        return true;
    }
    SCALES.iter().any(|scale| {
        let scaled = number.abs() * scale;
        conversation
            .iter()
            .any(|written| (scaled - written.abs()).abs() <= 1e-9 * written.abs().max(1.0))
    })
}

/// The numbers written in `text`: digits with an optional sign, thousands
/// separators (`400,000`, but `5,10` is two numbers), a decimal part and an
/// exponent (`5e-12`).
fn numbers_in(text: &str) -> Vec<f64> {
    static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"-?(?:[0-9]{1,3}(?:,[0-9]{3})+\b(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)")
            .expect("a valid pattern")
    });
    NUMBER
        .find_iter(text)
        .filter_map(|found| found.as_str().replace(',', "").parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> (String, Value) {
        (name.to_owned(), arguments)
    }

    #[test]
    fn reads_the_numbers_people_write() {
        assert_eq!(
            numbers_in("$400,000 at 4% for 15, 20 and 30 years; 5,10 and 1.5e-3, x=-7."),
            vec![400000.0, 4.0, 15.0, 20.0, 30.0, 5.0, 10.0, 1.5e-3, -7.0]
        );
        assert_eq!(
            numbers_in("May 18th 2022, 2.5 atm"),
            vec![18.0, 2022.0, 2.5]
        );
        // Thousands separators hold three digits; anything else is two numbers.
        assert_eq!(
            numbers_in("1,5000 and 400,000.5"),
            vec![1.0, 5000.0, 400000.5]
        );
    }

    #[test]
    fn a_made_up_number_leaves_the_later_call_out() {
        let calls = vec![
            call("math.factorial", json!({"number": 5})),
            call("math.factorial", json!({"number": 10})),
        ];
        let kept = grounded_calls(calls.clone(), "Calculate the factorial of 5.");
        assert_eq!(kept, calls[..1]);
        // Asked for both, both run.
        assert_eq!(
            grounded_calls(calls.clone(), "The factorials of 5 and 10?"),
            calls
        );
    }

    #[test]
    fn the_first_call_is_kept_whatever_its_numbers() {
        let calls = vec![call("f", json!({"n": 77}))];
        assert_eq!(grounded_calls(calls.clone(), "no numbers here"), calls);
    }

    #[test]
    fn numbers_swapped_between_arguments_repeat_the_call() {
        let calls = vec![
            call("math.gcd", json!({"a": 40, "b": 50})),
            call("math.gcd", json!({"a": 50, "b": 40})),
        ];
        let kept = grounded_calls(calls.clone(), "The GCD of 40 and 50.");
        assert_eq!(kept, calls[..1]);
        // A word-for-word repeat is left to `distinct_calls`.
        let twice = vec![calls[0].clone(), calls[0].clone()];
        assert_eq!(
            grounded_calls(twice.clone(), "The GCD of 40 and 50."),
            twice
        );
        // Strings swapped are another request ("there and back"): both run.
        let trips = vec![
            call("route", json!({"from": "Oslo", "to": "Rome"})),
            call("route", json!({"from": "Rome", "to": "Oslo"})),
        ];
        assert_eq!(
            grounded_calls(trips.clone(), "Oslo to Rome and back"),
            trips
        );
    }

    #[test]
    fn percentages_scales_and_signs_are_grounded() {
        let text =
            "$5000 at 7% and then $8000 at 6%; a loss of $1000; 1.341 billion people; b = -7";
        for value in [
            json!(0.06),
            json!(-1000),
            json!(1341000000.0),
            json!(-7),
            json!(8000),
        ] {
            let calls = vec![
                call("f", json!({"x": 5000})),
                call("f", json!({"x": value})),
            ];
            assert_eq!(grounded_calls(calls.clone(), text).len(), 2, "{value}");
        }
    }

    #[test]
    fn only_new_values_are_checked_and_strings_never() {
        // 30 repeats the first call's value; "Australia/Sydney" is not checked.
        let calls = vec![
            call("time", json!({"zone": "Europe/London", "limit": 30})),
            call("time", json!({"zone": "Australia/Sydney", "limit": 30})),
        ];
        assert_eq!(grounded_calls(calls.clone(), "London and Sydney"), calls);
    }

    #[test]
    fn tool_results_and_earlier_calls_ground_numbers() {
        use agentry_core::tool::{ToolCall, ToolResult};
        let mut request = ChatRequest::new(Some("You help.".into()), "Sum the two readings.");
        request.messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall::new("call_1", "read", json!({"sensor": 3}))],
        });
        request.messages.push(Message::tool(ToolResult::ok(
            "call_1",
            json!({"values": [12.5, 40]}),
        )));
        let text = conversation_text(&request);
        let calls = vec![
            call("add", json!({"a": 12.5, "b": 40})),
            call("add", json!({"a": 3, "b": 40})),
        ];
        assert_eq!(grounded_calls(calls.clone(), &text), calls);
    }
}
