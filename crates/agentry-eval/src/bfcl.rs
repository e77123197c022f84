//! `agentry-eval bfcl`: Berkeley Function Calling Leaderboard questions
//! through our stack, scored by BFCL's rule, written as a JSON report.
//!
//! The rule: every call names a function of the question, passes no argument
//! the answer does not list, gives every required argument, and each value is
//! among the accepted ones (strings compared BFCL's way: case and the
//! characters ` ,./-_*^` ignored). `parallel` needs exactly as many calls as
//! the answer, matched in any order. `irrelevance` passes only with no call.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use agentry::agent::RelevanceGate;
use agentry::model::{ChatRequest, Message, Step, ToolChoice};
use agentry::tool::{ToolCall, ToolSchema};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use agentry_cli::args::ModelArgs;
pub use agentry_evals::bfcl::{call_matches, calls_match, json_schema};

/// The BFCL categories shipped in the repository's `datasets/bfcl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// One function, one call.
    #[value(name = "simple_python")]
    SimplePython,
    /// Several functions, one call.
    Multiple,
    /// One function, several calls.
    Parallel,
    /// No function fits: the model must not call any.
    Irrelevance,
}

impl Category {
    fn file(self) -> &'static str {
        match self {
            Category::SimplePython => "simple_python",
            Category::Multiple => "multiple",
            Category::Parallel => "parallel",
            Category::Irrelevance => "irrelevance",
        }
    }
}

