//! An MCP server's answers in agentry's terms: annotations as hints (believed
//! only for trusted servers), content blocks as a value the model can read,
//! `isError` as a tool error.

use agentry_core::tool::{ToolError, ToolHints};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, ToolAnnotations};
use serde_json::{Value, json};

/// Hints from a tool's annotations. The spec's defaults apply to what is
/// left out (read-only false, destructive true, idempotent false, open-world
/// true). An untrusted server's claims are not believed: its tools are
/// destructive, open-world and not read-only, so every call goes through the
/// agent's approver.
pub(crate) fn hints(annotations: Option<&ToolAnnotations>, trusted: bool) -> ToolHints {
    let claimed = |hint: Option<bool>, default: bool| hint.unwrap_or(default);
    let read_only = trusted && claimed(annotations.and_then(|a| a.read_only_hint), false);
    let destructive =
        !trusted || !read_only && claimed(annotations.and_then(|a| a.destructive_hint), true);
    ToolHints {
        read_only,
        destructive,
        idempotent: trusted && claimed(annotations.and_then(|a| a.idempotent_hint), false),
        open_world: !trusted || claimed(annotations.and_then(|a| a.open_world_hint), true),
        concurrency_safe: read_only,
        ..ToolHints::default()
    }
}

/// A call's result as the tool's output: the structured content when there
/// is some (dispatch checks it against the output schema), else the text,
/// else every block described. `isError: true` is a tool error with the text.
pub(crate) fn output(result: CallToolResult, declares_output: bool) -> Result<Value, ToolError> {
    if result.is_error == Some(true) {
        let text = text_of(&result.content);
        return Err(ToolError::failed(if text.is_empty() {
            "the MCP tool reported an error without a message".to_owned()
        } else {
            text
        }));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    if declares_output {
        return Err(ToolError::failed(
            "the MCP tool declares an output schema but sent no structured content",
        ));
    }
    let only_text = result
        .content
        .iter()
        .all(|block| matches!(block, ContentBlock::Text(_)));
    Ok(if only_text {
        Value::String(text_of(&result.content))
    } else {
        Value::Array(result.content.iter().map(block).collect())
    })
}

/// The text blocks, one per line.
pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One content block as JSON the model can read; binary data is described
/// (type and size), not pasted as base64.
pub(crate) fn block(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text(text) => json!({"type": "text", "text": text.text}),
        ContentBlock::Image(image) => json!({
            "type": "image", "mime_type": image.mime_type, "bytes": base64_len(&image.data)
        }),
        ContentBlock::Audio(audio) => json!({
            "type": "audio", "mime_type": audio.mime_type, "bytes": base64_len(&audio.data)
        }),
        ContentBlock::ResourceLink(link) => json!({
            "type": "resource_link",
            "uri": link.uri,
            "name": link.name,
            "description": link.description,
            "mime_type": link.mime_type,
        }),
        ContentBlock::Resource(embedded) => resource(&embedded.resource),
        _ => json!({"type": "unknown"}),
    }
}

/// Resource contents: text as it is, a blob described.
pub(crate) fn resource(contents: &ResourceContents) -> Value {
    match contents {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => json!({"type": "resource", "uri": uri, "mime_type": mime_type, "text": text}),
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => json!({
            "type": "resource", "uri": uri, "mime_type": mime_type, "bytes": base64_len(blob)
        }),
        _ => json!({"type": "resource"}),
    }
}

/// Bytes encoded by a base64 text.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untrusted_servers_are_not_believed() {
        let safe = ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true);
        let untrusted = hints(Some(&safe), false);
        assert!(untrusted.destructive && !untrusted.read_only && !untrusted.idempotent);
        let trusted = hints(Some(&safe), true);
        assert!(!trusted.destructive && trusted.read_only && trusted.idempotent);
        // The spec's defaults for what is left out: destructive, not read-only.
        let silent = hints(None, true);
        assert!(silent.destructive && !silent.read_only && !silent.idempotent);
        let writes = hints(Some(&ToolAnnotations::new().destructive(false)), true);
        assert!(!writes.destructive && !writes.read_only);
        // Open-world unless a trusted server says otherwise.
        assert!(silent.open_world && untrusted.open_world);
        let closed = ToolAnnotations::new().open_world(false);
        assert!(!hints(Some(&closed), true).open_world);
        assert!(hints(Some(&closed), false).open_world);
    }

    #[test]
    fn audio_links_and_embedded_resources_read_as_blocks() {
        let link = rmcp::model::Resource::new("file:///notes/plan.md", "plan")
            .with_description("the plan")
            .with_mime_type("text/markdown");
        let mixed = CallToolResult::success(vec![
            ContentBlock::audio("UklGRg==", "audio/wav"),
            ContentBlock::resource_link(link),
            ContentBlock::embedded_text("memo://1", "remember the milk"),
            ContentBlock::resource(ResourceContents::blob("AAECAw==", "blob://4")),
        ]);
        assert_eq!(
            output(mixed, false),
            Ok(json!([
                {"type": "audio", "mime_type": "audio/wav", "bytes": 4},
                {
                    "type": "resource_link", "uri": "file:///notes/plan.md", "name": "plan",
                    "description": "the plan", "mime_type": "text/markdown"
                },
                {
                    "type": "resource", "uri": "memo://1", "mime_type": "text/plain",
                    "text": "remember the milk"
                },
                {"type": "resource", "uri": "blob://4", "mime_type": null, "bytes": 4}
            ]))
        );
    }

    #[test]
    fn results_read_as_values_and_errors() {
        let text = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(output(text, false), Ok(json!("a\nb")));
        let error = CallToolResult::error(vec![ContentBlock::text("no such city")]);
        assert_eq!(output(error, false), Err(ToolError::failed("no such city")));
        let image = CallToolResult::success(vec![
            ContentBlock::text("a tiny image"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ]);
        assert_eq!(
            output(image, false),
            Ok(json!([
                {"type": "text", "text": "a tiny image"},
                {"type": "image", "mime_type": "image/png", "bytes": 8}
            ]))
        );
        let structured = CallToolResult::structured(json!({"sum": 3}));
        assert_eq!(output(structured, true), Ok(json!({"sum": 3})));
        let missing = CallToolResult::success(vec![ContentBlock::text("3")]);
        assert!(output(missing, true).is_err());
    }
}
