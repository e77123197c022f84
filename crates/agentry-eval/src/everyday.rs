//! `agentry-eval everyday`: everyday requests to two agents, scored on the
//! call and on the answer (`benches/data/everyday`, written before any
//! tuning and split in halves by a fixed rule; its README says how).
//!
//! `demo` is the agent `agentry run` builds with no flags (its four tools,
//! the file reader over `benches/data/everyday/files`); `assistant` is the
//! same set-up over eight tools described the way real tools are
//! ([`crate::everyday_tools`]). Each request runs as a user would meet it:
//! earlier turns first (their answers kept as the conversation), then the
//! last turn, whose calls and answer are scored.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use agentry::agent::{Agent, Approval, FirstStep, Outcome, RelevanceGate};
use agentry::model::{ChatModel, Message};
use agentry::tool::ToolSchema;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::everyday_check::{Check, calls_match, check_answer};
use report::{Totals, print_table, totals};

mod report;
use agentry_cli::args::{ModelArgs, ProviderKind};
use agentry_local::LocalModel;

/// The requests, in the repository.
pub const EVERYDAY: &str = "benches/data/everyday";

/// What the `assistant` agent is told (the demo's prompt, without its list of tools).
const ASSISTANT_SYSTEM: &str = "You are a helpful assistant. Use a tool whenever it can give or check the answer, \
then answer the user briefly using the tool results. When no tool fits the question, answer directly.";

/// Which half of the requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// The half knobs may be chosen on.
    Tune,
    /// The held-out half.
    Test,
    /// Both.
    All,
}

/// Arguments of `agentry-eval everyday`.
#[derive(clap::Args)]
pub struct EverydayArgs {
    /// Which half.
    #[arg(long, value_enum, default_value = "tune")]
    split: Split,
    /// Only this agent's requests (`demo` or `assistant`).
    #[arg(long)]
    agent: Option<String>,
    /// Only the requests with these ids (repeatable).
    #[arg(long = "id")]
    ids: Vec<String>,
    /// Only the first N requests (after the filters).
    #[arg(long)]
    limit: Option<usize>,
    /// The requests' folder (`requests.jsonl`, `files/`) [default: the
    /// repository's `benches/data/everyday`].
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Only the relevance gate's best similarity for each request's last
    /// turn (`--gate-embedder` chooses the embedder), without running the
    /// agents: what `benches/everyday_floors.py --sims` reads.
    #[arg(long)]
    gate_only: bool,
    /// Only ask the model outright, under a grammar, which tool each last
    /// turn needs (`which`) or whether its tool fits (`fits`), without
    /// running the agents (`crate::everyday_ask`).
    #[arg(long, value_enum)]
    ask: Option<crate::everyday_ask::Ask>,
    /// The first step of every last turn must call a tool
    /// (`ToolChoice::Required`, the gate not asked).
    #[arg(long)]
    force_call: bool,
    /// Steps with tool calls before the model must answer in text
    /// [default: as `agentry run`: 1 with the local model, 4 otherwise].
    #[arg(long)]
    tool_rounds: Option<usize>,
    #[command(flatten)]
    model: ModelArgs,
}

/// One request of `requests.jsonl`.
#[derive(Deserialize)]
struct Request {
    id: String,
    agent: String,
    style: String,
    split: String,
    turns: Vec<String>,
    calls: Option<Vec<crate::everyday_check::ExpectedCall>>,
    answer: Vec<Check>,
}

/// One request's outcome.
#[derive(Serialize)]
struct Outcome1 {
    id: String,
    agent: String,
    style: String,
    split: String,
    /// The calls of the last turn: name and arguments.
    calls: Vec<Value>,
    /// The last turn's answer (or how the run ended).
    text: String,
    /// Whether the expected calls were made (`None`: not scored).
    call_ok: Option<bool>,
    /// Whether the answer passed every check (and no call was made where none fits).
    answer_ok: bool,
    /// The checks that failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failed: Vec<String>,
    /// The relevance gate's best similarity for the last turn (`None`: no gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    gate_best: Option<f32>,
    /// The gate's nearest small talk for the last turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    small_talk: Option<f32>,
    /// What the gate told the last turn's first step.
    #[serde(skip_serializing_if = "Option::is_none")]
    first_step: Option<FirstStep>,
    /// The gate turned the last turn away (answer in text).
    gate_refused: bool,
    /// The local model's share of the probability for opening a call at the
    /// last turn's first token (with a call floor below 1 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    call_share: Option<f32>,
    /// The answer disagreed with the tool results and was asked again
    /// (`--check-answers`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    asked_again: bool,
    /// The answer still disagreed: the results were quoted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    quoted: bool,
    seconds: f64,
}

