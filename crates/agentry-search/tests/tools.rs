//! Tool search over a catalog: BM25 finds names, words of descriptions and
//! parameters; fused with embeddings it finds what shares no word with the
//! query; ties keep catalog order; a failing embedder falls back to BM25.

use std::sync::Arc;

use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder, KeywordEmbedder};
use agentry_core::tool::{Tool, ToolSearcher, function};
use agentry_search::{HybridIndex, ToolSearch, tool_search_text};
use serde_json::Value;

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
                    Err(EmbedError("down".into()))
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
