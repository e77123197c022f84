//! Per-request wire names for the providers, and the text a tool result is sent as.

use agentry_core::model::{ChatRequest, ModelError};
pub(crate) use agentry_core::tool::wire::WireNames;

/// The wire-name mapping for the tools of `request`.
pub(crate) fn wire_names(request: &ChatRequest) -> Result<WireNames, ModelError> {
    let names: Vec<&str> = request
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    WireNames::new(&names).map_err(|error| ModelError::Config(error.to_string()))
}

/// The text a tool result is sent as, for providers whose tool messages carry text.
pub(crate) fn result_text(result: &agentry_core::tool::ToolResult) -> String {
    let text = result.output_text();
    if result.is_error && !text.starts_with("error:") {
        format!("error: {text}")
    } else {
        text
    }
}
