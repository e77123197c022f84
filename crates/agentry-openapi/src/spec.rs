//! Reading a specification: JSON or YAML, OpenAPI 3.0 or 3.1; `$ref`s
//! followed without recursion (a cycle or a chain too long is an error, not
//! a stack overflow); component schemas gathered into `$defs` and rewritten
//! to JSON Schema 2020-12, the dialect agentry validates with.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::OpenApiError;
use crate::yaml::{self, Aliases, Nesting, Refusal};

/// Keywords whose values are data (examples, constants), never rewritten.
const DATA_KEYWORDS: [&str; 5] = ["example", "examples", "enum", "const", "default"];

/// Keywords whose values map names to schemas: their keys are names, not keywords.
const NAME_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Longest chain of `$ref`s to `$ref`s followed.
const MAX_REF_CHAIN: usize = 32;

/// Most component schemas one tool's schema takes into `$defs`, nearest
/// first; the ones past it are left open (any value, with a note). Some real
/// APIs (Microsoft Graph) reach thousands of components from every
/// operation: a schema that size helps no model and would cost gigabytes.
pub const MAX_DEFS: usize = 32;

/// Most bytes of component schemas one tool's schema takes into `$defs`.
pub const MAX_DEFS_BYTES: usize = 16 * 1024;

/// Most YAML nodes aliases may add to a specification, each use counting its
/// anchor's whole node. Real specifications that use anchors stay far below;
/// an alias bomb (nested, or one wide anchor used many times) is refused
/// before it is read.
pub const MAX_YAML_ALIAS_NODES: usize = 100_000;

/// The component schemas one tool's schema gathers, within [`MAX_DEFS`]
/// and [`MAX_DEFS_BYTES`].
#[derive(Debug, Default)]
pub(crate) struct Defs {
    map: BTreeMap<String, Value>,
    bytes: usize,
}

impl Defs {
    fn full(&self) -> bool {
        self.map.len() >= MAX_DEFS || self.bytes >= MAX_DEFS_BYTES
    }
}

/// What stands for a component left out for size: any value, said so.
fn left_open(name: &str) -> Value {
    json!({"description": format!("A {name} (its schema is too large to include)")})
}

/// The deepest a YAML specification's collections nest: `serde_yaml_ng`'s
/// recursion limit, so no text it reads is refused.
pub const MAX_YAML_DEPTH: usize = 128;

/// The most `[` and `{` a YAML text the nesting check cannot read may hold:
/// however deep they nest, `serde_yaml_ng` then parses it in well under a
/// second (its time grows with the square of the depth: 5,000 levels take
/// about a second in a debug build).
const MAX_UNCHECKED_FLOW_OPENERS: usize = 2_000;

/// Refuse a YAML text nested deeper than [`MAX_YAML_DEPTH`], before
/// `serde_yaml_ng` spends time quadratic in its depth to refuse it. A text
/// the event parser does not read passes when it has at most
/// [`MAX_UNCHECKED_FLOW_OPENERS`] `[` and `{`.
fn nesting_within_limit(text: &str) -> Result<(), OpenApiError> {
    let refused = |why: String| {
        Err(OpenApiError::Parse(format!(
            "{why}; refused before reading it"
        )))
    };
    match yaml::nesting_within(text, MAX_YAML_DEPTH) {
        Nesting::Within => Ok(()),
        Nesting::Deeper => refused(format!(
            "its YAML nests deeper than {MAX_YAML_DEPTH} levels"
        )),
        Nesting::Unread { flow_openers } if flow_openers > MAX_UNCHECKED_FLOW_OPENERS => {
            refused(format!(
                "its YAML nesting could not be checked and it holds {flow_openers} `[` and `{{`, more than {MAX_UNCHECKED_FLOW_OPENERS}"
            ))
        }
        Nesting::Unread { .. } => Ok(()),
    }
}

/// Refuse a YAML text whose aliases add more than [`MAX_YAML_ALIAS_NODES`]
/// nodes. A text the event parser does not read is counted through
/// `serde_yaml_ng` instead, all its nodes against twice its length in bytes
/// plus the same number: no text without aliases makes that many.
fn aliases_within_budget(text: &str) -> Result<(), OpenApiError> {
    let over = || {
        OpenApiError::Parse(format!(
            "its YAML aliases expand to more than {MAX_YAML_ALIAS_NODES} nodes; refused before reading it"
        ))
    };
    match yaml::alias_nodes_within(text, MAX_YAML_ALIAS_NODES) {
        Aliases::Within => Ok(()),
        Aliases::Over => Err(over()),
        Aliases::Unread => {
            let budget = MAX_YAML_ALIAS_NODES.saturating_add(text.len().saturating_mul(2));
            match yaml::within_budget(text, budget) {
                Ok(()) => Ok(()),
                Err(Refusal::OverBudget) => Err(over()),
                Err(Refusal::Parse(error)) => Err(OpenApiError::Parse(error.to_string())),
            }
        }
    }
}

