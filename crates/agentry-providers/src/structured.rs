//! Structured answers on the providers' own terms: the answer schema closed
//! for Anthropic's `output_config.format`, and OpenAI's `strict` mode used
//! only where the schema meets its rules.

use serde_json::Value;

/// `schema` with `additionalProperties: false` on every object schema that
/// declares properties and says nothing about others (Anthropic requires it
/// of every object; for an answer it changes nothing a caller relies on).
pub(crate) fn closed(schema: &Value) -> Value {
    let mut schema = schema.clone();
    close(&mut schema);
    schema
}

fn close(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if object.contains_key("properties") && !object.contains_key("additionalProperties") {
                object.insert("additionalProperties".into(), Value::Bool(false));
            }
            object.values_mut().for_each(close);
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

/// True when OpenAI's strict mode accepts `schema` as it is: every object
/// closed with every property required, and no keyword strict mode refuses.
pub(crate) fn strict_ready(schema: &Value) -> bool {
    const REFUSED: &[&str] = &["allOf", "not", "if", "then", "else", "patternProperties"];
    match schema {
        Value::Object(object) => {
            if REFUSED.iter().any(|keyword| object.contains_key(*keyword)) {
                return false;
            }
            if let Some(Value::Object(properties)) = object.get("properties") {
                let required: Vec<&str> = object
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let closed = object.get("additionalProperties") == Some(&Value::Bool(false));
                if !closed
                    || properties
                        .keys()
                        .any(|name| !required.contains(&name.as_str()))
                {
                    return false;
                }
            }
            object.values().all(strict_ready)
        }
        Value::Array(items) => items.iter().all(strict_ready),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn closing_and_strictness() {
        let open = json!({"type": "object", "properties": {
            "inner": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
        }, "required": ["inner"]});
        let shut = closed(&open);
        assert_eq!(shut["additionalProperties"], json!(false));
        assert_eq!(
            shut["properties"]["inner"]["additionalProperties"],
            json!(false)
        );
        assert!(!strict_ready(&open));
        assert!(strict_ready(&shut));
        let optional = json!({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"], "additionalProperties": false});
        assert!(!strict_ready(&optional));
    }
}
