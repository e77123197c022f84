//! The texts a program shows the model (the system prompt listing the
//! fields, the user message holding the inputs, the feedback after an
//! invalid answer) and the reading of its answer.

use serde_json::{Map, Value};

/// One line per property of an object schema: `- name (type, optional): description`.
fn field_lines(schema: &Value, defs: &Value) -> Vec<String> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let resolved = resolve(property, defs);
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                ", optional"
            };
            let description = property["description"]
                .as_str()
                .or_else(|| resolved["description"].as_str())
                .map(|text| format!(": {text}"))
                .unwrap_or_default();
            format!(
                "- {name} ({}{optional}){description}",
                type_of(property, defs)
            )
        })
        .collect()
}

/// Follow a local `$ref` into `$defs`.
fn resolve<'a>(schema: &'a Value, defs: &'a Value) -> &'a Value {
    match schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        Some(name) if defs.get(name).is_some() => &defs[name],
        _ => schema,
    }
}

/// A short name of a schema's type, as the model should read it.
fn type_of(schema: &Value, defs: &Value) -> String {
    let schema = resolve(schema, defs);
    if let Some(options) = schema["enum"].as_array() {
        let options: Vec<String> = options.iter().map(Value::to_string).collect();
        return format!("one of {}", options.join(", "));
    }
    // `Option<T>` fields read `{"type": ["string", "null"]}`: name the non-null type.
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null"),
        kind => kind.as_str(),
    };
    match (kind, schema["format"].as_str()) {
        (Some("string"), Some("date")) => "date, YYYY-MM-DD".into(),
        (Some("string"), Some("date-time")) => "date-time, RFC 3339".into(),
        (Some("string"), Some("uri")) => "URL".into(),
        (Some("array"), _) => format!("list of {}", type_of(&schema["items"], defs)),
        (Some(kind), _) => kind.into(),
        (None, _) if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() => {
            "see the schema".into()
        }
        (None, _) => "any JSON".into(),
    }
}

/// The system prompt of a program.
pub(crate) fn system_prompt(
    description: Option<&str>,
    input_schema: &Value,
    output_schema: &Value,
    has_tools: bool,
) -> String {
    let mut text = String::new();
    if let Some(description) = description.filter(|d| !d.is_empty()) {
        text.push_str(description.trim());
        text.push_str("\n\n");
    }
    let defs = |schema: &Value| schema.get("$defs").cloned().unwrap_or(Value::Null);
    text.push_str("Input fields:\n");
    text.push_str(&field_lines(input_schema, &defs(input_schema)).join("\n"));
    text.push_str("\n\nOutput fields:\n");
    text.push_str(&field_lines(output_schema, &defs(output_schema)).join("\n"));
    text.push_str("\n\n");
    if has_tools {
        text.push_str(
            "Call the tools when you need information you do not have. Once you have it, \
             stop calling tools and answer.\n",
        );
    }
    text.push_str("Answer with one JSON object holding the output fields, and nothing else.");
    text
}

/// The user message: one `name: value` line per input (text as it is, any
/// other value as JSON).
pub(crate) fn user_message(inputs: &Map<String, Value>) -> String {
    inputs
        .iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(name, value)| match value {
            Value::String(text) => format!("{name}: {text}"),
            other => format!("{name}: {other}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the model is told after an answer that does not fit the output schema.
pub(crate) fn feedback(problems: &str) -> String {
    format!(
        "Your answer does not fit the output fields:\n{problems}\nAnswer again with one JSON object holding the output fields, and nothing else."
    )
}

/// The JSON object in an answer: the whole text, or inside a Markdown
/// fence, or from its first `{` to its last `}`.
pub(crate) fn answer_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim();
    let first_error = match serde_json::from_str(unfenced) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    if let (Some(start), Some(end)) = (unfenced.find('{'), unfenced.rfind('}'))
        && start < end
        && let Ok(value) = serde_json::from_str(&unfenced[start..=end])
    {
        return Ok(value);
    }
    Err(format!(
        "- (root): the answer is not a JSON object ({first_error})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_system_prompt_lists_every_field() {
        let input = json!({"type": "object", "properties": {"question": {"type": "string", "description": "What was asked"}}, "required": ["question"]});
        let output = json!({"type": "object", "properties": {
            "answer": {"type": "string"},
            "note": {"type": ["string", "null"]},
            "when": {"type": "string", "format": "date"},
            "mood": {"type": "string", "enum": ["calm", "angry"]},
            "tags": {"type": "array", "items": {"type": "string"}}
        }, "required": ["answer", "mood"]});
        assert_eq!(
            system_prompt(Some("Answer politely."), &input, &output, true),
            "Answer politely.\n\nInput fields:\n- question (string): What was asked\n\nOutput fields:\n- answer (string)\n- note (string, optional)\n- when (date, YYYY-MM-DD, optional)\n- mood (one of \"calm\", \"angry\")\n- tags (list of string, optional)\n\nCall the tools when you need information you do not have. Once you have it, stop calling tools and answer.\nAnswer with one JSON object holding the output fields, and nothing else."
        );
    }

    #[test]
    fn answers_are_read_from_fences_and_surrounding_text() {
        assert_eq!(answer_json("{\"a\": 1}").unwrap(), json!({"a": 1}));
        assert_eq!(
            answer_json("```json\n{\"a\": 1}\n```").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            answer_json("Sure: {\"a\": 1}. Done").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            answer_json("Sorry, I cannot.").unwrap_err(),
            "- (root): the answer is not a JSON object (expected value at line 1 column 1)"
        );
        assert_eq!(
            user_message(
                json!({"question": "Refund?", "limit": 3, "skip": null})
                    .as_object()
                    .unwrap()
            ),
            "question: Refund?\nlimit: 3"
        );
    }
}
