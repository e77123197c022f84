//! Questions from MCP servers (elicitation), asked on the terminal: the
//! message, then each field of the form with its type and default; an empty
//! line keeps the default. Without a terminal no servers may ask.

use std::io::{BufRead, IsTerminal, Write};

use agentry_mcp::{Answer, Elicitor, Question};
use serde_json::{Map, Value, json};

/// An elicitor asking on this terminal, if stdin is one.
pub fn terminal() -> Option<Elicitor> {
    std::io::stdin().is_terminal().then(|| {
        Elicitor::new(|question: Question| async move {
            tokio::task::spawn_blocking(move || ask(&question))
                .await
                .unwrap_or(Answer::Cancel)
        })
    })
}

/// Ask `question` on stderr, reading answers from stdin.
fn ask(question: &Question) -> Answer {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut prompt = |text: &str| -> Option<String> {
        eprint!("{text}");
        let _ = std::io::stderr().flush();
        lines.next().and_then(Result::ok)
    };
    let intro = format!(
        "the MCP server {} asks: {}\nanswer? [Y/n (decline)/c (cancel)] ",
        question.server, question.message
    );
    match prompt(&intro).as_deref().map(str::trim) {
        Some("n" | "N" | "no") => return Answer::Decline,
        Some("c" | "C" | "cancel") | None => return Answer::Cancel,
        _ => {}
    }
    let mut fields = Map::new();
    let properties = question.schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (name, schema) in properties {
        loop {
            let Some(line) = prompt(&format!("  {name} ({}): ", describe(&schema))) else {
                return Answer::Cancel;
            };
            if line.trim().is_empty() {
                break;
            }
            match parse_field(&schema, line.trim()) {
                Ok(value) => {
                    fields.insert(name.clone(), value);
                    break;
                }
                Err(error) => eprintln!("  {error}"),
            }
        }
    }
    Answer::Accept(fields)
}

/// A field's type, choices and default, for the prompt.
fn describe(schema: &Value) -> String {
    let mut parts = vec![schema["type"].as_str().unwrap_or("string").to_owned()];
    if let Some(choices) = choices(schema) {
        parts.push(format!("one of {}", choices.join(", ")));
    }
    if let Some(default) = schema.get("default") {
        parts.push(format!("default {default}"));
    }
    if let Some(description) = schema["description"].as_str() {
        parts.push(description.to_owned());
    }
    parts.join("; ")
}

/// The allowed values of an enum field (`enum`, or `oneOf`/`anyOf` of `const`s).
fn choices(schema: &Value) -> Option<Vec<String>> {
    let item = if schema["type"] == "array" {
        &schema["items"]
    } else {
        schema
    };
    if let Some(values) = item["enum"].as_array() {
        return Some(
            values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        );
    }
    let options = item["oneOf"]
        .as_array()
        .or_else(|| item["anyOf"].as_array())?;
    Some(
        options
            .iter()
            .filter_map(|o| o["const"].as_str().map(str::to_owned))
            .collect(),
    )
}

/// `text` as a value of the field `schema` describes.
fn parse_field(schema: &Value, text: &str) -> Result<Value, String> {
    let one = |text: &str, kind: &str| -> Result<Value, String> {
        match kind {
            "integer" => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{text:?} is not a whole number")),
            "number" => text
                .parse::<f64>()
                .map(|n| json!(n))
                .map_err(|_| format!("{text:?} is not a number")),
            "boolean" => match text {
                "y" | "yes" | "true" => Ok(json!(true)),
                "n" | "no" | "false" => Ok(json!(false)),
                _ => Err(format!("{text:?}: answer yes or no")),
            },
            _ => Ok(json!(text)),
        }
    };
    let allowed =
        |value: &str| choices(schema).is_none_or(|choices| choices.iter().any(|c| c == value));
    if schema["type"] == "array" {
        let items: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(bad) = items.iter().find(|item| !allowed(item)) {
            return Err(format!("{bad:?} is not one of the choices"));
        }
        return Ok(json!(items));
    }
    let value = one(text, schema["type"].as_str().unwrap_or("string"))?;
    if value.is_string() && !allowed(text) {
        return Err(format!("{text:?} is not one of the choices"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_fields_parse_and_wrong_answers_say_why() {
        assert_eq!(
            parse_field(&json!({"type": "integer"}), "30"),
            Ok(json!(30))
        );
        assert_eq!(
            parse_field(&json!({"type": "integer"}), "thirty"),
            Err("\"thirty\" is not a whole number".into())
        );
        assert_eq!(
            parse_field(&json!({"type": "number"}), "95.5"),
            Ok(json!(95.5))
        );
        assert_eq!(
            parse_field(&json!({"type": "boolean"}), "yes"),
            Ok(json!(true))
        );
        let status = json!({"type": "string", "enum": ["active", "inactive"], "default": "active"});
        assert_eq!(parse_field(&status, "inactive"), Ok(json!("inactive")));
        assert_eq!(
            parse_field(&status, "gone"),
            Err("\"gone\" is not one of the choices".into())
        );
        assert_eq!(
            describe(&status),
            "string; one of active, inactive; default \"active\""
        );
        let many = json!({"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": "b"}]}});
        assert_eq!(parse_field(&many, "a, b"), Ok(json!(["a", "b"])));
        assert!(parse_field(&many, "a, z").is_err());
    }
}
