//! Structured answers on the providers' own terms: the answer schema closed
//! for Anthropic's `output_config.format`, and OpenAI's `strict` mode used
//! only where the schema meets its rules.

use serde_json::{Map, Value};

/// `schema` with `additionalProperties: false` on every object schema that
/// declares properties and says nothing about others (Anthropic requires it
/// of every object; for an answer it changes nothing a caller relies on).
#[cfg(feature = "anthropic")]
pub(crate) fn closed(schema: &Value) -> Value {
    let mut schema = schema.clone();
    close(&mut schema);
    schema
}

#[cfg(feature = "anthropic")]
fn close(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if object.contains_key("properties") && !object.contains_key("additionalProperties") {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
    for_each_subschema_mut(object, close);
}

/// Formats OpenAI's strict mode accepts.
#[cfg(feature = "openai")]
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// True when OpenAI's strict mode accepts `schema` as it is: every sub-schema
/// typed (or a `$ref`, `anyOf`, `enum` or `const`), every object closed with
/// every property required, only formats it knows, and no keyword it refuses.
#[cfg(feature = "openai")]
pub(crate) fn strict_ready(schema: &Value) -> bool {
    const REFUSED: &[&str] = &["allOf", "not", "if", "then", "else", "patternProperties"];
    let Value::Object(object) = schema else {
        return false;
    };
    let typed = ["type", "$ref", "anyOf", "enum", "const"]
        .iter()
        .any(|keyword| object.contains_key(*keyword));
    if !typed || REFUSED.iter().any(|keyword| object.contains_key(*keyword)) {
        return false;
    }
    if let Some(format) = object.get("format").and_then(Value::as_str)
        && !STRICT_FORMATS.contains(&format)
    {
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
    let mut ready = true;
    for_each_subschema(object, &mut |sub| ready &= strict_ready(sub));
    ready
}

/// Keywords whose value is one schema.
const ONE: &[&str] = &["items", "additionalProperties", "contains", "propertyNames"];
/// Keywords whose value is a list of schemas.
const LIST: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const MAP: &[&str] = &["properties", "$defs", "definitions"];

/// Call `f` on each schema directly inside `object` (never on the names of
/// `properties`, which are data, not keywords).
#[cfg(feature = "openai")]
fn for_each_subschema(object: &Map<String, Value>, f: &mut impl FnMut(&Value)) {
    for (keyword, value) in object {
        match (keyword.as_str(), value) {
            (k, Value::Object(_)) if ONE.contains(&k) => f(value),
            (k, Value::Array(items)) if LIST.contains(&k) || k == "items" => {
                items.iter().for_each(&mut *f)
            }
            (k, Value::Object(map)) if MAP.contains(&k) => map.values().for_each(&mut *f),
            _ => {}
        }
    }
}

/// Call `f` on each schema directly inside `object`, to change it in place.
#[cfg(feature = "anthropic")]
fn for_each_subschema_mut(object: &mut Map<String, Value>, f: fn(&mut Value)) {
    for (keyword, value) in object.iter_mut() {
        match (keyword.as_str(), value) {
            (k, value @ Value::Object(_)) if ONE.contains(&k) => f(value),
            (k, Value::Array(items)) if LIST.contains(&k) || k == "items" => {
                items.iter_mut().for_each(f)
            }
            (k, Value::Object(map)) if MAP.contains(&k) => map.values_mut().for_each(f),
            _ => {}
        }
    }
}

#[cfg(all(test, feature = "openai", feature = "anthropic"))]
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
        let optional = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"], "additionalProperties": false});
        assert!(!strict_ready(&optional));
        // An untyped `json` field and a format strict mode lacks keep it out.
        let untyped = json!({"type": "object", "properties": {"extra": {}}, "required": ["extra"], "additionalProperties": false});
        assert!(!strict_ready(&untyped));
        let uri = json!({"type": "object", "properties": {"link": {"type": "string", "format": "uri"}}, "required": ["link"], "additionalProperties": false});
        assert!(!strict_ready(&uri));
        // Property names are data: fields called `not` or `properties` change nothing.
        let named = json!({"type": "object", "properties": {
            "not": {"type": "boolean"},
            "properties": {"type": "string"}
        }, "required": ["not", "properties"], "additionalProperties": false});
        assert!(strict_ready(&named));
        let open_named =
            json!({"type": "object", "properties": {"properties": {"type": "string"}}});
        assert_eq!(
            closed(&open_named),
            json!({"type": "object", "properties": {"properties": {"type": "string"}}, "additionalProperties": false})
        );
    }
}
