//! A suite: cases and how they are run, read from a TOML cases file and
//! checked before anything runs.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::case::{AnswerCheck, Case};

/// A suite of cases and how to run them.
///
/// ```
/// use agentry_evals::Suite;
///
/// let suite = Suite::from_toml(r#"
///     name = "arithmetic"
///     threshold = 0.75
///
///     [[case]]
///     name = "product"
///     input = "What is 17 * 23?"
///     calls = [{ tool = "calculator", args_match = { expression = "17\\s*\\*\\s*23" } }]
///     answer = [{ number = 391 }]
/// "#)?;
/// assert_eq!(suite.cases[0].calls[0].tool, "calculator");
/// assert_eq!(suite.repeats, 1);
///
/// // Mistakes are found before anything runs, and named.
/// let error = Suite::from_toml("[[case]]\nname = \"x\"\ninput = \"hi\"\nanswer = [{ regex = \"(\" }]")
///     .unwrap_err();
/// assert!(error.to_string().starts_with("case `x`, answer check 1: regex"), "{error}");
/// # Ok::<_, agentry_evals::SuiteError>(())
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// The suite's name in reports (the file's stem when read from a file
    /// without one).
    #[serde(default)]
    pub name: String,
    /// The share of trials that must pass, from 0 to 1 (default 1: all).
    #[serde(default = "one")]
    pub threshold: f64,
    /// How many times each case runs (default 1); more shows variance.
    #[serde(default = "one_usize")]
    pub repeats: usize,
    /// How many trials run at once (default 1).
    #[serde(default = "one_usize")]
    pub concurrency: usize,
    /// The cases, in order.
    #[serde(default, rename = "case")]
    pub cases: Vec<Case>,
}

fn one() -> f64 {
    1.0
}

fn one_usize() -> usize {
    1
}

impl Default for Suite {
    fn default() -> Self {
        Self {
            name: String::new(),
            threshold: 1.0,
            repeats: 1,
            concurrency: 1,
            cases: Vec::new(),
        }
    }
}

/// Why a suite cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a cases file.
    #[error("{0}")]
    Parse(#[from] toml::de::Error),
    /// A case, or the suite, is wrong.
    #[error("{0}")]
    Invalid(String),
}

impl Suite {
    /// A suite of `cases` with the defaults (every trial must pass, one
    /// repeat, one at a time).
    pub fn new(name: impl Into<String>, cases: Vec<Case>) -> Self {
        Self {
            name: name.into(),
            cases,
            ..Self::default()
        }
    }

    /// Read a cases file; a suite without a `name` takes the file's stem.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SuiteError> {
        let path = path.as_ref();
        let text = read_bounded(path)?;
        let mut suite = Self::from_toml(&text)?;
        if suite.name.is_empty() {
            suite.name = path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        Ok(suite)
    }

    /// Read a cases file's text, and [`validate`](Self::validate) it.
    /// Values JSON has no way to write (NaN, infinities, dates and times)
    /// are refused wherever they are.
    pub fn from_toml(text: &str) -> Result<Self, SuiteError> {
        let table: toml::Table = toml::from_str(text)?;
        json_only(&toml::Value::Table(table.clone()), "")?;
        let suite: Suite = table.try_into()?;
        suite.validate()?;
        Ok(suite)
    }

    /// Find what would make a run meaningless before it starts: no cases,
    /// a name used twice or empty, a threshold outside 0–1, no repeats or
    /// concurrency, a regular expression or JSON Schema that does not
    /// compile, `no_call` beside expected calls, a role other than the
    /// user's and the agent's.
    pub fn validate(&self) -> Result<(), SuiteError> {
        let invalid = |text: String| Err(SuiteError::Invalid(text));
        if self.cases.is_empty() {
            return invalid("the suite has no cases".into());
        }
        if !(0.0..=1.0).contains(&self.threshold) {
            return invalid(format!(
                "threshold {} is not between 0 and 1",
                self.threshold
            ));
        }
        if !(1..=MAX_REPEATS).contains(&self.repeats) {
            return invalid(format!(
                "repeats is {}: from 1 to {MAX_REPEATS}",
                self.repeats
            ));
        }
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return invalid(format!(
                "concurrency is {}: from 1 to {MAX_CONCURRENCY}",
                self.concurrency
            ));
        }
        let mut names = HashSet::new();
        for case in &self.cases {
            if case.name.trim().is_empty() {
                return invalid(format!("a case has no name (input: {:?})", case.input));
            }
            if case
                .name
                .chars()
                .any(|c| c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}')
            {
                return invalid(format!(
                    "case {:?}: a name has no control characters",
                    case.name
                ));
            }
            if !names.insert(case.name.as_str()) {
                return invalid(format!("two cases are named `{}`", case.name));
            }
            validate_case(case)
                .map_err(|why| SuiteError::Invalid(format!("case `{}`, {why}", case.name)))?;
        }
        Ok(())
    }
}

