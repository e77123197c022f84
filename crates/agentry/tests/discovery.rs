//! Function groups and discovery, with a scripted model: the
//! first prompt carries module summaries only (and always-included
//! groups); `discover` loads schemas that stay for the run, in order; an
//! undiscovered call is refused with what to do; a step that only
//! discovered is followed by one that must call a tool (and is no tool
//! round); groups and flat tools do not mix; a tool source is a module too.

use std::sync::Arc;

use agentry::BoxFuture;
use agentry::agent::{Agent, AgentError, DISCOVER};
use agentry::model::{ScriptedModel, Step, ToolChoice, Usage};
use agentry::tool::{Tool, ToolCall, ToolGroup, ToolSource, function};
use serde_json::{Value, json};

fn tool(name: &str, answer: &'static str) -> Tool {
    function(name)
        .description(format!("The {name} function.\nMore detail."))
        .handler(move |_: Value| Ok::<_, String>(answer))
        .build()
        .unwrap()
}

fn calls(calls: &[(&str, &str, Value)]) -> Step {
    Step::Tool {
        calls: calls
            .iter()
            .map(|(id, name, input)| ToolCall::new(*id, *name, input.clone()))
            .collect(),
        text: String::new(),
        tokens: Usage::new(1, 1),
    }
}

fn done() -> Step {
    Step::Final {
        text: "done".into(),
        tokens: Usage::new(1, 1),
    }
}

fn groups() -> Vec<ToolGroup> {
    vec![
        ToolGroup::new("kb", "Knowledge Base")
            .selection_criteria("Use for policy or documentation lookup.")
            .tool(tool("find_policy", "30 days"))
            .tool(tool("search", "found")),
        ToolGroup::new("billing", "Billing")
            .description("Invoices and refunds.")
            .tool(tool("lookup_invoice", "INV-1")),
        ToolGroup::new("clock", "Clock")
            .always_include(true)
            .tool(tool("now", "noon")),
    ]
}

fn shown(model: &ScriptedModel) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|request| request.tools.iter().map(|t| t.name.clone()).collect())
        .collect()
}

/// The tool choice of each request the model got.
fn choices(model: &ScriptedModel) -> Vec<ToolChoice> {
    model
        .requests()
        .iter()
        .map(|request| request.tool_choice.clone())
        .collect()
}

