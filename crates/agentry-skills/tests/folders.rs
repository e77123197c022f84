//! Agent Skills folders: every real folder in the datasets loads and
//! validates, invalid folders get precise problems, bodies and files are
//! disclosed only on read, and nothing outside a folder is ever readable.

use std::path::{Path, PathBuf};

use agentry_core::skill::{INDEX_HEADER, InMemoryResolver, build_index, builtin_tools};
use agentry_core::tool::{ToolCall, Toolbox};
use agentry_skills::{Problem, SkillFolder, SkillSearch, load_dir};
use serde_json::json;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/skills")
}

#[test]
fn every_dataset_skill_folder_loads_and_validates() {
    let dir = datasets();
    if !dir.exists() {
        panic!("the Agent Skills dataset is missing at {}", dir.display());
    }
    let report = load_dir(&dir).unwrap();
    assert!(report.invalid.is_empty(), "{:#?}", report.invalid);
    let names: Vec<&str> = report.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "brand-guidelines",
            "doc-coauthoring",
            "frontend-design",
            "internal-comms",
            "mcp-builder",
            "slack-gif-creator",
            "theme-factory",
            "webapp-testing"
        ]
    );
    let mcp = &report.skills[4];
    assert_eq!(
        mcp.license.as_deref(),
        Some("Complete terms in LICENSE.txt")
    );
    assert!(
        mcp.description
            .starts_with("Guide for creating high-quality MCP")
    );
}

#[test]
fn front_matter_fields_are_read() {
    let skill = SkillFolder::load(&fixtures().join("valid/pdf-processing")).unwrap();
    assert_eq!(skill.name, "pdf-processing");
    assert_eq!(skill.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(
        skill.compatibility.as_deref(),
        Some("Requires Python 3.12+ and pypdf")
    );
    assert_eq!(skill.metadata["author"], "example-org");
    assert_eq!(skill.metadata["version"], "1.0");
    assert_eq!(skill.allowed_tools, ["Bash(python:*)", "Read"]);
}

#[test]
fn folders_that_break_the_spec_get_every_problem_named() {
    let report = load_dir(&fixtures().join("invalid")).unwrap();
    let problems = |folder: &str| -> Vec<String> {
        let refused = report
            .invalid
            .iter()
            .find(|(path, _)| path.ends_with(folder));
        let warned = report
            .skills
            .iter()
            .find(|skill| skill.path.ends_with(folder));
        match (refused, warned) {
            (Some((_, problems)), None) => problems,
            (None, Some(skill)) => &skill.warnings,
            _ => panic!("{folder} reported neither as refused nor as loaded"),
        }
        .iter()
        .map(ToString::to_string)
        .collect()
    };
    assert_eq!(
        problems("Bad-Name"),
        [
            "unknown field `color` (allowed: name, description, license, compatibility, metadata, allowed-tools)",
            "name \"Bad--Name-\" must be lowercase",
            "name \"Bad--Name-\" must not start or end with a hyphen",
            "name \"Bad--Name-\" must not contain consecutive hyphens",
            "name \"Bad--Name-\" must match the folder name \"Bad-Name\"",
            "field `description` must be 1-1024 characters, got 0",
        ]
    );
    assert_eq!(
        problems("wrong-folder"),
        ["name \"right-folder\" must match the folder name \"wrong-folder\""]
    );
    assert_eq!(
        problems("no-front"),
        ["SKILL.md must start with YAML front matter between '---' lines"]
    );
    assert_eq!(
        problems("long-desc"),
        [
            "field `description` must be 1-1024 characters, got 1025",
            "field `compatibility` must be 1-500 characters, got 501",
        ]
    );
    assert_eq!(
        problems("bad-meta"),
        ["field `metadata.version` must be a string (quote numbers, e.g. version: \"1.0\")"]
    );
    // Loading is liberal: only an empty description and missing front
    // matter make a folder unusable; the other three load with warnings.
    let refused: Vec<&Path> = report
        .invalid
        .iter()
        .map(|(path, _)| path.as_path())
        .collect();
    assert_eq!(refused.len(), 2);
    assert!(refused[0].ends_with("Bad-Name") && refused[1].ends_with("no-front"));
    let loaded: Vec<&str> = report.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(loaded, ["bad-meta", "long-desc", "right-folder"]);
    assert!(!report.is_valid());
    assert_eq!(report.with_warnings().count(), 3);
    // Strict validation reports the same problems for a loadable folder.
    assert_eq!(
        SkillFolder::validate(&fixtures().join("invalid/wrong-folder")).len(),
        1
    );
}

#[test]
fn a_skill_with_a_long_description_and_unknown_fields_loads_with_warnings() {
    // Published skills often break the letter of the spec: a 1,068-character
    // description, an unknown `version` field, a name that differs from its
    // folder. Hosts load them; so does agentry, saying what is off.
    let dir = fixtures().join("lenient");
    let report = load_dir(&dir).unwrap();
    assert!(report.invalid.is_empty(), "{:?}", report.invalid);
    let skill = &report.skills[0];
    assert_eq!(skill.name, "quarterly-reports");
    assert_eq!(skill.description.chars().count(), 1068);
    let warnings: Vec<String> = skill.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "unknown field `version` (allowed: name, description, license, compatibility, metadata, allowed-tools)",
            "name \"quarterly-reports\" must match the folder name \"quarterly-report\"",
            "field `description` must be 1-1024 characters, got 1068",
        ]
    );
    assert_eq!(
        SkillFolder::validate(&dir.join("quarterly-report")),
        skill.warnings
    );
    // The index line carries a description shortened to the limit; the body
    // is the whole instructions.
    let as_skill = skill.to_skill();
    assert_eq!(as_skill.description.chars().count(), 1024);
    assert!(as_skill.description.ends_with("…"));
    assert!(
        skill
            .description
            .starts_with(as_skill.description.trim_end_matches('…'))
    );
    assert!(skill.body().unwrap().starts_with("# Quarterly report"));
    let index = build_index(&report.to_skills());
    assert!(index.contains(" - quarterly-reports: Write, review and publish"));
}

