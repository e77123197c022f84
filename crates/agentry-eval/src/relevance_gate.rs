//! `agentry-eval relevance-gate`: how often the relevance gate
//! ([`RelevanceGate`]) turns a request away, without running a chat model.
//! For each BFCL question the tools are the question's functions; each
//! MetaTool dev query is asked twice, with the tool it is labelled with
//! alone and with all 199 tools (as the MetaTool agent offers them). A
//! turned-away `irrelevance` question is right; any other turned-away
//! request is one that a tool fits, so the gate cost it its call. The report
//! keeps every request's best similarity, and its nearest small talk
//! ([`SMALL_TALK`]), so any floor and small-talk margin can be read off it.
//! The single-tool agent tasks (`benches/data/agent-tools`) are asked too.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agentry::agent::{RelevanceGate, SMALL_TALK, ToolText};
use agentry::model::Message;
use agentry::tool::ToolSchema;
use serde_json::{Value, json};

/// Arguments of `agentry-eval relevance-gate`.
#[derive(clap::Args)]
pub struct RelevanceArgs {
    /// The floors to count at (comma-separated cosines).
    #[arg(long, value_delimiter = ',', default_values_t = [0.2, 0.25, 0.3, 0.35])]
    floors: Vec<f32>,
    /// Where the datasets are (`bfcl/*.jsonl`, `metatool/{tools.json,queries_dev.jsonl}`)
    /// [default: $AGENTRY_DATASETS, else the nearest `datasets` folder here or above].
    #[arg(long, value_name = "DIR")]
    datasets: Option<PathBuf>,
    /// Single-tool agent tasks in BFCL's layout (`bfcl/{simple_python,parallel,irrelevance}.jsonl`):
    /// tools described as agents' tools are, with example values [default:
    /// the nearest `benches/data/agent-tools` here or above].
    #[arg(long, value_name = "DIR")]
    agent_tools: Option<PathBuf>,
    /// The embedder to measure.
    #[arg(long, value_enum, default_value = "minilm")]
    embedder: agentry_cli::args::GateEmbedderArg,
    /// Which sets to measure (comma-separated) [default: all three].
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [SetGroup::Bfcl, SetGroup::AgentTools, SetGroup::Metatool])]
    sets: Vec<SetGroup>,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// A group of request sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SetGroup {
    /// BFCL's four dev categories.
    Bfcl,
    /// The single-tool agent tasks.
    AgentTools,
    /// MetaTool's dev queries (4,000 requests: the slow part).
    Metatool,
}

/// One request and the tools offered with it.
struct Case {
    id: String,
    request: String,
    tools: Vec<ToolSchema>,
}

