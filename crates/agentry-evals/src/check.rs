//! Scoring one run against its case: the calls, the answer, the limits.
//! Every failed expectation becomes a [`Failure`] naming the check and
//! what the run did instead. Judge rubrics are scored apart ([`crate::judge`]).

use agentry_agent::{CallRecord, RunOutcome};
use agentry_core::tool::ToolCall;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::case::{AnswerCheck, Case, ExpectedCall};

/// One expectation a trial failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Which check: `agent`, `calls`, `order`, `no_call`, `never`, `outcome`,
    /// `answer[N] KIND`, `max_steps`, `max_tokens`, `run`, or a code
    /// check's name.
    pub check: String,
    /// What the run did instead.
    pub why: String,
}

impl Failure {
    pub(crate) fn new(check: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            check: check.into(),
            why: why.into(),
        }
    }
}

/// Every failed expectation of `case` in `run`, judge rubrics aside.
pub(crate) fn failures(case: &Case, run: &RunOutcome) -> Vec<Failure> {
    let calls: Vec<&ToolCall> = run
        .calls()
        .map(|record: &CallRecord| &record.call)
        .collect();
    let mut failures = Vec::new();
    if let Some(kind) = &case.outcome
        && run.outcome.kind() != kind
    {
        failures.push(Failure::new(
            "outcome",
            format!(
                "ended `{}`, not `{kind}`: {}",
                run.outcome.kind(),
                clip(&run.text())
            ),
        ));
    }
    if let Some(agent) = &case.agent
        && run.agent.as_ref() != Some(agent)
    {
        failures.push(Failure::new(
            "agent",
            format!(
                "answered by {}, not {agent}",
                run.agent.as_deref().unwrap_or("an unnamed agent")
            ),
        ));
    }
    if case.no_call && !calls.is_empty() {
        failures.push(Failure::new("no_call", format!("called {}", list(&calls))));
    }
    for name in &case.never {
        if calls.iter().any(|call| &call.name == name) {
            failures.push(Failure::new("never", format!("called `{name}`")));
        }
    }
    if !case.calls.is_empty() {
        let matched = if case.order {
            in_order(&case.calls, &calls)
        } else {
            assigned(&case.calls, &calls)
        };
        if let Err(missing) = matched {
            let what = if case.order { "order" } else { "calls" };
            failures.push(Failure::new(
                what,
                format!(
                    "no call matched {}; calls made: {}",
                    describe(&case.calls[missing]),
                    if calls.is_empty() {
                        "none".into()
                    } else {
                        list(&calls)
                    }
                ),
            ));
        }
    }
    let answer = run.text();
    for (n, check) in case.answer.iter().enumerate() {
        if let Err(why) = answer_check(check, &answer) {
            failures.push(Failure::new(
                format!("answer[{}] {}", n + 1, check.kind()),
                why,
            ));
        }
    }
    if let Some(max) = case.max_steps
        && run.steps.len() > max
    {
        failures.push(Failure::new(
            "max_steps",
            format!("took {} steps, over {max}", run.steps.len()),
        ));
    }
    if let Some(max) = case.max_tokens
        && run.usage.total() > max
    {
        failures.push(Failure::new(
            "max_tokens",
            format!("spent {} tokens, over {max}", run.usage.total()),
        ));
    }
    for check in &case.checks {
        if let Err(why) = check.check(run) {
            failures.push(Failure::new(check.name(), why));
        }
    }
    failures
}

/// Whether each of `wants` wanted things is matched by a distinct one of
/// `haves` things, in any order: `fits(want, have)` says whether one can
/// stand for the other (backtracking over the choices). Expected calls,
/// BFCL's answers and the everyday requests' calls are all matched so.
///
/// ```
/// use agentry_evals::distinct_match;
///
/// let (wants, haves) = (["a", "a"], ["a", "b"]);
/// assert!(!distinct_match(2, 2, |w, h| wants[w] == haves[h]), "one `a` for two wants");
/// assert!(distinct_match(1, 2, |w, h| wants[w] == haves[h]));
/// ```
pub fn distinct_match(wants: usize, haves: usize, fits: impl Fn(usize, usize) -> bool) -> bool {
    fn assign(
        want: usize,
        wants: usize,
        used: &mut [bool],
        fits: &dyn Fn(usize, usize) -> bool,
    ) -> bool {
        if want == wants {
            return true;
        }
        for have in 0..used.len() {
            if !used[have] && fits(want, have) {
                used[have] = true;
                if assign(want + 1, wants, used, fits) {
                    return true;
                }
                used[have] = false;
            }
        }
        false
    }
    assign(0, wants, &mut vec![false; haves], &fits)
}

