//! Skills: the functions over skill sets, the resolvers, the
//! built-in tools, and the agent wiring (with a scripted model: loop logic only).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentry::BoxFuture;
use agentry::agent::{Agent, Outcome};
use agentry::model::{ScriptedModel, Step, Usage};
use agentry::skill::*;
use agentry::tool::{ToolCall, Toolbox};
use serde_json::{Value, json};

fn tool_step(calls: Vec<ToolCall>) -> Step {
    Step::Tool {
        calls,
        text: String::new(),
        tokens: Usage::new(1, 0),
    }
}

fn final_step(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(1, 0),
    }
}

fn call(id: &str, name: &str, input: Value) -> ToolCall {
    ToolCall::new(id, name, input)
}

static REFUNDS: AtomicUsize = AtomicUsize::new(0);

/// Issue a refund.
#[agentry::tool(name = "issue_refund")]
fn issue_refund(order: String) -> String {
    REFUNDS.fetch_add(1, Ordering::SeqCst);
    format!("refunded {order}")
}

/// Look up an order.
#[agentry::tool(name = "lookup_order")]
fn lookup_order(order: String) -> String {
    format!("order {order}: shipped")
}

/// A skill whose body depends on ctx.
#[agentry::skill(name = "topic-guide", description = "Guide for a topic")]
fn topic_guide(topic: String, depth: Option<u32>) -> Result<String, String> {
    if topic.is_empty() {
        return Err("topic must not be empty".into());
    }
    Ok(format!("Guide to {topic} at depth {}", depth.unwrap_or(1)))
}

fn refunds_skill() -> Skill {
    Skill::new("refunds", "How to refund")
        .when(["refund"])
        .body("Check the order, then refund it.")
        .tools([issue_refund::tool()])
        .requires(["orders"])
}

fn orders_skill() -> Skill {
    Skill::new("orders", "Order lookups")
        .body("Look orders up before acting.")
        .tools([lookup_order::tool()])
}

#[test]
fn index_line_formats_every_clause_and_omits_missing_fields() {
    assert_eq!(index_line(&Skill::new("bare", "")), " - bare");
    assert_eq!(index_line(&Skill::new("a", "Desc")), " - a: Desc");
    assert_eq!(
        index_line(&Skill::new("a", "Desc").modalities(["text"])),
        " - a: Desc",
        "the default modality is not shown"
    );
    assert_eq!(
        index_line(
            &Skill::new("a", "Desc")
                .when(["x", "y"])
                .modalities(["image", "pdf"])
        ),
        " - a: Desc (when: x, y) [modalities: image, pdf]"
    );
    assert_eq!(build_index(&[]), "");
    assert!(build_index(&[Skill::new("a", "b")]).starts_with(INDEX_HEADER));
}

#[test]
fn from_fn_defaults_name_to_the_function_path_and_when_to_empty() {
    let tone = myapp::tone::skill();
    assert_eq!(tone.name, "myapp::tone");
    assert_eq!(tone.description, "Customer tone");
    assert_eq!(tone.when, ["reply"]);
    assert_eq!(tone.function, Some("myapp::tone"));
    assert_eq!(
        tone.body.as_deref(),
        Some("Use a warm, plain-language tone.")
    );
    let guide = topic_guide::skill();
    assert!(guide.when.is_empty());
    assert!(guide.modalities.is_none());
    assert!(guide.body.is_none() && guide.body_fn.is_some());
}