#[test]
fn missing_fields_and_broken_yaml_are_reported() {
    let dir = std::env::temp_dir().join(format!("agentry-skill-missing-{}", std::process::id()));
    let skill = dir.join("empty");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), "---\nlicense: MIT\n---\nbody\n").unwrap();
    assert_eq!(
        SkillFolder::load(&skill).unwrap_err(),
        [Problem::Missing("name"), Problem::Missing("description")]
    );
    std::fs::write(skill.join("SKILL.md"), "---\nname: [unclosed\n---\n").unwrap();
    assert!(matches!(
        SkillFolder::load(&skill).unwrap_err()[..],
        [Problem::Yaml(_)]
    ));
    std::fs::write(skill.join("SKILL.md"), "---\nname: empty\n").unwrap();
    assert_eq!(
        SkillFolder::load(&skill).unwrap_err(),
        [Problem::UnclosedFrontMatter]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn read(tools: &Toolbox, input: serde_json::Value) -> (bool, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(tools.dispatch(ToolCall::new("c", "read_skill", input)));
    (
        result.is_error,
        result.output.as_str().unwrap_or_default().to_owned(),
    )
}

#[test]
fn progressive_disclosure_and_confined_file_reads() {
    let report = load_dir(&fixtures().join("valid")).unwrap();
    let skills = report.to_skills();
    let index = build_index(&skills);
    assert_eq!(
        index,
        format!(
            "{INDEX_HEADER}\n - pdf-processing: Extract PDF text, fill forms, merge files. Use when handling PDFs.\n - release-notes: Write release notes from a list of merged changes. Use when preparing a release announcement or changelog."
        )
    );
    assert!(skills[0].body.is_none(), "the body is not loaded up front");
    let tools = Toolbox::for_agent(builtin_tools(InMemoryResolver::new(skills), None)).unwrap();

    let (error, body) = read(&tools, json!({"name": "pdf-processing"}));
    assert!(!error);
    assert!(
        body.starts_with("# PDF processing\n\nUse `scripts/extract.py`"),
        "{body}"
    );
    assert!(body.ends_with(
        "Files in this skill (read one with read_skill(name, path)):\n- references/FORMS.md\n- scripts/extract.py"
    ), "{body}");

    let (error, forms) = read(
        &tools,
        json!({"name": "pdf-processing", "path": "references/FORMS.md"}),
    );
    assert!(!error);
    assert_eq!(forms, "# Forms\n\nEvery field has a name and a type.\n");

    for escape in [
        "../release-notes/SKILL.md",
        "/etc/passwd",
        "scripts/../../release-notes/SKILL.md",
    ] {
        let (error, message) = read(&tools, json!({"name": "pdf-processing", "path": escape}));
        assert!(error, "{escape} must be refused");
        assert_eq!(
            message,
            format!(
                "tool \"read_skill\" failed: {escape:?} is not a relative path inside skill \"pdf-processing\" (no '..', no absolute paths)"
            )
        );
    }
    let (error, message) = read(
        &tools,
        json!({"name": "pdf-processing", "path": "scripts/missing.py"}),
    );
    assert!(error);
    assert_eq!(
        message,
        "tool \"read_skill\" failed: skill \"pdf-processing\" has no file \"scripts/missing.py\""
    );
    let (error, message) = read(&tools, json!({"name": "pdf-processing", "path": "scripts"}));
    assert!(error);
    assert_eq!(
        message,
        "tool \"read_skill\" failed: \"scripts\" in skill \"pdf-processing\" is not a file"
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_out_of_the_folder_is_refused() {
    let dir = std::env::temp_dir().join(format!("agentry-skill-symlink-{}", std::process::id()));
    let skill = dir.join("linked");
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: linked\ndescription: Has a symlink.\n---\nbody\n",
    )
    .unwrap();
    std::fs::write(dir.join("secret.txt"), "top secret").unwrap();
    std::fs::write(skill.join("references/inside.md"), "inside").unwrap();
    std::os::unix::fs::symlink(dir.join("secret.txt"), skill.join("references/escape.md")).unwrap();
    std::os::unix::fs::symlink(skill.join("references/inside.md"), skill.join("alias.md")).unwrap();
    let report = load_dir(&dir).unwrap();
    let tools = Toolbox::for_agent(builtin_tools(
        InMemoryResolver::new(report.to_skills()),
        None,
    ))
    .unwrap();
    let (error, message) = read(
        &tools,
        json!({"name": "linked", "path": "references/escape.md"}),
    );
    assert!(error);
    assert_eq!(
        message,
        "tool \"read_skill\" failed: \"references/escape.md\" leads outside skill \"linked\" (through a symlink)"
    );
    let (error, text) = read(&tools, json!({"name": "linked", "path": "alias.md"}));
    assert!(!error, "a symlink that stays inside is fine: {text}");
    assert_eq!(text, "inside");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bm25_finds_the_dataset_skill_for_a_task() {
    let report = load_dir(&datasets()).unwrap();
    let search = SkillSearch::bm25(report.to_skills());
    let cases = [
        ("build an MCP server for the GitHub API", "mcp-builder"),
        ("make an animated GIF for Slack", "slack-gif-creator"),
        (
            "test my local web app with Playwright screenshots",
            "webapp-testing",
        ),
        ("write a status report for leadership", "internal-comms"),
    ];
    for (query, expected) in cases {
        let best = search.rank_bm25(query);
        assert_eq!(search.skills()[best[0].0].name, expected, "{query}");
    }
    assert!(search.rank_bm25("zzzz qqqq").is_empty());
}

#[test]
fn skill_search_is_a_resolver_listing_only_its_always_on_skills() {
    use agentry_core::skill::{ListContext, SearchOpts, SkillResolver};
    let report = load_dir(&datasets()).unwrap();
    let search = SkillSearch::bm25(report.to_skills()).always_on(["mcp-builder"]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listed = search.list(ListContext::default()).await;
        let names: Vec<&str> = listed.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mcp-builder"]);
        assert_eq!(
            search.read("webapp-testing").await.unwrap().name,
            "webapp-testing",
            "skills that are not listed can still be read"
        );
        assert!(search.read("nope").await.is_none());
        assert!(search.can_search());
        let found =
            SkillResolver::search(&search, "animated GIF for Slack", SearchOpts::default()).await;
        assert_eq!(found[0].name, "slack-gif-creator");
    });
    assert_eq!(search.skills().len(), 8);
}

#[test]
fn two_folders_naming_one_skill_keep_the_first() {
    let dir = std::env::temp_dir().join(format!("agentry-skill-dup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for folder in ["report-a", "report-b"] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(
            dir.join(folder).join("SKILL.md"),
            format!("---\nname: report\ndescription: Reports from {folder}.\n---\nbody\n"),
        )
        .unwrap();
    }
    let report = load_dir(&dir).unwrap();
    assert_eq!(report.skills.len(), 1);
    assert_eq!(report.skills[0].description, "Reports from report-a.");
    assert_eq!(
        report.invalid[0].1,
        [Problem::Duplicate {
            name: "report".into(),
            first: dir.join("report-a").display().to_string()
        }]
    );
    // An agent refuses two skills of one name outright.
    let skills = [report.skills[0].to_skill(), report.skills[0].to_skill()];
    let error = agentry_agent::Agent::builder(agentry_core::model::OfflineModel)
        .skills(skills)
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "two skills are named \"report\"; skill names must be unique"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A folder under a fresh temp dir holding `SKILL.md` written by `write`.
fn hostile(name: &str, write: impl FnOnce(&Path)) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentry-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(name)).unwrap();
    write(&dir.join(name).join("SKILL.md"));
    dir
}

/// The folder's problems; loading `dir` must end within 60 s or the test
/// fails as hung (an alias bomb read whole runs for minutes and takes
/// gigabytes; the refusals here take milliseconds).
fn problems_in_time(dir: &Path) -> Vec<Problem> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let path = dir.to_path_buf();
    std::thread::spawn(move || sender.send(load_dir(&path).unwrap()));
    let report = receiver
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("loading ends within 60 s (else it hangs)");
    assert!(report.skills.is_empty());
    report.invalid.into_iter().flat_map(|(_, p)| p).collect()
}

