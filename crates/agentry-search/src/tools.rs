//! [`ToolSearch`]: the hybrid index over a tool catalog, answering
//! discovery's `search_tools` (an [`ToolSearcher`]).

use std::sync::Arc;

use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder};
use agentry_core::tool::{Tool, ToolSearcher};

use crate::HybridIndex;

/// The text BM25 indexes for a tool: its name split into words, its
/// description, and its parameters' names and descriptions.
pub fn tool_search_text(tool: &Tool) -> String {
    let words = tool.name.replace(['.', '_', '-'], " ");
    let mut text = format!(
        "{} {words}\n{}",
        tool.name,
        tool.description.as_deref().unwrap_or("")
    );
    if let Some(properties) = tool.input_schema["properties"].as_object() {
        for (name, schema) in properties {
            text.push('\n');
            text.push_str(&name.replace(['_', '-'], " "));
            if let Some(description) = schema["description"].as_str() {
                text.push(' ');
                text.push_str(description);
            }
        }
    }
    text
}

/// The text embedded for a tool: its name in words and the first line of its description.
pub fn tool_embedding_text(tool: &Tool) -> String {
    let first = tool
        .description
        .as_deref()
        .and_then(|d| d.lines().next())
        .unwrap_or("");
    format!("{}: {first}", tool.name.replace(['.', '_', '-'], " "))
}

/// A search index over a tool catalog.
#[derive(Debug)]
pub struct ToolSearch {
    names: Vec<String>,
    index: HybridIndex,
}

impl ToolSearch {
    /// A BM25 index over `tools`.
    pub fn bm25(tools: &[Tool]) -> Self {
        Self {
            names: tools.iter().map(|tool| tool.name.clone()).collect(),
            index: HybridIndex::bm25(tools.iter().map(tool_search_text).collect()),
        }
    }

    /// Also rank by embedding similarity (each of `tools`, in the same order
    /// as given to [`bm25`](Self::bm25), embedded once now).
    pub async fn with_embeddings(
        mut self,
        tools: &[Tool],
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, EmbedError> {
        let texts: Vec<String> = tools.iter().map(tool_embedding_text).collect();
        self.index = self.index.with_embeddings(embedder, &texts).await?;
        Ok(self)
    }

    /// Also rank by embedding similarity, with the tools' vectors already
    /// computed by `embedder` from [`tool_embedding_text`] (kept from an
    /// earlier index, say), one per tool in order.
    pub fn with_vectors(
        mut self,
        embedder: Arc<dyn Embedder>,
        vectors: Vec<Vec<f32>>,
    ) -> Result<Self, EmbedError> {
        self.index = self.index.with_vectors(embedder, vectors)?;
        Ok(self)
    }

    /// How much BM25 counts in fusion relative to embeddings.
    pub fn lexical_weight(mut self, weight: f32) -> Self {
        self.index = self.index.lexical_weight(weight);
        self
    }

    /// The index underneath.
    pub fn index(&self) -> &HybridIndex {
        &self.index
    }

    /// The indexed tools' names, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

impl ToolSearcher for ToolSearch {
    fn search<'a>(&'a self, query: &'a str, limit: usize) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            self.index
                .top(query, limit)
                .await
                .into_iter()
                .take(limit)
                .map(|(index, _)| self.names[index].clone())
                .collect()
        })
    }
}