/// Each expected call matched by a distinct call, any order; `Err` names
/// the first expected call left unmatched. Each pair is compared once.
fn assigned(expected: &[ExpectedCall], calls: &[&ToolCall]) -> Result<(), usize> {
    let fits: Vec<Vec<bool>> = expected
        .iter()
        .map(|want| {
            calls
                .iter()
                .map(|call| call_matches(want, call).is_ok())
                .collect()
        })
        .collect();
    if distinct_match(expected.len(), calls.len(), |w, h| fits[w][h]) {
        return Ok(());
    }
    // Name one that cannot be matched even alone, else the last.
    Err((0..expected.len())
        .find(|&n| !fits[n].contains(&true))
        .unwrap_or(expected.len() - 1))
}

/// The expected calls as a subsequence of the calls, in order.
fn in_order(expected: &[ExpectedCall], calls: &[&ToolCall]) -> Result<(), usize> {
    let mut next = 0;
    for (n, want) in expected.iter().enumerate() {
        match calls[next..]
            .iter()
            .position(|call| call_matches(want, call).is_ok())
        {
            Some(at) => next += at + 1,
            None => return Err(n),
        }
    }
    Ok(())
}

/// Whether `call` is the expected one; `Err` says why not.
pub(crate) fn call_matches(want: &ExpectedCall, call: &ToolCall) -> Result<(), String> {
    if call.name != want.tool {
        return Err(format!("called `{}`", call.name));
    }
    if let Some(args) = &want.args {
        for (name, value) in args {
            match call.input.get(name) {
                Some(got) if same_value(got, value) => {}
                Some(got) => return Err(format!("{name} = {got}, not {value}")),
                None => return Err(format!("{name} missing")),
            }
        }
    }
    if let Some(schema) = &want.args_schema {
        let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        if let Some(error) = validator.iter_errors(&call.input).next() {
            return Err(format!("arguments: {error}"));
        }
    }
    for (name, pattern) in &want.args_match {
        let pattern = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
        let text = match call.input.get(name) {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => return Err(format!("{name} missing")),
        };
        if !pattern.is_match(&text) {
            return Err(format!("{name} = {text:?} does not match /{pattern}/"));
        }
    }
    Ok(())
}

/// JSON equality with numbers compared by value (`4` = `4.0`).
fn same_value(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
        }
        (a, b) => a == b,
    }
}

/// One answer check, judges aside (they pass here).
pub(crate) fn answer_check(check: &AnswerCheck, answer: &str) -> Result<(), String> {
    match check {
        AnswerCheck::Contains { text, ignore_case } => {
            let found = if *ignore_case {
                answer.to_lowercase().contains(&text.to_lowercase())
            } else {
                answer.contains(text.as_str())
            };
            if found {
                Ok(())
            } else {
                Err(format!("{:?} not in {:?}", text, clip(answer)))
            }
        }
        AnswerCheck::Regex(pattern) => {
            let regex = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
            if regex.is_match(answer) {
                Ok(())
            } else {
                Err(format!("/{pattern}/ does not match {:?}", clip(answer)))
            }
        }
        AnswerCheck::Schema(schema) => {
            let value: Value = serde_json::from_str(unfenced(answer))
                .map_err(|error| format!("not JSON ({error}): {:?}", clip(answer)))?;
            let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
            match validator.iter_errors(&value).next() {
                Some(error) => Err(format!("{error}")),
                None => Ok(()),
            }
        }
        AnswerCheck::Number { value, tolerance } => {
            let numbers = numbers(answer);
            let close = |n: &f64| (n - value).abs() <= tolerance + 1e-9 * value.abs().max(1.0);
            if numbers.iter().any(close) {
                Ok(())
            } else {
                Err(format!(
                    "no number within {tolerance} of {value} in {:?}",
                    clip(answer)
                ))
            }
        }
        AnswerCheck::Judge(_) => Ok(()),
    }
}

/// The numbers written in a text (`-1,234.5` reads as -1234.5; `1e3` as 1000).
pub(crate) fn numbers(text: &str) -> Vec<f64> {
    static NUMBER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
            .expect("a valid pattern")
    });
    NUMBER
        .find_iter(text)
        .filter_map(|found| found.as_str().replace(',', "").parse().ok())
        .collect()
}

/// A fenced block's content (```json … ```), or the text trimmed.
fn unfenced(text: &str) -> &str {
    let text = text.trim();
    text.strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|inner| {
            inner
                .trim_start_matches(|c: char| c.is_ascii_alphanumeric())
                .trim()
        })
        .unwrap_or(text)
}