#[test]
fn hostile_folders_get_a_problem_quickly() {
    // A YAML alias bomb ("billion laughs") in the front matter.
    let mut bomb = String::from(
        "---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (level, previous) in ('b'..='i').zip('a'..='h') {
        let refs = vec![format!("*{previous}"); 9].join(",");
        bomb.push_str(&format!("{level}: &{level} [{refs}]\n"));
    }
    bomb.push_str("name: bomb\ndescription: *i\n---\nbody\n");
    let dir = hostile("bomb", |file| std::fs::write(file, &bomb).unwrap());
    let too_many = [Problem::TooManyNodes {
        max: agentry_skills::MAX_FRONT_MATTER_NODES,
    }];
    assert_eq!(problems_in_time(&dir), too_many);

    // A wide one: an anchor on a list of 10,000 items, used 10,000 times, in
    // just under 1 MB (read whole, it makes 10^8 nodes and over 10 GB).
    let wide = format!(
        "---\nname: wide\ndescription: wide\na: &a [{}]\nb: [{}]\n---\nbody\n",
        vec!["x".repeat(90); 10_000].join(","),
        vec!["*a"; 10_000].join(","),
    );
    assert!(wide.len() > 900_000 && wide.len() as u64 <= agentry_skills::MAX_SKILL_FILE);
    let dir = hostile("wide", |file| std::fs::write(file, &wide).unwrap());
    assert_eq!(problems_in_time(&dir), too_many);
    assert_eq!(
        too_many[0].to_string(),
        "the front matter makes more than 100000 YAML nodes (each use of an alias counted again); it was not read"
    );

    // A 5 MB SKILL.md.
    let text = format!(
        "---\nname: huge\ndescription: big\n---\n{}",
        "x".repeat(5_000_000)
    );
    let dir = hostile("huge", |file| std::fs::write(file, &text).unwrap());
    assert_eq!(
        problems_in_time(&dir),
        [Problem::TooLarge {
            len: text.len() as u64,
            max: agentry_skills::MAX_SKILL_FILE
        }]
    );

    // A FIFO named SKILL.md, which would block a plain read forever.
    #[cfg(unix)]
    {
        let dir = hostile("fifo", |file| {
            let status = std::process::Command::new("mkfifo")
                .arg(file)
                .status()
                .unwrap();
            assert!(status.success());
        });
        assert_eq!(problems_in_time(&dir), [Problem::NotAFile]);
    }
}