fn schema(name: &str, description: &str) -> ToolSchema {
    ToolSchema {
        name: name.to_owned(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        description: Some(description.to_owned()),
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A BFCL category's questions: the last user turn, and the functions.
fn bfcl(datasets: &Path, category: &str) -> Result<Vec<Case>, String> {
    let text = read(&datasets.join("bfcl").join(format!("{category}.jsonl")))?;
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let question: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
            let request = question["question"][0]
                .as_array()
                .and_then(|turns| turns.iter().rev().find(|turn| turn["role"] == "user"))
                .and_then(|turn| turn["content"].as_str())
                .ok_or_else(|| format!("{category}: a question without a user turn"))?;
            let tools = question["function"]
                .as_array()
                .map(|functions| {
                    functions
                        .iter()
                        .map(|f| ToolSchema {
                            input_schema: crate::bfcl::json_schema(&f["parameters"]),
                            ..schema(
                                f["name"].as_str().unwrap_or_default(),
                                f["description"].as_str().unwrap_or_default(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Ok(Case {
                id: question["id"].as_str().unwrap_or_default().to_owned(),
                request: request.to_owned(),
                tools,
            })
        })
        .collect()
}

/// MetaTool's dev queries, each with its labelled tool alone, or with all
/// 199 tools (as `agentry-eval metatool-agent` offers them inline).
fn metatool(datasets: &Path, all_tools: bool) -> Result<Vec<Case>, String> {
    let dir = datasets.join("metatool");
    let tools: Vec<Value> =
        serde_json::from_str(&read(&dir.join("tools.json"))?).map_err(|e| e.to_string())?;
    let description = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .and_then(|tool| tool["description"].as_str())
            .map(str::to_owned)
    };
    let every: Vec<ToolSchema> = tools
        .iter()
        .map(|tool| {
            schema(
                tool["name"].as_str().unwrap_or_default(),
                tool["description"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let mut cases = Vec::new();
    for (index, line) in read(&dir.join("queries_dev.jsonl"))?.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let query: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let name = query["tool"].as_str().unwrap_or_default();
        let Some(described) = description(name) else {
            continue;
        };
        cases.push(Case {
            id: format!("metatool_{index}"),
            request: query["query"].as_str().unwrap_or_default().to_owned(),
            tools: if all_tools {
                every.clone()
            } else {
                vec![schema(name, &described)]
            },
        });
    }
    Ok(cases)
}

/// Run the measurement.
pub(crate) async fn run(args: RelevanceArgs) -> Result<ExitCode, String> {
    let datasets = crate::datasets::datasets(args.datasets.as_deref(), "--datasets DIR")?;
    let agent_tools = crate::datasets::in_repository(
        args.agent_tools.as_deref(),
        crate::datasets::AGENT_TOOLS,
        "--agent-tools DIR",
    )?;
    // The floor does not matter here: only best similarities are read.
    let embedder: Arc<dyn agentry::embed::Embedder> = match args.embedder {
        agentry_cli::args::GateEmbedderArg::Minilm => Arc::new(agentry_cli::minilm().await?),
        agentry_cli::args::GateEmbedderArg::Nomic => Arc::new(agentry_cli::nomic().await?),
    };
    let embedder_id = embedder.model_id().to_owned();
    let gates = [
        (
            "name: description",
            RelevanceGate::new(embedder.clone(), 0.0)
                .tool_text(ToolText::NameAndDescription)
                .small_talk(SMALL_TALK.iter().copied(), -2.0),
        ),
        (
            "with arguments",
            RelevanceGate::new(embedder, 0.0)
                .tool_text(ToolText::WithArguments)
                .small_talk(SMALL_TALK.iter().copied(), -2.0),
        ),
    ];
    let mut sets = Vec::new();
    if args.sets.contains(&SetGroup::Bfcl) {
        for category in ["simple_python", "multiple", "parallel", "irrelevance"] {
            let cases = bfcl(&datasets, category)?;
            sets.push((format!("bfcl {category}"), cases, category == "irrelevance"));
        }
    }
    if args.sets.contains(&SetGroup::AgentTools) {
        sets.push((
            "agent tools, one call".into(),
            bfcl(&agent_tools, "simple_python")?,
            false,
        ));
        sets.push((
            "agent tools, several calls".into(),
            bfcl(&agent_tools, "parallel")?,
            false,
        ));
        sets.push((
            "agent tools, none fits".into(),
            bfcl(&agent_tools, "irrelevance")?,
            true,
        ));
    }
    if args.sets.contains(&SetGroup::Metatool) {
        sets.push((
            "metatool dev (labelled tool)".into(),
            metatool(&datasets, false)?,
            false,
        ));
        sets.push((
            "metatool dev (all 199 tools)".into(),
            metatool(&datasets, true)?,
            false,
        ));
    }
    let mut table = String::from("| requests | tool text | no tool fits | n |");
    for floor in &args.floors {
        table.push_str(&format!(" turned away at {floor} |"));
    }
    table.push_str("\n| --- | --- | --- | --- |");
    table.push_str(&" --- |".repeat(args.floors.len()));
    table.push('\n');
    let mut report = Vec::new();
    for (name, cases, irrelevant) in sets {
        // Tools without arguments read the same either way: one row.
        let has_arguments = cases.iter().any(|case| {
            case.tools
                .iter()
                .any(|tool| tool.input_schema.get("properties").is_some())
        });
        let read = if has_arguments {
            &gates[..]
        } else {
            &gates[..1]
        };
        for (text, gate) in read {
            let mut best = Vec::new();
            for case in &cases {
                let asked = [Message::user(case.request.as_str())];
                let relevance = gate
                    .assess(&asked, &case.tools)
                    .await
                    .map_err(|e| e.to_string())?;
                let similarity = relevance.as_ref().map_or(f32::NEG_INFINITY, |r| r.tool);
                let small_talk = relevance.as_ref().and_then(|r| r.small_talk);
                let part_tools = relevance.as_ref().map(|r| r.part_tools.clone());
                best.push(json!({
                    "id": case.id,
                    "best": similarity,
                    "small_talk": small_talk,
                    "part_tools": part_tools,
                }));
            }
            let similarities: Vec<f32> = best
                .iter()
                .map(|row| row["best"].as_f64().unwrap_or(0.0) as f32)
                .collect();
            table.push_str(&format!(
                "| {name} | {text} | {} | {} |",
                if irrelevant { "yes" } else { "no" },
                cases.len()
            ));
            let mut counts = Vec::new();
            for floor in &args.floors {
                let gated = similarities.iter().filter(|s| **s < *floor).count();
                counts.push(json!({"floor": floor, "turned_away": gated}));
                table.push_str(&format!(
                    " {gated} ({:.1}%) |",
                    100.0 * gated as f64 / cases.len().max(1) as f64
                ));
            }
            table.push('\n');
            report.push(json!({
                "set": name,
                "tool_text": text,
                "no_tool_fits": irrelevant,
                "requests": cases.len(),
                "counts": counts,
                "best": best,
            }));
        }
    }
    eprint!("{table}");
    let report = json!({
        "benchmark": "relevance-gate",
        "embedder": embedder_id,
        "sets": report,
    });
    crate::write_report(&report, args.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
