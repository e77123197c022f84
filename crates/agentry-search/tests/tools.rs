//! Tool search over a catalog: BM25 finds names, words of descriptions and
//! parameters; fused with embeddings it finds what shares no word with the
//! query; ties keep catalog order; a failing embedder falls back to BM25.

use std::sync::Arc;

use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder, KeywordEmbedder};
use agentry_core::tool::{Tool, ToolExample, ToolSearcher, function};
use agentry_search::{HybridIndex, ToolSearch, name_words, tool_passages, tool_search_text};
use serde_json::{Value, json};

fn tool(namespace: &str, name: &str, description: &str, arg: (&str, &str)) -> Tool {
    let description = description.to_owned();
    function(name)
        .namespace(namespace)
        .description(description)
        .arg::<String>(arg.0, arg.1)
        .handler(|_: Value| Ok::<_, String>("…"))
        .build()
        .unwrap()
}

fn catalog() -> Vec<Tool> {
    vec![
        tool(
            "weather",
            "forecast",
            "The weather forecast for a city.",
            ("city", "The city"),
        ),
        tool(
            "billing",
            "lookup_invoice",
            "Find an invoice.",
            ("invoice_id", "The invoice number"),
        ),
        tool(
            "kb",
            "find_policy",
            "Policy snippets.",
            ("topic", "What the policy covers, e.g. refunds"),
        ),
    ]
}

#[tokio::test]
async fn bm25_reads_names_descriptions_and_parameters() {
    let tools = catalog();
    let search = ToolSearch::bm25(&tools);
    assert_eq!(
        search.search("invoice", 3).await,
        ["billing.lookup_invoice"]
    );
    assert_eq!(
        search.search("refunds", 3).await,
        ["kb.find_policy"],
        "a parameter's description counts"
    );
    assert_eq!(
        search.search("forecast for Lima", 1).await,
        ["weather.forecast"]
    );
    assert!(search.search("zebra", 3).await.is_empty());
    assert!(tool_search_text(&tools[1]).contains("lookup invoice"));
}

#[tokio::test]
async fn embeddings_find_what_shares_no_word_and_fuse_with_bm25() {
    let tools = catalog();
    // A toy embedder: "money" and "invoice" land on the same axis.
    struct Money;
    impl Embedder for Money {
        fn model_id(&self) -> &str {
            "money"
        }
        fn dimensions(&self) -> usize {
            2
        }
        fn embed<'a>(
            &'a self,
            texts: &'a [String],
        ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
            let vectors = texts
                .iter()
                .map(|t| {
                    let t = t.to_lowercase();
                    let money = t.contains("money") || t.contains("invoice");
                    vec![if money { 1.0 } else { 0.0 }, 0.1]
                })
                .collect();
            Box::pin(async move { Ok(vectors) })
        }
    }
    let search = ToolSearch::bm25(&tools)
        .with_embeddings(&tools, Arc::new(Money))
        .await
        .unwrap();
    assert_eq!(
        search.search("where did my money go", 1).await,
        ["billing.lookup_invoice"]
    );
    assert_eq!(search.index().rank_bm25("where did my money go"), vec![]);
}

#[tokio::test]
async fn a_failing_embedder_falls_back_to_bm25_and_a_wrong_count_is_an_error() {
    struct Broken;
    impl Embedder for Broken {
        fn model_id(&self) -> &str {
            "broken"
        }
        fn dimensions(&self) -> usize {
            1
        }
        fn embed<'a>(
            &'a self,
            texts: &'a [String],
        ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
            let first = texts.len() > 1;
            Box::pin(async move {
                if first {
                    Ok(vec![vec![1.0]; 3])
                } else {
                    Err(EmbedError::failed("down"))
                }
            })
        }
    }
    let tools = catalog();
    let search = ToolSearch::bm25(&tools)
        .with_embeddings(&tools, Arc::new(Broken))
        .await
        .unwrap();
    assert_eq!(
        search.search("invoice", 3).await,
        ["billing.lookup_invoice"]
    );
    let wrong = HybridIndex::bm25(vec!["a".into(), "b".into()])
        .with_embeddings(Arc::new(KeywordEmbedder::new(["a"])), &["a".to_owned()])
        .await
        .unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "embedding failed: 1 texts to embed for 2 documents"
    );
}

#[test]
fn names_become_words() {
    assert_eq!(
        name_words("weather.getForecast_v2"),
        "weather get Forecast v2"
    );
    assert_eq!(name_words("api.HTTPServerList"), "api HTTP Server List");
    assert_eq!(name_words("GetVaultById"), "Get Vault By Id");
    assert_eq!(name_words("plain"), "plain");
}

#[tokio::test]
async fn examples_are_searched_by_words_and_as_passages() {
    let mut tools = catalog();
    // Nothing in the forecast tool's own text says "umbrella".
    assert_eq!(
        ToolSearch::bm25(&tools).search("umbrella", 3).await,
        Vec::<String>::new()
    );
    tools[0].examples.push(
        ToolExample::new(json!({"city": "Lima"})).description("Do I need an umbrella in Lima?"),
    );
    assert!(tool_search_text(&tools[0]).ends_with("\nDo I need an umbrella in Lima?"));
    assert_eq!(
        ToolSearch::bm25(&tools).search("umbrella", 3).await,
        ["weather.forecast"]
    );
    // Passages: each tool's own text first, then its examples.
    let passages = tool_passages(&tools);
    assert_eq!(
        passages,
        [
            (
                0,
                "weather forecast: The weather forecast for a city.".to_owned()
            ),
            (0, "Do I need an umbrella in Lima?".to_owned()),
            (1, "billing lookup invoice: Find an invoice.".to_owned()),
            (2, "kb find policy: Policy snippets.".to_owned()),
        ]
    );
    // The example's vocabulary finds the forecast even where its description
    // shares nothing: a tool with several passages scores the mean of its
    // best passage (here the example, 1.0) and their centroid (0.741).
    let embedder = Arc::new(KeywordEmbedder::new(["umbrella", "invoice", "policy"]));
    let search = ToolSearch::bm25(&tools)
        .with_embeddings(&tools, embedder)
        .await
        .unwrap();
    let nearest = search.index().rank_embeddings("umbrella").await.unwrap();
    assert_eq!(nearest[0].0, 0);
    assert!((nearest[0].1 - 0.8707).abs() < 1e-4, "{nearest:?}");
    assert!(nearest[1].1 < 0.01, "{nearest:?}");
    let rows: Vec<usize> = search
        .index()
        .vectors()
        .unwrap()
        .map(|(owner, _)| owner)
        .collect();
    assert_eq!(rows, [0, 0, 1, 2]);
}

#[test]
fn passage_vectors_must_belong_to_a_document() {
    let embedder = Arc::new(KeywordEmbedder::new(["a"]));
    let error = HybridIndex::bm25(vec!["a".into()])
        .with_passage_vectors(embedder, vec![(0, vec![1.0]), (1, vec![1.0])])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "embedding failed: passage 1 belongs to document 1, but there are 1"
    );
}