#[test]
fn load_body_prefers_body_fn_fills_params_by_name_and_propagates_errors() {
    let guide = topic_guide::skill();
    let ctx = json!({"topic": "refunds", "depth": 3, "extra": true});
    assert_eq!(
        load_body(&guide, ctx.as_object().unwrap()).unwrap(),
        "Guide to refunds at depth 3"
    );
    let ctx = json!({"topic": "refunds"});
    assert_eq!(
        load_body(&guide, ctx.as_object().unwrap()).unwrap(),
        "Guide to refunds at depth 1"
    );
    let ctx = json!({"topic": ""});
    assert_eq!(
        load_body(&guide, ctx.as_object().unwrap()),
        Err(SkillError::Body("topic must not be empty".into()))
    );
    let missing = load_body(&guide, &SkillContext::new()).unwrap_err();
    assert!(
        matches!(&missing, SkillError::Context { key, .. } if key == "topic"),
        "{missing:?}"
    );
    let wrong = json!({"topic": 5});
    assert!(matches!(
        load_body(&guide, wrong.as_object().unwrap()),
        Err(SkillError::Context { .. })
    ));
    let both = Skill::new("b", "")
        .body("static")
        .body_fn(|_| Ok("dynamic".into()));
    assert_eq!(load_body(&both, &SkillContext::new()).unwrap(), "dynamic");
    assert_eq!(
        load_body(&Skill::new("e", ""), &SkillContext::new()).unwrap(),
        ""
    );
    let templated = Skill::new("t", "").body("Hello ${name}");
    let ctx = json!({"name": "x"});
    assert_eq!(
        load_body(&templated, ctx.as_object().unwrap()).unwrap(),
        "Hello ${name}",
        "static bodies are never interpolated"
    );
}

#[test]
fn list_find_and_for_agent() {
    let skills = for_agent([refunds_skill(), orders_skill()]).unwrap();
    assert_eq!(
        serde_json::to_value(list_skills_of(&skills)).unwrap(),
        json!([
            {"name": "refunds", "description": "How to refund", "when": ["refund"]},
            {"name": "orders", "description": "Order lookups", "when": []}
        ])
    );
    assert_eq!(find_skill(&skills, "orders").unwrap().name, "orders");
    assert!(find_skill(&skills, "missing").is_none());
    assert_eq!(
        for_agent([orders_skill(), orders_skill()]).unwrap_err(),
        SkillError::DuplicateName("orders".into())
    );
}

#[tokio::test]
async fn resolvers_list_read_and_search_as_documented() {
    let skills = vec![refunds_skill(), orders_skill()];
    let memory = InMemoryResolver::new(skills.clone());
    assert_eq!(memory.list(ListContext::default()).await.len(), 2);
    assert_eq!(memory.read("orders").await.unwrap().name, "orders");
    assert!(memory.read("nope").await.is_none());
    assert!(!memory.can_search());

    let searchable = SearchableResolver::new(skills.clone(), ["orders"]);
    let listed = searchable.list(ListContext::default()).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "orders");
    assert!(searchable.can_search());
    let found = searchable.search("refund", SearchOpts::default()).await;
    assert_eq!(found[0].name, "refunds");
    assert_eq!(searchable.read("refunds").await.unwrap().name, "refunds");
    assert!(
        SearchableResolver::new(skills.clone(), Vec::<String>::new())
            .list(ListContext::default())
            .await
            .is_empty()
    );

    let explicit: Arc<dyn SkillResolver> = Arc::new(searchable);
    let chosen = effective_resolver(Some(explicit), Some(skills.clone())).unwrap();
    assert!(chosen.can_search(), "an explicit resolver wins outright");
    let wrapped = effective_resolver(None, Some(skills)).unwrap();
    assert!(!wrapped.can_search());
    assert_eq!(wrapped.list(ListContext::default()).await.len(), 2);
    assert!(effective_resolver(None, None).is_none());
    assert!(effective_resolver(None, Some(Vec::new())).is_none());
}

