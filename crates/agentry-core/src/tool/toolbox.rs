//! `Toolbox`: the normalised tool set of an agent (what [`for_agent`]
//! returns), with compiled validators and wire names computed once when it is built.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::dispatch::runs_inline;
use super::handler::RawFn;
use super::tool::Tool;
use super::validate::CompiledSchema;
use super::wire::{WireNameCollision, assign_wire_names};

/// How long an async tool may run when neither it nor the toolbox says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Most bytes of a tool result's text that reach the model when the toolbox
/// does not say otherwise: 1 MiB. Far above what a model can use (a 128k-token
/// context holds about half a megabyte of text), so no useful result is cut,
/// while a tool that returns a 200 MB response cannot flood the model, the
/// journal or memory downstream.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;

/// Why a toolbox could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolboxError {
    /// Two tools share a name.
    #[error("two tools are named {0:?}; tool names must be unique")]
    DuplicateName(String),
    /// A tool has an empty name.
    #[error("a tool has an empty name")]
    EmptyName,
    /// A tool's input or output schema is not a valid JSON Schema.
    #[error("tool {tool:?} has an invalid {which} schema: {message}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// What the schema compiler said.
        message: String,
    },
    /// Two names map to the same provider wire name.
    #[error(transparent)]
    WireName(#[from] WireNameCollision),
}

/// Names to entry positions, sorted for binary search: looking a name up
/// compares a few strings and hashes nothing, which is what a call pays.
struct NameIndex(Box<[(Box<str>, usize)]>);

impl NameIndex {
    fn new(names: impl IntoIterator<Item = (String, usize)>) -> Self {
        let mut names: Vec<(Box<str>, usize)> = names
            .into_iter()
            .map(|(name, index)| (name.into_boxed_str(), index))
            .collect();
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Self(names.into_boxed_slice())
    }

    fn get(&self, name: &str) -> Option<&usize> {
        let found = self
            .0
            .binary_search_by(|(known, _)| known.as_ref().cmp(name));
        found.ok().map(|at| &self.0[at].1)
    }
}

/// One tool plus everything dispatch precomputes for it.
pub(crate) struct Entry {
    pub(crate) tool: Tool,
    pub(crate) wire_name: String,
    /// The input schema; closed (`additionalProperties: false`) when names
    /// are checked, so one validation decides the common, valid case.
    pub(crate) input: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    /// Names the input may use, when dispatch checks them (`pass_input` false and a closed object).
    pub(crate) declared: Option<HashSet<String>>,
    /// The handler's typed JSON entry, when it agrees with the input schema.
    pub(crate) fast: Option<Arc<RawFn>>,
}

pub(crate) struct Inner {
    /// Shared, so a toolbox made from another reuses its compiled schemas.
    pub(crate) entries: Vec<Arc<Entry>>,
    by_name: NameIndex,
    by_wire: NameIndex,
}

/// An agent's tools, ready to advertise and dispatch.
///
/// Built once with [`Toolbox::for_agent`]; cheap to clone and safe to share
/// between tasks. Each tool's schemas are compiled when the toolbox is built.
#[derive(Clone)]
pub struct Toolbox {
    pub(crate) inner: Arc<Inner>,
    pub(crate) default_timeout: Duration,
    pub(crate) max_result_bytes: usize,
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.tools().map(|tool| &tool.name))
            .finish()
    }
}

impl Toolbox {
    /// Normalise an agent's tools (from `#[tool]` functions, the builder, or
    /// hand-made [`Tool`] records) into a toolbox.
    ///
    /// Fails on duplicate or empty names, schemas that do not compile, and
    /// wire-name collisions that cannot be resolved.
    pub fn for_agent<I>(entries: I) -> Result<Self, ToolboxError>
    where
        I: IntoIterator,
        I::Item: Into<Tool>,
    {
        let parts = entries
            .into_iter()
            .map(|entry| Part::New(Box::new(entry.into())))
            .collect();
        Self::assemble(parts)
    }

    /// This toolbox and `more` tools after its own. The tools already here
    /// keep their compiled schemas; only the new ones are compiled, so adding
    /// a few tools to a big toolbox is cheap. Fails as
    /// [`for_agent`](Self::for_agent) does (a name taken, say).
    pub fn with_tools<I>(&self, more: I) -> Result<Self, ToolboxError>
    where
        I: IntoIterator,
        I::Item: Into<Tool>,
    {
        let parts = self
            .inner
            .entries
            .iter()
            .map(|entry| Part::Built(entry.clone()))
            .chain(
                more.into_iter()
                    .map(|tool| Part::New(Box::new(tool.into()))),
            )
            .collect();
        Ok(Self::assemble(parts)?.with_limits_of(self))
    }

