//! `agentry.toml` as a user meets it: `agentry init` writes it, `run` and
//! `serve` read it (found in the current directory, or named by
//! `--config`), a flag wins over it, and a mistake in it is an error that
//! names the file, the line and the key.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{AGENTRY, Dir, Served, models_present};

fn agentry_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(AGENTRY)
        .current_dir(dir)
        .args(args)
        .env_remove("AGENTRY_API_KEYS")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn init_writes_a_starter_that_run_reads_and_flags_override() {
    let dir = Dir::new("config-init");
    let dir = &dir.0;
    let output = agentry_in(dir, &["init"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(dir.join("agentry.toml")).unwrap();
    assert!(written.contains("[model]") && written.contains("provider = \"local\""));
    let again = agentry_in(dir, &["init"]);
    assert!(!again.status.success());
    assert_eq!(
        text(&again.stderr),
        "error: agentry.toml exists; pass --force to overwrite it\n"
    );
    assert!(agentry_in(dir, &["init", "--force"]).status.success());

    // The file asks for the local model; the flag wins.
    let output = agentry_in(dir, &["run", "--provider", "offline", "hi"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("answer: [no llm provider]\n"));

    // A file that asks for the offline provider is found in the current directory.
    std::fs::write(
        dir.join("agentry.toml"),
        "[model]\nprovider = \"offline\"\n",
    )
    .unwrap();
    let output = agentry_in(dir, &["run", "--json", "hi"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["answer"], "[no llm provider]");
}

#[test]
fn mistakes_in_the_file_name_the_file_the_line_and_the_key() {
    let dir = Dir::new("config-mistakes");
    let dir = &dir.0;
    let file = dir.join("agent.toml");
    let config = file.to_str().unwrap();
    let cases = [
        (
            "[model]\nprovider = \"offline\"\n\n[agent]\nmax_stepz = 3\n",
            vec![
                "TOML parse error at line 5, column 1",
                "unknown field `max_stepz`",
            ],
        ),
        (
            "[model]\nprovider = \"gpt-9\"\n",
            vec!["TOML parse error at line 2", "unknown variant `gpt-9`"],
        ),
        (
            "[model]\nprovider = \"offline\"\n[agent]\nmax_steps = 0\n",
            vec![":4: agent.max_steps: must be at least 1"],
        ),
        (
            "[model]\nprovider = \"offline\"\n[agent]\ndir = \"nowhere\"\n",
            vec![":4: agent.dir: ", "nowhere: No such file or directory"],
        ),
        (
            "[model]\nprovider = \"offline\"\n[memory.ranking]\nkeywords = true\nrecency_weight = -1\n",
            vec![":5: memory.ranking.recency_weight: must be a number of 0 or more"],
        ),
        (
            "[model]\nprovider = \"offline\"\n[memory.ranking]\nrecency_half_life_secs = 0\n",
            vec![":4: memory.ranking.recency_half_life_secs: must be at least 1"],
        ),
        (
            "[model]\nprovider = \"offline\"\n[memory.ranking]\nkeyword = true\n",
            vec!["TOML parse error at line 4", "unknown field `keyword`"],
        ),
    ];
    for (contents, says) in cases {
        std::fs::write(&file, contents).unwrap();
        let output = agentry_in(dir, &["run", "--config", config, "hi"]);
        assert!(!output.status.success(), "{contents}");
        let stderr = text(&output.stderr);
        assert!(stderr.starts_with(&format!("error: {config}")), "{stderr}");
        for part in says {
            assert!(stderr.contains(part), "{part:?} in {stderr}");
        }
    }
    let missing = agentry_in(dir, &["run", "--config", "no-such.toml", "hi"]);
    assert_eq!(
        text(&missing.stderr),
        "error: no-such.toml: No such file or directory (os error 2)\n"
    );
}

#[test]
fn serve_takes_its_name_keys_and_limits_from_the_file() {
    if !models_present(false) {
        return;
    }
    let dir = Dir::new("config-serve");
    let dir = &dir.0;
    std::fs::write(
        dir.join("agentry.toml"),
        "name = \"helper\"\n[model]\nprovider = \"offline\"\n[memory]\nstore = \"helper.db\"\n\
         [server]\nlisten = \"127.0.0.1:0\"\napi_keys = [\"file-key\"]\nrequests_per_minute = 2\n",
    )
    .unwrap();
    let mut command = Command::new(AGENTRY);
    command
        .current_dir(dir)
        .arg("serve")
        .env_remove("AGENTRY_API_KEYS");
    let served = Served::start(command);
    let url = served.url.clone();
    assert!(
        served.banner.ends_with("(API keys required)"),
        "{}",
        served.banner
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let models = |key: Option<&'static str>| {
            let mut request = http.get(format!("{url}/v1/models"));
            if let Some(key) = key {
                request = request.bearer_auth(key);
            }
            request.send()
        };
        assert_eq!(models(None).await.unwrap().status(), 401);
        let listed: serde_json::Value = models(Some("file-key"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(listed["data"][0]["id"], "helper", "{listed}");
        assert_eq!(models(Some("file-key")).await.unwrap().status(), 200);
        assert_eq!(models(Some("file-key")).await.unwrap().status(), 429);
    });
    drop(served);
    assert!(
        dir.join("helper.db").exists(),
        "the store is where the file says, beside it"
    );
}
