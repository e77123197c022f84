//! `agentry eval`: the demo agent's cases file and BFCL questions through
//! the harness on the default local model (the judge too), the reports it
//! writes, the exit code against the threshold and a baseline, and the
//! mistakes in a cases file it names before loading any model.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{AGENTRY, Dir, models_present, repo};
use serde_json::Value;

fn eval(args: &[&str]) -> Output {
    Command::new(AGENTRY)
        .current_dir(repo())
        .arg("eval")
        .args(args)
        .output()
        .unwrap()
}

fn report(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn mistakes_in_a_cases_file_are_named_before_any_model_loads() {
    let dir = Dir::new("eval-mistakes");
    let cases = dir.0.join("cases.toml");
    std::fs::write(
        &cases,
        "[[case]]\nname = \"x\"\ninput = \"hi\"\ncalls = [{ tool = \"t\", args_match = { a = \"(\" } }]\n",
    )
    .unwrap();
    let output = eval(&["run", cases.to_str().unwrap(), "--provider", "offline"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).starts_with("error: case `x`, call 1 (t): args_match.a: regex parse error"),
        "{}",
        stderr(&output)
    );
    let output = eval(&["run", "no/such/file.toml", "--provider", "offline"]);
    assert!(
        stderr(&output).starts_with("error: no/such/file.toml: No such file"),
        "{}",
        stderr(&output)
    );
    std::fs::write(&cases, "[[case]]\nname = \"x\"\ninput = \"hi\"\n").unwrap();
    let output = eval(&["run", cases.to_str().unwrap(), "--case", "y"]);
    assert_eq!(stderr(&output), "error: no case is named `y`\n");
}

#[test]
fn mistakes_outside_the_cases_file_are_found_before_any_trial_runs() {
    let dir = Dir::new("eval-outputs");
    let cases = dir.0.join("cases.toml");
    let text = "[[case]]\nname = \"x\"\ninput = \"hi\"\ntags = [\"a\"]\n";
    std::fs::write(&cases, text).unwrap();
    let path = |name: &str| dir.0.join(name).to_str().unwrap().to_owned();
    let (cases_path, report) = (path("cases.toml"), path("r.json"));
    let bad_baseline = path("baseline.json");
    std::fs::write(
        &bad_baseline,
        r#"{"suite":"s","model":"m","threshold":1,"repeats":1,"trials":1,"passed":1,"pass_rate":1,"tokens":0,"seconds":0,
            "cases":[{"name":"x","passed":1,"pass_rate":5.0,"trials":[]}]}"#,
    )
    .unwrap();
    for (args, expected) in [
        (
            vec!["--out", cases_path.as_str()],
            format!("error: {cases_path}: that is the cases file; write the report elsewhere\n"),
        ),
        (
            vec!["--out", report.as_str(), "--junit", report.as_str()],
            format!("error: --out and --junit are both {report}: give each its own file\n"),
        ),
        (
            vec!["--junit", dir.0.to_str().unwrap()],
            format!("error: {}: is a directory\n", dir.0.display()),
        ),
        (
            vec!["--out", "/no/such/folder/r.json"],
            "error: /no/such/folder/r.json: its folder does not exist\n".to_owned(),
        ),
        (
            vec!["--baseline", bad_baseline.as_str()],
            format!(
                "error: the baseline {bad_baseline} is not a report: case `x` has a pass rate of 5 for 1 of 0 trials passed\n"
            ),
        ),
        (
            vec!["--tag", "b"],
            "error: no case has the tag `b`\n".to_owned(),
        ),
        (
            vec!["--threshold", "-1"],
            "error: threshold -1 is not between 0 and 1\n".to_owned(),
        ),
        (
            vec!["--concurrency", "100"],
            "error: concurrency is 100: from 1 to 64\n".to_owned(),
        ),
    ] {
        let mut all = vec!["run", cases_path.as_str(), "--provider", "offline"];
        all.extend(args.iter().copied());
        let output = eval(&all);
        assert!(!output.status.success(), "{args:?}");
        assert_eq!(stderr(&output), expected, "{args:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&cases).unwrap(),
        text,
        "the cases file is untouched"
    );
}

#[test]
fn the_offline_model_fails_a_suite_and_says_so_in_every_report() {
    let dir = Dir::new("eval-offline");
    let (json, junit) = (dir.0.join("r.json"), dir.0.join("r.xml"));
    let output = eval(&[
        "run",
        "examples/evals/demo-agent.toml",
        "--provider",
        "offline",
        "--tag",
        "arithmetic",
        "--out",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert!(
        !output.status.success(),
        "no case passes: under the threshold"
    );
    let report = report(&json);
    assert_eq!(report["suite"], "demo-agent");
    let names: Vec<&str> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| case["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["product", "two steps in order"]);
    assert_eq!(report["passed"], 0);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"tests="2" failures="2""#), "{xml}");
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("demo-agent: 0/2 trials passed (0.00%), threshold 80.00%: NOT met"),
        "{table}"
    );
}

#[test]
fn the_demo_agents_cases_run_on_the_default_model() {
    if !models_present(true) {
        return;
    }
    let dir = Dir::new("eval-demo");
    let (json, junit) = (dir.0.join("r.json"), dir.0.join("r.xml"));
    let output = eval(&[
        "run",
        "examples/evals/demo-agent.toml",
        "--out",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let report = report(&json);
    assert_eq!(
        output.status.success(),
        report["pass_rate"].as_f64().unwrap() >= 0.8,
        "the exit code follows the threshold: {}",
        stderr(&output)
    );
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 7);
    // The calculator case: its call, the tool's result and the answer are all there.
    let product = &cases[0]["trials"][0];
    assert_eq!(product["passed"], true, "{product:#}");
    assert_eq!(product["trajectory"][0]["calls"][0]["tool"], "calculator");
    assert_eq!(product["trajectory"][0]["calls"][0]["result"], 391.0);
    // Whatever the model did, no case failed for want of a readable verdict.
    for case in cases {
        for failure in case["trials"][0]["failures"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let why = failure["why"].as_str().unwrap();
            assert!(
                !why.contains("judge failed") && !why.contains("not readable"),
                "{why}"
            );
        }
    }
    let failed = cases.iter().filter(|case| case["passed"] == 0).count();
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!(r#"tests="7" failures="{failed}""#)),
        "{xml}"
    );
    eprintln!("{}", String::from_utf8_lossy(&output.stdout));
}

#[test]
fn the_local_judge_passes_and_fails_by_its_rubric_and_a_baseline_names_a_regression() {
    if !models_present(true) {
        return;
    }
    let dir = Dir::new("eval-judge");
    let cases = dir.0.join("cases.toml");
    std::fs::write(
        &cases,
        r#"
threshold = 0.5

[[case]]
name = "greets"
input = "Hi! What can you help me with?"
answer = [{ judge = "The answer greets the user or says what the assistant can help with." }]

[[case]]
name = "giraffe"
input = "Hi! What can you help me with?"
answer = [{ judge = "The answer is written in French and is about giraffes." }]
"#,
    )
    .unwrap();
    let first = dir.0.join("first.json");
    let output = eval(&[
        "run",
        cases.to_str().unwrap(),
        "--out",
        first.to_str().unwrap(),
    ]);
    let report = report(&first);
    let passed: Vec<&Value> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| &case["trials"][0]["passed"])
        .collect();
    assert_eq!(passed, [true, false], "{report:#}");
    let why = report["cases"][1]["trials"][0]["failures"][0]["why"]
        .as_str()
        .unwrap();
    assert!(why.starts_with("the judge: "), "{why}");
    assert!(
        output.status.success(),
        "half passed, the threshold is half"
    );

    // A baseline in which the giraffe case passed: now it is a regression.
    let mut baseline = report.clone();
    baseline["cases"][1]["pass_rate"] = 1.0.into();
    baseline["cases"][1]["passed"] = 1.into();
    let saved = dir.0.join("baseline.json");
    std::fs::write(&saved, baseline.to_string()).unwrap();
    let output = eval(&[
        "run",
        cases.to_str().unwrap(),
        "--case",
        "giraffe",
        "--threshold",
        "0",
        "--baseline",
        saved.to_str().unwrap(),
    ]);
    assert!(!output.status.success(), "a regression fails the command");
    assert!(
        stderr(&output).contains("regressed: giraffe (100% → 0%)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn bfcl_questions_run_through_the_same_harness() {
    if !models_present(true) {
        return;
    }
    let dir = Dir::new("eval-bfcl");
    let json = dir.0.join("r.json");
    for (category, limit) in [("simple_python", "4"), ("irrelevance", "2")] {
        let output = eval(&[
            "bfcl",
            "--category",
            category,
            "--limit",
            limit,
            "--threshold",
            "0",
            "--out",
            json.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
        let report = report(&json);
        assert_eq!(report["suite"], format!("bfcl-{category}"));
        let cases = report["cases"].as_array().unwrap();
        assert_eq!(cases.len(), limit.parse::<usize>().unwrap());
        assert_eq!(cases[0]["name"], format!("{category}_0"));
        // One step each: BFCL scores the first step's calls.
        assert!(cases.iter().all(|case| case["trials"][0]["steps"] == 1));
        assert!(
            report["passed"].as_u64().unwrap() * 2 >= cases.len() as u64,
            "the default model passes most of these: {report:#}"
        );
    }
}