/// The most a cases file (or a saved report) may hold: 64 MiB.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// The most runs of each case.
pub const MAX_REPEATS: usize = 1000;
/// The most trials at once.
pub const MAX_CONCURRENCY: usize = 64;

/// A text file of at most [`MAX_FILE_BYTES`].
pub fn read_bounded(path: &Path) -> Result<String, SuiteError> {
    use std::io::Read;
    let error = |source| SuiteError::Read {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::open(path).map_err(error)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(error)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(SuiteError::Invalid(format!(
            "{} is over {} MiB",
            path.display(),
            MAX_FILE_BYTES >> 20
        )));
    }
    Ok(text)
}

/// Refuse what JSON cannot hold: NaN, infinities, dates and times.
fn json_only(value: &toml::Value, at: &str) -> Result<(), SuiteError> {
    let here = |key: &str| {
        if at.is_empty() {
            key.to_owned()
        } else {
            format!("{at}.{key}")
        }
    };
    match value {
        toml::Value::Float(number) if !number.is_finite() => Err(SuiteError::Invalid(format!(
            "{at}: {number} is not a number JSON can hold"
        ))),
        toml::Value::Datetime(datetime) => Err(SuiteError::Invalid(format!(
            "{at}: {datetime} is a TOML date; write it as a string"
        ))),
        toml::Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(n, item)| json_only(item, &format!("{at}[{n}]"))),
        toml::Value::Table(table) => table
            .iter()
            .try_for_each(|(key, item)| json_only(item, &here(key))),
        _ => Ok(()),
    }
}

/// What [`Outcome::kind`](agentry_agent::Outcome::kind) may say.
const OUTCOMES: [&str; 7] = [
    "final",
    "out_of_steps",
    "over_budget",
    "model_error",
    "awaiting_decision",
    "journal_failed",
    "guardrail_tripped",
];

