//! The `Tool` record: a callable, model-facing tool, plus its
//! behaviour hints and call examples.

use std::time::Duration;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::capability::Capability;
use super::handler::ToolHandler;
use super::schema::ToolSchema;

/// How a tool behaves, so a harness can schedule and guard it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolHints {
    /// The tool only reads; calling it changes nothing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_only: bool,
    /// The tool may make irreversible changes (deletes, payments, emails).
    #[serde(default, skip_serializing_if = "is_false")]
    pub destructive: bool,
    /// Calling the tool twice with the same input has the same effect as once.
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent: bool,
    /// The tool may run at the same time as other concurrency-safe calls of the same step.
    #[serde(default, skip_serializing_if = "is_false")]
    pub concurrency_safe: bool,
    /// The tool reaches beyond the agent's own world: the web, other
    /// people's systems (MCP's `openWorldHint`). A tool that declares a `Net`
    /// capability is open-world whatever this says.
    #[serde(default, skip_serializing_if = "is_false")]
    pub open_world: bool,
    /// A sync handler that is cheap and never blocks (arithmetic, formatting):
    /// it runs inline on the dispatching task, with no deadline, since none
    /// could stop it there. Other sync handlers run on the bounded tool pool
    /// under a deadline. Ignored for async handlers and when `timeout` is set.
    #[serde(default, skip_serializing_if = "is_false")]
    pub inline: bool,
    /// Every call runs in a child process confined to the tool's granted
    /// capabilities by the operating system (the [`ToolSandbox`] on the
    /// call's [`ToolContext`]); with no sandbox there, the call is refused.
    /// For tools that touch files or run programs, where the capability
    /// handles bind only the code that uses them.
    ///
    /// [`ToolSandbox`]: super::ToolSandbox
    /// [`ToolContext`]: super::ToolContext
    #[serde(default, skip_serializing_if = "is_false")]
    pub sandbox: bool,
    /// Longest a call may run before dispatch gives up on it. `None` uses the
    /// toolbox default ([`DEFAULT_TIMEOUT`](crate::tool::DEFAULT_TIMEOUT)); only
    /// an `inline` sync handler has none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "duration_ms")]
    pub timeout: Option<Duration>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

mod duration_ms {
    use super::*;
    use serde::Deserializer;

    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        value.map(|d| d.as_millis() as u64).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(deserializer)?.map(Duration::from_millis))
    }
}

impl ToolHints {
    /// True when every hint has its default value.
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// An example call shown to a model during discovery (what [`FunctionBuilder::example`](super::FunctionBuilder::example) adds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExample {
    /// When to make a call like this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The call's input; it must satisfy the tool's input schema.
    pub input: Value,
    /// What the call returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
}

impl ToolExample {
    /// An example with just an input.
    pub fn new(input: Value) -> Self {
        Self {
            description: None,
            input,
            output: None,
        }
    }

    /// Say when to make this call.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Show what the call returns.
    pub fn output(mut self, output: Value) -> Self {
        self.output = Some(output);
        self
    }
}