#[derive(Serialize)]
struct Report {
    model: String,
    split: Split,
    relevance_floor: Option<f32>,
    call_floor: f32,
    check_answers: agentry_cli::args::AnswerCheckArg,
    totals: Totals,
    /// Each agent and both, in each half.
    groups: Vec<(String, Totals)>,
    outcomes: Vec<Outcome1>,
}

/// Run `agentry-eval everyday`.
pub(crate) async fn run(args: EverydayArgs) -> Result<ExitCode, String> {
    let data = crate::datasets::in_repository(args.data.as_deref(), EVERYDAY, "--data DIR")?;
    let requests = read_requests(&data.join("requests.jsonl"))?;
    let chosen: Vec<&Request> = requests
        .iter()
        .filter(|r| match args.split {
            Split::All => true,
            Split::Tune => r.split == "tune",
            Split::Test => r.split == "test",
        })
        .filter(|r| args.agent.as_ref().is_none_or(|a| &r.agent == a))
        .filter(|r| args.ids.is_empty() || args.ids.contains(&r.id))
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
    let choice = args.model.choose_from_flags();
    // The local model is kept as it is too, to read its first choice's call share.
    let local = match choice.provider {
        ProviderKind::Local => Some(agentry_cli::local_model(&choice).await?),
        _ => None,
    };
    let model: Arc<dyn ChatModel> = match &local {
        Some(local) => Arc::new(local.clone()),
        None => agentry_cli::chat_model(&choice).await?,
    };
    let files = data
        .join("files")
        .canonicalize()
        .map_err(|e| format!("{}/files: {e}", data.display()))?;
    let demo = build(files.clone(), model.clone(), &choice, None, &args).await?;
    let assistant = build(
        files,
        model,
        &choice,
        Some((crate::everyday_tools::all(), ASSISTANT_SYSTEM)),
        &args,
    )
    .await?;
    if args.gate_only {
        let gate = agentry_cli::relevance_gate(&choice).await?;
        let gate = gate.ok_or("--gate-only needs the gate on (a floor above 0)")?;
        let mut sims = Vec::new();
        for request in &chosen {
            let agent = if request.agent == "demo" {
                &demo
            } else {
                &assistant
            };
            let schemas: Vec<ToolSchema> = agent.toolbox().tools().map(|t| t.schema()).collect();
            let turns: Vec<Message> = request.turns.iter().map(Message::user).collect();
            let relevance = gate
                .assess(&turns, &schemas)
                .await
                .map_err(|e| e.to_string())?;
            sims.push(serde_json::json!({
                "id": request.id,
                "gate_best": relevance.as_ref().map(|r| r.tool),
                "small_talk": relevance.as_ref().and_then(|r| r.small_talk),
                "named_tool": relevance.as_ref().and_then(|r| r.named_tool.clone()),
                "relevance": relevance,
                "tool_texts": schemas.iter().map(|t| agentry::agent::ToolText::WithArguments.of(t)).collect::<Vec<_>>(),
            }));
        }
        let report = serde_json::json!({"gate_embedder": choice.gate_embedder, "sims": sims});
        crate::write_report(&report, args.out.as_deref())?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(what) = args.ask {
        let gate = RelevanceGate::new(agentry_cli::minilm().await?, 0.0);
        let mut asked = Vec::new();
        for request in &chosen {
            let agent = if request.agent == "demo" {
                &demo
            } else {
                &assistant
            };
            let schemas: Vec<ToolSchema> = agent.toolbox().tools().map(|t| t.schema()).collect();
            let want: Vec<String> = request
                .calls
                .iter()
                .flatten()
                .map(|call| call.name.clone())
                .collect();
            let got = crate::everyday_ask::ask(
                &*model_of(&local)?,
                &gate,
                what,
                &schemas,
                &request.turns,
                &want,
            )
            .await?;
            let right = if want.is_empty() {
                request.calls.is_none() || got == "none"
            } else {
                want.contains(&got)
            };
            eprintln!(
                "{} {}: {got}",
                if right { "right" } else { "WRONG" },
                request.id
            );
            asked.push(crate::everyday_ask::Asked {
                id: request.id.clone(),
                want: if want.is_empty() {
                    vec!["none".into()]
                } else {
                    want
                },
                got,
                right,
            });
        }
        let right = asked.iter().filter(|a| a.right).count();
        eprintln!("right: {right} of {}", asked.len());
        let report = serde_json::json!({"ask": what, "model": choice.model, "right": right, "requests": asked});
        crate::write_report(&report, args.out.as_deref())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut outcomes = Vec::new();
    for (n, request) in chosen.iter().enumerate() {
        let agent = match request.agent.as_str() {
            "demo" => &demo,
            "assistant" => &assistant,
            other => return Err(format!("{}: unknown agent {other:?}", request.id)),
        };
        let outcome = run_one(agent, local.as_ref(), request).await;
        eprintln!(
            "[{}/{}] {} call {} answer {} ({:.1} s){}",
            n + 1,
            chosen.len(),
            request.id,
            match outcome.call_ok {
                Some(true) => "ok",
                Some(false) => "WRONG",
                None => "-",
            },
            if outcome.answer_ok { "ok" } else { "WRONG" },
            outcome.seconds,
            if outcome.gate_refused {
                " [gate refused]"
            } else {
                ""
            },
        );
        outcomes.push(outcome);
    }
    let all = totals(&chosen, &outcomes, |_| true);
    let mut groups = Vec::new();
    for half in ["tune", "test"] {
        for agent in ["demo", "assistant"] {
            let t = totals(&chosen, &outcomes, |r| r.split == half && r.agent == agent);
            groups.push((format!("{agent}, {half}"), t));
        }
        groups.push((
            format!("both, {half}"),
            totals(&chosen, &outcomes, |r| r.split == half),
        ));
    }
    groups.retain(|(_, t)| t.requests > 0);
    print_table(&all, &groups);
    let report = Report {
        model: choice.model.clone().unwrap_or_else(|| "default".into()),
        split: args.split,
        relevance_floor: choice.relevance_floor,
        call_floor: choice.call_floor,
        check_answers: choice.check_answers,
        totals: all,
        groups,
        outcomes,
    };
    crate::write_report(&report, args.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The local model, for `--ask`.
fn model_of(local: &Option<LocalModel>) -> Result<Arc<dyn ChatModel>, String> {
    match local {
        Some(local) => Ok(Arc::new(local.clone())),
        None => Err("--ask asks the local model".into()),
    }
}

fn read_requests(path: &Path) -> Result<Vec<Request>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))
        })
        .collect()
}

