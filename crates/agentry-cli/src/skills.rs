//! `agentry skills list|search|show|validate`: Agent Skills folders from the
//! command line; loading them with warnings, and ranking them, as `agentry
//! run --skills` and the evaluation harness do.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentry::skill::{SearchOpts, Skill, search_skills_of, skill_files};
use agentry_skills::{DEFAULT_LEXICAL_WEIGHT, SkillFolder, SkillSearch, load_dir};
use clap::Subcommand;

/// How skills are ranked against a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scorer {
    /// Case-insensitive substring matching (how the `search_skills` built-in ranks by default).
    Substring,
    /// BM25 over name, description, trigger phrases and body.
    Bm25,
    /// all-MiniLM-L6-v2 embeddings alone (cosine similarity).
    Embedding,
    /// BM25 fused with all-MiniLM-L6-v2 embeddings (reciprocal rank fusion).
    Fusion,
}

/// Skill commands.
#[derive(Subcommand)]
pub(crate) enum SkillsCommand {
    /// List the valid skills in a directory of skill folders.
    List {
        /// Directory of skill folders (or one skill folder).
        dir: PathBuf,
    },
    /// Rank the skills in a directory against a query.
    Search {
        /// Directory of skill folders.
        dir: PathBuf,
        /// What you need a skill for.
        query: String,
        /// Most results.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// How to rank.
        #[arg(long, value_enum, default_value = "bm25")]
        scorer: Scorer,
    },
    /// Show one skill folder: its metadata, files and body.
    Show {
        /// The skill folder.
        folder: PathBuf,
    },
    /// Check every skill folder against the Agent Skills specification;
    /// exits non-zero if any is invalid, naming each problem.
    Validate {
        /// Directory of skill folders (or one skill folder).
        dir: PathBuf,
    },
}

fn load(dir: &std::path::Path) -> Result<agentry_skills::LoadReport, String> {
    load_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Load the skills in `dir` liberally, saying on stderr which ones load
/// despite problems and which are left out.
pub fn load_and_warn(dir: &std::path::Path) -> Result<agentry_skills::LoadReport, String> {
    let report = load(dir)?;
    for skill in report.with_warnings() {
        eprintln!(
            "warning: skill {} loaded despite: {}",
            skill.name,
            joined(&skill.warnings)
        );
    }
    for (path, problems) in &report.invalid {
        eprintln!(
            "warning: skill folder {} left out: {}",
            path.display(),
            joined(problems)
        );
    }
    if !report.is_valid() {
        eprintln!(
            "(run `agentry skills validate {}` for details)",
            dir.display()
        );
    }
    Ok(report)
}

fn joined(problems: &[agentry_skills::Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Rank `skills` against `query` with `scorer`, best first.
pub async fn rank(
    skills: &[Skill],
    search: &SkillSearch,
    query: &str,
    scorer: Scorer,
    limit: usize,
) -> Vec<Skill> {
    match scorer {
        Scorer::Substring => search_skills_of(
            skills,
            query,
            SearchOpts {
                limit,
                ..SearchOpts::default()
            },
        ),
        Scorer::Embedding => match search.rank_embeddings(query).await {
            Ok(ranked) => ranked
                .into_iter()
                .take(limit)
                .map(|(index, _)| search.skills()[index].clone())
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "embedding the query failed");
                Vec::new()
            }
        },
        Scorer::Bm25 | Scorer::Fusion => search.search(query, limit).await,
    }
}

/// A search index for `scorer` (loading the embedding model for fusion and
/// embedding scorers); `lexical_weight` is BM25's weight in fusion.
pub async fn index_for(
    skills: Vec<Skill>,
    scorer: Scorer,
    lexical_weight: f32,
) -> Result<SkillSearch, String> {
    if !matches!(scorer, Scorer::Fusion | Scorer::Embedding) {
        return Ok(SkillSearch::bm25(skills));
    }
    let embedder = agentry_local::LocalEmbedder::minilm()
        .await
        .map_err(|e| e.to_string())?;
    index_with(skills, scorer, lexical_weight, Arc::new(embedder)).await
}

/// [`index_for`] with `embedder` for the embeddings (when `scorer` uses them).
pub async fn index_with(
    skills: Vec<Skill>,
    scorer: Scorer,
    lexical_weight: f32,
    embedder: Arc<dyn agentry::embed::Embedder>,
) -> Result<SkillSearch, String> {
    let search = SkillSearch::bm25(skills);
    if !matches!(scorer, Scorer::Fusion | Scorer::Embedding) {
        return Ok(search);
    }
    search
        .lexical_weight(lexical_weight)
        .with_embeddings(embedder)
        .await
        .map_err(|e| e.to_string())
}

/// Run a skills command.
pub(crate) async fn run(command: SkillsCommand) -> Result<ExitCode, String> {
    match command {
        SkillsCommand::List { dir } => {
            let report = load_and_warn(&dir)?;
            for skill in &report.skills {
                println!("{}: {}", skill.name, skill.description);
            }
        }
        SkillsCommand::Search {
            dir,
            query,
            limit,
            scorer,
        } => {
            let skills = load_and_warn(&dir)?.to_skills();
            let search = index_for(skills.clone(), scorer, DEFAULT_LEXICAL_WEIGHT).await?;
            let found = rank(&skills, &search, &query, scorer, limit).await;
            if found.is_empty() {
                println!("no skill matches {query:?}");
            }
            for (rank, skill) in found.iter().enumerate() {
                println!("{}. {}: {}", rank + 1, skill.name, skill.description);
            }
        }
        SkillsCommand::Show { folder } => {
            let skill = SkillFolder::load(&folder).map_err(|problems| {
                let lines: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
                format!(
                    "{} is not a usable skill:\n{}",
                    folder.display(),
                    lines.join("\n")
                )
            })?;
            if !skill.warnings.is_empty() {
                eprintln!("warning: loaded despite: {}", joined(&skill.warnings));
            }
            println!("name:          {}", skill.name);
            println!("description:   {}", skill.description);
            if let Some(license) = &skill.license {
                println!("license:       {license}");
            }
            if let Some(compatibility) = &skill.compatibility {
                println!("compatibility: {compatibility}");
            }
            for (key, value) in &skill.metadata {
                println!("metadata.{key}: {value}");
            }
            if !skill.allowed_tools.is_empty() {
                println!("allowed-tools: {}", skill.allowed_tools.join(" "));
            }
            let files = skill_files(&skill.to_skill());
            println!("files:         {}", files.join(", "));
            println!("\n{}", skill.body().map_err(|e| e.to_string())?);
        }
        SkillsCommand::Validate { dir } => {
            let report = load(&dir)?;
            for skill in &report.skills {
                if skill.warnings.is_empty() {
                    println!("ok       {}", skill.name);
                } else {
                    println!(
                        "warning  {} (loads, but breaks the specification)",
                        skill.path.display()
                    );
                    for problem in &skill.warnings {
                        println!("  - {problem}");
                    }
                }
            }
            for (path, problems) in &report.invalid {
                println!("invalid  {}", path.display());
                for problem in problems {
                    println!("  - {problem}");
                }
            }
            if report.skills.is_empty() && report.invalid.is_empty() {
                return Err(format!(
                    "no skill folders (with a SKILL.md) in {}",
                    dir.display()
                ));
            }
            if !report.is_valid() {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
