//! Shortened schemas for discovered tools: a tool whose definition (name,
//! description and input schema) is larger than [`PROMPT_SCHEMA_BYTES`] is
//! shown to the model with its input schema cut down in stages until it
//! fits. Calls are still validated against the whole schema, so a rule the
//! model was not shown comes back as an error result that names it.
//!
//! The stages, each applied only if the one before was not enough:
//! 1. drop annotations (`examples`, `title`, `x-…`, …);
//! 2. shorten descriptions to their first sentence, and drop those of nested
//!    schemas;
//! 3. replace references to `$defs` (`definitions`) with the referenced
//!    schema's type, and drop the definitions;
//! 4. replace objects and arrays nested in the arguments with their bare
//!    type, then the arguments' own;
//! 5. leave out optional arguments, last first.

use serde_json::{Map, Value};

use agentry_core::tool::{Tool, ToolSchema};

/// Most bytes of definition (name, description and input schema JSON; about
/// 3.5 bytes a token) a discovered tool shows the model.
pub const PROMPT_SCHEMA_BYTES: usize = 4_000;

/// What a shortened tool's description ends with.
const SHORTENED: &str = "(Shortened here; a call that breaks a rule gets an error that names it.)";

/// Keywords that only annotate: they go first.
const ANNOTATIONS: &[&str] = &[
    "examples",
    "example",
    "title",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "externalDocs",
    "xml",
    "discriminator",
    "contentMediaType",
    "contentEncoding",
];

/// Keywords whose value is a map of names to schemas.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Keywords whose value is a schema.
const SCHEMA_VALUES: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// How large `schema` is in a prompt, in bytes.
pub(super) fn definition_size(schema: &ToolSchema) -> usize {
    schema.name.len()
        + schema.description.as_deref().map_or(0, str::len)
        + serde_json::to_string(&schema.input_schema).map_or(0, |json| json.len())
}

/// `tool`'s schema as a discovered tool shows it: whole when it fits
/// [`PROMPT_SCHEMA_BYTES`], shortened otherwise.
pub(super) fn prompt_schema(tool: &Tool) -> ToolSchema {
    shorten(tool.schema(), PROMPT_SCHEMA_BYTES)
}

/// `schema`, cut down in stages until its definition fits `limit` bytes (or
/// nothing more can go).
pub(super) fn shorten(mut schema: ToolSchema, limit: usize) -> ToolSchema {
    if definition_size(&schema) <= limit {
        return schema;
    }
    let description = schema.description.take().unwrap_or_default();
    schema.description = Some(match first_sentence(&description, MAX_SENTENCE) {
        "" => SHORTENED.to_owned(),
        first => format!("{first} {SHORTENED}"),
    });
    let stages: [fn(&mut Value); 5] = [
        |s| visit(s, 0, &mut drop_annotations),
        |s| visit(s, 0, &mut shorten_descriptions),
        inline_definitions,
        |s| visit(s, 0, &mut |map, depth| bare_nested(map, depth, 2)),
        |s| visit(s, 0, &mut |map, depth| bare_nested(map, depth, 1)),
    ];
    for stage in stages {
        stage(&mut schema.input_schema);
        if definition_size(&schema) <= limit {
            return schema;
        }
    }
    drop_optional(&mut schema, limit);
    schema
}

/// Call `f` on every schema object in `schema` with its depth: 0 for the
/// input object, 1 for its arguments, 2 and more below (definitions count as
/// nested).
fn visit(schema: &mut Value, depth: usize, f: &mut impl FnMut(&mut Map<String, Value>, usize)) {
    let Value::Object(map) = schema else {
        return;
    };
    f(map, depth);
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if SCHEMA_MAPS.contains(&key) {
            let below = if key == "properties" { depth + 1 } else { 2 };
            if let Value::Object(children) = value {
                for child in children.values_mut() {
                    visit(child, below.max(depth + 1), f);
                }
            }
        } else if SCHEMA_VALUES.contains(&key) {
            visit(value, depth + 1, f);
        } else if SCHEMA_LISTS.contains(&key)
            && let Value::Array(children) = value
        {
            for child in children {
                visit(child, depth, f);
            }
        }
    }
}

fn drop_annotations(map: &mut Map<String, Value>, _depth: usize) {
    map.retain(|key, _| !(ANNOTATIONS.contains(&key.as_str()) || key.starts_with("x-")));
}

fn shorten_descriptions(map: &mut Map<String, Value>, depth: usize) {
    if depth >= 2 {
        map.remove("description");
    } else if let Some(Value::String(text)) = map.get_mut("description") {
        let first = first_sentence(text, MAX_SENTENCE);
        if first.len() < text.len() {
            *text = first.to_owned();
        }
    }
}

/// Below `from` (1: the arguments themselves), objects lose their
/// properties and arrays keep only their items' type.
fn bare_nested(map: &mut Map<String, Value>, depth: usize, from: usize) {
    if depth < from {
        return;
    }
    if map.get("type").and_then(Value::as_str) == Some("object") {
        for key in [
            "properties",
            "patternProperties",
            "additionalProperties",
            "required",
        ] {
            map.remove(key);
        }
    }
    if let Some(items) = map.get_mut("items") {
        let kind = items.get("type").cloned();
        *items = Value::Object(kind.map(|t| ("type".to_owned(), t)).into_iter().collect());
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(options)) = map.get(*key)
            && options.iter().any(|o| o.get("properties").is_some())
        {
            map.remove(*key);
            map.entry("type").or_insert_with(|| "object".into());
        }
    }
}

