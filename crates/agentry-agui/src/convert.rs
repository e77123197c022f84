//! AG-UI's conversation into agentry's: user, assistant (with its tool
//! calls) and tool messages; the input's context items given to the model
//! with the last user message.

use ag_ui::{Message as UiMessage, RunAgentInput, ToolContent, UserContent};
use agentry_core::model::Message;
use agentry_core::tool::{ToolCall, ToolResult};
use serde_json::Value;

/// The text parts of a multimodal content, joined (the rest is not read).
fn texts(parts: &[ag_ui::InputContent]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            ag_ui::InputContent::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(text) => text.clone(),
        UserContent::Parts(parts) => texts(parts),
    }
}

fn tool_text(content: &ToolContent) -> String {
    match content {
        ToolContent::Text(text) => text.clone(),
        ToolContent::Parts(parts) => texts(parts),
    }
}

/// The conversation `input` carries, for the agent; an error when it does
/// not end with the user's message.
pub(crate) fn conversation(input: &RunAgentInput) -> Result<Vec<Message>, String> {
    let mut messages = Vec::new();
    for message in &input.messages {
        match message {
            UiMessage::User(user) => messages.push(Message::user(user_text(&user.content))),
            UiMessage::Assistant(assistant) => {
                let tool_calls = assistant
                    .tool_calls
                    .iter()
                    .flatten()
                    .map(|call| {
                        let input = serde_json::from_str(&call.function.arguments)
                            .unwrap_or(Value::String(call.function.arguments.clone()));
                        ToolCall::new(call.id.as_str(), call.function.name.clone(), input)
                    })
                    .collect();
                messages.push(Message::Assistant {
                    text: assistant.content.clone().unwrap_or_default(),
                    tool_calls,
                });
            }
            UiMessage::Tool(tool) => {
                let text = tool_text(&tool.content);
                let result = match &tool.error {
                    Some(error) => ToolResult::error(tool.tool_call_id.as_str(), error.clone()),
                    None => ToolResult::ok(tool.tool_call_id.as_str(), Value::String(text)),
                };
                messages.push(Message::tool(result));
            }
            // The agent keeps its own instructions; activity and reasoning
            // are the frontend's.
            _ => {}
        }
    }
    let Some(Message::User { text }) = messages.last_mut() else {
        return Err("the last message must be the user's".to_owned());
    };
    if !input.context.is_empty() {
        let context: Vec<String> = input
            .context
            .iter()
            .map(|c| format!("- {}: {}", c.description, c.value))
            .collect();
        text.push_str(&format!("\n\nContext:\n{}", context.join("\n")));
    }
    Ok(messages)
}
