//! What an eval case is: what the agent is asked ([`Case::input`], an
//! earlier [`conversation`](Case::conversation), extra
//! [`context`](Case::context)) and what a good run does (the tool calls it
//! makes, the answer it gives, the steps and tokens it may spend).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use agentry_agent::RunOutcome;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One case: a request to the agent and what a good run of it does.
///
/// Every expectation left out is not checked. In a cases file each case is
/// a `[[case]]` table whose keys are these fields.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case's name, unique in its suite: reports and baselines key on it.
    pub name: String,
    /// The user's message.
    pub input: String,
    /// Earlier turns, before [`input`](Self::input).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversation: Vec<Turn>,
    /// Text added to the agent's system prompt for this case (facts the
    /// agent is given, such as the user's city or today's date).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Tool calls the run must make (each matched by a distinct call;
    /// other calls are allowed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ExpectedCall>,
    /// The [`calls`](Self::calls) must be made in the order listed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub order: bool,
    /// The run must call no tool at all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_call: bool,
    /// Tools the run must not call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub never: Vec<String>,
    /// The agent that must answer (after handoffs: the one with the floor
    /// at the end; see [`RunOutcome::agent`](agentry_agent::RunOutcome::agent)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// How the run must end, as [`Outcome::kind`](agentry_agent::Outcome::kind)
    /// names it (`final`, `out_of_steps`, `guardrail_tripped`…). Left out,
    /// any ending passes (answer checks fail on a run with no answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Checks on the answer; all must pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer: Vec<AnswerCheck>,
    /// The run may take at most this many steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<usize>,
    /// The run may spend at most this many tokens (input and output, child
    /// agents' included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Labels to pick cases by (`agentry eval run --tag`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Free data for the code that builds the case's agent (a dataset
    /// adapter keeps the case's tool declarations here, for one).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
    /// Checks written in code, run after the declared ones.
    #[serde(skip)]
    pub checks: Vec<Arc<dyn Check>>,
}

impl Case {
    /// A case named `name` asking `input`, with no expectations yet.
    pub fn new(name: impl Into<String>, input: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            input: input.into(),
            ..Self::default()
        }
    }

    /// Expect a call (builder style).
    pub fn expect_call(mut self, call: ExpectedCall) -> Self {
        self.calls.push(call);
        self
    }

    /// Add an answer check (builder style).
    pub fn expect_answer(mut self, check: AnswerCheck) -> Self {
        self.answer.push(check);
        self
    }

    /// Add a check written in code (builder style).
    pub fn check(mut self, check: impl Check + 'static) -> Self {
        self.checks.push(Arc::new(check));
        self
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("input", &self.input)
            .field("calls", &self.calls)
            .field("answer", &self.answer)
            .field("checks", &self.checks.len())
            .finish_non_exhaustive()
    }
}

/// An earlier turn of a case's conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Who spoke.
    pub role: Role,
    /// What was said.
    pub content: String,
}

/// Who spoke a [`Turn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user.
    User,
    /// The agent.
    Assistant,
}

/// A tool call a case expects: the tool's name and, optionally, what its
/// arguments must be.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCall {
    /// The tool's name.
    pub tool: String,
    /// These arguments must have these values (numbers compared by value,
    /// so `4` matches `4.0`); arguments not listed may have any value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// The arguments must be valid against this JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_schema: Option<Value>,
    /// Each named argument must match its regular expression (a string
    /// argument as it is, any other as its JSON text); `(?i)` ignores case.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args_match: BTreeMap<String, String>,
}

impl ExpectedCall {
    /// A call to `tool`, any arguments.
    pub fn new(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            ..Self::default()
        }
    }

    /// The argument `name` must equal `value` (builder style).
    pub fn arg(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.args
            .get_or_insert_with(Map::new)
            .insert(name.into(), value.into());
        self
    }

    /// The arguments must be valid against `schema` (builder style).
    pub fn args_schema(mut self, schema: Value) -> Self {
        self.args_schema = Some(schema);
        self
    }

    /// The argument `name` must match `pattern` (builder style).
    pub fn arg_matches(mut self, name: impl Into<String>, pattern: impl Into<String>) -> Self {
        self.args_match.insert(name.into(), pattern.into());
        self
    }
}