/// Replace `{"$ref": "#/$defs/Name"}` with Name's type (and its `enum`, if
/// short), and drop the definitions.
fn inline_definitions(schema: &mut Value) {
    let Value::Object(root) = schema else {
        return;
    };
    let mut definitions = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = root.remove(key) {
            for (name, def) in defs {
                definitions.insert(format!("#/{key}/{name}"), def);
            }
        }
    }
    if definitions.is_empty() {
        return;
    }
    visit(schema, 0, &mut |map, _| {
        let Some(Value::String(target)) = map.remove("$ref") else {
            return;
        };
        let def = definitions.get(&target);
        let kind = def
            .and_then(|d| d.get("type").cloned())
            .unwrap_or_else(|| "object".into());
        map.entry("type").or_insert(kind);
        if let Some(Value::Array(values)) = def.and_then(|d| d.get("enum"))
            && values.len() <= 12
        {
            map.entry("enum").or_insert_with(|| values.clone().into());
        }
    });
}

/// Leave out optional arguments, the last first, until `schema` fits.
fn drop_optional(schema: &mut ToolSchema, limit: usize) {
    let required: Vec<Value> = schema.input_schema["required"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    loop {
        let Some(Value::Object(properties)) = schema.input_schema.get_mut("properties") else {
            return;
        };
        let Some(last) = properties
            .keys()
            .rev()
            .find(|name| !required.iter().any(|r| r == name.as_str()))
            .cloned()
        else {
            return;
        };
        properties.remove(&last);
        if definition_size(schema) <= limit {
            return;
        }
    }
}

/// Most bytes a shortened description keeps.
const MAX_SENTENCE: usize = 300;

/// The first sentence of `text`: up to the first ". " or line break, and at
/// most `max` bytes (cut at a character's edge). What a shortened tool
/// description keeps, and what an A2A card says of a tool.
///
/// ```
/// use agentry_agent::first_sentence;
/// assert_eq!(first_sentence("Read a file. Files here: a.txt", 300), "Read a file.");
/// assert_eq!(first_sentence("Convert units\nunits: m, ft", 300), "Convert units");
/// assert_eq!(first_sentence("abcdef", 3), "abc");
/// ```
pub fn first_sentence(text: &str, max: usize) -> &str {
    let text = text.trim();
    let mut end = [text.find(". ").map(|at| at + 1), text.find('\n')]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(text.len())
        .min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].trim_end()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(input: Value) -> ToolSchema {
        ToolSchema {
            name: "api.create".into(),
            input_schema: input,
            output_schema: None,
            description: Some("Create a thing. It has many options.".into()),
        }
    }

    #[test]
    fn a_small_schema_is_shown_whole() {
        let small = schema(json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(shorten(small.clone(), 4_000), small);
    }

    #[test]
    fn annotations_go_first_but_an_argument_named_title_stays() {
        let big = schema(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "example": "x".repeat(200), "x-order": 1},
                "body": {"type": "string", "examples": ["y".repeat(200)]}
            },
            "required": ["title"]
        }));
        let short = shorten(big, 300);
        assert_eq!(
            short.input_schema,
            json!({
                "type": "object",
                "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                "required": ["title"]
            })
        );
        assert_eq!(
            short.description.as_deref(),
            Some(format!("Create a thing. {SHORTENED}").as_str())
        );
    }

    #[test]
    fn definitions_become_their_type_and_short_enums_stay() {
        let big = schema(json!({
            "type": "object",
            "properties": {
                "owner": {"$ref": "#/$defs/User"},
                "state": {"$ref": "#/$defs/State"}
            },
            "$defs": {
                "User": {
                    "type": "object",
                    "properties": {"bio": {"type": "string", "maxLength": 9999}},
                    "description": "z".repeat(500)
                },
                "State": {"type": "string", "enum": ["open", "closed"]}
            }
        }));
        let short = shorten(big, 280);
        assert_eq!(
            short.input_schema,
            json!({
                "type": "object",
                "properties": {
                    "owner": {"type": "object"},
                    "state": {"type": "string", "enum": ["open", "closed"]}
                }
            })
        );
    }

    #[test]
    fn optional_arguments_go_last_first_and_required_ones_stay() {
        let properties: Map<String, Value> = (0..40)
            .map(|i| (format!("option_{i:02}"), json!({"type": "integer"})))
            .collect();
        let big = schema(json!({
            "type": "object",
            "properties": properties,
            "required": ["option_39"]
        }));
        let short = shorten(big, 400);
        assert!(
            definition_size(&short) <= 400,
            "{}",
            definition_size(&short)
        );
        let kept: Vec<&String> = short.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(kept.first().map(|k| k.as_str()), Some("option_00"));
        assert!(
            kept.iter().any(|k| *k == "option_39"),
            "the required one stays"
        );
    }
}
