//! The function builder: name, description, namespace, typed
//! arguments, returns, examples and a sync or async handler, built into the
//! same [`Tool`] that `#[tool]` produces.

use schemars::JsonSchema;
use serde_json::Value;

use super::capability::Capability;
use super::handler::ToolHandler;
use super::into_handler::IntoHandler;
use super::schema::{ObjectSchemaBuilder, schema_for_type};
use super::tool::{Tool, ToolExample, ToolHints};
use super::validate::CompiledSchema;

/// The namespace of a function built without [`namespace`](FunctionBuilder::namespace).
pub const DEFAULT_NAMESPACE: &str = "utils";

/// Names reserved by agent runtimes. Neither a namespace nor a
/// function may use one, in any spelling (`llmQuery`, `llm_query`, `LLM-Query`).
pub const RESERVED_NAMES: &[&str] = &[
    "inputs",
    "llmQuery",
    "final",
    "askClarification",
    "reportSuccess",
    "reportFailure",
    "inspectRuntime",
    "discover",
    "recall",
];

/// Why [`FunctionBuilder::build`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The name or namespace is reserved.
    #[error("{what} {name:?} is reserved by the agent runtime (reserved: {list}); choose another", list = RESERVED_NAMES.join(", "))]
    Reserved {
        /// `name` or `namespace`.
        what: &'static str,
        /// The offending value.
        name: String,
    },
    /// The name or namespace is empty or not an identifier.
    #[error(
        "{what} {name:?} must start with a letter and contain only letters, digits, '_' and '-'"
    )]
    InvalidIdentifier {
        /// `name` or `namespace`.
        what: &'static str,
        /// The offending value.
        name: String,
    },
    /// `build` was called before `handler`.
    #[error("function {0:?} has no handler")]
    MissingHandler(String),
    /// An argument or return schema is not valid JSON Schema.
    #[error("function {name:?} has an invalid {which} schema: {message}")]
    InvalidSchema {
        /// The function.
        name: String,
        /// `argument` or `return`.
        which: &'static str,
        /// What the schema compiler said.
        message: String,
    },
    /// An example's input does not satisfy the argument schema.
    #[error("example {index} of {name:?} does not match the argument schema:\n{problems}")]
    InvalidExample {
        /// The function.
        name: String,
        /// Index of the example.
        index: usize,
        /// One line per violation.
        problems: String,
    },
}

fn is_reserved(name: &str) -> bool {
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let folded = fold(name);
    RESERVED_NAMES
        .iter()
        .any(|reserved| fold(reserved) == folded)
}

