//! The prompts, resources and resource template the suite's prompts,
//! resources and completion scenarios call for.

use agentry_mcp::McpServer;
use agentry_mcp::server::{Prompt, Resource, ResourceTemplate, elicitation};
use rmcp::model::{ContentBlock, PromptMessage, ResourceContents, Role};
use serde_json::json;

use crate::PNG;

/// `server` with them.
pub fn offered(server: McpServer) -> McpServer {
    let embedded = Prompt::new(
        "test_prompt_with_embedded_resource",
        "A prompt that embeds the resource it is given.",
        |arguments, _| async move {
            let uri = arguments["resourceUri"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let resource = ResourceContents::text("Embedded resource content for testing.", uri)
                .with_mime_type("text/plain");
            Ok(vec![
                PromptMessage::new(Role::User, ContentBlock::resource(resource)),
                PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
            ])
        },
    )
    .argument("resourceUri", "URI of the resource to embed", true);
    let image = Prompt::new(
        "test_prompt_with_image",
        "A prompt with an image.",
        |_, _| async move {
            Ok(vec![
                PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ])
        },
    );
    // SEP-2322: prompts/get may need the client's input too.
    let asking = Prompt::new(
        "test_input_required_result_prompt",
        "A prompt that asks the user for its context first.",
        |_, caller| async move {
            let caller = caller.ok_or("needs an MCP client")?;
            let request = elicitation(
                "What context should the prompt use?",
                json!({"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}),
            )
            .map_err(|e| e.to_string())?;
            let answer = caller.ask("user_context", request).await?;
            let context = answer["content"]["context"].as_str().unwrap_or("none");
            Ok(vec![PromptMessage::new_text(
                Role::User,
                format!("Use this context: {context}"),
            )])
        },
    );
    let template = ResourceTemplate::new(
        "test://template/{id}/data",
        "template-data",
        "Data for an ID.",
        "application/json",
        |uri, variables| async move {
            let id = variables["id"].as_str().unwrap_or_default();
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![
                ResourceContents::text(text.to_string(), uri).with_mime_type("application/json"),
            ])
        },
    )
    .completions("id", ["123", "456", "789"]);
    server
        .prompt(Prompt::text(
            "test_simple_prompt",
            "A simple prompt without arguments.",
            "This is a simple prompt for testing.",
        ))
        .prompt(
            Prompt::text(
                "test_prompt_with_arguments",
                "A prompt with two arguments.",
                "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'",
            )
            .argument("arg1", "First test argument", true)
            .argument("arg2", "Second test argument", true)
            .completions("arg1", ["paris", "park", "party", "test", "testing"]),
        )
        .prompt(embedded)
        .prompt(image)
        .prompt(asking)
        .resource(Resource::text(
            "test://static-text",
            "static-text",
            "A static text resource.",
            "text/plain",
            "This is the content of the static text resource.",
        ))
        .resource(Resource::blob(
            "test://static-binary",
            "static-binary",
            "A static binary resource (a PNG).",
            "image/png",
            PNG,
        ))
        .resource(Resource::text(
            "test://watched-resource",
            "watched-resource",
            "A resource to subscribe to.",
            "text/plain",
            "Watched resource content.",
        ))
        .resource_template(template)
}