/// A check on a run's answer. In a cases file each is an inline table with
/// one of the keys `contains`, `regex`, `schema`, `number` (with an
/// optional `tolerance`) or `judge`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AnswerSpec", into = "AnswerSpec")]
pub enum AnswerCheck {
    /// The answer contains this text.
    Contains {
        /// The text.
        text: String,
        /// Compare without case.
        ignore_case: bool,
    },
    /// The answer matches this regular expression.
    Regex(String),
    /// The answer is JSON (a fenced block is unwrapped) valid against this schema.
    Schema(Value),
    /// Some number in the answer is within `tolerance` of `value`
    /// (thousands separators are read: `1,234.5`).
    Number {
        /// The expected value.
        value: f64,
        /// The largest difference accepted.
        tolerance: f64,
    },
    /// A judge model reads the request and the answer and says whether the
    /// answer meets this rubric.
    Judge(String),
}

impl AnswerCheck {
    /// The answer contains `text`, case and all.
    pub fn contains(text: impl Into<String>) -> Self {
        AnswerCheck::Contains {
            text: text.into(),
            ignore_case: false,
        }
    }

    /// How the check is named in reports: `contains`, `regex`, `schema`,
    /// `number` or `judge`.
    pub fn kind(&self) -> &'static str {
        match self {
            AnswerCheck::Contains { .. } => "contains",
            AnswerCheck::Regex(_) => "regex",
            AnswerCheck::Schema(_) => "schema",
            AnswerCheck::Number { .. } => "number",
            AnswerCheck::Judge(_) => "judge",
        }
    }
}

/// An answer check as a cases file writes it.
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    contains: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    ignore_case: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    number: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tolerance: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    judge: Option<String>,
}

impl TryFrom<AnswerSpec> for AnswerCheck {
    type Error = String;

    fn try_from(spec: AnswerSpec) -> Result<Self, String> {
        let AnswerSpec {
            contains,
            ignore_case,
            regex,
            schema,
            number,
            tolerance,
            judge,
        } = spec;
        let set = [
            contains.is_some(),
            regex.is_some(),
            schema.is_some(),
            number.is_some(),
            judge.is_some(),
        ];
        if set.iter().filter(|on| **on).count() != 1 {
            return Err(
                "an answer check sets exactly one of contains, regex, schema, number, judge".into(),
            );
        }
        if ignore_case && contains.is_none() {
            return Err("ignore_case goes with contains".into());
        }
        if tolerance.is_some() && number.is_none() {
            return Err("tolerance goes with number".into());
        }
        Ok(match (contains, regex, schema, number, judge) {
            (Some(text), ..) => AnswerCheck::Contains { text, ignore_case },
            (_, Some(pattern), ..) => AnswerCheck::Regex(pattern),
            (_, _, Some(schema), ..) => AnswerCheck::Schema(schema),
            (_, _, _, Some(value), _) => {
                let tolerance = tolerance.unwrap_or(0.0);
                if !(tolerance.is_finite() && tolerance >= 0.0) {
                    return Err(format!("tolerance {tolerance} is not a number ≥ 0"));
                }
                AnswerCheck::Number { value, tolerance }
            }
            (.., Some(rubric)) => AnswerCheck::Judge(rubric),
            _ => unreachable!("exactly one is set"),
        })
    }
}

impl From<AnswerCheck> for AnswerSpec {
    fn from(check: AnswerCheck) -> Self {
        match check {
            AnswerCheck::Contains { text, ignore_case } => AnswerSpec {
                contains: Some(text),
                ignore_case,
                ..AnswerSpec::default()
            },
            AnswerCheck::Regex(pattern) => AnswerSpec {
                regex: Some(pattern),
                ..AnswerSpec::default()
            },
            AnswerCheck::Schema(schema) => AnswerSpec {
                schema: Some(schema),
                ..AnswerSpec::default()
            },
            AnswerCheck::Number { value, tolerance } => AnswerSpec {
                number: Some(value),
                tolerance: Some(tolerance),
                ..AnswerSpec::default()
            },
            AnswerCheck::Judge(rubric) => AnswerSpec {
                judge: Some(rubric),
                ..AnswerSpec::default()
            },
        }
    }
}

/// A check written in code: it reads the whole run (steps, calls, results,
/// answer) and says what is wrong with it, if anything. Dataset adapters
/// score by their own rules this way ([`bfcl`](crate::bfcl)).
pub trait Check: Send + Sync {
    /// The check's name in reports.
    fn name(&self) -> &str;

    /// `Err(why)` when the run fails the check.
    fn check(&self, run: &RunOutcome) -> Result<(), String>;
}
