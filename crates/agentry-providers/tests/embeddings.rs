//! The OpenAI-compatible embeddings endpoint against a real HTTP server on
//! loopback replaying OpenAI's documented response shape.

mod support;

use agentry_core::embed::Embedder;
use agentry_providers::OpenAiEmbedder;
use support::{Reply, fast_retry, fixture, serve};

fn ok(body: String) -> Reply {
    Reply::Status {
        code: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body,
    }
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|t| (*t).to_owned()).collect()
}

#[tokio::test]
async fn embeds_in_input_order_with_the_documented_request() {
    let server = serve(vec![ok(fixture("openai/embeddings.json"))]).await;
    let embedder = OpenAiEmbedder::new(
        format!("{}/v1", server.base_url),
        Some("sk-test".into()),
        "text-embedding-3-small",
        3,
    );
    let vectors = embedder.embed(&texts(&["first", "second"])).await.unwrap();
    assert_eq!(
        vectors,
        vec![vec![0.6, 0.0, 0.8], vec![0.0, 1.0, 0.0]],
        "sorted by index"
    );
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        request.json(),
        serde_json::json!({"model": "text-embedding-3-small", "input": ["first", "second"], "encoding_format": "float"})
    );
    assert_eq!(embedder.dimensions(), 3);
    assert_eq!(embedder.model_id(), "text-embedding-3-small");
}

#[tokio::test]
async fn batches_are_split_and_joined_in_order() {
    let one = |index: usize, x: f32| {
        ok(format!(
            r#"{{"data": [{{"index": {index}, "embedding": [{x}, 0.0]}}]}}"#
        ))
    };
    let server = serve(vec![one(0, 1.0), one(0, 2.0), one(0, 3.0)]).await;
    let embedder = OpenAiEmbedder::new(&server.base_url, None, "m", 2).with_batch(1);
    let vectors = embedder.embed(&texts(&["a", "b", "c"])).await.unwrap();
    assert_eq!(
        vectors,
        vec![vec![1.0, 0.0], vec![2.0, 0.0], vec![3.0, 0.0]]
    );
    assert_eq!(server.requests().len(), 3);
    assert!(server.requests()[0].header("authorization").is_none());
}

#[tokio::test]
async fn faults_are_clear_errors() {
    let server = serve(vec![
        ok(r#"{"data": [{"index": 0, "embedding": [1.0]}]}"#.into()),
        ok(r#"{"data": []}"#.into()),
        ok("not json".into()),
        Reply::Status {
            code: 401,
            headers: vec![],
            body: fixture("openai/error_401.json"),
        },
    ])
    .await;
    let embedder = OpenAiEmbedder::new(&server.base_url, None, "m", 3).with_retry(fast_retry());
    let error = |result: Result<Vec<Vec<f32>>, agentry_core::embed::EmbedError>| {
        result.unwrap_err().to_string()
    };
    assert_eq!(
        error(embedder.embed(&texts(&["a"])).await),
        "embedding failed: expected 3 dimensions, got 1"
    );
    assert_eq!(
        error(embedder.embed(&texts(&["a"])).await),
        "embedding failed: asked for 1 embeddings, got 0"
    );
    assert!(
        error(embedder.embed(&texts(&["a"])).await)
            .starts_with("embedding failed: malformed embeddings response:")
    );
    let unauthorized = error(embedder.embed(&texts(&["a"])).await);
    assert!(unauthorized.contains("401"), "{unauthorized}");
    assert_eq!(server.requests().len(), 4, "a 401 is not retried");
}
