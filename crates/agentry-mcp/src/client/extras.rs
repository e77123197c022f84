//! A server's prompts and resources as tools (an MCP client turns prompts,
//! resources and resource templates into functions), each kind opted in per
//! server. They only fetch text, so they are read-only whatever the trust.

use agentry_core::tool::{Tool, ToolError, ToolHandler, ToolHints};
use rmcp::RoleClient;
use rmcp::model::{GetPromptRequestParams, JsonObject, ReadResourceRequestParams};
use rmcp::service::{Peer, ServiceError};
use serde_json::{Map, Value, json};

use super::{McpClient, convert};
use crate::McpError;

/// `NAME.prompt_<prompt>` for each prompt: its arguments in, its messages out.
pub(crate) async fn prompts(
    client: &McpClient,
    peer: &Peer<RoleClient>,
) -> Result<Vec<Tool>, McpError> {
    let listed = client
        .list("prompts", |params| async move {
            let page = peer.list_prompts(Some(params)).await?;
            Ok::<_, ServiceError>((page.prompts, page.next_cursor))
        })
        .await?;
    Ok(listed
        .into_iter()
        .filter(|prompt| {
            let plain = super::shown_plainly(&prompt.name);
            if !plain {
                client.leave_out("prompt", &prompt.name);
            }
            plain
        })
        .map(|prompt| {
            let arguments = prompt.arguments.unwrap_or_default();
            let properties: Map<String, Value> = arguments
                .iter()
                .map(|argument| {
                    let description = argument.description.clone().unwrap_or_default();
                    (
                        argument.name.clone(),
                        json!({"type": "string", "description": description}),
                    )
                })
                .collect();
            let required: Vec<&str> = arguments
                .iter()
                .filter(|argument| argument.required == Some(true))
                .map(|argument| argument.name.as_str())
                .collect();
            let schema = json!({"type": "object", "properties": properties, "required": required});
            let tool_name = format!("{}.prompt_{}", client.name(), wire_safe(&prompt.name));
            let (owner, name) = (client.clone(), prompt.name.clone());
            let handler = ToolHandler::from_async(move |input: Value, _ctx| {
                let (client, name) = (owner.clone(), name.clone());
                async move {
                    let peer = client.peer().await.map_err(ToolError::from_error)?;
                    let mut params = GetPromptRequestParams::new(name);
                    if let Value::Object(arguments) = input {
                        params = params.with_arguments(strings(arguments));
                    }
                    let got = client
                        .within(peer.get_prompt(params))
                        .await
                        .map_err(ToolError::from_error)?;
                    let messages: Vec<Value> = got
                        .messages
                        .iter()
                        .map(|m| json!({"role": m.role, "content": convert::block(&m.content)}))
                        .collect();
                    Ok(json!({"description": got.description, "messages": messages}))
                }
            });
            let description = prompt
                .description
                .unwrap_or_else(|| format!("The {} prompt", prompt.name));
            fetching(tool_name, description, schema, handler)
        })
        .collect())
}

/// `NAME.list_resources` and `NAME.read_resource`.
pub(crate) fn resources(client: &McpClient) -> Vec<Tool> {
    let mut tools = Vec::new();
    let list_client = client.clone();
    let list = ToolHandler::from_async(move |_input: Value, _ctx| {
        let client = list_client.clone();
        async move {
            let peer = client.peer().await.map_err(ToolError::from_error)?;
            let listed = client
                .list("resources", |params| {
                    let peer = &peer;
                    async move {
                        let page = peer.list_resources(Some(params)).await?;
                        Ok::<_, ServiceError>((page.resources, page.next_cursor))
                    }
                })
                .await
                .map_err(ToolError::from_error)?;
            Ok(Value::Array(
                listed
                    .iter()
                    .map(|r| json!({"uri": r.uri, "name": r.name, "description": r.description, "mime_type": r.mime_type}))
                    .collect(),
            ))
        }
    });
    tools.push(fetching(
        format!("{}.list_resources", client.name()),
        "List the resources this server offers (uri, name, description).".into(),
        json!({"type": "object", "properties": {}}),
        list,
    ));
    tools.push(fetching(
        format!("{}.read_resource", client.name()),
        "Read a resource by its URI.".into(),
        json!({"type": "object", "properties": {"uri": {"type": "string", "description": "The resource's URI"}}, "required": ["uri"]}),
        reader(client.clone(), None),
    ));
    tools
}

