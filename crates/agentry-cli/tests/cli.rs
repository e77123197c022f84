//! The `agentry` binary end to end (no model needed: the offline provider,
//! model listing, and configuration errors).

use std::process::Command;

fn agentry(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_agentry"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("the binary runs")
}

#[test]
fn offline_run_answers_no_llm_provider() {
    let output = agentry(&["run", "--provider", "offline", "What is 2+2?"]);
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "answer: [no llm provider]\ntokens: 0 in, 0 out, 0 total over 1 step\n"
    );
    let output = agentry(&["run", "--provider", "offline", "--json", "What is 2+2?"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["answer"], "[no llm provider]");
    assert_eq!(report["outcome"], "final");
    assert_eq!(
        report["usage"],
        serde_json::json!({"input_tokens": 0, "output_tokens": 0})
    );
}

#[test]
fn missing_keys_are_clear_errors() {
    let output = agentry(&["run", "--provider", "openai", "hi"]);
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: model is not configured: set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)\n"
    );
    let output = agentry(&["run", "--provider", "anthropic", "hi"]);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: model is not configured: set ANTHROPIC_API_KEY\n"
    );
}

#[test]
fn model_list_names_the_known_models() {
    let output = agentry(&["model", "list"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("qwen2.5-coder-0.5b") && text.contains("smollm2-135m"),
        "{text}"
    );
    let output = agentry(&["model", "pull", "gpt-5"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid value 'gpt-5'"));
}

#[test]
fn a_missing_model_file_is_reported() {
    let output = agentry(&["run", "--model", "/nope/model.gguf", "hi"]);
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: model is not configured: no model file at /nope/model.gguf\n"
    );
}

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentry-skills/tests/fixtures")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn skills_validate_passes_valid_folders_and_names_every_problem() {
    let valid = fixtures().join("valid");
    let output = agentry(&["skills", "validate", valid.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "ok       pdf-processing\nok       release-notes\n"
    );

    let invalid = fixtures().join("invalid/wrong-folder");
    let output = agentry(&["skills", "validate", invalid.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stdout),
        format!(
            "warning  {} (loads, but breaks the specification)\n  - name \"right-folder\" must match the folder name \"wrong-folder\"\n",
            invalid.display()
        )
    );

    // A folder of its own: the shared temp folder may hold other tests' skills.
    let empty = std::env::temp_dir().join(format!("agentry-no-skills-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let output = agentry(&["skills", "validate", empty.to_str().unwrap()]);
    std::fs::remove_dir_all(&empty).unwrap();
    assert!(!output.status.success());
    assert!(text(&output.stderr).starts_with("error: no skill folders (with a SKILL.md) in"));
}

#[test]
fn skills_that_break_the_letter_of_the_spec_still_load_with_a_warning() {
    let lenient = fixtures().join("lenient");
    let output = agentry(&["skills", "list", lenient.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("quarterly-reports: Write, review and publish"));
    assert_eq!(
        text(&output.stderr),
        format!(
            "warning: skill quarterly-reports loaded despite: unknown field `version` (allowed: name, description, license, compatibility, metadata, allowed-tools); name \"quarterly-reports\" must match the folder name \"quarterly-report\"; field `description` must be 1-1024 characters, got 1068\n(run `agentry skills validate {}` for details)\n",
            lenient.display()
        )
    );
    let folder = lenient.join("quarterly-report");
    let output = agentry(&["skills", "show", folder.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("name:          quarterly-reports\n"));
    assert!(text(&output.stderr).starts_with("warning: loaded despite: unknown field `version`"));
    // Validation stays strict.
    let output = agentry(&["skills", "validate", lenient.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stdout)
            .contains("  - field `description` must be 1-1024 characters, got 1068\n")
    );
}

#[test]
fn skills_list_search_and_show() {
    let valid = fixtures().join("valid");
    let output = agentry(&["skills", "list", valid.to_str().unwrap()]);
    assert!(output.status.success());
    assert_eq!(
        text(&output.stdout),
        "pdf-processing: Extract PDF text, fill forms, merge files. Use when handling PDFs.\nrelease-notes: Write release notes from a list of merged changes. Use when preparing a release announcement or changelog.\n"
    );
    let output = agentry(&[
        "skills",
        "search",
        valid.to_str().unwrap(),
        "write the changelog",
        "--limit",
        "1",
    ]);
    assert_eq!(
        text(&output.stdout),
        "1. release-notes: Write release notes from a list of merged changes. Use when preparing a release announcement or changelog.\n"
    );
    let output = agentry(&[
        "skills",
        "search",
        valid.to_str().unwrap(),
        "PDFs",
        "--scorer",
        "substring",
    ]);
    assert_eq!(
        text(&output.stdout),
        "1. pdf-processing: Extract PDF text, fill forms, merge files. Use when handling PDFs.\n"
    );
    let folder = valid.join("pdf-processing");
    let output = agentry(&["skills", "show", folder.to_str().unwrap()]);
    assert!(output.status.success());
    let shown = text(&output.stdout);
    assert!(shown.starts_with(
        "name:          pdf-processing\ndescription:   Extract PDF text, fill forms, merge files. Use when handling PDFs.\nlicense:       Apache-2.0\ncompatibility: Requires Python 3.12+ and pypdf\nmetadata.author: example-org\nmetadata.version: 1.0\nallowed-tools: Bash(python:*) Read\nfiles:         SKILL.md, references/FORMS.md, scripts/extract.py\n\n# PDF processing\n"
    ), "{shown}");
    let bad = fixtures().join("invalid/no-front");
    let output = agentry(&["skills", "show", bad.to_str().unwrap()]);
    assert!(!output.status.success());
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: {} is not a usable skill:\n  - SKILL.md must start with YAML front matter between '---' lines\n",
            bad.display()
        )
    );
}

#[test]
fn the_programs_evaluations_read_only_where_they_are_told() {
    // `agentry eval bfcl` reads BFCL's files from `--data`, by default
    // `datasets/bfcl` under the current directory: never the build tree.
    let empty = std::env::temp_dir().join(format!("agentry-no-data-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_agentry"))
        .current_dir(&empty)
        .args(["eval", "bfcl", "--provider", "offline"])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&empty);
    assert!(!output.status.success());
    assert_eq!(
        text(&output.stderr),
        "error: datasets/bfcl/simple_python.jsonl: No such file or directory (os error 2)\n"
    );
    // No default reaches into the repository it was built from (it once
    // read `CARGO_MANIFEST_DIR` joined with `../../datasets`).
    let binary = std::fs::read(env!("CARGO_BIN_EXE_agentry")).unwrap();
    for build_tree in [
        env!("CARGO_MANIFEST_DIR"),
        "../../datasets",
        "../../benches",
    ] {
        assert!(
            !binary
                .windows(build_tree.len())
                .any(|window| window == build_tree.as_bytes()),
            "the binary holds {build_tree}"
        );
    }
}

#[test]
fn tools_import_openapi_lists_the_tools_and_what_was_left_out() {
    let dir = std::env::temp_dir().join(format!("agentry-openapi-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("pets.yaml");
    std::fs::write(
        &spec,
        "openapi: 3.0.3\ninfo: {title: Pet Store, version: '1'}\nservers: [{url: 'https://pets.example.com/v1'}]\n\
         paths:\n  /pets/{petId}:\n    get:\n      operationId: showPetById\n      summary: Info for a specific pet\n\
         \x20     parameters: [{name: petId, in: path, required: true, schema: {type: string}}]\n\
         \x20     responses: {'200': {description: ok}}\n  /gone:\n    get:\n\
         \x20     parameters: [{$ref: '#/components/parameters/Missing'}]\n      responses: {'200': {description: ok}}\n",
    )
    .unwrap();
    let output = agentry(&["tools", "import-openapi", spec.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "pet_store.showPetById (GET /pets/{petId}): Info for a specific pet\n\
         1 tools; calls need the grant https://pets.example.com:443\n"
    );
    assert_eq!(
        text(&output.stderr),
        "left out: GET /gone: the specification is invalid: $ref \"#/components/parameters/Missing\" points nowhere\n"
    );
    let bad = agentry(&[
        "tools",
        "import-openapi",
        dir.join("none.json").to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("No such file or directory"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A remote A2A agent that is not there: named before the run starts.
#[test]
fn an_unreachable_a2a_agent_is_named() {
    let output = agentry(&[
        "run",
        "--provider",
        "offline",
        "--a2a",
        "helper=http://127.0.0.1:9",
        "hi",
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "error: A2A agent http://127.0.0.1:9: the agent card at http://127.0.0.1:9: "
        ),
        "{stderr}"
    );
}