#[tokio::test]
async fn builtins_read_apply_and_list() {
    let tools = Toolbox::for_agent(builtin_tools(
        InMemoryResolver::new(vec![refunds_skill(), orders_skill()]),
        None,
    ))
    .unwrap();
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        ["list_skills", "read_skill", "apply_skill"]
    );
    let listed = tools.dispatch(call("1", "list_skills", json!({}))).await;
    assert_eq!(listed.output[1]["name"], "orders");
    let read = tools
        .dispatch(call("2", "read_skill", json!({"name": "refunds"})))
        .await;
    assert_eq!(
        read.output,
        json!(
            "Check the order, then refund it.\n\nRequired skill orders:\nLook orders up before acting."
        )
    );
    let unknown = tools
        .dispatch(call("3", "read_skill", json!({"name": "refundz"})))
        .await;
    assert!(unknown.is_error);
    assert_eq!(
        unknown.output,
        json!(
            "tool \"read_skill\" failed: unknown skill \"refundz\"; call list_skills to see the available skills"
        )
    );
    let bad = tools.dispatch(call("4", "read_skill", json!({}))).await;
    assert!(bad.is_error, "name is required: {}", bad.output);
    for path in ["orders", "SKILL.md", "", "./orders"] {
        let body = tools
            .dispatch(call(
                "6",
                "read_skill",
                json!({"name": "orders", "path": path}),
            ))
            .await;
        assert_eq!(
            body.output,
            json!("Look orders up before acting."),
            "path {path:?}"
        );
    }
    let no_files = tools
        .dispatch(call(
            "5",
            "read_skill",
            json!({"name": "orders", "path": "x.md"}),
        ))
        .await;
    assert_eq!(
        no_files.output,
        json!(
            "tool \"read_skill\" failed: skill \"orders\" has no bundled files; read it without a path"
        )
    );
}

#[tokio::test]
async fn apply_skill_merges_ctx_with_harness_keys_winning_and_attachments_reserved() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let probe = Skill::new("probe", "").body_fn(move |ctx| {
        record.lock().unwrap().push(Value::Object(ctx.clone()));
        Ok("ok".into())
    });
    let harness = json!({"tenant": "acme", "attachments": ["a.png"]});
    let tools = Toolbox::for_agent(builtin_tools(
        InMemoryResolver::new(vec![probe.clone()]),
        harness.as_object().cloned(),
    ))
    .unwrap();
    let result = tools
        .dispatch(call(
            "1",
            "apply_skill",
            json!({"name": "probe", "ctx": {"tenant": "evil", "topic": "x", "attachments": ["fake.png"]}}),
        ))
        .await;
    assert_eq!(result.output, json!("ok"));
    assert_eq!(
        seen.lock().unwrap()[0],
        json!({"tenant": "acme", "topic": "x", "attachments": ["a.png"]})
    );
    // Without harness attachments, the model still cannot supply them.
    let tools =
        Toolbox::for_agent(builtin_tools(InMemoryResolver::new(vec![probe]), None)).unwrap();
    tools
        .dispatch(call(
            "2",
            "apply_skill",
            json!({"name": "probe", "ctx": {"attachments": ["fake.png"]}}),
        ))
        .await;
    assert_eq!(seen.lock().unwrap()[1], json!({}));
}

#[tokio::test]
async fn search_skills_exists_only_when_the_resolver_can_search() {
    let plain = builtin_tools(InMemoryResolver::new(vec![orders_skill()]), None);
    assert_eq!(plain.len(), 3);
    let searchable = builtin_tools(
        SearchableResolver::new(vec![refunds_skill(), orders_skill()], Vec::<String>::new()),
        None,
    );
    let tools = Toolbox::for_agent(searchable).unwrap();
    assert!(tools.find_by_name("search_skills").is_some());
    let found = tools
        .dispatch(call(
            "1",
            "search_skills",
            json!({"query": "order lookups", "limit": 1}),
        ))
        .await;
    assert_eq!(
        found.output,
        json!([{"name": "orders", "description": "Order lookups", "when": []}])
    );
}

#[tokio::test]
async fn the_agent_puts_the_index_in_the_system_prompt_and_adds_the_builtins() {
    let model = Arc::new(ScriptedModel::new().reply(final_step("done")));
    let run = Agent::builder(model.clone())
        .system("You are support.")
        .skills([refunds_skill(), orders_skill()])
        .build()
        .unwrap()
        .run("hi")
        .await;
    assert_eq!(run.outcome, Outcome::Final("done".into()));
    let request = &model.requests()[0];
    assert_eq!(
        request.system.as_deref(),
        Some(
            "You are support.\n\nAvailable skills you can read with read_skill(name):\n - refunds: How to refund (when: refund)\n - orders: Order lookups"
        )
    );
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["list_skills", "read_skill", "apply_skill"]);

    let bare = Arc::new(ScriptedModel::new().reply(final_step("done")));
    Agent::new(bare.clone()).run("hi").await;
    assert!(bare.requests()[0].system.is_none());
    assert!(bare.requests()[0].tools.is_empty());
}

