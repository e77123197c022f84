//! [`ToolSearch`]: the hybrid index over a tool catalog, answering
//! discovery's `search_tools` (an [`ToolSearcher`]).

use std::sync::Arc;

use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder};
use agentry_core::tool::{Tool, ToolSearcher};

use crate::HybridIndex;

/// How much BM25 counts in a tool search's fusion, relative to embeddings'
/// 1.0: less than for skills ([`DEFAULT_LEXICAL_WEIGHT`](crate::DEFAULT_LEXICAL_WEIGHT)).
/// In a catalog of real API operations BM25's matches are mostly on
/// boilerplate words ("get", "list", "create"); with MetaTool's tools among
/// 10,000, weight 0.1 ranked best of 0.1, 0.2, 0.3, 0.5 and 1.0, with usage
/// examples and without (see BENCHMARKS.md).
pub const TOOL_LEXICAL_WEIGHT: f32 = 0.1;

/// A name in words: `weather.getForecast_v2` is `weather get Forecast v2`.
pub fn name_words(name: &str) -> String {
    let mut words = String::with_capacity(name.len() + 8);
    let characters: Vec<char> = name.chars().collect();
    for (i, &c) in characters.iter().enumerate() {
        if matches!(c, '.' | '_' | '-' | '/') {
            words.push(' ');
            continue;
        }
        let previous = i.checked_sub(1).map(|p| characters[p]);
        let next = characters.get(i + 1);
        let boundary = c.is_uppercase()
            && previous.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && next.is_some_and(|n| n.is_lowercase()))
            });
        if boundary {
            words.push(' ');
        }
        words.push(c);
    }
    words
}

/// The text BM25 indexes for a tool: its name and the name in words, its
/// description, its parameters' names and descriptions, and its examples'
/// descriptions (the requests each example call serves).
pub fn tool_search_text(tool: &Tool) -> String {
    let mut text = format!(
        "{} {}\n{}",
        tool.name,
        name_words(&tool.name),
        tool.description.as_deref().unwrap_or("")
    );
    if let Some(properties) = tool.input_schema["properties"].as_object() {
        for (name, schema) in properties {
            text.push('\n');
            text.push_str(&name_words(name));
            if let Some(description) = schema["description"].as_str() {
                text.push(' ');
                text.push_str(description);
            }
        }
    }
    for example in &tool.examples {
        if let Some(description) = &example.description {
            text.push('\n');
            text.push_str(description);
        }
    }
    text
}

/// The text embedded for a tool: its name with separators as spaces and the
/// first line of its description. (Unlike [`tool_search_text`], the name's
/// camel case stays whole: split, operation names like `GetVaultById` read
/// closer to everyday requests than they are, and MiniLM's recall on
/// MetaTool-in-10,000 fell: `BENCHMARKS.md`, "Retrieval".)
pub fn tool_embedding_text(tool: &Tool) -> String {
    let first = tool
        .description
        .as_deref()
        .and_then(|d| d.lines().next())
        .unwrap_or("");
    format!("{}: {first}", tool.name.replace(['.', '_', '-'], " "))
}

/// The passages embedded for `tools`: `(tool, text)`, first each tool's
/// [`tool_embedding_text`], then its examples' descriptions, tool by tool.
/// A tool's similarity to a query pools its passages (its best passage and
/// their centroid, see [`HybridIndex::nearest`]), so examples of the
/// requests a tool serves let it be found by requests worded like them.
pub fn tool_passages(tools: &[Tool]) -> Vec<(usize, String)> {
    let mut passages = Vec::with_capacity(tools.len());
    for (i, tool) in tools.iter().enumerate() {
        passages.push((i, tool_embedding_text(tool)));
        let examples = tool.examples.iter().filter_map(|e| e.description.clone());
        passages.extend(examples.map(|text| (i, text)));
    }
    passages
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
            index: HybridIndex::bm25(tools.iter().map(tool_search_text).collect())
                .lexical_weight(TOOL_LEXICAL_WEIGHT),
        }
    }

    /// Also rank by embedding similarity (the [`tool_passages`] of `tools`,
    /// in the same order as given to [`bm25`](Self::bm25), embedded once now).
    pub async fn with_embeddings(
        mut self,
        tools: &[Tool],
        embedder: Arc<dyn Embedder>,
    ) -> Result<Self, EmbedError> {
        self.index = self
            .index
            .with_passages(embedder, &tool_passages(tools))
            .await?;
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

    /// Also rank by embedding similarity, with passages' vectors already
    /// computed by `embedder`: `(tool, vector)`, as [`tool_passages`] gives
    /// their texts.
    pub fn with_passage_vectors(
        mut self,
        embedder: Arc<dyn Embedder>,
        passages: Vec<(usize, Vec<f32>)>,
    ) -> Result<Self, EmbedError> {
        self.index = self.index.with_passage_vectors(embedder, passages)?;
        Ok(self)
    }

    /// How much BM25 counts in fusion relative to embeddings (default [`TOOL_LEXICAL_WEIGHT`]).
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