fn validate_case(case: &Case) -> Result<(), String> {
    if let Some(outcome) = &case.outcome
        && !OUTCOMES.contains(&outcome.as_str())
    {
        return Err(format!(
            "outcome `{outcome}` is none of {}",
            OUTCOMES.join(", ")
        ));
    }
    if case.never.iter().any(|name| name.trim().is_empty()) {
        return Err("never names an empty tool".into());
    }
    if case.max_steps == Some(0) {
        return Err("max_steps is at least 1".into());
    }
    if case.no_call && !case.calls.is_empty() {
        return Err("no_call and calls: a run cannot do both".into());
    }
    for (n, call) in case.calls.iter().enumerate() {
        let at = format!("call {} ({})", n + 1, call.tool);
        if let Some(schema) = &call.args_schema {
            jsonschema::validator_for(schema)
                .map_err(|error| format!("{at}: args_schema: {error}"))?;
        }
        for (arg, pattern) in &call.args_match {
            regex::Regex::new(pattern)
                .map_err(|error| format!("{at}: args_match.{arg}: {error}"))?;
        }
    }
    for (n, check) in case.answer.iter().enumerate() {
        let at = format!("answer check {}", n + 1);
        match check {
            AnswerCheck::Regex(pattern) if pattern.is_empty() => {
                return Err(format!("{at}: an empty regex always passes"));
            }
            AnswerCheck::Regex(pattern) => {
                regex::Regex::new(pattern).map_err(|error| format!("{at}: regex: {error}"))?;
            }
            AnswerCheck::Schema(schema) => {
                jsonschema::validator_for(schema)
                    .map_err(|error| format!("{at}: schema: {error}"))?;
            }
            AnswerCheck::Number { value, .. } if !value.is_finite() => {
                return Err(format!("{at}: number {value} is not finite"));
            }
            AnswerCheck::Judge(rubric) if rubric.trim().is_empty() => {
                return Err(format!("{at}: judge has an empty rubric"));
            }
            AnswerCheck::Contains { text, .. } if text.is_empty() => {
                return Err(format!("{at}: an empty contains always passes"));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        Suite::from_toml(text).unwrap_err().to_string()
    }

    #[test]
    fn each_mistake_is_named() {
        let case = "[[case]]\nname = \"a\"\ninput = \"hi\"\n";
        assert_eq!(error(""), "the suite has no cases");
        assert_eq!(
            error(&format!("threshold = 2.0\n{case}")),
            "threshold 2 is not between 0 and 1"
        );
        assert_eq!(
            error(&format!("repeats = 0\n{case}")),
            "repeats is 0: from 1 to 1000"
        );
        assert_eq!(
            error(&format!("concurrency = 1000000000000000000\n{case}")),
            "concurrency is 1000000000000000000: from 1 to 64"
        );
        assert_eq!(
            error("[[case]]\nname = \"a\\u001b[31m\"\ninput = \"hi\""),
            "case \"a\\u{1b}[31m\": a name has no control characters"
        );
        assert_eq!(
            error(&format!("{case}outcome = \"fianl\"")),
            "case `a`, outcome `fianl` is none of final, out_of_steps, over_budget, model_error, awaiting_decision, journal_failed, guardrail_tripped"
        );
        assert_eq!(
            error(&format!("{case}max_steps = 0")),
            "case `a`, max_steps is at least 1"
        );
        assert_eq!(
            error(&format!("{case}answer = [{{ contains = \"\" }}]")),
            "case `a`, answer check 1: an empty contains always passes"
        );
        assert_eq!(
            error(&format!(
                "{case}calls = [{{ tool = \"t\", args = {{ x = nan }} }}]"
            )),
            "case[0].calls[0].args.x: NaN is not a number JSON can hold"
        );
        assert_eq!(
            error(&format!(
                "{case}answer = [{{ schema = {{ maximum = inf }} }}]"
            )),
            "case[0].answer[0].schema.maximum: inf is not a number JSON can hold"
        );
        assert_eq!(
            error(&format!(
                "{case}metadata = {{ when = 1979-05-27T07:32:00Z }}"
            )),
            "case[0].metadata.when: 1979-05-27T07:32:00Z is a TOML date; write it as a string"
        );
        assert_eq!(error(&format!("{case}{case}")), "two cases are named `a`");
        assert_eq!(
            error(&format!(
                "{case}no_call = true\ncalls = [{{ tool = \"t\" }}]"
            )),
            "case `a`, no_call and calls: a run cannot do both"
        );
        assert!(
            error(&format!(
                "{case}calls = [{{ tool = \"t\", args_schema = {{ type = 3 }} }}]"
            ))
            .starts_with("case `a`, call 1 (t): args_schema:")
        );
        assert!(
            error(&format!(
                "{case}calls = [{{ tool = \"t\", args_match = {{ x = \"[\" }} }}]"
            ))
            .starts_with("case `a`, call 1 (t): args_match.x:")
        );
        assert_eq!(
            error(&format!("{case}answer = [{{ judge = \" \" }}]")),
            "case `a`, answer check 1: judge has an empty rubric"
        );
    }

    #[test]
    fn answer_checks_set_exactly_one_kind() {
        let case = "[[case]]\nname = \"a\"\ninput = \"hi\"\n";
        for (check, why) in [
            ("{}", "sets exactly one of"),
            ("{ contains = \"x\", regex = \"y\" }", "sets exactly one of"),
            (
                "{ regex = \"y\", ignore_case = true }",
                "ignore_case goes with contains",
            ),
            (
                "{ contains = \"y\", tolerance = 1 }",
                "tolerance goes with number",
            ),
            ("{ number = 1, tolerance = -1 }", "is not a number ≥ 0"),
            ("{ similar = \"x\" }", "unknown field `similar`"),
        ] {
            let text = error(&format!("{case}answer = [{check}]"));
            assert!(text.contains(why), "{check}: {text}");
        }
    }

    #[test]
    fn unknown_keys_are_refused() {
        let text = error("[[case]]\nname = \"a\"\ninput = \"hi\"\nexpect_calls = []");
        assert!(text.contains("unknown field `expect_calls`"), "{text}");
        let text = error(
            "[[case]]\nname = \"a\"\ninput = \"hi\"\nconversation = [{ role = \"system\", content = \"x\" }]",
        );
        assert!(text.contains("unknown variant `system`"), "{text}");
    }

    #[test]
    fn a_suite_round_trips_through_toml() {
        let suite = Suite::from_toml(
            "name = \"s\"\n[[case]]\nname = \"a\"\ninput = \"hi\"\nanswer = [{ number = 4, tolerance = 0.5 }, { contains = \"x\", ignore_case = true }]\ncalls = [{ tool = \"t\", args = { x = 1 } }]",
        )
        .unwrap();
        let text = toml::to_string(&suite).unwrap();
        let again = Suite::from_toml(&text).unwrap();
        assert_eq!(again.cases[0].answer, suite.cases[0].answer);
        assert_eq!(again.cases[0].calls, suite.cases[0].calls);
    }
}
