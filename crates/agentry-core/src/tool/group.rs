//! Function groups: a module of tools under one namespace, with
//! the title, description and selection criteria a model reads before it
//! loads the module's schemas. Calls read `kb.find_policy`.

use super::builder::{BuildError, check_namespace};
use super::tool::Tool;

/// A function group: `{namespace, title, description, selection_criteria,
/// always_include, tools}`. Give groups to
/// `AgentBuilder::group` (agentry-agent); with
/// `discovery` on, the model starts
/// with the groups' summaries and calls `discover` to load their tools.
///
/// ```
/// use agentry_core::tool::{ToolGroup, function};
/// use serde_json::Value;
///
/// let find_policy = function("find_policy")
///     .arg::<String>("topic", "What the policy is about")
///     .handler(|_: Value| Ok::<_, String>("Refunds within 30 days."))
///     .build()?;
/// let kb = ToolGroup::new("kb", "Knowledge Base")
///     .selection_criteria("Use for policy or documentation lookup.")
///     .tool(find_policy);
/// let tools = kb.tools()?;
/// assert_eq!(tools[0].name, "kb.find_policy");
/// assert_eq!(kb.summary(), "- kb (Knowledge Base): Use for policy or documentation lookup.");
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ToolGroup {
    /// The namespace every tool of the group is called under.
    pub namespace: String,
    /// A short title.
    pub title: String,
    /// What the module is.
    pub description: Option<String>,
    /// When the model should choose the module.
    pub selection_criteria: Option<String>,
    /// Keep the group's schemas in the prompt even with discovery on.
    pub always_include: bool,
    /// The tools, named after the group's namespace when the agent is built.
    pub members: Vec<Tool>,
}

impl ToolGroup {
    /// An empty group.
    pub fn new(namespace: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            title: title.into(),
            description: None,
            selection_criteria: None,
            always_include: false,
            members: Vec::new(),
        }
    }

    /// What the module is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// When the model should choose the module.
    pub fn selection_criteria(mut self, criteria: impl Into<String>) -> Self {
        self.selection_criteria = Some(criteria.into());
        self
    }

    /// Keep the group visible (its schemas in every prompt) with discovery on.
    pub fn always_include(mut self, always: bool) -> Self {
        self.always_include = always;
        self
    }

    /// Add a tool (a function, a child agent's `as_tool()`, an MCP tool).
    pub fn tool(mut self, tool: impl Into<Tool>) -> Self {
        self.members.push(tool.into());
        self
    }

    /// Add several tools.
    pub fn tools_from<I>(mut self, tools: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Tool>,
    {
        self.members.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The group's tools, each named `namespace.function` (a namespace the
    /// tool had is replaced by the group's); an error when the namespace is
    /// not an identifier or is reserved.
    pub fn tools(&self) -> Result<Vec<Tool>, BuildError> {
        check_namespace(&self.namespace)?;
        Ok(self
            .members
            .iter()
            .map(|tool| {
                let function = tool.name.rsplit('.').next().unwrap_or(&tool.name);
                let mut tool = tool.clone();
                tool.name = format!("{}.{function}", self.namespace);
                tool
            })
            .collect())
    }

    /// The group's line in the module list: `- namespace (title): criteria — description`.
    pub fn summary(&self) -> String {
        let mut line = format!("- {} ({})", self.namespace, self.title);
        let parts: Vec<&str> = [&self.selection_criteria, &self.description]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|part| !part.trim().is_empty())
            .collect();
        if !parts.is_empty() {
            line.push_str(": ");
            line.push_str(&parts.join(" — "));
        }
        line
    }
}
