//! The Berkeley Function Calling Leaderboard as eval cases: each question
//! becomes a [`Case`] whose tools are the question's functions (declared
//! in [`Case::metadata`], answered by a stub), scored by BFCL's rule on the
//! first step's calls; `irrelevance` questions expect no call.
//!
//! BFCL's rule ([`calls_match`]): each call names a function of the
//! question, passes no argument the answer does not list, gives every
//! required argument, and each value is among the accepted ones (numbers by
//! value; strings compared BFCL's way: case and the characters ` ,./-_*^`
//! ignored). There must be as many calls as the answer has, matched in any
//! order.

use std::path::Path;

use agentry_agent::{Agent, RunOutcome};
use agentry_core::tool::{Tool, ToolCall, ToolHandler};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::case::{Case, Check, Role, Turn};
use crate::suite::{Suite, SuiteError};

/// The categories a BFCL folder may hold, as their files are named.
pub const CATEGORIES: [&str; 4] = ["simple_python", "multiple", "parallel", "irrelevance"];

#[derive(Deserialize)]
struct Question {
    id: String,
    question: Vec<Vec<BfclTurn>>,
    function: Vec<Value>,
}

#[derive(Deserialize)]
struct BfclTurn {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct Answer {
    id: String,
    ground_truth: Vec<Map<String, Value>>,
}

fn parse<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, SuiteError> {
    serde_json::from_value(value).map_err(|error| SuiteError::Invalid(format!("{what}: {error}")))
}

/// The suite of one category's questions in `dir` (`CATEGORY.jsonl`, and
/// `CATEGORY_answers.jsonl` but for `irrelevance`), named `bfcl-CATEGORY`.
pub fn suite(dir: &Path, category: &str) -> Result<Suite, SuiteError> {
    let read = |name: String| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|source| SuiteError::Read {
            path: path.display().to_string(),
            source,
        })
    };
    let lines = |text: String, what: &str| -> Result<Vec<Value>, SuiteError> {
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(n, line)| {
                serde_json::from_str(line).map_err(|error| {
                    SuiteError::Invalid(format!("{what}, line {}: {error}", n + 1))
                })
            })
            .collect()
    };
    let questions_file = format!("{category}.jsonl");
    let questions: Vec<Question> = lines(read(questions_file.clone())?, &questions_file)?
        .into_iter()
        .map(|value| parse(value, &questions_file))
        .collect::<Result<_, _>>()?;
    let answers: Vec<Answer> = if category == "irrelevance" {
        Vec::new()
    } else {
        let file = format!("{category}_answers.jsonl");
        lines(read(file.clone())?, &file)?
            .into_iter()
            .map(|value| parse(value, &file))
            .collect::<Result<_, _>>()?
    };
    let mut cases = Vec::new();
    for question in questions {
        let truth = answers
            .iter()
            .find(|answer| answer.id == question.id)
            .map(|answer| answer.ground_truth.clone());
        if truth.is_none() && category != "irrelevance" {
            return Err(SuiteError::Invalid(format!(
                "question {} has no answer",
                question.id
            )));
        }
        cases.push(case(question, truth)?);
    }
    let suite = Suite::new(format!("bfcl-{category}"), cases);
    suite.validate()?;
    Ok(suite)
}

fn case(question: Question, truth: Option<Vec<Map<String, Value>>>) -> Result<Case, SuiteError> {
    let turns = question.question.into_iter().next().unwrap_or_default();
    let system: Vec<String> = turns
        .iter()
        .filter(|turn| turn.role == "system")
        .map(|turn| turn.content.clone())
        .collect();
    let mut conversation: Vec<Turn> = turns
        .into_iter()
        .filter(|turn| turn.role != "system")
        .map(|turn| Turn {
            role: if turn.role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            },
            content: turn.content,
        })
        .collect();
    let input = match conversation.pop() {
        Some(Turn {
            role: Role::User,
            content,
        }) => content,
        _ => {
            return Err(SuiteError::Invalid(format!(
                "question {} does not end with the user's turn",
                question.id
            )));
        }
    };
    let mut case = Case {
        name: question.id,
        input,
        conversation,
        context: (!system.is_empty()).then(|| system.join("\n\n")),
        metadata: json!({ "functions": question.function }),
        ..Case::default()
    };
    match truth {
        Some(truth) => case.checks.push(std::sync::Arc::new(Rule { truth })),
        None => case.no_call = true,
    }
    Ok(case)
}

