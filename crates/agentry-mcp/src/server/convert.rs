//! agentry's tools and results in MCP's terms: names MCP accepts, schemas
//! as they are, hints as annotations, outputs as `structuredContent` plus
//! its text, and failures as `isError` results.

use std::sync::Arc;

use agentry_core::tool::{Capability, Tool, ToolResult};
use rmcp::model::{CallToolResult, ContentBlock, ToolAnnotations};
use serde_json::Value;

/// True when MCP accepts `name` as a tool name: 1–128 of `A-Z a-z 0-9 _ . -`.
pub(crate) fn is_mcp_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The MCP description of `tool`, published as `name`.
pub(crate) fn tool(name: &str, tool: &Tool) -> rmcp::model::Tool {
    let input = match &tool.input_schema {
        Value::Object(schema) => schema.clone(),
        _ => serde_json::Map::from_iter([("type".to_owned(), Value::from("object"))]),
    };
    let description = tool.description.clone().unwrap_or_default();
    let open_world = tool.hints.open_world
        || tool
            .capabilities
            .iter()
            .any(|capability| matches!(capability, Capability::Net(_)));
    let annotations = ToolAnnotations::new()
        .read_only(tool.hints.read_only)
        .destructive(tool.hints.destructive)
        .idempotent(tool.hints.idempotent)
        .open_world(open_world);
    let mut described = rmcp::model::Tool::new(name.to_owned(), description, Arc::new(input))
        .with_annotations(annotations);
    if let Some(Value::Object(output)) = &tool.output_schema {
        described = described.with_raw_output_schema(Arc::new(output.clone()));
    }
    described
}

/// The key of an output made with [`content`](crate::server::content): MCP
/// content blocks to send as they are.
pub(crate) const CONTENT_KEY: &str = "mcp_content";

/// A dispatch result as a `tools/call` result: an error's message with
/// `isError: true`; MCP content blocks (an output made with
/// [`content`](crate::server::content)) as they are; an object as
/// `structuredContent` plus its JSON text; text as text; anything else as its
/// JSON text (and structured, when the tool declares an output schema).
pub(crate) fn result(result: ToolResult, declares_output: bool) -> CallToolResult {
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    if result.is_error {
        return CallToolResult::error(vec![ContentBlock::text(text(&result.output))]);
    }
    if let Some(blocks) = content_blocks(&result.output) {
        return CallToolResult::success(blocks);
    }
    match result.output {
        output @ Value::Object(_) => CallToolResult::structured(output),
        output if declares_output => {
            let mut structured = CallToolResult::structured(output.clone());
            structured.content = vec![ContentBlock::text(text(&output))];
            structured
        }
        output => CallToolResult::success(vec![ContentBlock::text(text(&output))]),
    }
}

/// The blocks of an output made with [`content`](crate::server::content).
fn content_blocks(output: &Value) -> Option<Vec<ContentBlock>> {
    let object = output.as_object()?;
    if object.len() != 1 {
        return None;
    }
    serde_json::from_value(object.get(CONTENT_KEY)?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_mcp_accepts() {
        assert!(is_mcp_name("math.add") && is_mcp_name("get-sum") && is_mcp_name("a_b"));
        assert!(!is_mcp_name("myapp::add") && !is_mcp_name("") && !is_mcp_name(&"x".repeat(129)));
    }

    #[test]
    fn results_become_structured_content_text_or_errors() {
        let object = result(ToolResult::ok("1", json!({"sum": 3})), true);
        assert_eq!(object.structured_content, Some(json!({"sum": 3})));
        assert_eq!(object.content[0].as_text().unwrap().text, r#"{"sum":3}"#);
        let text = result(ToolResult::ok("1", json!("hello")), false);
        assert_eq!(
            (text.structured_content, text.is_error),
            (None, Some(false))
        );
        assert_eq!(text.content[0].as_text().unwrap().text, "hello");
        let error = result(ToolResult::error("1", "x: expected an integer"), false);
        assert_eq!(error.is_error, Some(true));
        assert_eq!(
            error.content[0].as_text().unwrap().text,
            "x: expected an integer"
        );
        let number = result(ToolResult::ok("1", json!(5)), true);
        assert_eq!(number.structured_content, Some(json!(5)));
        assert_eq!(number.content[0].as_text().unwrap().text, "5");
    }
}
