//! `agentry-eval skill-choice`: does the agent read the right skill? Each
//! request of `benches/data/skill-requests.jsonl` (written for this from
//! the eight shared skills' descriptions, four a skill, worded as users
//! would) goes to an agent set up as `agentry run --skills` sets it up (demo
//! tools, one tool round on the local model). The score is the share whose
//! first `read_skill`/`apply_skill` names the labelled skill, and the share
//! that read it at all within the run (after a failed lookup, say).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use agentry::agent::{Agent, AgentEvent};
use agentry::model::ChatModel;
use agentry::skill::{APPLY_SKILL, READ_SKILL};
use agentry::tool::Capability;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use agentry_cli::args::ModelArgs;
use agentry_cli::{DEFAULT_MAX_STEPS, DEFAULT_MAX_TOKENS};

/// What each request ends with, as in the trial that found the problem.
const ASK: &str = "Use the right skill: read it first.";

/// Arguments of `agentry-eval skill-choice`.
#[derive(clap::Args)]
pub struct SkillChoiceArgs {
    /// The skills (a directory of Agent Skills folders) [default: `skills`
    /// in $AGENTRY_DATASETS, else in the nearest `datasets` folder here or above].
    #[arg(long, value_name = "DIR")]
    skills: Option<PathBuf>,
    /// The labelled requests, one `{"request", "skill"}` object a line
    /// [default: the nearest `benches/data/skill-requests.jsonl` here or above].
    #[arg(long, value_name = "FILE")]
    requests: Option<PathBuf>,
    /// Offer skill names as free strings instead of an enum of the listed
    /// skills (for comparison).
    #[arg(long)]
    no_name_enums: bool,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(Deserialize)]
struct Request {
    request: String,
    skill: String,
}

/// One request's outcome.
#[derive(Serialize)]
struct Outcome {
    request: String,
    expected: String,
    /// Every skill name the model looked up, in order.
    lookups: Vec<String>,
    /// Whether a lookup of the labelled skill succeeded within the run.
    read_expected: bool,
    seconds: f64,
}

/// The JSON report.
#[derive(Serialize)]
struct Report {
    model: String,
    name_enums: bool,
    requests: usize,
    /// Requests whose first lookup named the labelled skill.
    right_first: usize,
    /// Requests that read the labelled skill within the run.
    right_in_run: usize,
    /// Requests with no lookup at all.
    no_lookup: usize,
    /// Lookups naming no skill there is.
    unknown_names: usize,
    seconds: f64,
    outcomes: Vec<Outcome>,
}

/// Run the evaluation.
pub(crate) async fn run(args: SkillChoiceArgs) -> Result<ExitCode, String> {
    let requests_file = crate::datasets::in_repository(
        args.requests.as_deref(),
        crate::datasets::SKILL_REQUESTS,
        "--requests FILE",
    )?;
    let skills_dir = match &args.skills {
        Some(dir) => dir.clone(),
        None => crate::datasets::datasets(None, "--skills DIR")?.join("skills"),
    };
    let text = std::fs::read_to_string(&requests_file)
        .map_err(|e| format!("{}: {e}", requests_file.display()))?;
    let requests: Vec<Request> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", requests_file.display()))?;
    let skills = agentry_cli::skills::load_and_warn(&skills_dir)?.to_skills();
    let known: Vec<String> = skills.iter().map(|skill| skill.name.clone()).collect();
    let choice = args.model.choose_from_flags();
    let model: Arc<dyn ChatModel> = agentry_cli::chat_model(&choice).await?;
    let here = PathBuf::from(".")
        .canonicalize()
        .map_err(|e| format!(".: {e}"))?;
    let agent = Agent::builder(model.clone())
        .system(agentry_cli::SYSTEM)
        .tools(agentry_cli::demo_tools(&here))
        .grant(Capability::fs_read(&here))
        .skills(skills)
        .name_enums(!args.no_name_enums)
        .max_steps(DEFAULT_MAX_STEPS)
        .max_tokens(DEFAULT_MAX_TOKENS)
        .max_tool_rounds(1)
        .build()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for (index, request) in requests.iter().enumerate() {
        let began = Instant::now();
        let (mut lookups, mut read_expected) = (Vec::new(), false);
        let mut events = Box::pin(agent.stream(format!("{} {ASK}", request.request)));
        while let Some(event) = events.next().await {
            let AgentEvent::ToolResult { record, .. } = event else {
                continue;
            };
            if record.call.name != READ_SKILL && record.call.name != APPLY_SKILL {
                continue;
            }
            let name = record.call.input["name"].as_str().unwrap_or("").to_owned();
            let found = !record.result.is_error;
            read_expected |= found && name == request.skill;
            lookups.push(name);
            if found {
                break; // the choice is made; what the model does with it is not measured here
            }
        }
        let first = lookups.first().map(String::as_str).unwrap_or("(none)");
        eprintln!(
            "[{}/{}] {} {:?} -> {}",
            index + 1,
            requests.len(),
            if first == request.skill {
                "ok  "
            } else {
                "miss"
            },
            request.request,
            lookups.join(", ")
        );
        outcomes.push(Outcome {
            request: request.request.clone(),
            expected: request.skill.clone(),
            lookups,
            read_expected,
            seconds: began.elapsed().as_secs_f64(),
        });
    }
    let count = |keep: &dyn Fn(&Outcome) -> bool| outcomes.iter().filter(|o| keep(o)).count();
    let report = Report {
        model: model.model_id().to_owned(),
        name_enums: !args.no_name_enums,
        requests: outcomes.len(),
        right_first: count(&|o| o.lookups.first() == Some(&o.expected)),
        right_in_run: count(&|o| o.read_expected),
        no_lookup: count(&|o| o.lookups.is_empty()),
        unknown_names: outcomes
            .iter()
            .flat_map(|o| &o.lookups)
            .filter(|name| !known.contains(name))
            .count(),
        seconds: started.elapsed().as_secs_f64(),
        outcomes,
    };
    eprintln!(
        "skill choice ({} name enums): first lookup right {}/{}, read within the run {}/{}, no lookup {}, unknown names {}",
        if report.name_enums { "with" } else { "without" },
        report.right_first,
        report.requests,
        report.right_in_run,
        report.requests,
        report.no_lookup,
        report.unknown_names
    );
    crate::write_report(&report, args.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}