/// A callable, model-facing tool.
///
/// Most fields are derived by `#[tool]` or the
/// [`FunctionBuilder`](crate::tool::FunctionBuilder); the fields are public so
/// any of them can be overridden with struct-update syntax:
///
/// ```
/// # use agentry_core::tool::{Tool, ToolHandler};
/// # use serde_json::json;
/// # let add = Tool::new("myapp::add", json!({"type": "object"}), ToolHandler::sync(|_, _| Ok(json!(0))));
/// let renamed = Tool {
///     name: "add-numbers".into(),
///     description: Some("Add two integers and return the sum.".into()),
///     ..add
/// };
/// assert_eq!(renamed.name, "add-numbers");
/// ```
///
/// Serialising a tool gives its model-facing surface (the handler is left out).
#[derive(Debug, Clone)]
pub struct Tool {
    /// Unique identifier presented to the model. `#[tool]` defaults it to the function's Rust path.
    pub name: String,
    /// What the tool does and when to use it. `#[tool]` takes it from the doc comment.
    pub description: Option<String>,
    /// JSON Schema of the input object.
    pub input_schema: Value,
    /// JSON Schema of the output, when declared. Dispatch checks outputs against it.
    pub output_schema: Option<Value>,
    /// The host code dispatch runs.
    pub handler: ToolHandler,
    /// When true, the input reaches the handler as given. When false (the default),
    /// dispatch maps it onto the declared parameters and rejects names it does not declare.
    pub pass_input: bool,
    /// Behaviour hints: read-only, destructive, idempotent, concurrency-safe, timeout.
    pub hints: ToolHints,
    /// Example calls for discovery.
    pub examples: Vec<ToolExample>,
    /// What the tool needs outside the process. It runs with these ∩ the agent's grants.
    pub capabilities: Vec<Capability>,
}

impl Tool {
    /// A tool with a name, an input schema and a handler; everything else defaulted.
    pub fn new(name: impl Into<String>, input_schema: Value, handler: ToolHandler) -> Self {
        Self {
            name: name.into(),
            description: None,
            input_schema,
            output_schema: None,
            handler,
            pass_input: false,
            hints: ToolHints::default(),
            examples: Vec::new(),
            capabilities: Vec::new(),
        }
    }

    /// A tool whose model-facing fields come from a registered schema.
    pub fn from_schema(schema: &ToolSchema, handler: ToolHandler) -> Self {
        Self {
            description: schema.description.clone(),
            output_schema: schema.output_schema.clone(),
            ..Self::new(schema.name.clone(), schema.input_schema.clone(), handler)
        }
    }

    /// The tool's `{name, input_schema, output_schema?, description?}`.
    pub fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone(),
            description: self.description.clone(),
        }
    }

    /// Replace the name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Replace the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Replace the behaviour hints.
    pub fn with_hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// Declare a capability the tool needs.
    pub fn with_capability(mut self, capability: Capability) -> Self {
        self.capabilities.push(capability);
        self
    }

    /// Run every call in a sandbox (sets [`ToolHints::sandbox`]).
    pub fn sandboxed(mut self) -> Self {
        self.hints.sandbox = true;
        self
    }

    /// Set the per-call timeout.
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.hints.timeout = Some(timeout);
        self
    }
}

impl Serialize for Tool {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("Tool", 8)?;
        state.serialize_field("name", &self.name)?;
        if let Some(description) = &self.description {
            state.serialize_field("description", description)?;
        }
        state.serialize_field("input_schema", &self.input_schema)?;
        if let Some(output_schema) = &self.output_schema {
            state.serialize_field("output_schema", output_schema)?;
        }
        state.serialize_field("pass_input", &self.pass_input)?;
        if !self.hints.is_default() {
            state.serialize_field("hints", &self.hints)?;
        }
        if !self.examples.is_empty() {
            state.serialize_field("examples", &self.examples)?;
        }
        if !self.capabilities.is_empty() {
            state.serialize_field("capabilities", &self.capabilities)?;
        }
        state.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_the_model_facing_surface() {
        let tool = Tool::new(
            "web",
            json!({"type": "object"}),
            ToolHandler::sync(|_, _| Ok(Value::Null)),
        )
        .with_description("Search the web.")
        .with_timeout(Duration::from_millis(1500));
        assert_eq!(
            serde_json::to_value(&tool).unwrap(),
            json!({"name": "web", "description": "Search the web.", "input_schema": {"type": "object"},
                   "pass_input": false, "hints": {"timeout": 1500}})
        );
        let hints: ToolHints =
            serde_json::from_value(json!({"read_only": true, "timeout": 20})).unwrap();
        assert!(hints.read_only);
        assert_eq!(hints.timeout, Some(Duration::from_millis(20)));
    }
}