    /// This toolbox without the tools `drop` names; the rest keep their
    /// compiled schemas.
    pub fn without(&self, drop: impl Fn(&Tool) -> bool) -> Self {
        let parts = self
            .inner
            .entries
            .iter()
            .filter(|entry| !drop(&entry.tool))
            .map(|entry| Part::Built(entry.clone()))
            .collect();
        Self::assemble(parts)
            .expect("a subset of a valid toolbox is valid")
            .with_limits_of(self)
    }

    /// These tools under `other`'s default timeout and result limit.
    fn with_limits_of(mut self, other: &Toolbox) -> Self {
        self.default_timeout = other.default_timeout;
        self.max_result_bytes = other.max_result_bytes;
        self
    }

    fn assemble(parts: Vec<Part>) -> Result<Self, ToolboxError> {
        let mut by_name = HashMap::with_capacity(parts.len());
        for (index, part) in parts.iter().enumerate() {
            let name = &part.tool().name;
            if name.is_empty() {
                return Err(ToolboxError::EmptyName);
            }
            if by_name.insert(name.clone(), index).is_some() {
                return Err(ToolboxError::DuplicateName(name.clone()));
            }
        }
        let names: Vec<&str> = parts.iter().map(|part| part.tool().name.as_str()).collect();
        let wires = assign_wire_names(&names)?;
        let by_name = NameIndex::new(by_name);
        let by_wire = NameIndex::new(wires.iter().enumerate().map(|(i, wire)| (wire.clone(), i)));
        let entries = parts
            .into_iter()
            .zip(wires)
            .map(|(part, wire_name)| match part {
                // Compiled already, under the same wire name: shared as it is.
                Part::Built(entry) if entry.wire_name == wire_name => Ok(entry),
                Part::Built(entry) => compile_entry(entry.tool.clone(), wire_name).map(Arc::new),
                Part::New(tool) => compile_entry(*tool, wire_name).map(Arc::new),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            inner: Arc::new(Inner {
                entries,
                by_name,
                by_wire,
            }),
            default_timeout: DEFAULT_TIMEOUT,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        })
    }

    /// A toolbox with no tools.
    pub fn empty() -> Self {
        Self::for_agent(Vec::<Tool>::new()).expect("an empty toolbox is valid")
    }

    /// How long an async tool may run when it does not say.
    pub fn default_timeout(&self) -> Duration {
        self.default_timeout
    }

    /// The same tools with a different default timeout for async tools.
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Most bytes of a result's text dispatch hands back (default
    /// [`DEFAULT_MAX_RESULT_BYTES`]); see [`with_max_result_bytes`](Self::with_max_result_bytes).
    pub fn max_result_bytes(&self) -> usize {
        self.max_result_bytes
    }

    /// The same tools with results cut to `max_bytes` bytes of text: every
    /// result dispatch returns, the tool's output or an error message, is
    /// cut as [`ToolResult::cut_to`](crate::tool::ToolResult::cut_to) says
    /// and says it was cut and how long it was.
    pub fn with_max_result_bytes(mut self, max_bytes: usize) -> Self {
        self.max_result_bytes = max_bytes;
        self
    }

    /// The tool called `name`, or `None`.
    pub fn find_by_name(&self, name: &str) -> Option<&Tool> {
        self.inner
            .by_name
            .get(name)
            .map(|&i| &self.inner.entries[i].tool)
    }

    /// The tool a model's call names: by name first, then by wire name.
    pub fn find_for_call(&self, name: &str) -> Option<&Tool> {
        self.entry_for_call(name).map(|entry| &entry.tool)
    }

    /// The tool a model called: by name first, then by wire name.
    pub(crate) fn entry_for_call(&self, name: &str) -> Option<&Entry> {
        let index = self
            .inner
            .by_name
            .get(name)
            .or_else(|| self.inner.by_wire.get(name))?;
        Some(&self.inner.entries[*index])
    }

    /// The provider-safe name of the tool called `name`.
    pub fn wire_name(&self, name: &str) -> Option<&str> {
        self.inner
            .by_name
            .get(name)
            .map(|&i| self.inner.entries[i].wire_name.as_str())
    }

    /// Every tool, in the order given to [`for_agent`](Self::for_agent).
    pub fn tools(&self) -> impl ExactSizeIterator<Item = &Tool> {
        self.inner.entries.iter().map(|entry| &entry.tool)
    }