#[tokio::test]
async fn a_read_skill_makes_its_tools_and_its_requirements_tools_callable() {
    REFUNDS.store(0, Ordering::SeqCst);
    let model = Arc::new(
        ScriptedModel::new()
            // Before reading the skill, its tool is not callable.
            .reply(tool_step(vec![call(
                "c1",
                "issue_refund",
                json!({"order": "A1"}),
            )]))
            .reply(tool_step(vec![call(
                "c2",
                "read_skill",
                json!({"name": "refunds"}),
            )]))
            .reply(tool_step(vec![
                call("c3", "lookup_order", json!({"order": "A1"})),
                call("c4", "issue_refund", json!({"order": "A1"})),
            ]))
            .reply(final_step("refunded")),
    );
    // Both skills are trusted to run their tools past the (empty) allow-list.
    let run = Agent::builder(model.clone())
        .skills([refunds_skill().trust_tools(), orders_skill().trust_tools()])
        .allow_only(Vec::<String>::new())
        .build()
        .unwrap()
        .run("refund A1")
        .await;
    assert_eq!(run.outcome, Outcome::Final("refunded".into()));
    assert_eq!(
        run.steps[0].calls[0].result.output,
        json!("issue_refund => not allowed")
    );
    assert!(!run.steps[1].calls[0].result.is_error);
    assert_eq!(
        run.steps[2].calls[0].result.output,
        json!("order A1: shipped")
    );
    assert_eq!(run.steps[2].calls[1].result.output, json!("refunded A1"));
    assert_eq!(REFUNDS.load(Ordering::SeqCst), 1);
    let advertised: Vec<String> = model.requests()[2]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(advertised.contains(&"issue_refund".to_owned()));
    assert!(advertised.contains(&"lookup_order".to_owned()));
    let before: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(!before.contains(&"issue_refund".to_owned()));
}

/// A resolver that records what `list` saw.
struct Recording {
    seen: Mutex<Vec<(usize, Option<String>, String)>>,
}

impl SkillResolver for Recording {
    fn list<'a>(&'a self, ctx: ListContext<'a>) -> BoxFuture<'a, Vec<Skill>> {
        self.seen.lock().unwrap().push((
            ctx.messages.len(),
            ctx.system.map(str::to_owned),
            ctx.model.to_owned(),
        ));
        Box::pin(async { vec![Skill::new("only", "The only skill")] })
    }
    fn read<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Skill>> {
        Box::pin(
            async move { (name == "hidden").then(|| Skill::new("hidden", "").body("secret body")) },
        )
    }
}

#[tokio::test]
async fn the_resolver_sees_messages_system_and_model_and_can_serve_unlisted_skills() {
    let resolver = Arc::new(Recording {
        seen: Mutex::new(Vec::new()),
    });
    let model = Arc::new(
        ScriptedModel::new()
            .reply(tool_step(vec![call(
                "c1",
                "read_skill",
                json!({"name": "hidden"}),
            )]))
            .reply(final_step("ok")),
    );
    let run = Agent::builder(model.clone())
        .system("sys")
        .skills([orders_skill()])
        .skill_resolver(resolver.clone())
        .build()
        .unwrap()
        .run("question")
        .await;
    assert_eq!(run.steps[0].calls[0].result.output, json!("secret body"));
    let seen = resolver.seen.lock().unwrap().clone();
    assert_eq!(seen, [(1, Some("sys".to_owned()), "scripted".to_owned())]);
    assert!(
        model.requests()[0]
            .system
            .as_deref()
            .unwrap()
            .ends_with(" - only: The only skill"),
        "the explicit resolver wins over skills"
    );
}

