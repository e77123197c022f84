//! What `McpServer` offers besides tools, read by a plain rmcp client over
//! Streamable HTTP (2025-11-25): prompts (arguments checked, templates
//! filled once), resources and a template, completions, and subscriptions
//! (an update reaches the subscriber; caps on how many and how long).

// `resources/subscribe` is how 2025-11-25 sessions subscribe; rmcp marks it
// deprecated for the 2026-07-28 revision, which listens instead.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentry_core::tool::Toolbox;
use agentry_mcp::server::{
    MAX_SUBSCRIBED_URI, MAX_SUBSCRIPTIONS, Prompt, Resource, ResourceContents, ResourceTemplate,
};
use agentry_mcp::{HttpOptions, McpServer};
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
    Reference, ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

fn server() -> McpServer {
    let notes = ResourceTemplate::new(
        "notes://{day}",
        "notes",
        "A day's notes.",
        "text/plain",
        |uri, variables| async move {
            let day = variables["day"].as_str().unwrap_or_default().to_owned();
            Ok(vec![ResourceContents::text(format!("notes of {day}"), uri)])
        },
    )
    .completions("day", ["monday", "tuesday", "thursday"]);
    McpServer::new(Toolbox::for_agent(Vec::<agentry_core::tool::Tool>::new()).unwrap())
        .prompt(
            Prompt::text("greet", "Greet someone.", "Hi {name}, about {topic}.")
                .argument("name", "Who", true)
                .argument("topic", "What", false)
                .completions("name", ["Ana", "Andrés", "Bo"]),
        )
        .resource(Resource::text(
            "file:///readme",
            "readme",
            "The readme.",
            "text/plain",
            "hello",
        ))
        .resource_template(notes)
}

async fn serve(server: McpServer) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.serve_http(listener, HttpOptions::default(), std::future::pending()));
    url
}

#[derive(Clone, Default)]
struct Updates(Arc<Mutex<Vec<String>>>);
impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.uri);
    }
}

fn arguments(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn prompts_resources_completions_and_subscriptions() {
    let server = server();
    let url = serve(server.clone()).await;
    let updates = Updates::default();
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
    let peer = updates.clone().serve(transport).await.unwrap();

    // A prompt's template is filled once: a value is copied, not expanded.
    let got = peer
        .get_prompt(
            GetPromptRequestParams::new("greet").with_arguments(arguments(
                json!({"name": "{topic}{topic}", "topic": "maps"}),
            )),
        )
        .await
        .unwrap();
    let text = serde_json::to_value(&got.messages[0].content).unwrap();
    assert_eq!(text["text"], "Hi {topic}{topic}, about maps.");
    let extra = peer
        .get_prompt(
            GetPromptRequestParams::new("greet")
                .with_arguments(arguments(json!({"name": "Ana", "u01": "x"}))),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        extra.contains("the prompt greet takes no argument u01"),
        "{extra}"
    );
    let missing = peer
        .get_prompt(GetPromptRequestParams::new("greet"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("the prompt greet needs the argument name"),
        "{missing}"
    );

    // Completions fit what was typed, for prompts and templates alike.
    let names = peer
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("greet"),
            ArgumentInfo::new("name", "an"),
        ))
        .await
        .unwrap();
    assert_eq!(names.completion.values, ["Ana", "Andrés"]);
    let days = peer
        .complete(CompleteRequestParams::new(
            Reference::for_resource("notes://{day}"),
            ArgumentInfo::new("day", "t"),
        ))
        .await
        .unwrap();
    assert_eq!(days.completion.values, ["tuesday", "thursday"]);

    // Resources and the template; an unknown URI is an error naming it.
    let read = peer
        .read_resource(ReadResourceRequestParams::new("notes://friday"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&read.contents[0]).unwrap()["text"],
        "notes of friday"
    );
    let unknown = peer
        .read_resource(ReadResourceRequestParams::new("notes://a/b"))
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("no resource at notes://a/b"), "{unknown}");

    // A subscriber hears of an update; a session's subscriptions are capped.
    peer.subscribe(SubscribeRequestParams::new("file:///readme"))
        .await
        .unwrap();
    assert_eq!(server.resource_updated("file:///readme").await, 1);
    for _ in 0..50 {
        if !updates.0.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(*updates.0.lock().unwrap(), ["file:///readme"]);
    for day in 1..MAX_SUBSCRIPTIONS {
        peer.subscribe(SubscribeRequestParams::new(format!("notes://{day}")))
            .await
            .unwrap();
    }
    let over = peer
        .subscribe(SubscribeRequestParams::new("notes://one-too-many"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        over.contains(&format!(
            "a session subscribes to at most {MAX_SUBSCRIPTIONS} resources"
        )),
        "{over}"
    );
    let long = peer
        .subscribe(SubscribeRequestParams::new(format!(
            "notes://{}",
            "a".repeat(MAX_SUBSCRIBED_URI)
        )))
        .await
        .unwrap_err()
        .to_string();
    assert!(long.contains("a subscribed URI is at most"), "{long}");
    let unoffered = peer
        .subscribe(SubscribeRequestParams::new("http://elsewhere/x"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        unoffered.contains("no resource at http://elsewhere/x"),
        "{unoffered}"
    );
    peer.cancel().await.unwrap();
    // A gone session is not told (and is forgotten).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.resource_updated("file:///readme").await, 0);
}
