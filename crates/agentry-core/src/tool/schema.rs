//! JSON Schemas for tools: built from Rust types with `schemars` (JSON Schema
//! 2020-12), normalised for model providers, and kept in a process-global
//! registry so each tool's schema is computed once (what `f::schema()` of a `#[tool]` function serves).

use std::collections::{BTreeSet, HashMap};
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
    pub(crate) fn raw_property(
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
pub(crate) fn normalize(schema: &mut Value) {
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

/// Two different schemas registered under one tool name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two different tools are registered as {name:?}; give one of them another name \
     (#[tool(name = \"...\")]): a name must identify one schema"
)]
pub struct SchemaConflict {
    /// The contested name.
    pub name: String,
}

#[derive(Default)]
struct Registry {
    schemas: HashMap<String, &'static ToolSchema>,
    conflicted: BTreeSet<String>,
}

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(Default::default);

/// The process-global schema registry: every `#[tool]` function's schema is
/// computed on first use and listed here by name.
///
/// Each function keeps its own schema: two functions given the same name
/// never share one. Registering a name twice with the same schema is a no-op;
/// with a different schema it is a [`SchemaConflict`], and the name is no
/// longer served by [`get`](registry::get).
pub mod registry {
    use super::*;

    /// List `schema` under its name. `Err` when another, different schema is
    /// already registered under that name (the name then stays contested).
    pub fn register(schema: &'static ToolSchema) -> Result<(), SchemaConflict> {
        let mut registry = REGISTRY
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let conflict = || SchemaConflict {
            name: schema.name.clone(),
        };
        if registry.conflicted.contains(&schema.name) {
            return Err(conflict());
        }
        match registry.schemas.get(&schema.name) {
            Some(existing) if std::ptr::eq(*existing, schema) || **existing == *schema => Ok(()),
            Some(_) => {
                registry.schemas.remove(&schema.name);
                registry.conflicted.insert(schema.name.clone());
                Err(conflict())
            }
            None => {
                registry.schemas.insert(schema.name.clone(), schema);
                Ok(())
            }
        }
    }

    /// The registered schema of the tool called `name`; `None` when no tool
    /// or more than one (see [`lookup`]) registered that name.
    pub fn get(name: &str) -> Option<&'static ToolSchema> {
        lookup(name).ok().flatten()
    }

    /// The registered schema of the tool called `name`, telling a contested
    /// name apart from an unknown one.
    pub fn lookup(name: &str) -> Result<Option<&'static ToolSchema>, SchemaConflict> {
        let registry = REGISTRY
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if registry.conflicted.contains(name) {
            return Err(SchemaConflict {
                name: name.to_owned(),
            });
        }
        Ok(registry.schemas.get(name).copied())
    }

    /// Every registered schema, sorted by name (contested names left out).
    pub fn all() -> Vec<&'static ToolSchema> {
        let registry = REGISTRY
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut schemas: Vec<_> = registry.schemas.values().copied().collect();
        schemas.sort_by(|a, b| a.name.cmp(&b.name));
        schemas
    }

    /// Names registered with more than one schema, sorted.
    pub fn conflicts() -> Vec<String> {
        REGISTRY
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .conflicted
            .iter()
            .cloned()
            .collect()
    }

    /// What `#[tool]` calls once per function: keep `schema` as the
    /// function's own (leaked once, for `'static`), list it, and log a
    /// conflict as an error without giving the function another's schema.
    #[doc(hidden)]
    pub fn register_own(schema: ToolSchema) -> &'static ToolSchema {
        let own: &'static ToolSchema = Box::leak(Box::new(schema));
        if let Err(conflict) = register(own) {
            tracing::error!(%conflict, "tool schema conflict");
        }
        own
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
    fn object_schema_has_the_plain_shape() {
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
    fn registry_refuses_a_second_schema_under_one_name() {
        let schema = |description: &str| ToolSchema {
            name: "test::registry_once".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            description: Some(description.into()),
        };
        let first = registry::register_own(schema("first"));
        assert_eq!(first.description.as_deref(), Some("first"));
        assert_eq!(registry::get("test::registry_once"), Some(first));
        // The same schema again (another copy) is not a conflict.
        assert_eq!(
            registry::register(Box::leak(Box::new(schema("first")))),
            Ok(())
        );
        // A different one is, and the name stops being served.
        let second = registry::register_own(schema("second"));
        assert_eq!(
            second.description.as_deref(),
            Some("second"),
            "each keeps its own"
        );
        assert_eq!(
            registry::lookup("test::registry_once"),
            Err(SchemaConflict {
                name: "test::registry_once".into()
            })
        );
        assert_eq!(registry::get("test::registry_once"), None);
        assert!(registry::conflicts().contains(&"test::registry_once".to_owned()));
        assert!(
            registry::all()
                .iter()
                .all(|s| s.name != "test::registry_once")
        );
        assert_eq!(registry::lookup("test::never_registered"), Ok(None));
    }
}
