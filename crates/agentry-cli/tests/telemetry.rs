//! OpenTelemetry export read back from a real backend: Arize Phoenix (from
//! PyPI, in `.venv`) receives the OTLP/HTTP spans of README command 1 on
//! the default local model, and its API gives back the trace: one
//! `invoke_agent agentry` span over `chat`, `execute_tool calculator`,
//! `chat`, with the token counts, which Phoenix reads as an agent, LLM and
//! tool spans. With Chromium at hand the trace view is photographed
//! (`AGENTRY_PHOENIX_SCREENSHOT=PATH` keeps the picture: the README's).

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{AGENTRY, Dir, repo};
use serde_json::Value;

/// A running `phoenix serve`, killed when dropped.
struct Phoenix {
    child: Child,
    url: String,
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Phoenix from `.venv`, when `scripts/setup` installed it.
fn phoenix_binary() -> Option<PathBuf> {
    let phoenix = repo().join(".venv/bin/phoenix");
    if phoenix.exists() {
        return Some(phoenix);
    }
    if std::env::var("AGENTRY_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!(".venv/bin/phoenix is missing and AGENTRY_REQUIRE_PYTHON=1: run scripts/setup");
    }
    eprintln!("\n*** SKIPPED: run scripts/setup to install Arize Phoenix into .venv ***\n");
    None
}

async fn start_phoenix(binary: PathBuf, dir: &Dir) -> Phoenix {
    let port = free_port();
    let log = std::fs::File::create(dir.0.join("phoenix.log")).unwrap();
    let child = Command::new(binary)
        .arg("serve")
        .env("PHOENIX_WORKING_DIR", dir.0.join("phoenix"))
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", port.to_string())
        .env("PHOENIX_GRPC_PORT", free_port().to_string())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let phoenix = Phoenix {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    loop {
        let health = reqwest::get(format!("{}/healthz", phoenix.url)).await;
        if health.is_ok_and(|r| r.status().is_success()) {
            return phoenix;
        }
        let log = std::fs::read_to_string(dir.0.join("phoenix.log")).unwrap_or_default();
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "Phoenix did not start:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn offline_run(dir: &Dir, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(AGENTRY);
    command
        .current_dir(&dir.0)
        .args(["run", "--provider", "offline", "What is 2+2?"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

#[test]
fn a_wrong_telemetry_setting_is_named_before_anything_runs() {
    let dir = Dir::new("telemetry-wrong");
    let output = offline_run(
        &dir,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "udp"),
        ],
    );
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=udp: expected grpc, http/protobuf or \
         http/json\n"
    );
    std::fs::write(
        dir.0.join("agentry.toml"),
        "[telemetry]\nprotocol = \"udp\"\n",
    )
    .unwrap();
    let output = offline_run(&dir, &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: agentry.toml: TOML parse error at line 2")
            && stderr.contains(
                "unknown variant `udp`, expected one of `grpc`, `http/protobuf`, `http/json`"
            ),
        "{stderr}"
    );
}

#[test]
fn an_unreachable_collector_costs_a_warning_not_the_answer() {
    let dir = Dir::new("telemetry-unreachable");
    // Nothing listens there.
    let port = free_port();
    let output = offline_run(
        &dir,
        &[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                &format!("http://127.0.0.1:{port}"),
            ),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000"),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("answer: "), "{stdout}");
    assert!(
        stderr.starts_with("warning: telemetry: sending "),
        "the lost export is said: {stderr}"
    );
}

fn text<'v>(span: &'v Value, key: &str) -> &'v str {
    span["attributes"][key].as_str().unwrap_or_default()
}

fn count(span: &Value, key: &str) -> u64 {
    span["attributes"][key].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phoenix_shows_the_readme_runs_trace_with_its_token_counts() {
    let Some(binary) = phoenix_binary() else {
        return;
    };
    if !common::models_present(true) {
        return;
    }
    let dir = Dir::new("phoenix");
    let phoenix = start_phoenix(binary, &dir).await;
    let project = "agentry-readme";

    let output = Command::new(AGENTRY)
        .current_dir(&dir.0)
        .args(["run", "What is 17.5 times 4, plus 12?"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.url)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        // Phoenix takes traces, not metrics.
        .env("OTEL_METRICS_EXPORTER", "none")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            format!("openinference.project.name={project}"),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("calculator("), "{stdout}");
    // Flushed on exit, and nothing went wrong sending it.
    assert!(!stderr.contains("telemetry"), "{stderr}");

    // Phoenix files spans as they come; wait for the whole run.
    let started = Instant::now();
    let spans: Vec<Value> = loop {
        let url = format!("{}/v1/projects/{project}/spans?limit=100", phoenix.url);
        let answer = reqwest::get(&url).await.unwrap();
        if answer.status().is_success() {
            let body: Value = answer.json().await.unwrap();
            let spans = body["data"].as_array().cloned().unwrap_or_default();
            let names: Vec<&str> = spans.iter().filter_map(|s| s["name"].as_str()).collect();
            if names.contains(&"invoke_agent agentry")
                && names.iter().filter(|n| n.starts_with("chat ")).count() >= 2
            {
                break spans;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run's spans did not reach Phoenix"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };

    let agent: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "invoke_agent agentry")
        .collect();
    let [agent] = agent[..] else {
        panic!("one agent span: {spans:#?}")
    };
    assert!(agent["parent_id"].is_null(), "the run is the trace's root");
    assert_eq!(agent["span_kind"], "AGENT", "Phoenix reads invoke_agent");
    assert_eq!(text(agent, "gen_ai.agent.name"), "agentry");
    let root = agent["context"]["span_id"].as_str().unwrap();
    let trace = agent["context"]["trace_id"].as_str().unwrap();

    // The run's steps under it, in order: chat, the calculator, chat.
    let mut steps: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parent_id"] == root)
        .filter(|s| {
            let name = s["name"].as_str().unwrap_or_default();
            name.starts_with("chat ") || name.starts_with("execute_tool ")
        })
        .collect();
    steps.sort_by_key(|s| s["start_time"].as_str().unwrap_or_default().to_owned());
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    let model = names[0].strip_prefix("chat ").unwrap();
    assert_eq!(
        names,
        [
            format!("chat {model}").as_str(),
            "execute_tool calculator",
            format!("chat {model}").as_str()
        ],
        "{spans:#?}"
    );
    assert!(
        steps
            .iter()
            .all(|s| s["context"]["trace_id"].as_str() == Some(trace))
    );
    let kinds: Vec<&str> = steps
        .iter()
        .map(|s| s["span_kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["LLM", "TOOL", "LLM"]);
    assert_eq!(text(steps[1], "gen_ai.tool.name"), "calculator");
    assert_eq!(text(steps[0], "gen_ai.provider.name"), "llama.cpp");
    assert_eq!(text(steps[0], "gen_ai.request.model"), model);

    // Token counts: each chat's, summed on the run's span, and Phoenix's
    // own reading of them.
    let chats = [steps[0], steps[2]];
    let input: u64 = chats
        .iter()
        .map(|c| count(c, "gen_ai.usage.input_tokens"))
        .sum();
    let output: u64 = chats
        .iter()
        .map(|c| count(c, "gen_ai.usage.output_tokens"))
        .sum();
    assert!(
        chats
            .iter()
            .all(|c| count(c, "gen_ai.usage.input_tokens") > 0)
    );
    assert!(
        chats
            .iter()
            .all(|c| count(c, "gen_ai.usage.output_tokens") > 0)
    );
    assert_eq!(count(agent, "gen_ai.usage.input_tokens"), input);
    assert_eq!(count(agent, "gen_ai.usage.output_tokens"), output);
    for chat in chats {
        assert_eq!(
            count(chat, "llm.token_count.prompt"),
            count(chat, "gen_ai.usage.input_tokens")
        );
    }
    // The printed total is the trace's.
    assert!(
        stdout.contains(&format!("{} total", input + output)),
        "{stdout}"
    );

    if common::browser_ready() {
        photograph(&phoenix, project, trace, &dir).await;
    }

    served_request_joins_the_callers_trace(&phoenix, &dir).await;
}

/// A request to `agentry serve` with a `traceparent` header: the agent's
/// spans join the caller's trace, under the caller's span, and reach
/// Phoenix when the server stops (Ctrl-C flushes).
async fn served_request_joins_the_callers_trace(phoenix: &Phoenix, dir: &Dir) {
    let project = "agentry-serve";
    let mut command = Command::new(AGENTRY);
    command
        .current_dir(&dir.0)
        .args(["serve", "--provider", "offline", "--listen", "127.0.0.1:0"])
        .arg("--memory")
        .arg(dir.0.join("memory.db"))
        .env("AGENTRY_API_KEYS", "k")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.url)
        .env("OTEL_METRICS_EXPORTER", "none")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            format!("openinference.project.name={project}"),
        );
    let mut served = common::Served::start(command);
    let (trace, caller) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", served.url))
        .bearer_auth("k")
        .header("traceparent", format!("00-{trace}-{caller}-01"))
        .json(&serde_json::json!({
            "model": "agentry",
            "messages": [{"role": "user", "content": "hello"}],
        }))
        .send()
        .await
        .unwrap();
    assert!(
        answer.status().is_success(),
        "{}",
        answer.text().await.unwrap()
    );
    // Ctrl-C: the server finishes, flushes its spans and exits.
    let stopped = Command::new("kill")
        .args(["-INT", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let status = served.child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    let started = Instant::now();
    let spans = loop {
        let url = format!("{}/v1/projects/{project}/spans?limit=100", phoenix.url);
        let answer = reqwest::get(&url).await.unwrap();
        if answer.status().is_success() {
            let body: Value = answer.json().await.unwrap();
            let spans = body["data"].as_array().cloned().unwrap_or_default();
            if spans.iter().any(|s| s["name"] == "invoke_agent agentry") {
                break spans;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the served run's spans did not reach Phoenix"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    // Every span of the request is in the caller's trace; the request's
    // own span hangs under the caller's.
    assert!(
        spans.iter().all(|s| s["context"]["trace_id"] == trace),
        "{spans:#?}"
    );
    let request = spans
        .iter()
        .find(|s| s["parent_id"] == caller)
        .unwrap_or_else(|| panic!("a span under the caller's: {spans:#?}"));
    assert_eq!(text(request, "http.request.method"), "POST");
}

/// Open the trace in Phoenix's UI in headless Chromium and keep a picture.
async fn photograph(phoenix: &Phoenix, project: &str, trace: &str, dir: &Dir) {
    let projects: Value = reqwest::get(format!("{}/v1/projects", phoenix.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = projects["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == project)
        .and_then(|p| p["id"].as_str())
        .unwrap()
        .to_owned();
    let picture = std::env::var("AGENTRY_PHOENIX_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| dir.0.join("trace.png"));
    let output = Command::new("node")
        .arg(repo().join("npm/web/photograph-trace.mjs"))
        .arg(format!("{}/projects/{id}/traces/{trace}", phoenix.url))
        .arg(&picture)
        .current_dir(repo().join("npm"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown = String::from_utf8_lossy(&output.stdout);
    // The page showed the trace's spans, not an error.
    assert!(shown.contains("invoke_agent agentry"), "{shown}");
    assert!(shown.contains("execute_tool calculator"), "{shown}");
    let size = std::fs::metadata(&picture).unwrap().len();
    assert!(size > 10_000, "a {size}-byte picture");
}