fn check_identifier(what: &'static str, name: &str) -> Result<(), BuildError> {
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(BuildError::InvalidIdentifier {
            what,
            name: name.to_owned(),
        });
    }
    if is_reserved(name) {
        return Err(BuildError::Reserved {
            what,
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// `namespace` is an identifier and not reserved (a group's, or a function's).
pub(crate) fn check_namespace(namespace: &str) -> Result<(), BuildError> {
    check_identifier("namespace", namespace)
}

enum Returns {
    Nothing,
    Schema(Value),
    Fields(Box<ObjectSchemaBuilder>),
}

/// Builder for a namespaced tool. Start with [`function`].
///
/// ```
/// use agentry_core::tool::{ToolExample, function};
/// use serde_json::{Value, json};
///
/// let find_policy = function("find_policy")
///     .namespace("kb")
///     .description("Find policy snippets that answer a customer question.")
///     .arg::<String>("query", "What the customer asked about")
///     .optional_arg::<u32>("limit", "How many snippets to return")
///     .returns::<Vec<String>>()
///     .example(ToolExample::new(json!({"query": "refund window"})))
///     .handler(|args: Value| Ok::<_, String>(vec![format!("policy for {}", args["query"])]))
///     .build()
///     .unwrap();
/// assert_eq!(find_policy.name, "kb.find_policy");
/// ```
pub struct FunctionBuilder {
    name: String,
    namespace: Option<String>,
    description: Option<String>,
    args: ObjectSchemaBuilder,
    whole_args: Option<Value>,
    returns: Returns,
    examples: Vec<ToolExample>,
    hints: ToolHints,
    pass_input: bool,
    capabilities: Vec<Capability>,
    handler: Option<ToolHandler>,
}

/// Start building a function called `name`.
pub fn function(name: impl Into<String>) -> FunctionBuilder {
    FunctionBuilder {
        name: name.into(),
        namespace: None,
        description: None,
        args: ObjectSchemaBuilder::new(),
        whole_args: None,
        returns: Returns::Nothing,
        examples: Vec::new(),
        hints: ToolHints::default(),
        pass_input: false,
        capabilities: Vec::new(),
        handler: None,
    }
}

impl FunctionBuilder {
    /// Explain when the model should use the tool.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Put the tool under a namespace: the model calls it as `namespace.name`.
    /// Defaults to [`DEFAULT_NAMESPACE`].
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Add a required argument whose schema comes from `T`.
    pub fn arg<T: JsonSchema>(mut self, name: &str, description: &str) -> Self {
        self.args.property::<T>(name, Some(description), true);
        self
    }

    /// Add an optional argument whose schema comes from `T`.
    pub fn optional_arg<T: JsonSchema>(mut self, name: &str, description: &str) -> Self {
        self.args.property::<T>(name, Some(description), false);
        self
    }

    /// Add an argument with a hand-written JSON Schema.
    pub fn arg_schema(
        mut self,
        name: &str,
        schema: Value,
        description: &str,
        required: bool,
    ) -> Self {
        self.args
            .raw_property(name, schema, Some(description), required);
        self
    }

    /// Take the whole argument object's schema from `T` (replaces individual `arg`s).
    pub fn args<T: JsonSchema>(mut self) -> Self {
        self.whole_args = Some(schema_for_type::<T>());
        self
    }

    /// Declare the return value's type.
    pub fn returns<T: JsonSchema>(mut self) -> Self {
        self.returns = Returns::Schema(schema_for_type::<T>());
        self
    }

    /// Declare the return value with a hand-written JSON Schema.
    pub fn returns_schema(mut self, schema: Value) -> Self {
        self.returns = Returns::Schema(schema);
        self
    }

    /// Add one named field to an object return value.
    pub fn returns_field<T: JsonSchema>(mut self, name: &str, description: &str) -> Self {
        if !matches!(self.returns, Returns::Fields(_)) {
            self.returns = Returns::Fields(Box::default());
        }
        if let Returns::Fields(fields) = &mut self.returns {
            fields.property::<T>(name, Some(description), true);
        }
        self
    }

    /// Add an example call for discovery.
    pub fn example(mut self, example: ToolExample) -> Self {
        self.examples.push(example);
        self
    }

    /// Add several example calls.
    pub fn examples(mut self, examples: impl IntoIterator<Item = ToolExample>) -> Self {
        self.examples.extend(examples);
        self
    }

    /// Set behaviour hints (read-only, destructive, idempotent, concurrency-safe, timeout).
    pub fn hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// Run every call in a child process confined by the operating system
    /// to the tool's granted capabilities ([`ToolHints::sandbox`]). Call it
    /// after [`hints`](Self::hints), which replaces every hint.
    pub fn sandboxed(mut self) -> Self {
        self.hints.sandbox = true;
        self
    }

    /// Declare a capability the tool needs (it runs with these ∩ the agent's grants).
    pub fn capability(mut self, capability: Capability) -> Self {
        self.capabilities.push(capability);
        self
    }

    /// Hand the input to the handler as given, without checking argument names.
    pub fn pass_input(mut self, pass_input: bool) -> Self {
        self.pass_input = pass_input;
        self
    }

    /// The host code the tool runs: a closure taking the arguments (and,
    /// optionally, the request context; sync or async), or a ready
    /// [`ToolHandler`]. See [`IntoHandler`].
    pub fn handler<Shape>(mut self, handler: impl IntoHandler<Shape>) -> Self {
        self.handler = Some(handler.into_handler());
        self
    }

    /// Produce the tool, checking the name, namespace, schemas and examples.
    pub fn build(mut self) -> Result<Tool, BuildError> {
        check_identifier("name", &self.name)?;
        let namespace = self
            .namespace
            .take()
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        check_identifier("namespace", &namespace)?;
        let full_name = format!("{namespace}.{}", self.name);
        let handler = self
            .handler
            .take()
            .ok_or_else(|| BuildError::MissingHandler(full_name.clone()))?;
        let input_schema = self.whole_args.take().unwrap_or_else(|| self.args.finish());
        let output_schema = match &mut self.returns {
            Returns::Nothing => None,
            Returns::Schema(schema) => Some(schema.clone()),
            Returns::Fields(fields) => Some(fields.finish()),
        };
        let invalid = |which, message| BuildError::InvalidSchema {
            name: full_name.clone(),
            which,
            message,
        };
        let compiled =
            CompiledSchema::compile(&input_schema).map_err(|m| invalid("argument", m))?;
        if let Some(schema) = &output_schema {
            CompiledSchema::compile(schema).map_err(|m| invalid("return", m))?;
        }
        for (index, example) in self.examples.iter().enumerate() {
            if let Some(lines) = compiled.violations(&example.input) {
                return Err(BuildError::InvalidExample {
                    name: full_name,
                    index,
                    problems: lines.join("\n"),
                });
            }
        }
        Ok(Tool {
            name: full_name,
            description: self.description,
            input_schema,
            output_schema,
            handler,
            pass_input: self.pass_input,
            hints: self.hints,
            examples: self.examples,
            capabilities: self.capabilities,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn noop() -> impl Fn(Value) -> Result<Value, String> + Send + Sync + 'static {
        |_| Ok(Value::Null)
    }

    #[test]
    fn default_namespace_is_utils() {
        let tool = function("echo").handler(noop()).build().unwrap();
        assert_eq!(tool.name, "utils.echo");
        assert_eq!(
            tool.input_schema,
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn reserved_names_are_rejected_in_any_spelling() {
        for name in ["final", "llmQuery", "llm_query", "LLM-Query", "discover"] {
            let error = function(name).handler(noop()).build().unwrap_err();
            assert!(
                matches!(error, BuildError::Reserved { what: "name", .. }),
                "{name}"
            );
        }
        let error = function("ok")
            .namespace("recall")
            .handler(noop())
            .build()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "namespace \"recall\" is reserved by the agent runtime (reserved: inputs, llmQuery, final, \
             askClarification, reportSuccess, reportFailure, inspectRuntime, discover, recall); choose another"
        );
        assert!(function("finalize").handler(noop()).build().is_ok());
    }

    #[test]
    fn identifiers_and_handlers_are_checked() {
        assert!(matches!(
            function("kb.find").handler(noop()).build().unwrap_err(),
            BuildError::InvalidIdentifier { .. }
        ));
        assert_eq!(
            function("x").build().unwrap_err(),
            BuildError::MissingHandler("utils.x".into())
        );
    }

    #[test]
    fn examples_must_match_the_arguments() {
        let error = function("find")
            .arg::<String>("query", "q")
            .example(ToolExample::new(json!({"query": 3})))
            .handler(noop())
            .build()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "example 0 of \"utils.find\" does not match the argument schema:\n- /query: 3 is not of type \"string\""
        );
    }

    #[test]
    fn returns_fields_build_an_object() {
        let tool = function("lookup")
            .returns_field::<f64>("price", "Price in EUR")
            .returns_field::<bool>("in_stock", "Available now")
            .handler(noop())
            .build()
            .unwrap();
        assert_eq!(
            tool.output_schema.unwrap(),
            json!({"type": "object", "properties": {
                "price": {"type": "number", "description": "Price in EUR"},
                "in_stock": {"type": "boolean", "description": "Available now"}},
                "required": ["price", "in_stock"]})
        );
    }
}