/// A parsed specification.
#[derive(Debug)]
pub(crate) struct Spec {
    pub(crate) document: Value,
    /// `3.0` or `3.1`.
    pub(crate) version: String,
}

impl Spec {
    /// Parse `text` (JSON, or YAML when it is not JSON).
    pub(crate) fn parse(text: &str) -> Result<Self, OpenApiError> {
        if text.len() > crate::MAX_SPEC_BYTES {
            return Err(OpenApiError::TooLarge {
                max: crate::MAX_SPEC_BYTES,
            });
        }
        let document: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(json_error) => {
                let trimmed = text.trim_start();
                if trimmed.starts_with('{') || trimmed.starts_with('[') {
                    return Err(OpenApiError::Parse(json_error.to_string()));
                }
                nesting_within_limit(text)?;
                // An alias starts with `*`: a text without one has none to count.
                if text.contains('*') {
                    aliases_within_budget(text)?;
                }
                serde_yaml_ng::from_str(text).map_err(|e| OpenApiError::Parse(e.to_string()))?
            }
        };
        Self::from_value(document)
    }

    /// Check that `document` is an OpenAPI 3.0 or 3.1 document.
    pub(crate) fn from_value(document: Value) -> Result<Self, OpenApiError> {
        if !document.is_object() {
            return Err(OpenApiError::Invalid(
                "the document is not an object".into(),
            ));
        }
        let version = match (&document["openapi"], &document["swagger"]) {
            (Value::String(v), _) if v.starts_with("3.0") => "3.0",
            (Value::String(v), _) if v.starts_with("3.1") => "3.1",
            (Value::String(v), _) => return Err(OpenApiError::Version(v.clone())),
            (_, Value::String(v)) => return Err(OpenApiError::Version(format!("swagger {v}"))),
            _ => {
                return Err(OpenApiError::Invalid(
                    "no `openapi` field: not an OpenAPI document".into(),
                ));
            }
        };
        if !document["paths"].is_object() {
            return Err(OpenApiError::Invalid("`paths` is missing".into()));
        }
        Ok(Self {
            document,
            version: version.to_owned(),
        })
    }

    /// What the local reference `reference` (`#/components/...`) points to.
    fn pointee(&self, reference: &str) -> Result<&Value, OpenApiError> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| OpenApiError::Invalid(format!("external $ref {reference:?}")))?;
        self.document
            .pointer(pointer)
            .ok_or_else(|| OpenApiError::Invalid(format!("$ref {reference:?} points nowhere")))
    }

    /// `value`, with a `$ref` to another part of the document followed (and
    /// the one it points to, up to [`MAX_REF_CHAIN`]).
    pub(crate) fn resolve<'a>(&'a self, mut value: &'a Value) -> Result<&'a Value, OpenApiError> {
        for _ in 0..MAX_REF_CHAIN {
            match value.get("$ref").and_then(Value::as_str) {
                Some(reference) => value = self.pointee(reference)?,
                None => return Ok(value),
            }
        }
        Err(OpenApiError::Invalid(format!(
            "a $ref chain longer than {MAX_REF_CHAIN} (a cycle?)"
        )))
    }

    /// `schema` as JSON Schema 2020-12: references to component schemas
    /// rewritten to `#/$defs/Name`, those components (and the ones they
    /// reference, however deep or recursive) gathered into `$defs`.
    #[cfg(test)]
    pub(crate) fn schema(&self, schema: &Value) -> Result<Value, OpenApiError> {
        let mut defs = Defs::default();
        let mut root = self.gather(schema, &mut defs)?;
        with_defs(&mut root, defs);
        Ok(root)
    }

    /// [`schema`](Self::schema) for a part of a bigger schema: the rewritten
    /// part, its components added to `defs` (to place at the root), nearest
    /// first, until `defs` is full.
    pub(crate) fn gather(&self, schema: &Value, defs: &mut Defs) -> Result<Value, OpenApiError> {
        let mut root = schema.clone();
        let mut found: Vec<String> = Vec::new();
        self.rewrite(&mut root, &mut found)?;
        // Breadth first, so what is left out when full is the farthest.
        let mut queue: std::collections::VecDeque<String> = found.drain(..).collect();
        while let Some(name) = queue.pop_front() {
            if defs.map.contains_key(&name) {
                continue;
            }
            let reference = format!("#/components/schemas/{}", escape_pointer(&name));
            let mut component = self.pointee(&reference)?.clone();
            let bytes = serde_json::to_vec(&component).map_or(0, |bytes| bytes.len());
            // The first component always comes in; later ones while they fit.
            if defs.full() || (!defs.map.is_empty() && defs.bytes + bytes > MAX_DEFS_BYTES) {
                defs.map.insert(name.clone(), left_open(&name));
                continue;
            }
            // Claimed before its own references are followed: cycles end here.
            defs.map.insert(name.clone(), Value::Null);
            self.rewrite(&mut component, &mut found)?;
            queue.extend(found.drain(..));
            defs.bytes += bytes;
            defs.map.insert(name, component);
        }
        Ok(root)
    }

    /// Rewrite one schema tree in place, without recursion: component
    /// references to `$defs` (queued), other local references inlined once,
    /// and 3.0's dialect to 2020-12.
    fn rewrite(&self, schema: &mut Value, queue: &mut Vec<String>) -> Result<(), OpenApiError> {
        // Each node is a schema, or a map of names to schemas (`properties`…).
        let mut stack: Vec<(&mut Value, bool)> = vec![(schema, true)];
        let mut inlined = 0usize;
        while let Some((node, is_schema)) = stack.pop() {
            if !is_schema {
                match node {
                    Value::Object(named) => stack.extend(named.values_mut().map(|v| (v, true))),
                    Value::Array(items) => stack.extend(items.iter_mut().map(|v| (v, true))),
                    _ => {}
                }
                continue;
            }
            // A reference elsewhere than to a component schema: the node
            // becomes what it points to, then is rewritten like any other.
            let elsewhere = match node.get("$ref").and_then(Value::as_str) {
                Some(reference) if !reference.starts_with("#/components/schemas/") => {
                    Some(self.resolve(node)?.clone())
                }
                _ => None,
            };
            if let Some(target) = elsewhere {
                inlined += 1;
                if inlined > 10_000 {
                    return Err(OpenApiError::Invalid(
                        "too many inlined $refs (a cycle outside components?)".into(),
                    ));
                }
                *node = target;
                stack.push((node, true));
                continue;
            }
            match node {
                Value::Object(map) => {
                    if let Some(Value::String(reference)) = map.get("$ref")
                        && let Some(name) = reference.strip_prefix("#/components/schemas/")
                    {
                        let name = unescape_pointer(name);
                        map.insert("$ref".into(), json!(format!("#/$defs/{name}")));
                        queue.push(name);
                    }
                    if self.version == "3.0" {
                        from_openapi_30(map);
                    }
                    for (key, value) in map.iter_mut() {
                        let key = key.as_str();
                        if NAME_MAPS.contains(&key) {
                            stack.push((value, false));
                        } else if !DATA_KEYWORDS.contains(&key) {
                            stack.push((value, true));
                        }
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut().map(|v| (v, true))),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Put `defs` under `$defs` of the object `root`.
pub(crate) fn with_defs(root: &mut Value, defs: Defs) {
    if !defs.map.is_empty()
        && let Value::Object(map) = root
    {
        map.insert(
            "$defs".into(),
            Value::Object(defs.map.into_iter().collect::<Map<_, _>>()),
        );
    }
}

/// 3.0's schema dialect to 2020-12, in place: `nullable: true` adds
/// `"null"` to `type`; boolean `exclusiveMinimum`/`exclusiveMaximum` take
/// the number from `minimum`/`maximum`.
fn from_openapi_30(map: &mut Map<String, Value>) {
    if matches!(map.get("nullable"), Some(Value::Bool(_)))
        && map.remove("nullable") == Some(Value::Bool(true))
    {
        match map.get_mut("type") {
            Some(Value::String(kind)) => {
                let kind = std::mem::take(kind);
                map.insert("type".into(), json!([kind, "null"]));
            }
            Some(Value::Array(kinds)) if !kinds.contains(&json!("null")) => {
                kinds.push(json!("null"))
            }
            _ => {}
        }
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(flag)) = map.get(exclusive).cloned() {
            map.remove(exclusive);
            if flag && let Some(limit) = map.remove(bound) {
                map.insert(exclusive.into(), limit);
            }
        }
    }
}

/// A JSON Pointer token for `name` (`~` and `/` escaped).
fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The name a JSON Pointer token stands for.
fn unescape_pointer(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(components: Value) -> Spec {
        Spec::from_value(json!({
            "openapi": "3.0.3",
            "paths": {},
            "components": {"schemas": components},
        }))
        .unwrap()
    }

    #[test]
    fn recursive_components_become_defs_once() {
        let spec = spec(json!({
            "Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                "tag": {"$ref": "#/components/schemas/Tag"}
            }},
            "Tag": {"type": "string", "nullable": true}
        }));
        let schema = spec
            .schema(&json!({"$ref": "#/components/schemas/Node"}))
            .unwrap();
        assert_eq!(schema["$ref"], "#/$defs/Node");
        assert_eq!(
            schema["$defs"]["Node"]["properties"]["children"]["items"]["$ref"],
            "#/$defs/Node"
        );
        assert_eq!(schema["$defs"]["Tag"]["type"], json!(["string", "null"]));
        let compiled = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap();
        assert!(compiled.is_valid(&json!({"children": [{"children": [], "tag": null}]})));
        assert!(!compiled.is_valid(&json!({"children": [{"tag": 5}]})));
    }

    #[test]
    fn property_names_are_names_not_keywords() {
        let spec = spec(json!({"Item": {"type": "string"}}));
        let schema = spec
            .schema(&json!({"type": "object", "properties": {
                "examples": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}},
                "nullable": {"type": "boolean"},
                "pattern": {"type": "string", "nullable": true}
            }, "example": {"$ref": "#/components/schemas/Nowhere"}}))
            .unwrap();
        let properties = &schema["properties"];
        assert_eq!(properties["examples"]["items"]["$ref"], "#/$defs/Item");
        assert_eq!(properties["nullable"], json!({"type": "boolean"}));
        assert_eq!(properties["pattern"]["type"], json!(["string", "null"]));
        // An example is data: its `$ref` is left alone, not followed.
        assert_eq!(schema["example"]["$ref"], "#/components/schemas/Nowhere");
    }

    #[test]
    fn openapi_30_bounds_become_2020_12() {
        let spec = spec(json!({}));
        let schema = spec
            .schema(&json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false}))
            .unwrap();
        assert_eq!(
            schema,
            json!({"type": "integer", "exclusiveMinimum": 0, "maximum": 9})
        );
    }

    #[test]
    fn bad_references_are_errors_not_overflows() {
        let spec = spec(json!({"Loop": {"$ref": "#/components/schemas/Loop"}}));
        // A component that is only a reference to itself is still a valid $defs entry.
        assert!(
            spec.schema(&json!({"$ref": "#/components/schemas/Loop"}))
                .is_ok()
        );
        assert!(matches!(
            spec.schema(&json!({"$ref": "#/components/schemas/Missing"})),
            Err(OpenApiError::Invalid(message)) if message.contains("points nowhere")
        ));
        let looping = Spec::from_value(json!({
            "openapi": "3.1.0", "paths": {},
            "components": {"parameters": {"A": {"$ref": "#/components/parameters/B"}, "B": {"$ref": "#/components/parameters/A"}}}
        }))
        .unwrap();
        let error = looping
            .resolve(&json!({"$ref": "#/components/parameters/A"}))
            .unwrap_err();
        assert!(error.to_string().contains("a cycle?"), "{error}");
        // A document nested deeper than the parser allows is an error, not a
        // stack overflow.
        let depth = 2_000;
        let text = format!(
            "{{\"openapi\": \"3.0.0\", \"paths\": {}{}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert!(
            matches!(Spec::parse(&text), Err(OpenApiError::Parse(m)) if m.contains("recursion limit"))
        );
        let yaml = format!(
            "openapi: 3.0.0\npaths: {}{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert!(matches!(Spec::parse(&yaml), Err(OpenApiError::Parse(_))));
    }

    #[test]
    fn components_past_the_budget_are_left_open_and_the_nearest_kept() {
        // A chain A0 -> A1 -> … -> A199: only the first MAX_DEFS are expanded.
        let chain: Map<String, Value> = (0..200)
            .map(|i| {
                let next = json!({"$ref": format!("#/components/schemas/A{}", i + 1)});
                let schema = if i == 199 {
                    json!({"type": "string"})
                } else {
                    json!({"type": "object", "properties": {"next": next}})
                };
                (format!("A{i}"), schema)
            })
            .collect();
        let spec = spec(Value::Object(chain));
        let schema = spec
            .schema(&json!({"$ref": "#/components/schemas/A0"}))
            .unwrap();
        let defs = schema["$defs"].as_object().unwrap();
        assert_eq!(defs["A0"]["type"], "object");
        assert_eq!(defs[&format!("A{}", MAX_DEFS - 1)]["type"], "object");
        // The first one past the budget stands open, so every $ref still resolves.
        let open = &defs[&format!("A{MAX_DEFS}")];
        assert_eq!(open, &left_open(&format!("A{MAX_DEFS}")));
        assert_eq!(defs.len(), MAX_DEFS + 1);
        let validator = jsonschema::validator_for(&schema).unwrap();
        // Within the budget the schema still checks; past it anything goes.
        let nested = |depth: usize| (0..depth).fold(json!(7), |inner, _| json!({"next": inner}));
        assert!(!validator.is_valid(&nested(3)));
        assert!(validator.is_valid(&nested(MAX_DEFS)));
    }
}