/// BFCL's rule as a [`Check`], on the first step's calls.
struct Rule {
    truth: Vec<Map<String, Value>>,
}

impl Check for Rule {
    fn name(&self) -> &str {
        "bfcl"
    }

    fn check(&self, run: &RunOutcome) -> Result<(), String> {
        let calls: Vec<ToolCall> = run
            .steps
            .first()
            .map(|step| {
                step.calls
                    .iter()
                    .map(|record| record.call.clone())
                    .collect()
            })
            .unwrap_or_default();
        if calls_match(&calls, &self.truth) {
            return Ok(());
        }
        let made: Vec<String> = calls
            .iter()
            .map(|call| format!("{}({})", call.name, call.input))
            .collect();
        Err(format!(
            "calls [{}] do not match the answer {}",
            made.join(", "),
            Value::Array(self.truth.iter().cloned().map(Value::Object).collect())
        ))
    }
}

/// A case's functions as tools: BFCL's parameter types in JSON Schema
/// ([`json_schema`]), each answered by a stub (`{"status": "recorded"}`),
/// since only the calls are scored.
pub fn tools(case: &Case) -> Vec<Tool> {
    let functions = case.metadata["functions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    functions
        .iter()
        .filter_map(|function| {
            let name = function["name"].as_str()?;
            let tool = Tool::new(
                name,
                json_schema(&function["parameters"]),
                ToolHandler::sync(|_, _| Ok(json!({"status": "recorded"}))),
            );
            Some(match function["description"].as_str() {
                Some(description) => tool.with_description(description),
                None => tool,
            })
        })
        .collect()
}

/// `base` with the case's [`tools`] added and one step: BFCL scores the
/// first step's calls.
pub fn agent(base: &Agent, case: &Case) -> Result<Agent, String> {
    base.to_builder()
        .tools(tools(case))
        .max_steps(1)
        .build()
        .map_err(|error| error.to_string())
}

/// BFCL's parameter schemas in JSON Schema: `dict` → `object`, `float` →
/// `number`, `tuple` → `array`, `any` → no constraint.
pub fn json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                match (key.as_str(), value.as_str()) {
                    ("type", Some("dict")) => {
                        out.insert(key.clone(), json!("object"));
                    }
                    ("type", Some("float")) => {
                        out.insert(key.clone(), json!("number"));
                    }
                    ("type", Some("tuple")) => {
                        out.insert(key.clone(), json!("array"));
                    }
                    ("type", Some("any")) => {}
                    ("properties", _) => {
                        let properties = value
                            .as_object()
                            .map(|p| p.iter().map(|(k, v)| (k.clone(), json_schema(v))).collect())
                            .unwrap_or_default();
                        out.insert(key.clone(), Value::Object(properties));
                    }
                    _ => {
                        out.insert(key.clone(), json_schema(value));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(json_schema).collect()),
        other => other.clone(),
    }
}

