//! Arguments written in the shape of their schema, read as the arguments.
//!
//! Unconstrained, the small local models sometimes copy the tool's JSON
//! Schema around the values instead of writing the values alone:
//! `{"properties": {"base": 10, "height": 5}, "required": ["base"], "type": "object"}`
//! for `{"base": 10, "height": 5}`, or the arguments object inside a
//! one-element list. Measured on BFCL `simple_python` with the grammar off
//! and the call-list note on (`BENCHMARKS.md`), 87 of 391 calls were shaped
//! so. A tool whose schema has no parameter of that name cannot have meant
//! it, so the values are taken out, and the call is then validated like any
//! other. With the grammar on the shape cannot be written at all.

use serde_json::{Map, Value};

/// The keys of a JSON Schema object that the echo copies around the values.
const SCHEMA_KEYS: [&str; 3] = ["properties", "required", "type"];

/// `arguments` as the tool with input schema `schema` was meant to get them:
/// a one-element list unwrapped, and `properties` (when it is an object and
/// not one of the tool's own parameters) replaced by the values it holds,
/// `required` and `type` dropped with it. Anything else is returned as it is.
///
/// ```
/// use agentry_local_calls::schema_echo::unwrap_schema_echo;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {"base": {"type": "number"}}});
/// let echoed = json!({"properties": {"base": 10}, "required": ["base"], "type": "object"});
/// assert_eq!(unwrap_schema_echo(echoed, &schema), json!({"base": 10}));
/// assert_eq!(unwrap_schema_echo(json!([{"base": 10}]), &schema), json!({"base": 10}));
/// assert_eq!(unwrap_schema_echo(json!({"base": 10}), &schema), json!({"base": 10}));
/// ```
pub fn unwrap_schema_echo(arguments: Value, schema: &Value) -> Value {
    let arguments = match arguments {
        Value::Array(mut items) if items.len() == 1 && items[0].is_object() => items.remove(0),
        other => other,
    };
    let Value::Object(mut object) = arguments else {
        return arguments;
    };
    let own = |key: &str| {
        schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key(key))
    };
    if own("properties") || !object.get("properties").is_some_and(Value::is_object) {
        return Value::Object(object);
    }
    let Some(Value::Object(values)) = object.remove("properties") else {
        unreachable!("checked to be an object above");
    };
    let mut unwrapped: Map<String, Value> = object
        .into_iter()
        .filter(|(key, _)| !SCHEMA_KEYS.contains(&key.as_str()) || own(key))
        .collect();
    unwrapped.extend(values);
    Value::Object(unwrapped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"function": {"type": "string"}, "scale": {"type": "number"}},
            "required": ["function"]
        })
    }

    #[test]
    fn the_values_are_taken_out_of_a_copied_schema() {
        let echoed = json!({
            "properties": {"function": "y=x^2", "scale": 2},
            "required": ["function"],
            "type": "object"
        });
        assert_eq!(
            unwrap_schema_echo(echoed, &schema()),
            json!({"function": "y=x^2", "scale": 2})
        );
        // In a list, and with a real parameter beside it.
        let listed = json!([{"properties": {"function": "y=x"}, "scale": 3}]);
        assert_eq!(
            unwrap_schema_echo(listed, &schema()),
            json!({"function": "y=x", "scale": 3})
        );
    }

    #[test]
    fn arguments_that_are_not_an_echo_are_left_as_they_are() {
        let plain = json!({"function": "y=x", "scale": 1});
        assert_eq!(unwrap_schema_echo(plain.clone(), &schema()), plain);
        // `properties` that is not an object, a list of two, a string.
        let odd = json!({"properties": "all", "function": "y=x"});
        assert_eq!(unwrap_schema_echo(odd.clone(), &schema()), odd);
        let two = json!([{"function": "a"}, {"function": "b"}]);
        assert_eq!(unwrap_schema_echo(two.clone(), &schema()), two);
        assert_eq!(unwrap_schema_echo(json!("x"), &schema()), json!("x"));
    }

    #[test]
    fn a_tool_with_a_parameter_named_properties_gets_it() {
        let schema = json!({
            "type": "object",
            "properties": {"properties": {"type": "object"}, "type": {"type": "string"}}
        });
        let arguments = json!({"properties": {"color": "red"}, "type": "house"});
        assert_eq!(unwrap_schema_echo(arguments.clone(), &schema), arguments);
    }
}