/// One tool per resource template (`NAME.template_…`), its variables as
/// string arguments.
pub(crate) async fn templates(
    client: &McpClient,
    peer: &Peer<RoleClient>,
) -> Result<Vec<Tool>, McpError> {
    let mut tools = Vec::new();
    let templates = client
        .list("resource templates", |params| async move {
            let page = peer.list_resource_templates(Some(params)).await?;
            Ok::<_, ServiceError>((page.resource_templates, page.next_cursor))
        })
        .await?;
    for template in templates {
        if !super::shown_plainly(&template.name) {
            client.leave_out("resource template", &template.name);
            continue;
        }
        let variables = variables(&template.uri_template);
        let properties: Map<String, Value> = variables
            .iter()
            .map(|v| (v.clone(), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties, "required": variables});
        let description = template
            .description
            .clone()
            .unwrap_or_else(|| format!("Read {}", template.uri_template));
        tools.push(fetching(
            format!("{}.template_{}", client.name(), wire_safe(&template.name)),
            description,
            schema,
            reader(client.clone(), Some(template.uri_template.clone())),
        ));
    }
    Ok(tools)
}

/// Reads the resource at `uri`, or at `template` expanded with the input.
fn reader(client: McpClient, template: Option<String>) -> ToolHandler {
    ToolHandler::from_async(move |input: Value, _ctx| {
        let (client, template) = (client.clone(), template.clone());
        async move {
            let uri = match &template {
                Some(template) => expand(template, &input),
                None => input["uri"].as_str().unwrap_or_default().to_owned(),
            };
            let peer = client.peer().await.map_err(ToolError::from_error)?;
            let read = client
                .within(peer.read_resource(ReadResourceRequestParams::new(uri)))
                .await
                .map_err(ToolError::from_error)?;
            Ok(Value::Array(
                read.contents.iter().map(convert::resource).collect(),
            ))
        }
    })
}

fn fetching(name: String, description: String, schema: Value, handler: ToolHandler) -> Tool {
    let mut tool = Tool::new(name, schema, handler);
    tool.description = Some(description);
    tool.hints = ToolHints {
        read_only: true,
        idempotent: true,
        concurrency_safe: true,
        ..ToolHints::default()
    };
    tool
}

/// Prompt arguments are strings.
fn strings(arguments: JsonObject) -> JsonObject {
    arguments
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(_) => (k, v),
            other => (k, Value::String(other.to_string())),
        })
        .collect()
}

/// The `{variable}` names of a URI template (RFC 6570 level 1 and `{+x}`, `{/x}`, …).
fn variables(template: &str) -> Vec<String> {
    template
        .split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}'))
        .flat_map(|(expression, _)| {
            expression
                .trim_start_matches(['+', '#', '/', '.', ';', '?', '&'])
                .split(',')
                .map(|name| name.trim_end_matches('*').to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The template with each `{variable}` replaced by the input's string.
fn expand(template: &str, input: &Value) -> String {
    let mut out = template.to_owned();
    for name in variables(template) {
        let value = match &input[&name] {
            Value::String(text) => text.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        for prefix in ["", "+", "/"] {
            let slot = format!("{{{prefix}{name}}}");
            let text = if prefix == "/" {
                format!("/{value}")
            } else {
                value.clone()
            };
            out = out.replace(&slot, &text);
        }
    }
    out
}

/// A name made of letters, digits, `_` and `-` only.
fn wire_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_their_variables() {
        assert_eq!(
            variables("demo://resource/dynamic/text/{resourceId}"),
            ["resourceId"]
        );
        assert_eq!(
            variables("file:///{+path}{?q,limit}"),
            ["path", "q", "limit"]
        );
        assert_eq!(
            expand(
                "demo://resource/dynamic/text/{resourceId}",
                &json!({"resourceId": "7"})
            ),
            "demo://resource/dynamic/text/7"
        );
    }
}