#[tokio::test]
async fn skill_tools_obey_the_allow_list_unless_the_skill_is_trusted() {
    let script = || {
        Arc::new(
            ScriptedModel::new()
                .reply(tool_step(vec![call(
                    "c1",
                    "read_skill",
                    json!({"name": "refunds"}),
                )]))
                .reply(tool_step(vec![
                    call("c2", "lookup_order", json!({"order": "A1"})),
                    call("c3", "issue_refund", json!({"order": "A1"})),
                ]))
                .reply(final_step("done")),
        )
    };
    // Untrusted: read, yet its tools stay off the (empty) allow-list.
    let run = Agent::builder(script())
        .skills([refunds_skill(), orders_skill()])
        .allow_only(Vec::<String>::new())
        .build()
        .unwrap()
        .run("refund A1")
        .await;
    let outputs: Vec<Value> = run.steps[1]
        .calls
        .iter()
        .map(|c| c.result.output.clone())
        .collect();
    assert_eq!(
        outputs,
        [
            json!("lookup_order => not allowed"),
            json!("issue_refund => not allowed")
        ]
    );
    // Trusting one skill lets its tools, and only its, through.
    let run = Agent::builder(script())
        .skills([refunds_skill(), orders_skill().trust_tools()])
        .allow_only(Vec::<String>::new())
        .build()
        .unwrap()
        .run("refund A1")
        .await;
    let outputs: Vec<Value> = run.steps[1]
        .calls
        .iter()
        .map(|c| c.result.output.clone())
        .collect();
    assert_eq!(
        outputs,
        [
            json!("order A1: shipped"),
            json!("issue_refund => not allowed")
        ]
    );
}

#[tokio::test]
async fn only_offered_skills_activate_their_tools() {
    // A resolver that lists nothing but can read (and search) everything.
    let resolver =
        SearchableResolver::new(vec![refunds_skill(), orders_skill()], Vec::<String>::new());
    let model = Arc::new(
        ScriptedModel::new()
            // Read without being offered: the body comes back, no tool activates.
            .reply(tool_step(vec![call(
                "c1",
                "read_skill",
                json!({"name": "orders"}),
            )]))
            .reply(tool_step(vec![call(
                "c2",
                "lookup_order",
                json!({"order": "A1"}),
            )]))
            // Found by search, then read: now it activates.
            .reply(tool_step(vec![call(
                "c3",
                "search_skills",
                json!({"query": "order"}),
            )]))
            .reply(tool_step(vec![call(
                "c4",
                "read_skill",
                json!({"name": "orders"}),
            )]))
            .reply(tool_step(vec![call(
                "c5",
                "lookup_order",
                json!({"order": "A1"}),
            )]))
            .reply(final_step("done")),
    );
    let run = Agent::builder(model)
        .skill_resolver(resolver)
        .max_steps(8)
        .build()
        .unwrap()
        .run("where is A1?")
        .await;
    assert!(!run.steps[0].calls[0].result.is_error, "reading is allowed");
    assert!(
        run.steps[1].calls[0].result.is_error,
        "{:?}",
        run.steps[1].calls[0].result
    );
    assert!(!run.steps[2].calls[0].result.is_error);
    assert_eq!(
        run.steps[4].calls[0].result.output,
        json!("order A1: shipped")
    );
}

/// `read_skill`'s input schema as the model got it in request `index`.
fn read_skill_schema(model: &ScriptedModel, index: usize) -> Value {
    model.requests()[index]
        .tools
        .iter()
        .find(|t| t.name == "read_skill")
        .unwrap()
        .input_schema
        .clone()
}