    /// Every tool's name, in order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.tools().map(|tool| tool.name.as_str())
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    /// True when there are no tools.
    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    /// The tools as a plain list, e.g. to add more and build a new toolbox.
    pub fn to_vec(&self) -> Vec<Tool> {
        self.tools().cloned().collect()
    }
}

/// A tool on its way into a toolbox: compiled already, or not yet.
enum Part {
    Built(Arc<Entry>),
    New(Box<Tool>),
}

impl Part {
    fn tool(&self) -> &Tool {
        match self {
            Part::Built(entry) => &entry.tool,
            Part::New(tool) => tool,
        }
    }
}

fn compile_entry(tool: Tool, wire_name: String) -> Result<Entry, ToolboxError> {
    let invalid = |which, message| ToolboxError::InvalidSchema {
        tool: tool.name.clone(),
        which,
        message,
    };
    let declared = if tool.pass_input {
        None
    } else {
        declared_names(&tool.input_schema)
    };
    let input = match (&declared, &tool.input_schema) {
        (Some(_), Value::Object(object)) => {
            let mut closed = object.clone();
            closed.insert("additionalProperties".into(), Value::Bool(false));
            CompiledSchema::compile(&Value::Object(closed))
        }
        _ => CompiledSchema::compile(&tool.input_schema),
    }
    .map_err(|m| invalid("input", m))?;
    let output = match &tool.output_schema {
        Some(schema) => Some(CompiledSchema::compile(schema).map_err(|m| invalid("output", m))?),
        None => None,
    };
    let fast = tool
        .handler
        .json_fast_path()
        .filter(|fast| !tool.pass_input && runs_inline(&tool) && *fast.schema == tool.input_schema)
        .map(|fast| fast.run.clone());
    Ok(Entry {
        tool,
        wire_name,
        input,
        output,
        declared,
        fast,
    })
}

/// The property names of a closed object schema: one with `properties` and no
/// `additionalProperties` that admits more.
fn declared_names(schema: &Value) -> Option<HashSet<String>> {
    let properties = schema.get("properties")?.as_object()?;
    match schema.get("additionalProperties") {
        None | Some(Value::Bool(false)) => Some(properties.keys().cloned().collect()),
        Some(_) => None,
    }
}

/// Normalise tools into a [`Toolbox`] (the free form of [`Toolbox::for_agent`]).
pub fn for_agent<I>(entries: I) -> Result<Toolbox, ToolboxError>
where
    I: IntoIterator,
    I::Item: Into<Tool>,
{
    Toolbox::for_agent(entries)
}

/// The tool called `name`, or `None` (the free form of [`Toolbox::find_by_name`]).
pub fn find_by_name<'a>(tools: &'a Toolbox, name: &str) -> Option<&'a Tool> {
    tools.find_by_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolHandler;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool::new(
            name,
            json!({"type": "object"}),
            ToolHandler::sync(|_, _| Ok(Value::Null)),
        )
    }

    #[test]
    fn builds_and_looks_up() {
        let toolbox = Toolbox::for_agent([tool("myapp::add"), tool("web")]).unwrap();
        assert_eq!(toolbox.names().collect::<Vec<_>>(), ["myapp::add", "web"]);
        assert_eq!(toolbox.find_by_name("web").unwrap().name, "web");
        assert!(toolbox.find_by_name("nope").is_none());
        assert_eq!(toolbox.wire_name("myapp::add"), Some("myapp__add"));
        assert_eq!(find_by_name(&toolbox, "web").unwrap().name, "web");
        assert_eq!(format!("{toolbox:?}"), r#"["myapp::add", "web"]"#);
    }

    #[test]
    fn rejects_bad_sets() {
        assert_eq!(
            Toolbox::for_agent([tool("a"), tool("a")]).unwrap_err(),
            ToolboxError::DuplicateName("a".into())
        );
        assert_eq!(
            Toolbox::for_agent([tool("")]).unwrap_err(),
            ToolboxError::EmptyName
        );
        let bad = Tool {
            input_schema: json!({"type": "nonsense"}),
            ..tool("bad")
        };
        assert!(matches!(
            Toolbox::for_agent([bad]).unwrap_err(),
            ToolboxError::InvalidSchema { which: "input", .. }
        ));
    }

    #[test]
    fn declared_names_only_for_closed_objects() {
        let closed = json!({"type": "object", "properties": {"a": {}}});
        assert_eq!(declared_names(&closed).unwrap().len(), 1);
        let open = json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true});
        assert!(declared_names(&open).is_none());
        assert!(declared_names(&json!({"oneOf": []})).is_none());
    }
}