fn describe(call: &ExpectedCall) -> String {
    let mut parts = Vec::new();
    if let Some(args) = &call.args {
        parts.push(Value::Object(args.clone()).to_string());
    }
    if call.args_schema.is_some() {
        parts.push("args_schema".into());
    }
    for (name, pattern) in &call.args_match {
        parts.push(format!("{name} ~ /{pattern}/"));
    }
    format!("`{}`({})", call.tool, parts.join(", "))
}

fn list(calls: &[&ToolCall]) -> String {
    calls
        .iter()
        .map(|call| format!("{}({})", call.name, clip(&call.input.to_string())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// At most 200 characters of a text, for a failure's message.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, input: Value) -> ToolCall {
        ToolCall::new("c", name, input)
    }

    #[test]
    fn arguments_by_value_schema_and_pattern() {
        let got = call(
            "convert",
            json!({"value": 5.0, "from": "Miles", "to": "km"}),
        );
        let want = ExpectedCall::new("convert").arg("value", 5).arg("to", "km");
        assert_eq!(call_matches(&want, &got), Ok(()));
        let want = ExpectedCall::new("convert").arg("from", "miles");
        assert_eq!(
            call_matches(&want, &got),
            Err(r#"from = "Miles", not "miles""#.into())
        );
        let want = ExpectedCall::new("convert").arg_matches("from", "(?i)^miles?$");
        assert_eq!(call_matches(&want, &got), Ok(()));
        let want = ExpectedCall::new("convert").arg_matches("value", "^5(\\.0)?$");
        assert_eq!(
            call_matches(&want, &got),
            Ok(()),
            "a number is read as its JSON text"
        );
        let want = ExpectedCall::new("convert").args_schema(json!({"required": ["value", "unit"]}));
        assert!(call_matches(&want, &got).unwrap_err().contains("unit"));
        assert_eq!(
            call_matches(&ExpectedCall::new("time"), &got),
            Err("called `convert`".into())
        );
    }

    #[test]
    fn calls_match_distinct_calls_in_or_out_of_order() {
        let calls = [
            call("a", json!({"x": 1})),
            call("b", json!({})),
            call("a", json!({"x": 2})),
        ];
        let calls: Vec<&ToolCall> = calls.iter().collect();
        let a = |x: i64| ExpectedCall::new("a").arg("x", x);
        let b = ExpectedCall::new("b");
        assert_eq!(assigned(&[a(2), a(1)], &calls), Ok(()));
        assert_eq!(
            assigned(&[a(1), a(1)], &calls),
            Err(1),
            "one call matches one expectation"
        );
        assert_eq!(in_order(&[a(1), b.clone(), a(2)], &calls), Ok(()));
        assert_eq!(in_order(&[a(2), b], &calls), Err(1));
        assert_eq!(assigned(&[a(3)], &calls), Err(0));
    }

    #[test]
    fn answer_checks() {
        let ok = |check: AnswerCheck, answer: &str| answer_check(&check, answer);
        assert_eq!(ok(AnswerCheck::contains("Paris"), "It is Paris."), Ok(()));
        assert!(ok(AnswerCheck::contains("paris"), "It is Paris.").is_err());
        let any_case = AnswerCheck::Contains {
            text: "paris".into(),
            ignore_case: true,
        };
        assert_eq!(ok(any_case, "It is Paris."), Ok(()));
        assert_eq!(ok(AnswerCheck::Regex(r"^\d+$".into()), "391"), Ok(()));
        let number = |value, tolerance| AnswerCheck::Number { value, tolerance };
        assert_eq!(ok(number(391.0, 0.0), "17 × 23 = 391."), Ok(()));
        assert_eq!(ok(number(1234.5, 0.0), "about -3 or 1,234.5"), Ok(()));
        assert_eq!(ok(number(8.05, 0.01), "5 miles is 8.0467 km"), Ok(()));
        assert!(ok(number(8.05, 0.001), "5 miles is 8.0467 km").is_err());
        let schema = AnswerCheck::Schema(json!({"type": "object", "required": ["city"]}));
        assert_eq!(
            ok(schema.clone(), "```json\n{\"city\": \"Oslo\"}\n```"),
            Ok(())
        );
        assert!(
            ok(schema.clone(), "{\"town\": 1}")
                .unwrap_err()
                .contains("city")
        );
        assert!(ok(schema, "Oslo").unwrap_err().starts_with("not JSON"));
    }

    #[test]
    fn numbers_are_read_with_separators_and_signs() {
        assert_eq!(
            numbers("-2, 1,000 and 3.5e2; v2"),
            vec![-2.0, 1000.0, 350.0, 2.0]
        );
    }
}