/// The `name` enum of the schemas the model got in request `index`.
fn name_enums(model: &ScriptedModel, index: usize) -> Vec<(String, Value)> {
    model.requests()[index]
        .tools
        .iter()
        .filter(|t| t.name == "read_skill" || t.name == "apply_skill")
        .map(|t| {
            (
                t.name.clone(),
                t.input_schema["properties"]["name"]["enum"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn skill_names_are_an_enum_of_the_offered_skills_and_grow_with_search() {
    // Lists only "orders"; "refunds" can be found by search.
    let resolver = SearchableResolver::new(vec![refunds_skill(), orders_skill()], ["orders"]);
    let model = Arc::new(
        ScriptedModel::new()
            .reply(tool_step(vec![call(
                "c1",
                "search_skills",
                json!({"query": "refund"}),
            )]))
            .reply(final_step("done")),
    );
    Agent::builder(model.clone())
        .skill_resolver(resolver)
        .build()
        .unwrap()
        .run("refund A1")
        .await;
    let listed = json!(["orders"]);
    assert_eq!(
        name_enums(&model, 0),
        [
            ("read_skill".into(), listed.clone()),
            ("apply_skill".into(), listed)
        ]
    );
    let found = json!(["orders", "refunds"]);
    assert_eq!(
        name_enums(&model, 1),
        [
            ("read_skill".into(), found.clone()),
            ("apply_skill".into(), found)
        ]
    ); // These skills have no folder, so there is no file for `path` to name.
    let read = read_skill_schema(&model, 0);
    assert_eq!(read["properties"].get("path"), None, "{read}");
}

#[tokio::test]
async fn read_skill_paths_are_an_enum_of_the_files_of_skills_read_so_far() {
    let root = std::env::temp_dir().join(format!("agentry-skill-files-{}", std::process::id()));
    std::fs::create_dir_all(root.join("references")).unwrap();
    std::fs::write(
        root.join("SKILL.md"),
        "---\nname: comms\ndescription: d\n---\nbody",
    )
    .unwrap();
    std::fs::write(root.join("references/faq.md"), "faq").unwrap();
    let skill = || {
        let mut skill = Skill::new("comms", "Internal comms").body("Write it plainly.");
        skill.root = Some(root.clone());
        skill
    };
    let model = Arc::new(
        ScriptedModel::new()
            .reply(tool_step(vec![call(
                "c1",
                "read_skill",
                json!({"name": "comms"}),
            )]))
            .reply(final_step("done")),
    );
    Agent::builder(model.clone())
        .skills([skill()])
        .build()
        .unwrap()
        .run("status update")
        .await;
    // Before the skill is read, no file is known, so `path` is not offered.
    assert_eq!(read_skill_schema(&model, 0)["properties"].get("path"), None);
    let read = read_skill_schema(&model, 1);
    assert_eq!(
        read["properties"]["path"]["enum"],
        json!(["references/faq.md"])
    );
    // Without enums, the schema is as the built-in declares it.
    let model = Arc::new(
        ScriptedModel::new()
            .reply(tool_step(vec![call(
                "c1",
                "read_skill",
                json!({"name": "comms"}),
            )]))
            .reply(final_step("done")),
    );
    Agent::builder(model.clone())
        .skills([skill()])
        .name_enums(false)
        .build()
        .unwrap()
        .run("status update")
        .await;
    let read = read_skill_schema(&model, 1);
    assert_eq!(read["properties"]["path"].get("enum"), None);
    assert_eq!(read["properties"]["name"].get("enum"), None);
    std::fs::remove_dir_all(&root).unwrap();
}

#[tokio::test]
async fn a_lookup_of_an_unknown_skill_is_no_tool_round_so_the_model_can_retry() {
    use agentry::model::ToolChoice;
    let model = Arc::new(
        ScriptedModel::new()
            .reply(tool_step(vec![call(
                "c1",
                "read_skill",
                json!({"name": "status_report"}),
            )]))
            .reply(tool_step(vec![call(
                "c2",
                "read_skill",
                json!({"name": "refunds"}),
            )]))
            .reply(final_step("Check the order, then refund it.")),
    );
    let run = Agent::builder(model.clone())
        .skills([refunds_skill(), orders_skill()])
        .max_tool_rounds(1)
        .build()
        .unwrap()
        .run("how do I refund?")
        .await;
    assert!(run.steps[0].calls[0].result.is_error);
    assert!(!run.steps[1].calls[0].result.is_error);
    let choices: Vec<ToolChoice> = model
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect();
    assert_eq!(
        choices,
        [ToolChoice::Auto, ToolChoice::Auto, ToolChoice::None],
        "the failed lookup did not use up the one tool round"
    );
    assert_eq!(
        run.outcome,
        Outcome::Final("Check the order, then refund it.".into())
    );
}