#[tokio::test]
async fn discover_loads_modules_for_the_next_step_and_they_stay() {
    let model = Arc::new(
        ScriptedModel::new()
            // Too early: kb is not loaded.
            .reply(calls(&[("1", "kb.find_policy", json!({}))]))
            .reply(calls(&[("2", DISCOVER, json!({"tools": "kb"}))]))
            .reply(calls(&[
                ("3", "kb.find_policy", json!({})),
                (
                    "4",
                    DISCOVER,
                    json!({"tools": ["billing.lookup_invoice", "nothing"]}),
                ),
            ]))
            .reply(calls(&[("5", "billing.lookup_invoice", json!({}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .system("You help.")
        .groups(groups())
        .discovery(true)
        .max_steps(8)
        .build()
        .unwrap()
        .run("Can this customer get a refund?")
        .await;
    let outputs: Vec<(String, bool, Value)> = run
        .steps
        .iter()
        .flat_map(|step| &step.calls)
        .map(|r| {
            (
                r.call.name.clone(),
                r.result.is_error,
                r.result.output.clone(),
            )
        })
        .collect();
    assert_eq!(
        outputs[0],
        (
            "kb.find_policy".into(),
            true,
            json!(
                "kb.find_policy is not loaded yet: call discover({\"tools\": \"kb\"}) first, then call it"
            )
        )
    );
    assert_eq!(
        outputs[1].2,
        json!({"loaded": [
            {"name": "kb.find_policy", "description": "The find_policy function."},
            {"name": "kb.search", "description": "The search function."}
        ], "unknown": []})
    );
    assert_eq!(
        outputs[2],
        ("kb.find_policy".into(), false, json!("30 days"))
    );
    assert_eq!(
        outputs[3].2,
        json!({"loaded": [{"name": "billing.lookup_invoice", "description": "The lookup_invoice function."}], "unknown": ["nothing"]})
    );
    assert_eq!(
        outputs[4],
        ("billing.lookup_invoice".into(), false, json!("INV-1"))
    );

    // What each step showed: always-included groups and discover first; then
    // what was discovered, appended in order, for the rest of the run.
    assert_eq!(
        shown(&model),
        [
            vec!["clock.now", DISCOVER],
            vec!["clock.now", DISCOVER],
            vec!["clock.now", DISCOVER, "kb.find_policy", "kb.search"],
            // Everything is loaded: nothing is left to discover.
            vec![
                "clock.now",
                "kb.find_policy",
                "kb.search",
                "billing.lookup_invoice"
            ],
            vec![
                "clock.now",
                "kb.find_policy",
                "kb.search",
                "billing.lookup_invoice"
            ],
        ]
    );
    // A step that only discovered is followed by one that must call a tool.
    let choices = choices(&model);
    assert_eq!(
        choices,
        [
            ToolChoice::Auto,
            ToolChoice::Auto,
            ToolChoice::Required,
            ToolChoice::Auto,
            ToolChoice::Auto
        ]
    );
    // The first prompt carries the module summaries.
    let system = model.requests()[0].system.clone().unwrap();
    assert!(system.starts_with("You help.\n\n## Modules\n"), "{system}");
    for line in [
        "- kb (Knowledge Base): Use for policy or documentation lookup.",
        "- billing (Billing): Invoices and refunds.",
        "- clock (Clock)",
    ] {
        assert!(system.contains(line), "{line} in {system}");
    }
}

#[tokio::test]
async fn discovering_nothing_known_is_an_error_that_names_the_modules() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("1", DISCOVER, json!({"tools": ["weather"]}))]))
            .reply(calls(&[("2", DISCOVER, json!({"modules": "kb"}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .groups(groups())
        .discovery(true)
        .build()
        .unwrap()
        .run("hi")
        .await;
    let results: Vec<&agentry::tool::ToolResult> = run
        .steps
        .iter()
        .flat_map(|s| &s.calls)
        .map(|r| &r.result)
        .collect();
    assert!(results.iter().all(|r| r.is_error));
    assert_eq!(
        results[0].output,
        json!(
            "tool \"discover\" failed: no module or function is named weather; the modules are: kb, billing, clock"
        )
    );
    assert!(
        results[1].output_text().contains("tools"),
        "{}",
        results[1].output_text()
    );
    // Nothing was loaded.
    assert_eq!(shown(&model)[2], ["clock.now", DISCOVER]);
}

#[tokio::test]
async fn without_discovery_groups_only_namespace_their_tools() {
    let model = Arc::new(ScriptedModel::new().reply(done()));
    let agent = Agent::builder(model.clone())
        .groups(groups())
        .build()
        .unwrap();
    agent.run("hi").await;
    assert_eq!(
        shown(&model)[0],
        [
            "kb.find_policy",
            "kb.search",
            "billing.lookup_invoice",
            "clock.now"
        ]
    );
    assert!(model.requests()[0].system.is_none());
}

#[test]
fn groups_and_flat_tools_do_not_mix_and_namespaces_are_checked() {
    let mixed = Agent::builder(ScriptedModel::new())
        .groups(groups())
        .tool(tool("loose", "x"))
        .build()
        .unwrap_err();
    assert_eq!(
        mixed.to_string(),
        "functions are either all flat or all grouped: the flat tools utils.loose sit beside the groups kb, billing, clock; put them in a group"
    );
    let reserved = Agent::builder(ScriptedModel::new())
        .group(ToolGroup::new("discover", "Sneaky").tool(tool("x", "x")))
        .build()
        .unwrap_err();
    assert!(matches!(reserved, AgentError::Group(_)), "{reserved}");
    assert!(
        reserved.to_string().contains("\"discover\" is reserved"),
        "{reserved}"
    );
    // A derived builder keeps the groups.
    let agent = Agent::builder(ScriptedModel::new())
        .groups(groups())
        .discovery(true)
        .build()
        .unwrap();
    let derived = agent.to_builder().max_steps(3).build().unwrap();
    assert_eq!(derived.toolbox().len(), 4);
}

/// An MCP server, say: its tools are a module named after their namespace.
struct Remote;

impl ToolSource for Remote {
    fn name(&self) -> &str {
        "remote"
    }
    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>, String>> {
        let tools = vec![
            function("echo")
                .namespace("everything")
                .description("Echo a message.")
                .handler(|v: Value| Ok::<_, String>(v))
                .build()
                .unwrap(),
        ];
        Box::pin(async move { Ok(tools) })
    }
    fn changed(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn a_tool_source_is_a_module_to_discover() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("1", DISCOVER, json!({"tools": "everything"}))]))
            .reply(calls(&[("2", "everything.echo", json!({}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .groups(groups())
        .tool_source(Remote)
        .discovery(true)
        .build()
        .unwrap()
        .run("hi")
        .await;
    let last = &run.steps[1].calls[0];
    assert!(!last.result.is_error, "{:?}", last.result);
    assert!(
        model.requests()[0]
            .system
            .as_deref()
            .unwrap()
            .contains("- everything (tool server)")
    );
    assert_eq!(shown(&model)[1], ["clock.now", DISCOVER, "everything.echo"]);
}

#[tokio::test]
async fn discovering_is_no_tool_round() {
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("1", DISCOVER, json!({"tools": "kb"}))]))
            .reply(calls(&[("2", "kb.search", json!({}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .groups(groups())
        .discovery(true)
        .max_tool_rounds(1)
        .build()
        .unwrap()
        .run("hi")
        .await;
    assert_eq!(run.text(), "done");
    assert_eq!(run.steps[1].calls[0].result.output, json!("found"));
    let choices = choices(&model);
    // The one tool round is kb.search's; after it the model answers in text.
    assert_eq!(
        choices,
        [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None]
    );
}

/// A searcher that finds what it was told to, and records the queries.
struct Finds(Vec<&'static str>, std::sync::Mutex<Vec<String>>);

impl agentry::tool::ToolSearcher for Finds {
    fn search<'a>(&'a self, query: &'a str, limit: usize) -> BoxFuture<'a, Vec<String>> {
        self.1.lock().unwrap().push(query.to_owned());
        let names = self.0.iter().take(limit).map(|n| n.to_string()).collect();
        Box::pin(async move { names })
    }
}

#[tokio::test]
async fn search_tools_finds_tools_that_are_callable_next_step() {
    use agentry::agent::SEARCH_TOOLS;
    let finds = Arc::new(Finds(
        vec!["billing.lookup_invoice", "not.in_catalog", "kb.search"],
        Default::default(),
    ));
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[(
                "1",
                SEARCH_TOOLS,
                json!({"query": "invoice for order 7"}),
            )]))
            .reply(calls(&[("2", "billing.lookup_invoice", json!({}))]))
            .reply(calls(&[("3", SEARCH_TOOLS, json!({"query": "  "}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .groups(groups())
        .discovery(true)
        .tool_search(finds.clone())
        .build()
        .unwrap()
        .run("Find invoice 7")
        .await;
    let results: Vec<&agentry::tool::ToolResult> = run
        .steps
        .iter()
        .flat_map(|s| &s.calls)
        .map(|r| &r.result)
        .collect();
    assert_eq!(
        results[0].output,
        json!({"loaded": [
            {"name": "billing.lookup_invoice", "description": "The lookup_invoice function.", "namespace": "billing"},
            {"name": "kb.search", "description": "The search function.", "namespace": "kb"}
        ]})
    );
    assert_eq!(results[1].output, json!("INV-1"));
    assert!(results[2].is_error);
    assert_eq!(*finds.1.lock().unwrap(), ["invoice for order 7"]);
    assert_eq!(
        shown(&model)[1],
        [
            "clock.now",
            DISCOVER,
            SEARCH_TOOLS,
            "billing.lookup_invoice",
            "kb.search"
        ]
    );
    let system = model.requests()[0].system.clone().unwrap();
    assert!(
        system.contains("Or call `search_tools` with what you need"),
        "{system}"
    );
    assert!(system.contains("- kb (Knowledge Base)"), "{system}");
}

#[tokio::test]
async fn too_many_modules_to_list_are_searched_instead() {
    let many: Vec<ToolGroup> = (0..45)
        .map(|i| {
            ToolGroup::new(format!("api{i}"), format!("API {i}"))
                .always_include(i == 0)
                .tool(tool("get", "x"))
        })
        .collect();
    let model = Arc::new(ScriptedModel::new().reply(done()));
    Agent::builder(model.clone())
        .groups(many.clone())
        .discovery(true)
        .tool_search(Finds(vec![], Default::default()))
        .build()
        .unwrap()
        .run("hi")
        .await;
    let system = model.requests()[0].system.clone().unwrap();
    assert!(
        system.contains(
            "There are 45 modules with 45 functions, too many to list: call `search_tools`"
        ),
        "{system}"
    );
    assert!(
        system.contains("- api0 (API 0)"),
        "always-included modules are listed"
    );
    assert!(!system.contains("- api1 (API 1)"), "{system}");
    // Without a searcher, every module is listed.
    let model = Arc::new(ScriptedModel::new().reply(done()));
    Agent::builder(model.clone())
        .groups(many)
        .discovery(true)
        .build()
        .unwrap()
        .run("hi")
        .await;
    let system = model.requests()[0].system.clone().unwrap();
    assert!(system.contains("- api44 (API 44)"), "{system}");
    assert!(!system.contains("search_tools"), "{system}");
}

#[tokio::test]
async fn search_tools_loads_only_what_fits_one_step() {
    use agentry::agent::{SEARCH_BUDGET_BYTES, SEARCH_TOOLS};
    // Three tools, each a little over a third of the budget: the best two
    // are loaded, the third is listed to discover by name.
    let big = |name: &str| {
        let padding = "x".repeat(SEARCH_BUDGET_BYTES / 3);
        function(name)
            .description(format!("The {name} function.\n{padding}"))
            .handler(|_: Value| Ok::<_, String>("ok"))
            .build()
            .unwrap()
    };
    let group = ToolGroup::new("big", "Big")
        .tool(big("one"))
        .tool(big("two"))
        .tool(big("three"));
    let finds = Arc::new(Finds(
        vec!["big.three", "big.one", "big.two"],
        Default::default(),
    ));
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("1", SEARCH_TOOLS, json!({"query": "big"}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .groups([group])
        .discovery(true)
        .tool_search(finds)
        .build()
        .unwrap()
        .run("go big")
        .await;
    assert_eq!(
        run.steps[0].calls[0].result.output,
        json!({
            "loaded": [
                {"name": "big.three", "description": "The three function.", "namespace": "big"},
                {"name": "big.one", "description": "The one function.", "namespace": "big"}
            ],
            "not_loaded": [
                {"name": "big.two", "description": "The two function.", "namespace": "big"}
            ],
            "note": "these matched too but are too large to load in the same step: call discover with one's name to load it"
        })
    );
    assert_eq!(
        shown(&model)[1],
        [DISCOVER, SEARCH_TOOLS, "big.three", "big.one"],
        "loaded tools join in the order they were found"
    );
    // The best match is loaded even when it alone is over the budget.
    let huge = function("huge")
        .description("x".repeat(SEARCH_BUDGET_BYTES * 2))
        .handler(|_: Value| Ok::<_, String>("ok"))
        .build()
        .unwrap();
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("1", SEARCH_TOOLS, json!({"query": "huge"}))]))
            .reply(done()),
    );
    Agent::builder(model.clone())
        .groups([ToolGroup::new("h", "H").tool(huge)])
        .discovery(true)
        .tool_search(Finds(vec!["h.huge"], Default::default()))
        .build()
        .unwrap()
        .run("go")
        .await;
    // (It was the whole catalog, so the built-ins leave with nothing left to find.)
    assert_eq!(shown(&model)[1], ["h.huge"]);
    let description = model.requests()[1].tools[0].description.clone().unwrap();
    assert!(description.len() < 400, "shortened: {description}");
    assert!(description.ends_with("a call that breaks a rule gets an error that names it.)"));
}

#[tokio::test]
async fn a_large_schema_is_shown_shortened_and_still_enforced_whole() {
    use agentry::agent::PROMPT_SCHEMA_BYTES;
    // 60 optional arguments with long descriptions, and one required
    // argument with a rule (a pattern).
    let mut properties = serde_json::Map::new();
    properties.insert(
        "id".into(),
        json!({"type": "string", "pattern": "^[0-9]+$", "description": "The order id. Digits only."}),
    );
    for i in 0..60 {
        properties.insert(
            format!("option_{i}"),
            json!({"type": "string", "description": format!("Option {i}. {}", "detail ".repeat(20))}),
        );
    }
    let schema = json!({"type": "object", "properties": properties, "required": ["id"]});
    let wide = Tool::new(
        "wide",
        schema.clone(),
        agentry::tool::ToolHandler::sync(|_: Value, _| Ok(json!("shipped"))),
    )
    .with_description("Ship an order. Takes many options.");
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("1", DISCOVER, json!({"tools": "shop"}))]))
            .reply(calls(&[("2", "shop.wide", json!({"id": "seven"}))]))
            .reply(calls(&[("3", "shop.wide", json!({"id": "7"}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .groups([ToolGroup::new("shop", "Shop").tool(wide)])
        .discovery(true)
        .build()
        .unwrap()
        .run("ship order 7")
        .await;
    let shown = &model.requests()[1].tools;
    let wide = shown.iter().find(|t| t.name == "shop.wide").unwrap();
    let size = wide.name.len()
        + wide.description.as_deref().unwrap().len()
        + wide.input_schema.to_string().len();
    assert!(size <= PROMPT_SCHEMA_BYTES, "{size} bytes shown");
    assert!(
        schema.to_string().len() > PROMPT_SCHEMA_BYTES,
        "the test's schema is large"
    );
    assert_eq!(wide.input_schema["required"], json!(["id"]));
    assert_eq!(wide.input_schema["properties"]["id"]["pattern"], "^[0-9]+$");
    let results: Vec<&agentry::tool::ToolResult> = run
        .steps
        .iter()
        .flat_map(|s| &s.calls)
        .map(|r| &r.result)
        .collect();
    assert!(results[1].is_error, "the full schema still applies");
    assert!(
        results[1].output.to_string().contains("id"),
        "{}",
        results[1].output
    );
    assert_eq!(results[2].output, json!("shipped"));
}

#[tokio::test]
async fn search_first_loads_what_the_request_finds_before_step_one() {
    use agentry::agent::SEARCH_TOOLS;
    let finds = Arc::new(Finds(vec!["billing.lookup_invoice"], Default::default()));
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("1", "billing.lookup_invoice", json!({}))]))
            .reply(done()),
    );
    let run = Agent::builder(model.clone())
        .groups(groups())
        .discovery(true)
        .tool_search(finds.clone())
        .search_first(true)
        .first_tool_choice(ToolChoice::Required)
        .build()
        .unwrap()
        .run("Find the invoice for order 7")
        .await;
    assert_eq!(*finds.1.lock().unwrap(), ["Find the invoice for order 7"]);
    assert_eq!(
        shown(&model)[0],
        [
            "clock.now",
            DISCOVER,
            SEARCH_TOOLS,
            "billing.lookup_invoice"
        ]
    );
    assert_eq!(run.steps[0].calls[0].result.output, json!("INV-1"));
    assert_eq!(run.messages.len(), 4, "no search appears in the transcript");
    let system = model.requests()[0].system.clone().unwrap();
    assert!(
        system.contains("The functions that best match the request are loaded already"),
        "{system}"
    );
    // Without search_first, the same agent's first step has no billing tool.
    let model = Arc::new(ScriptedModel::new().reply(done()));
    Agent::builder(model.clone())
        .groups(groups())
        .discovery(true)
        .tool_search(finds)
        .build()
        .unwrap()
        .run("Find the invoice for order 7")
        .await;
    assert_eq!(shown(&model)[0], ["clock.now", DISCOVER, SEARCH_TOOLS]);
}

#[tokio::test]
async fn discover_names_are_an_enum_of_modules_and_functions() {
    let model = Arc::new(ScriptedModel::new().reply(done()));
    Agent::builder(model.clone())
        .groups(groups())
        .discovery(true)
        .build()
        .unwrap()
        .run("hi")
        .await;
    let request = &model.requests()[0];
    let discover = request.tools.iter().find(|t| t.name == DISCOVER).unwrap();
    let names = json!([
        "kb",
        "billing",
        "clock",
        "kb.find_policy",
        "kb.search",
        "billing.lookup_invoice",
        "clock.now"
    ]);
    let one = &discover.input_schema["properties"]["tools"]["anyOf"];
    assert_eq!(one[0]["enum"], names);
    assert_eq!(one[1]["items"]["enum"], names);
    // Past DISCOVER_ENUM_BYTES of names (60 modules and 60 functions, about
    // 1,300 bytes), any string.
    let many: Vec<ToolGroup> = (0..60)
        .map(|i| ToolGroup::new(format!("api{i}"), format!("API {i}")).tool(tool("get", "x")))
        .collect();
    let model = Arc::new(ScriptedModel::new().reply(done()));
    Agent::builder(model.clone())
        .groups(many)
        .discovery(true)
        .build()
        .unwrap()
        .run("hi")
        .await;
    let request = &model.requests()[0];
    let discover = request.tools.iter().find(|t| t.name == DISCOVER).unwrap();
    assert_eq!(
        discover.input_schema["properties"]["tools"]["anyOf"][0].get("enum"),
        None
    );
}

#[tokio::test]
async fn a_resumed_durable_run_loads_what_search_first_loaded() {
    use agentry::agent::Outcome;
    use agentry::agent::durable::{InMemoryJournal, RunEntry, RunJournal};
    use agentry::model::Message;
    // The process stopped right after step 1 asked for the invoice tool,
    // which search_first had loaded before that step.
    let journal = Arc::new(InMemoryJournal::new());
    let entries = [
        RunEntry::Started {
            messages: vec![Message::user("Find the invoice for order 7")],
            system: None,
            at_ms: 0,
        },
        RunEntry::ToolStep {
            step: 1,
            text: String::new(),
            calls: vec![ToolCall::new("1", "billing.lookup_invoice", json!({}))],
            tokens: Usage::new(10, 5),
        },
    ];
    let ttl = std::time::Duration::from_secs(60);
    let lease = journal.acquire("r", "stopped", ttl).await.unwrap();
    for (seq, entry) in entries.iter().enumerate() {
        journal
            .append("r", seq as u64, entry, lease.token)
            .await
            .unwrap();
    }
    journal.release("r", lease.token).await.unwrap();
    let finds = Arc::new(Finds(vec!["billing.lookup_invoice"], Default::default()));
    let agent = Agent::builder(ScriptedModel::new().reply(done()))
        .groups(groups())
        .discovery(true)
        .tool_search(finds.clone())
        .search_first(true)
        .build()
        .unwrap();
    let run = agent.durable(journal).resume("r").await.unwrap();
    assert!(matches!(run.outcome.outcome, Outcome::Final(_)));
    assert_eq!(run.outcome.steps[0].calls[0].result.output, json!("INV-1"));
    // Searched with the user's request, as the run did when it started.
    assert_eq!(*finds.1.lock().unwrap(), ["Find the invoice for order 7"]);
}
