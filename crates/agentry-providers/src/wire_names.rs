//! Per-request mapping between agentry tool names and provider wire names.

use std::collections::HashMap;

use agentry_core::model::{ChatRequest, ModelError};
use agentry_core::tool::wire::{assign_wire_names, sanitize};

/// Both directions of the name mapping for one request's tools.
pub(crate) struct WireNames {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
}

impl WireNames {
    /// The mapping for the tools of `request`.
    pub(crate) fn for_request(request: &ChatRequest) -> Result<Self, ModelError> {
        let names: Vec<&str> = request
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        let wires =
            assign_wire_names(&names).map_err(|error| ModelError::Config(error.to_string()))?;
        let to_wire: HashMap<String, String> = names
            .iter()
            .zip(&wires)
            .map(|(name, wire)| ((*name).to_owned(), wire.clone()))
            .collect();
        let from_wire = to_wire
            .iter()
            .map(|(name, wire)| (wire.clone(), name.clone()))
            .collect();
        Ok(Self { to_wire, from_wire })
    }

    /// The wire name of a tool (names not among the tools, e.g. from history, are sanitised).
    pub(crate) fn wire_of(&self, name: &str) -> String {
        self.to_wire
            .get(name)
            .cloned()
            .unwrap_or_else(|| sanitize(name))
    }

    /// The tool name behind a wire name; unknown names come back unchanged so
    /// the agent can report them as not allowed.
    pub(crate) fn name_of(&self, wire: &str) -> String {
        self.from_wire
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_owned())
    }
}

/// The text a tool result is sent as, for providers whose tool messages carry text.
pub(crate) fn result_text(result: &agentry_core::tool::ToolResult) -> String {
    let text = match result.output.as_str() {
        Some(text) => text.to_owned(),
        None => result.output.to_string(),
    };
    if result.is_error && !text.starts_with("error:") {
        format!("error: {text}")
    } else {
        text
    }
}