/// BFCL's string standardisation.
fn standard(text: &str) -> String {
    text.chars()
        .filter(|c| !" ,./-_*^".contains(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

fn value_matches(got: &Value, accepted: &Value) -> bool {
    match (got, accepted) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) => standard(a) == standard(b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_matches(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            // Nested dicts: each key's accepted values are themselves lists in BFCL answers.
            a.len() <= b.len()
                && a.iter().all(|(k, v)| {
                    b.get(k).is_some_and(|options| match options {
                        Value::Array(list) => list.iter().any(|o| value_matches(v, o)),
                        other => value_matches(v, other),
                    })
                })
        }
        (a, b) => a == b,
    }
}

/// One call against one ground-truth entry `{function: {param: [accepted…]}}`.
pub fn call_matches(call: &ToolCall, truth: &Map<String, Value>) -> bool {
    let Some((function, params)) = truth.iter().next() else {
        return false;
    };
    if &call.name != function {
        return false;
    }
    let (Some(args), Some(params)) = (call.input.as_object(), params.as_object()) else {
        return false;
    };
    if args.keys().any(|name| !params.contains_key(name)) {
        return false;
    }
    params.iter().all(|(name, accepted)| {
        let accepted = accepted.as_array().cloned().unwrap_or_default();
        let optional = accepted.iter().any(|v| v == &json!(""));
        match args.get(name) {
            None => optional,
            Some(value) => accepted.iter().any(|option| value_matches(value, option)),
        }
    })
}

/// Every ground-truth entry matched by a distinct call, and no extra calls.
pub fn calls_match(calls: &[ToolCall], truth: &[Map<String, Value>]) -> bool {
    calls.len() == truth.len()
        && crate::distinct_match(truth.len(), calls.len(), |want, have| {
            call_matches(&calls[have], &truth[want])
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truth(value: Value) -> Vec<Map<String, Value>> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn scores_by_the_bfcl_rule() {
        let gt = truth(
            json!([{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}]),
        );
        let call = |input| ToolCall::new("c", "calculate_triangle_area", input);
        assert!(calls_match(&[call(json!({"base": 10, "height": 5}))], &gt));
        assert!(calls_match(
            &[call(json!({"base": 10.0, "height": 5, "unit": "Units"}))],
            &gt
        ));
        assert!(
            !calls_match(&[call(json!({"base": 10}))], &gt),
            "a required argument is missing"
        );
        assert!(
            !calls_match(
                &[call(json!({"base": 10, "height": 5, "color": "red"}))],
                &gt
            ),
            "unknown argument"
        );
        assert!(!calls_match(&[call(json!({"base": 11, "height": 5}))], &gt));
        assert!(!calls_match(&[], &gt));
    }

    #[test]
    fn parallel_calls_match_in_any_order() {
        let gt = truth(
            json!([{"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
                              {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}}]),
        );
        let play = |artist: &str, duration| {
            ToolCall::new(
                "c",
                "spotify.play",
                json!({"artist": artist, "duration": duration}),
            )
        };
        assert!(calls_match(
            &[play("maroon 5", 15), play("Taylor Swift", 20)],
            &gt
        ));
        assert!(!calls_match(&[play("Taylor Swift", 20)], &gt));
        assert!(!calls_match(
            &[play("Taylor Swift", 20), play("Taylor Swift", 20)],
            &gt
        ));
    }

    #[test]
    fn converts_bfcl_types() {
        let schema = json!({"type": "dict", "properties": {"w": {"type": "float"}, "t": {"type": "tuple", "items": {"type": "any"}}}});
        assert_eq!(
            json_schema(&schema),
            json!({"type": "object", "properties": {"w": {"type": "number"}, "t": {"type": "array", "items": {}}}})
        );
    }

    #[test]
    fn a_question_becomes_a_case() {
        let question: Question = serde_json::from_value(json!({
            "id": "q1",
            "question": [[
                {"role": "system", "content": "Be terse."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "Area of a 3 by 4 rectangle?"}
            ]],
            "function": [{"name": "area", "description": "Area.", "parameters": {"type": "dict", "properties": {"w": {"type": "float"}}}}]
        }))
        .unwrap();
        let case = case(question, Some(truth(json!([{"area": {"w": [3]}}])))).unwrap();
        assert_eq!(case.input, "Area of a 3 by 4 rectangle?");
        assert_eq!(case.context.as_deref(), Some("Be terse."));
        assert_eq!(case.conversation.len(), 2);
        assert_eq!(case.checks.len(), 1);
        let tools = tools(&case);
        assert_eq!(tools[0].name, "area");
        assert_eq!(tools[0].input_schema["properties"]["w"]["type"], "number");
    }
}