/// The folder's problems; loading `dir` must end within `seconds` or the
/// test fails as hung.
fn problems_within(dir: &Path, seconds: u64) -> Vec<Problem> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let path = dir.to_path_buf();
    std::thread::spawn(move || sender.send(load_dir(&path).unwrap()));
    let report = receiver
        .recv_timeout(std::time::Duration::from_secs(seconds))
        .unwrap_or_else(|_| panic!("loading ends within {seconds} s (else it hangs)"));
    report.invalid.into_iter().flat_map(|(_, p)| p).collect()
}

#[test]
fn deeply_nested_front_matter_is_refused_before_it_is_parsed() {
    let too_deep = [Problem::TooDeep {
        max: agentry_skills::MAX_FRONT_MATTER_DEPTH,
    }];
    assert_eq!(
        too_deep[0].to_string(),
        "the front matter nests deeper than 128 levels; it was not read"
    );
    // 50,000 nested lists (serde_yaml_ng alone: minutes before its own limit).
    for (tag, close) in [("deep-open", false), ("deep-closed", true)] {
        let depth = 50_000;
        let closing = if close {
            "]".repeat(depth)
        } else {
            String::new()
        };
        let text = format!(
            "---\nname: {tag}\ndescription: d\nmetadata: {{x: {}{closing}}}\n---\nbody\n",
            "[".repeat(depth)
        );
        let dir = hostile(tag, |file| std::fs::write(file, &text).unwrap());
        assert_eq!(problems_within(&dir, 5), too_deep, "{tag}");
    }
    // The mapping, `metadata`'s mapping and 126 lists: 128 levels, what
    // serde_yaml_ng reads: the skill loads. One more level is refused.
    let at = |lists: usize| {
        format!(
            "---\nname: at\ndescription: d\nmetadata: {{x: {}{}}}\n---\nbody\n",
            "[".repeat(lists),
            "]".repeat(lists)
        )
    };
    let dir = hostile("at", |file| std::fs::write(file, at(126)).unwrap());
    assert_eq!(problems_within(&dir, 5), []);
    assert_eq!(load_dir(&dir).unwrap().skills.len(), 1);
    let dir = hostile("at", |file| std::fs::write(file, at(127)).unwrap());
    assert_eq!(problems_within(&dir, 5), too_deep);
}