/// Arguments of `agentry-eval bfcl`.
#[derive(clap::Args)]
pub struct BfclArgs {
    /// Which category.
    #[arg(long, value_enum, required_unless_present = "all")]
    category: Option<Category>,
    /// Every category in turn (one model load): a JSON report per category
    /// in `--out-dir`, and one Markdown table on stdout.
    #[arg(long, conflicts_with_all = ["category", "out"])]
    all: bool,
    /// With `--all`: where the reports go, as `bfcl-<category>-<grammar|free>.json`.
    #[arg(long, default_value = ".", requires = "all")]
    out_dir: PathBuf,
    #[command(flatten)]
    model: ModelArgs,
    /// Only the first N questions.
    #[arg(long)]
    limit: Option<usize>,
    /// Only the questions with these ids (repeatable).
    #[arg(long = "id")]
    ids: Vec<String>,
    /// Every question's step must call a function (`ToolChoice::Required`,
    /// the gate not asked): what the gate's call floor does where it applies.
    #[arg(long)]
    force_call: bool,
    /// Ask the model outright whether the question's function fits
    /// (`fits`) or which of its functions does (`which`), instead of
    /// running it; a question passes when the answer is a function for a
    /// question one fits, and `none` for `irrelevance`. Questions the gate
    /// turns away are not asked (they are passed on as the gate decided).
    #[arg(long, value_enum)]
    ask: Option<crate::everyday_ask::Ask>,
    /// Where the BFCL files are (`bfcl/<category>.jsonl`) [default:
    /// $AGENTRY_DATASETS, else the nearest `datasets` folder here or above].
    #[arg(long, value_name = "DIR")]
    datasets: Option<PathBuf>,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Question {
    id: String,
    question: Vec<Vec<Turn>>,
    function: Vec<Function>,
}

#[derive(Deserialize)]
struct Turn {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct Function {
    name: String,
    #[serde(default)]
    description: String,
    parameters: Value,
}

#[derive(Deserialize)]
struct Answer {
    id: String,
    ground_truth: Vec<serde_json::Map<String, Value>>,
}

/// One question's outcome.
#[derive(Serialize)]
struct Outcome {
    id: String,
    pass: bool,
    calls: Vec<ToolCall>,
    schema_valid_calls: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Run `agentry-eval bfcl`.
pub(crate) async fn run(args: BfclArgs) -> Result<ExitCode, String> {
    let datasets = crate::datasets::datasets(args.datasets.as_deref(), "--datasets DIR")?;
    let choice = args.model.choose_from_flags();
    let model = agentry_cli::chat_model(&choice).await?;
    let gate = agentry_cli::relevance_gate(&choice).await?;
    let gate = gate.as_ref();
    let Some(category) = args.category else {
        let mut reports = Vec::new();
        for category in [
            Category::SimplePython,
            Category::Multiple,
            Category::Parallel,
            Category::Irrelevance,
        ] {
            let report =
                run_category(&args, &datasets, &choice, model.as_ref(), gate, category).await?;
            let mode = if choice.grammar { "grammar" } else { "free" };
            let path = args
                .out_dir
                .join(format!("bfcl-{}-{mode}.json", category.file()));
            let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            reports.push(report);
        }
        print!("{}", table(&reports));
        return Ok(ExitCode::SUCCESS);
    };
    let report = run_category(&args, &datasets, &choice, model.as_ref(), gate, category).await?;
    crate::write_report(&report, args.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The Markdown table of BFCL reports, one row each.
fn table(reports: &[Value]) -> String {
    let mut text = String::from(
        "| category | call syntax | grammar | text calls | call lists | relevance floor | gated | questions | passed | accuracy | calls | schema-valid calls | s/question |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in reports {
        let on = |key: &str| if r[key] == true { "on" } else { "off" };
        let questions = r["questions"].as_u64().unwrap_or(0);
        text.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1}% | {} | {} | {:.1} |\n",
            r["category"].as_str().unwrap_or(""),
            r["call_syntax"].as_str().unwrap_or("template"),
            on("grammar"),
            on("text_calls"),
            // The note exists only with the template's syntax.
            if r["call_syntax"] == "python" {
                "-"
            } else {
                on("call_lists")
            },
            r["relevance_floor"]
                .as_f64()
                .map_or("off".to_owned(), |f| f.to_string()),
            r["gated"].as_u64().unwrap_or(0),
            questions,
            r["passed"],
            100.0 * r["accuracy"].as_f64().unwrap_or(0.0),
            r["calls"],
            r["schema_valid_calls"],
            r["seconds"].as_f64().unwrap_or(0.0) / questions.max(1) as f64,
        ));
    }
    text
}

/// Run one category's questions and return its JSON report.
async fn run_category(
    args: &BfclArgs,
    datasets: &Path,
    choice: &agentry_cli::ModelChoice,
    model: &dyn agentry::model::ChatModel,
    gate: Option<&RelevanceGate>,
    category: Category,
) -> Result<Value, String> {
    let dir = datasets.join("bfcl");
    let read = |name: String| {
        std::fs::read_to_string(dir.join(&name))
            .map_err(|e| format!("{}: {e}", dir.join(&name).display()))
    };
    let questions: Vec<Question> = read(format!("{}.jsonl", category.file()))?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let answers: Vec<Answer> = if category == Category::Irrelevance {
        Vec::new()
    } else {
        read(format!("{}_answers.jsonl", category.file()))?
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?
    };
    let limit = args.limit.unwrap_or(questions.len()).min(questions.len());
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let mut gated = 0;
    // With --ask: the embedder that finds a question's nearest function.
    let mut near: Option<RelevanceGate> = None;
    let chosen = questions
        .iter()
        .filter(|q| args.ids.is_empty() || args.ids.contains(&q.id))
        .take(limit);
    for question in chosen {
        let tools: Vec<ToolSchema> = question
            .function
            .iter()
            .map(|f| ToolSchema {
                name: f.name.clone(),
                input_schema: json_schema(&f.parameters),
                output_schema: None,
                description: Some(f.description.clone()),
            })
            .collect();
        let (system, messages) = conversation(&question.question[0]);
        // The agent's relevance gate, as `Agent` applies it before step 1.
        let tool_choice = match gate {
            _ if args.force_call => ToolChoice::Required,
            Some(gate) => gate
                .first_choice(&messages, &tools)
                .await
                .map_err(|error| format!("the relevance gate: {error}"))?,
            None => ToolChoice::Auto,
        };
        if tool_choice == ToolChoice::None {
            gated += 1;
        }
        let request = ChatRequest {
            system,
            messages,
            tools: tools.clone(),
            tool_choice,
            max_tokens: Some(256),
            ..ChatRequest::default()
        };
        let answer = answers.iter().find(|a| a.id == question.id);
        if let (Some(what), true) = (args.ask, request.tool_choice != ToolChoice::None) {
            let want: Vec<String> = answer
                .iter()
                .flat_map(|a| a.ground_truth.iter().flat_map(|call| call.keys().cloned()))
                .collect();
            let last = crate::everyday_ask::last_user(&request.messages);
            let near = match &near {
                Some(near) => near,
                None => near.insert(RelevanceGate::new(agentry_cli::minilm().await?, 0.0)),
            };
            let got = crate::everyday_ask::ask(model, near, what, &tools, &[last], &want).await?;
            let pass = (category == Category::Irrelevance) == (got == "none");
            eprintln!(
                "{} {}: {got}",
                if pass { "pass" } else { "FAIL" },
                question.id
            );
            outcomes.push(Outcome {
                id: question.id.clone(),
                pass,
                calls: Vec::new(),
                schema_valid_calls: 0,
                text: Some(got),
                error: None,
            });
            continue;
        }
        let outcome = match model.step(&request).await {
            Ok(Step::Final { text, .. }) => Outcome {
                id: question.id.clone(),
                pass: category == Category::Irrelevance,
                calls: Vec::new(),
                schema_valid_calls: 0,
                text: Some(text),
                error: None,
            },
            Ok(Step::Tool { calls, .. }) => {
                let valid = calls
                    .iter()
                    .filter(|call| schema_valid(call, &tools))
                    .count();
                let pass = match (category, answer) {
                    (Category::Irrelevance, _) => false,
                    (_, Some(answer)) => calls_match(&calls, &answer.ground_truth),
                    (_, None) => false,
                };
                Outcome {
                    id: question.id.clone(),
                    pass,
                    calls,
                    schema_valid_calls: valid,
                    text: None,
                    error: None,
                }
            }
            Err(error) => Outcome {
                id: question.id.clone(),
                pass: false,
                calls: Vec::new(),
                schema_valid_calls: 0,
                text: None,
                error: Some(error.to_string()),
            },
        };
        eprintln!(
            "{} {}",
            if outcome.pass { "pass" } else { "FAIL" },
            outcome.id
        );
        outcomes.push(outcome);
    }
    let total = outcomes.len();
    let passed = outcomes.iter().filter(|o| o.pass).count();
    let calls: usize = outcomes.iter().map(|o| o.calls.len()).sum();
    let valid: usize = outcomes.iter().map(|o| o.schema_valid_calls).sum();
    let report = json!({
        "benchmark": "bfcl",
        "category": category,
        "provider": format!("{:?}", choice.provider).to_lowercase(),
        "model": model.model_id(),
        "grammar": choice.grammar,
        "text_calls": choice.text_calls,
        "call_syntax": choice.call_syntax.to_possible_value().map(|v| v.get_name().to_owned()),
        "call_lists": choice.call_lists,
        "one_tool_lists": choice.one_tool_lists,
        "list_floor": as_written(choice.list_floor),
        "repeated_calls": choice.repeated_calls,
        "ungrounded_calls": choice.ungrounded_calls,
        "relevance_floor": choice.relevance_floor.map(as_written),
        "gated": gated,
        "questions": total,
        "passed": passed,
        "accuracy": if total > 0 { passed as f64 / total as f64 } else { 0.0 },
        "calls": calls,
        "schema_valid_calls": valid,
        "schema_valid_rate": if calls > 0 { valid as f64 / calls as f64 } else { 0.0 },
        "seconds": started.elapsed().as_secs_f64(),
        "results": outcomes,
    });
    eprintln!(
        "{}: {passed}/{total} passed ({:.1}%), {valid}/{calls} calls schema-valid",
        category.file(),
        100.0 * passed as f64 / total.max(1) as f64
    );
    Ok(report)
}

/// `value` as written in a flag or a file (`0.05`, not the `f32`'s
/// nearest `f64`, `0.05000000074505806`).
fn as_written(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(f64::from(value))
}

/// A question's turns as the model gets them: `system` turns become the
/// system prompt (joined by blank lines, in order), the rest messages.
fn conversation(turns: &[Turn]) -> (Option<String>, Vec<Message>) {
    let system: Vec<&str> = turns
        .iter()
        .filter(|turn| turn.role == "system")
        .map(|turn| turn.content.as_str())
        .collect();
    let messages = turns
        .iter()
        .filter_map(|turn| match turn.role.as_str() {
            "system" => None,
            "assistant" => Some(Message::assistant(turn.content.clone())),
            _ => Some(Message::user(turn.content.clone())),
        })
        .collect();
    ((!system.is_empty()).then(|| system.join("\n\n")), messages)
}

fn schema_valid(call: &ToolCall, tools: &[ToolSchema]) -> bool {
    let Some(tool) = tools.iter().find(|t| t.name == call.name) else {
        return false;
    };
    jsonschema::validator_for(&tool.input_schema)
        .is_ok_and(|validator| validator.is_valid(&call.input))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_a_row_per_report() {
        let report = json!({
            "category": "parallel", "call_syntax": "template", "grammar": true, "text_calls": false, "call_lists": true,
            "relevance_floor": 0.25, "gated": 1, "questions": 4,
            "passed": 1, "accuracy": 0.25, "calls": 5, "schema_valid_calls": 5, "seconds": 10.0
        });
        let table = table(&[report]);
        assert_eq!(
            table.lines().nth(2),
            Some(
                "| parallel | template | on | off | on | 0.25 | 1 | 4 | 1 | 25.0% | 5 | 5 | 2.5 |"
            )
        );
    }

    #[test]
    fn system_turns_become_the_system_prompt() {
        let turns: Vec<Turn> = serde_json::from_value(json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "Use metric units."},
            {"role": "assistant", "content": "Hello"}
        ]))
        .unwrap();
        let (system, messages) = conversation(&turns);
        assert_eq!(
            system.as_deref(),
            Some("You are terse.\n\nUse metric units.")
        );
        assert_eq!(messages, [Message::user("Hi"), Message::assistant("Hello")]);
        let (system, _) = conversation(&turns[1..2]);
        assert_eq!(system, None);
    }
}
