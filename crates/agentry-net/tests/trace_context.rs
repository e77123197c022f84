//! A tool's request carries the calling span's trace context (W3C
//! `traceparent`), so the service it calls joins the agent's trace; a
//! `traceparent` the tool set itself is kept; without a traced span no
//! header is added.

mod support;

use agentry_core::tool::Capability;
use agentry_net::HttpClient;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use support::{Reply, serve};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

fn client() -> HttpClient {
    HttpClient::new(
        [Capability::net("http://127.0.0.1:*")]
            .into_iter()
            .collect(),
    )
}

#[tokio::test]
async fn a_request_from_a_traced_call_names_the_call() {
    let provider = SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = serve(vec![
        Reply::Text("one".into()),
        Reply::Text("two".into()),
        Reply::Text("three".into()),
    ])
    .await;
    let client = client();

    let span = tracing::info_span!("execute_tool");
    let expected = span.in_scope(agentry_telemetry::context::current_fields);
    let (_, expected) = expected
        .into_iter()
        .find(|(name, _)| name == "traceparent")
        .expect("a traced span");
    client
        .get(&format!("{}/a", server.base_url))
        .instrument(span.clone())
        .await
        .unwrap();
    // The tool's own header wins.
    let own = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    client
        .request(reqwest::Method::GET, &format!("{}/b", server.base_url))
        .header("traceparent", own)
        .send()
        .instrument(span)
        .await
        .unwrap();
    // Outside a span: nothing added.
    client.get(&format!("{}/c", server.base_url)).await.unwrap();

    let requests = server.requests();
    assert_eq!(requests[0].header("traceparent"), Some(expected.as_str()));
    assert_eq!(requests[1].header("traceparent"), Some(own));
    assert_eq!(requests[2].header("traceparent"), None);
}
