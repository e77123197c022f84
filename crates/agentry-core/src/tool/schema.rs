//! JSON Schemas for tools: built from Rust types with `schemars` (JSON Schema
//! 2020-12), normalised for model providers, and kept in a process-global
//! registry so each tool's schema is computed once (seed 000's `schema-from-fn`).

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The model-facing description of a tool, without its handler:
/// `{name, input_schema, output_schema?, description?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// JSON Schema of the input object.
    pub input_schema: Value,
    /// JSON Schema of the output, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn generator() -> SchemaGenerator {
    SchemaGenerator::new(SchemaSettings::draft2020_12())
}

/// Builds an object schema one named property at a time.
///
/// Used by `#[tool]` (one property per parameter) and by the
/// [`FunctionBuilder`](crate::tool::FunctionBuilder) (one per `arg`).
pub struct ObjectSchemaBuilder {
    generator: SchemaGenerator,
    properties: Map<String, Value>,
    required: Vec<Value>,
}

impl Default for ObjectSchemaBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ObjectSchemaBuilder {
    /// An empty object schema.
    pub fn new() -> Self {
        Self {
            generator: generator(),
            properties: Map::new(),
            required: Vec::new(),
        }
    }

    /// Add a property whose schema comes from the Rust type `T`.
    pub fn property<T: JsonSchema>(
        &mut self,
        name: &str,
        description: Option<&str>,
        required: bool,
    ) -> &mut Self {
        let schema = self.generator.subschema_for::<T>().to_value();
        self.raw_property(name, schema, description, required)
    }

    /// Add a property with a hand-written JSON Schema.
    pub fn raw_property(
        &mut self,
        name: &str,
        mut schema: Value,
        description: Option<&str>,
        required: bool,
    ) -> &mut Self {
        if let (Some(text), Value::Object(object)) =
            (description.filter(|d| !d.is_empty()), &mut schema)
        {
            object.insert("description".into(), Value::String(text.to_owned()));
        }
        self.properties.insert(name.to_owned(), schema);
        let name = Value::String(name.to_owned());
        if required && !self.required.contains(&name) {
            self.required.push(name);
        } else if !required {
            self.required.retain(|existing| existing != &name);
        }
        self
    }

    /// True when no property was added.
    pub fn is_empty(&self) -> bool {
        self.properties.is_empty()
    }

    /// The finished schema: `{type: "object", properties, required}` plus `$defs` when needed.
    pub fn finish(&mut self) -> Value {
        let mut object = Map::new();
        object.insert("type".into(), json!("object"));
        object.insert("properties".into(), Value::Object(self.properties.clone()));
        if !self.required.is_empty() {
            object.insert("required".into(), Value::Array(self.required.clone()));
        }
        let definitions = self.generator.definitions();
        if !definitions.is_empty() {
            object.insert("$defs".into(), Value::Object(definitions.clone()));
        }
        let mut schema = Value::Object(object);
        normalize(&mut schema);
        schema
    }
}

/// The JSON Schema of a whole Rust type, without the `$schema` and `title` noise.
pub fn schema_for_type<T: JsonSchema>() -> Value {
    let mut schema = generator().into_root_schema_for::<T>().to_value();
    if let Value::Object(object) = &mut schema {
        object.remove("$schema");
        object.remove("title");
    }
    normalize(&mut schema);
    schema
}

/// Integer and float `format`s that schemars emits but JSON Schema does not
/// define; some providers reject unknown formats, so they are dropped.
const NUMERIC_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

/// Remove non-standard numeric formats everywhere in a schema.
pub fn normalize(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            let numeric_format = object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| NUMERIC_FORMATS.contains(&format));
            if numeric_format {
                object.remove("format");
            }
            object.values_mut().for_each(normalize);
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        _ => {}
    }
}

static REGISTRY: LazyLock<RwLock<HashMap<String, &'static ToolSchema>>> =
    LazyLock::new(Default::default);

/// The process-global schema registry: every `#[tool]` function's schema is
/// computed on first use, stored here, and served from here afterwards.
pub mod registry {
    use super::*;

    /// Store a schema and return the registered copy. When a schema with the
    /// same name is already registered, that one is kept and returned.
    pub fn register(schema: ToolSchema) -> &'static ToolSchema {
        let mut map = REGISTRY
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(existing) = map.get(&schema.name) {
            return existing;
        }
        let leaked: &'static ToolSchema = Box::leak(Box::new(schema));
        map.insert(leaked.name.clone(), leaked);
        leaked
    }

    /// The registered schema of the tool called `name`.
    pub fn get(name: &str) -> Option<&'static ToolSchema> {
        REGISTRY
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(name)
            .copied()
    }

    /// Every registered schema, sorted by name.
    pub fn all() -> Vec<&'static ToolSchema> {
        let map = REGISTRY
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut schemas: Vec<_> = map.values().copied().collect();
        schemas.sort_by(|a, b| a.name.cmp(&b.name));
        schemas
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Point {
        x: i32,
        y: i32,
    }

    #[test]
    fn object_schema_matches_the_seed_shape() {
        let mut builder = ObjectSchemaBuilder::new();
        builder.property::<String>("query", None, true);
        builder.property::<i64>("limit", None, true);
        assert_eq!(
            builder.finish(),
            json!({"type": "object",
                   "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                   "required": ["query", "limit"]})
        );
        assert_eq!(
            schema_for_type::<Vec<String>>(),
            json!({"type": "array", "items": {"type": "string"}})
        );
    }

    #[test]
    fn struct_params_use_defs_and_descriptions() {
        let mut builder = ObjectSchemaBuilder::new();
        builder.property::<Point>("at", Some("Where"), true);
        builder.property::<Option<u8>>("zoom", None, false);
        let schema = builder.finish();
        assert_eq!(
            schema["properties"]["at"],
            json!({"$ref": "#/$defs/Point", "description": "Where"})
        );
        assert_eq!(schema["required"], json!(["at"]));
        assert_eq!(
            schema["$defs"]["Point"]["properties"]["x"],
            json!({"type": "integer"})
        );
        assert_eq!(schema["properties"]["zoom"]["minimum"], json!(0));
    }

    #[test]
    fn registry_keeps_the_first_schema() {
        let first = registry::register(ToolSchema {
            name: "test::registry_once".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            description: Some("first".into()),
        });
        let second = registry::register(ToolSchema {
            description: Some("second".into()),
            ..first.clone()
        });
        assert!(std::ptr::eq(first, second));
        assert_eq!(
            registry::get("test::registry_once")
                .unwrap()
                .description
                .as_deref(),
            Some("first")
        );
        assert!(
            registry::all()
                .iter()
                .any(|s| s.name == "test::registry_once")
        );
    }
}