async fn build(
    dir: PathBuf,
    model: Arc<dyn ChatModel>,
    choice: &agentry_cli::ModelChoice,
    tools: Option<(Vec<agentry::tool::Tool>, &str)>,
    args: &EverydayArgs,
) -> Result<Agent, String> {
    let mut builder = agentry_cli::run_agent(dir, model, choice, tools).await?;
    if let Some(rounds) = args.tool_rounds {
        builder = builder.max_tool_rounds(rounds);
    }
    if args.force_call {
        builder = builder.first_tool_choice(agentry::model::ToolChoice::Required);
    }
    builder
        // `agentry run --yes`: the assistant's email and reminder tools are not read-only.
        .approver(|_: &agentry::tool::Tool, _: &agentry::tool::ToolCall| Approval::Approve)
        .build()
        .map_err(|e| e.to_string())
}

async fn run_one(agent: &Agent, local: Option<&LocalModel>, request: &Request) -> Outcome1 {
    let started = Instant::now();
    let mut history: Vec<Message> = Vec::new();
    let (last, earlier) = request.turns.split_last().expect("a request has a turn");
    for turn in earlier {
        history.push(Message::user(turn.clone()));
        let outcome = agent.run_messages(history.clone()).await;
        history.push(Message::assistant(outcome.text()));
    }
    history.push(Message::user(last.clone()));
    let weighed = local.map(|model| model.stats().call_choices);
    let outcome = agent.run_messages(history).await;
    let relevance = outcome.relevance.clone();
    let call_share = local.and_then(|model| {
        let stats = model.stats();
        (Some(stats.call_choices) > weighed)
            .then_some(stats.last_call_share)
            .flatten()
    });
    let made: Vec<agentry::tool::ToolCall> = outcome
        .steps
        .iter()
        .flat_map(|step| step.calls.iter().map(|c| c.call.clone()))
        .collect();
    let text = outcome.text();
    let call_ok = request
        .calls
        .as_ref()
        .map(|expected| calls_match(expected, &made));
    // Steps without calls after the last call: more than one is an answer
    // asked again.
    let answer_steps = outcome
        .steps
        .iter()
        .rev()
        .take_while(|step| step.calls.is_empty())
        .count();
    let quoted = answer_steps > 0 && text.contains("The tools returned:\n");
    let mut failed = Vec::new();
    if !matches!(outcome.outcome, Outcome::Final(_)) {
        failed.push(format!("ended {}", outcome.outcome.kind()));
    }
    failed.extend(check_answer(&request.answer, &text));
    if request.calls.as_ref().is_some_and(Vec::is_empty) && !made.is_empty() {
        failed.push("a call where no tool fits".into());
    }
    Outcome1 {
        id: request.id.clone(),
        agent: request.agent.clone(),
        style: request.style.clone(),
        split: request.split.clone(),
        calls: made
            .iter()
            .map(|c| serde_json::json!({"name": c.name, "arguments": c.input}))
            .collect(),
        text,
        call_ok,
        answer_ok: failed.is_empty(),
        failed,
        gate_best: relevance.as_ref().map(|r| r.tool),
        small_talk: relevance.as_ref().and_then(|r| r.small_talk),
        first_step: relevance.as_ref().map(|r| r.first_step),
        gate_refused: relevance
            .as_ref()
            .is_some_and(|r| r.first_step == FirstStep::Answer),
        call_share,
        asked_again: answer_steps > 1,
        quoted,
        seconds: started.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    /// The sha256 of `requests.jsonl` as it was frozen (BENCHMARKS.md says
    /// so too): a changed request fails here, so a new set gets a new file.
    const FROZEN: &str = "5e1bb78507968935622c9c3d76b5425357e7c202110b8bc2b804c822abe45a0d";

    fn data() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(EVERYDAY)
    }

    #[test]
    fn the_requests_are_frozen_split_by_their_rule_and_name_real_tools() {
        let path = data().join("requests.jsonl");
        let bytes = std::fs::read(&path).unwrap();
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            digest,
            FROZEN,
            "{} changed after it was frozen",
            path.display()
        );
        let requests = read_requests(&path).unwrap();
        assert_eq!(requests.len(), 168);
        let demo: Vec<String> = agentry_cli::demo_tools(Path::new("."))
            .iter()
            .map(|t| t.name.clone())
            .collect();
        let assistant: Vec<String> = crate::everyday_tools::all()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        let mut ids = std::collections::HashSet::new();
        for request in &requests {
            assert!(ids.insert(request.id.clone()), "{} twice", request.id);
            let even = Sha256::digest(request.id.as_bytes())[0] % 2 == 0;
            assert_eq!(
                request.split,
                if even { "tune" } else { "test" },
                "{}",
                request.id
            );
            assert!(!request.turns.is_empty(), "{}", request.id);
            let tools = match request.agent.as_str() {
                "demo" => &demo,
                "assistant" => &assistant,
                other => panic!("{}: agent {other}", request.id),
            };
            for call in request.calls.iter().flatten() {
                assert!(
                    tools.contains(&call.name),
                    "{}: no tool {}",
                    request.id,
                    call.name
                );
            }
        }
        let tune = requests.iter().filter(|r| r.split == "tune").count();
        assert_eq!((tune, requests.len() - tune), (79, 89));
    }

    #[test]
    fn the_files_the_demo_requests_name_are_there_but_two() {
        let files = data().join("files");
        for name in [
            "notes.txt",
            "todo.md",
            "recipe.txt",
            "config.json",
            "meeting.md",
            "shopping.csv",
            "poem.txt",
        ] {
            assert!(files.join(name).is_file(), "{name}");
        }
        // Two requests ask for files that do not exist: the answer must say so.
        for name in ["missing.txt", "secret.txt"] {
            assert!(!files.join(name).exists(), "{name}");
        }
    }
}
