//! `agentry eval metatool`: tool retrieval on MetaTool. Each of the 199 tools
//! becomes a skill (name and description); each dev query should rank the
//! tool it is labelled with first (recall@1) or in the top five (recall@5).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use agentry::skill::Skill;
use serde::{Deserialize, Serialize};

use crate::skills::{Scorer, index_for, rank};

/// Arguments of `agentry eval metatool`.
#[derive(clap::Args)]
pub struct MetaToolArgs {
    /// How to rank.
    #[arg(long, value_enum, default_value = "bm25")]
    scorer: Scorer,
    /// BM25's weight in fusion (embeddings count 1.0).
    #[arg(long, default_value_t = agentry_skills::DEFAULT_LEXICAL_WEIGHT)]
    lexical_weight: f32,
    /// Only the first N queries.
    #[arg(long)]
    limit: Option<usize>,
    /// Where the datasets are (`metatool/tools.json`, `metatool/queries_dev.jsonl`).
    #[arg(long, default_value_os_t = crate::default_datasets())]
    datasets: PathBuf,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Deserialize)]
struct MetaTool {
    name: String,
    description: String,
}

#[derive(Deserialize)]
struct Query {
    query: String,
    tool: String,
}

/// The JSON report.
#[derive(Serialize)]
struct Report {
    scorer: String,
    lexical_weight: Option<f32>,
    tools: usize,
    queries: usize,
    hits_at_1: usize,
    hits_at_5: usize,
    recall_at_1: f64,
    recall_at_5: f64,
    seconds: f64,
}

/// Run the evaluation.
pub async fn run(args: MetaToolArgs) -> Result<ExitCode, String> {
    let dir = args.datasets.join("metatool");
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let tools: Vec<MetaTool> =
        serde_json::from_str(&read("tools.json")?).map_err(|e| e.to_string())?;
    let mut queries: Vec<Query> = read("queries_dev.jsonl")?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    if let Some(limit) = args.limit {
        queries.truncate(limit);
    }
    let skills: Vec<Skill> = tools
        .iter()
        .map(|tool| Skill::new(&tool.name, &tool.description))
        .collect();
    let started = Instant::now();
    let search = index_for(skills.clone(), args.scorer, args.lexical_weight).await?;
    let (mut hits_at_1, mut hits_at_5) = (0, 0);
    for query in &queries {
        let found = rank(&skills, &search, &query.query, args.scorer, 5).await;
        if found.first().is_some_and(|s| s.name == query.tool) {
            hits_at_1 += 1;
        }
        if found.iter().any(|s| s.name == query.tool) {
            hits_at_5 += 1;
        }
    }
    let n = queries.len().max(1) as f64;
    let report = Report {
        scorer: format!("{:?}", args.scorer).to_lowercase(),
        lexical_weight: (args.scorer == Scorer::Fusion).then_some(args.lexical_weight),
        tools: skills.len(),
        queries: queries.len(),
        hits_at_1,
        hits_at_5,
        recall_at_1: hits_at_1 as f64 / n,
        recall_at_5: hits_at_5 as f64 / n,
        seconds: started.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    match args.out {
        Some(path) => {
            std::fs::write(&path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => println!("{json}"),
    }
    eprintln!(
        "{}: recall@1 {:.1}%, recall@5 {:.1}% on {} queries",
        report.scorer,
        report.recall_at_1 * 100.0,
        report.recall_at_5 * 100.0,
        report.queries
    );
    Ok(ExitCode::SUCCESS)
}
