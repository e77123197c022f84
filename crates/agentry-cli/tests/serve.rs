//! `agentry serve` as a user runs it, talked to by peers nobody here wrote:
//! the official OpenAI Python client (pinned in `python/requirements.txt`,
//! installed by `scripts/setup` into `.venv`) with the offline model and
//! with the local model; plus the loopback-only rule without keys, and a
//! SIGTERM during a turn, which finishes the turn before the server exits.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{AGENTRY, Dir, SMALL, Served, models_present, postgres_url, repo};
use serde_json::Value;

/// The Python with the `openai` package, or `None` (loudly) when setup has not run.
fn python() -> Option<PathBuf> {
    let python = repo().join(".venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    if std::env::var("AGENTRY_REQUIRE_PYTHON").as_deref() == Ok("1") {
        panic!(".venv is missing and AGENTRY_REQUIRE_PYTHON=1: run scripts/setup");
    }
    eprintln!(
        "\n*** SKIPPED: run scripts/setup to install the OpenAI Python client into .venv ***\n"
    );
    None
}

/// Start `agentry serve` with `args` on a free port; wait for its banner.
fn serve(tag: &str, args: &[&str]) -> (Served, Dir) {
    serve_on(tag, None, args)
}

/// [`serve`] with its memory at `memory` (a SQLite file of its own when `None`).
fn serve_on(tag: &str, memory: Option<&str>, args: &[&str]) -> (Served, Dir) {
    let dir = Dir::new(&format!("serve-{tag}"));
    let memory = memory.map_or_else(
        || dir.0.join("memory.db").display().to_string(),
        str::to_owned,
    );
    let mut command = Command::new(AGENTRY);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--memory"])
        .arg(&memory)
        .args(args)
        .env("AGENTRY_API_KEYS", "test-key-1,test-key-2");
    (Served::start(command), dir)
}

fn openai_check(python: &PathBuf, served: &Served, expect: Option<&str>) -> Value {
    let mut command = Command::new(python);
    command
        .arg(repo().join("python/openai_client_check.py"))
        .arg(format!("{}/v1", served.url))
        .args(["test-key-2", "agentry"]);
    if let Some(expect) = expect {
        command.arg(expect);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

#[test]
fn the_openai_python_client_talks_to_the_offline_agent() {
    let Some(python) = python() else { return };
    if !models_present(false) {
        return;
    }
    let (served, _dir) = serve("offline", &["--provider", "offline"]);
    let seen = openai_check(&python, &served, Some("[no llm provider]"));
    assert_eq!(seen["models"], serde_json::json!(["agentry"]));
    assert_eq!(seen["finish_reason"], "stop");
    assert_eq!(seen["stream_finish_reason"], "stop");
    assert_eq!(seen["unknown_model"], 404);
    assert_eq!(seen["wrong_key"], 401);
}

#[test]
fn the_openai_python_client_talks_to_the_local_agent() {
    let Some(python) = python() else { return };
    if !models_present(true) {
        return;
    }
    let (served, _dir) = serve("local", &["--provider", "local", "--model", SMALL]);
    let seen = openai_check(&python, &served, None);
    // A real model answered, through the agent's loop, both ways.
    let answer = seen["answer"].as_str().unwrap();
    let streamed = seen["streamed"].as_str().unwrap();
    assert!(answer.contains("84"), "{seen}");
    assert!(streamed.contains("84"), "{seen}");
    assert!(seen["usage"].as_u64().unwrap() > 0, "{seen}");
}

#[test]
fn without_keys_only_loopback_may_listen() {
    let output = Command::new(AGENTRY)
        .args(["serve", "--provider", "offline", "--listen", "0.0.0.0:0"])
        .env_remove("AGENTRY_API_KEYS")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "error: refusing to listen on 0.0.0.0:0 without API keys: set AGENTRY_API_KEYS (or --api-keys, or server.api_keys), or listen on 127.0.0.1"
    );
}

#[test]
fn answering_any_host_without_keys_is_refused() {
    let output = Command::new(AGENTRY)
        .args(["serve", "--provider", "offline", "--allow-host", "*"])
        .env_remove("AGENTRY_API_KEYS")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "error: refusing to answer to any Host (`*`) without API keys: a web page could then \
         call this server through a DNS name of its own; name the hosts, or set AGENTRY_API_KEYS"
    );
}

#[test]
fn hosts_and_origins_that_do_not_parse_are_refused_where_written() {
    let output = Command::new(AGENTRY)
        .args(["serve", "--provider", "offline", "--allow-host", "a b"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.lines().next().unwrap(),
        "error: invalid value 'a b' for '--allow-host <HOST>': `a b` is not a host (`name`, \
         `name:port`, an IP address, `[v6]:port` or `*`)"
    );
    let dir = Dir::new("serve-sites");
    let file = dir.0.join("agentry.toml");
    std::fs::write(
        &file,
        "[server]\nallow_hosts = [\"agent.example\"]\nallow_origins = [\"null\"]\n",
    )
    .unwrap();
    let output = Command::new(AGENTRY)
        .args(["serve", "--provider", "offline", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        format!(
            "error: {}:3: server.allow_origins: `null` is not an origin (`http://name`, \
             `https://name:port`, `http://name:*` or `*`)",
            file.display()
        )
    );
}

/// One raw request on a new connection to `served`; its status and body.
fn raw(served: &Served, head: &[&str]) -> (u16, String) {
    use std::io::{Read, Write};
    let address = served.url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!("{}\r\nConnection: close\r\n\r\n", head.join("\r\n"));
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

/// `--allow-host`, `--failed-keys-per-minute` and `--max-connections-per-peer`
/// reach the server: a rebound name is refused and the told one answered,
/// an address is throttled after its wrong keys, and slow connections past
/// an address's room are closed.
#[test]
fn serve_answers_the_hosts_it_is_told_and_bounds_what_an_address_may_do() {
    if !models_present(false) {
        return;
    }
    let (served, _dir) = serve(
        "hosts",
        &[
            "--provider",
            "offline",
            "--allow-host",
            "agent.example",
            "--failed-keys-per-minute",
            "2",
            "--max-connections-per-peer",
            "4",
            "--body-read-timeout-secs",
            "1",
        ],
    );
    let key = "Authorization: Bearer test-key-1";
    let address = served.url.trim_start_matches("http://").to_owned();
    // Seven slow connections, then a request: four of them make room.
    let slow: Vec<std::net::TcpStream> = (0..7)
        .map(|_| {
            use std::io::Write;
            let mut stream = std::net::TcpStream::connect(&address).unwrap();
            stream.write_all(b"GET /v1/models HTTP/1.1\r\nHo").unwrap();
            stream.set_nonblocking(true).unwrap();
            stream
        })
        .collect();
    let (status, _) = raw(
        &served,
        &["GET /v1/models HTTP/1.1", "Host: localhost", key],
    );
    assert_eq!(status, 200, "served beside the slow connections");
    let shut = || {
        slow.iter()
            .filter(|stream| {
                let open = stream.peek(&mut [0u8; 1]);
                !open.is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock)
            })
            .count()
    };
    let waited = std::time::Instant::now();
    while shut() < 4 && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(shut(), 4, "slow connections closed");
    // A body that has not all come within `--body-read-timeout-secs 1`.
    let mut upload = std::net::TcpStream::connect(&address).unwrap();
    {
        use std::io::Write;
        upload
            .write_all(
                b"POST /v1/sessions/s/turns HTTP/1.1\r\nHost: localhost\r\nAuthorization: \
                  Bearer test-key-1\r\nContent-Type: application/json\r\n\
                  Content-Length: 100\r\n\r\n{\"text\"",
            )
            .unwrap();
    }
    upload
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let read = std::io::Read::read(&mut upload, &mut [0u8; 1]);
    assert!(
        matches!(read, Ok(0))
            || read.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the unfinished body was closed within 10 s"
    );
    drop(slow);
    let (status, body) = raw(
        &served,
        &["GET /v1/models HTTP/1.1", "Host: evil.example", key],
    );
    assert_eq!(status, 403, "{body}");
    let refused: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(refused["error"]["code"], "forbidden");
    let (status, _) = raw(
        &served,
        &["GET /v1/models HTTP/1.1", "Host: agent.example", key],
    );
    assert_eq!(status, 200);
    for guess in [
        "Authorization: Bearer guess-1",
        "Authorization: Bearer guess-2",
    ] {
        let (status, _) = raw(
            &served,
            &["GET /v1/models HTTP/1.1", "Host: localhost", guess],
        );
        assert_eq!(status, 401);
    }
    let (status, body) = raw(
        &served,
        &["GET /v1/models HTTP/1.1", "Host: localhost", key],
    );
    assert_eq!(status, 429, "{body}");
    let throttled: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(throttled["error"]["code"], "too_many_failed_keys");
}

#[test]
fn sigterm_during_a_turn_finishes_the_turn_then_exits() {
    if !models_present(true) {
        return;
    }
    let (mut served, _dir) = serve("sigterm", &["--provider", "local", "--model", SMALL]);
    let url = served.url.clone();
    let pid = served.child.id().to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = runtime.block_on(async {
        use futures_util::StreamExt;
        let http = reqwest::Client::new();
        let response = http
            .post(format!("{url}/v1/sessions/s/turns"))
            .bearer_auth("test-key-1")
            .header("Accept", "text/event-stream")
            .json(&serde_json::json!({"text": "Say hello in five words."}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let mut stream = response.bytes_stream();
        let mut body = String::new();
        // The turn has started (the local model takes seconds): now SIGTERM.
        while !body.contains("event: reply:start") {
            body.push_str(&String::from_utf8_lossy(
                &stream.next().await.unwrap().unwrap(),
            ));
        }
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        while let Some(chunk) = stream.next().await {
            body.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        body
    });
    assert!(
        body.contains("event: turn:end"),
        "the turn finished: {body}"
    );
    assert!(body.contains(r#""ok":true"#), "{body}");
    // Then the process exits on its own, successfully.
    let mut status = None;
    for _ in 0..200 {
        if let Some(done) = served.child.try_wait().unwrap() {
            status = Some(done);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        status
            .expect("agentry serve did not exit after SIGTERM")
            .success()
    );
}

/// The chat page in headless Chromium against `agentry serve` on the local
/// model: the calculator call shows, folded, and the reply uses its result.
/// The screenshot is kept in `target/test-artifacts/chat-page-local.png`.
#[test]
fn the_chat_page_talks_to_the_local_agent_in_a_browser() {
    if !common::browser_ready() {
        return;
    }
    if !models_present(true) {
        return;
    }
    let (served, _dir) = serve("page", &["--model", SMALL]);
    let artifacts = repo().join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let output = Command::new("node")
        .arg(repo().join("npm/web/drive-chat-page.mjs"))
        .args(["--url", &served.url, "--key", "test-key-1"])
        .args(["--message", "What is 17 * 23?"])
        .arg("--screenshot")
        .arg(artifacts.join("chat-page-local.png"))
        .args(["--timeout-ms", "300000"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the driver failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    let live = &report["live"];
    let calls = live["toolCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{report:#}");
    assert_eq!(calls[0]["name"], "calculator");
    assert_eq!(calls[0]["open"], false);
    assert!(
        calls[0]["result"].as_str().unwrap().contains("391"),
        "{report:#}"
    );
    let messages = live["messages"].as_array().unwrap();
    assert_eq!(messages[1]["role"], "assistant", "{report:#}");
    assert!(
        messages[1]["text"].as_str().unwrap().contains("391"),
        "{report:#}"
    );
    assert_eq!(
        report["reloaded"]["messages"], live["messages"],
        "{report:#}"
    );
    assert_eq!(report["pageErrors"], serde_json::json!([]), "{report:#}");
}

/// Two `agentry serve` processes on one PostgreSQL database are one service:
/// turns taken on either, at the same time, land in the same session; each
/// reads what the other wrote; a delete on one is seen by the other; and a
/// key's sessions stay its own across processes.
#[test]
fn two_server_processes_share_one_postgresql_store() {
    let Some(database) = postgres_url() else {
        return;
    };
    if !models_present(false) {
        return;
    }
    let (a, _a_dir) = serve_on("pg-a", Some(&database), &["--provider", "offline"]);
    let (b, _b_dir) = serve_on("pg-b", Some(&database), &["--provider", "offline"]);
    let session = format!("shared-{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let turn = |server: &str, text: &str| {
            http.post(format!("{server}/v1/sessions/{session}/turns"))
                .bearer_auth("test-key-1")
                .json(&serde_json::json!({ "text": text }))
                .send()
        };
        let first: Value = turn(&a.url, "first, on a")
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(first["ok"], true, "{first}");
        let (on_a, on_b) = tokio::join!(turn(&a.url, "second, on a"), turn(&b.url, "third, on b"));
        assert_eq!(on_a.unwrap().status(), 200);
        assert_eq!(on_b.unwrap().status(), 200);

        let messages = |server: &str, key: &str| {
            http.get(format!("{server}/v1/sessions/{session}/messages"))
                .bearer_auth(key)
                .send()
        };
        for server in [&a.url, &b.url] {
            let read: Value = messages(server, "test-key-1")
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let mut users: Vec<&str> = read["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["text"].as_str().unwrap())
                .collect();
            users.sort_unstable();
            assert_eq!(
                users,
                ["first, on a", "second, on a", "third, on b"],
                "{read}"
            );
            assert_eq!(read["messages"].as_array().unwrap().len(), 6, "{read}");
            let other = messages(server, "test-key-2").await.unwrap();
            assert_eq!(
                other.status(),
                404,
                "another key sees nothing, on either process"
            );
        }
        let deleted = http
            .delete(format!("{}/v1/sessions/{session}", b.url))
            .bearer_auth("test-key-1")
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status(), 204);
        let gone = messages(&a.url, "test-key-1").await.unwrap();
        assert_eq!(gone.status(), 404, "deleted on b, gone on a");
    });
}

/// `agentry serve` over A2A on the local model, as the official A2A Python
/// client (`a2a-sdk`) sees it: the card (the demo tools as skills, the
/// bearer scheme), and README command 1's question streamed to its answer
/// through a calculator call.
#[test]
fn the_a2a_python_client_gets_the_local_models_answer() {
    let Some(python) = python() else {
        return;
    };
    if !models_present(true) {
        return;
    }
    let (served, _dir) = serve("a2a", &["--provider", "local", "--model", SMALL]);
    let card: Value = serde_json::from_str(&ureq_get(&format!(
        "{}/.well-known/agent-card.json",
        served.url
    )))
    .unwrap();
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(skills.contains(&"calculator"), "{card:#}");
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
        "{card:#}"
    );
    let seen = common::json_of(
        Command::new(python)
            .arg(repo().join("python/a2a_client_check.py"))
            .args([
                &served.url,
                "test-key-1",
                "answer",
                "What is 17.5 times 4, plus 12?",
            ]),
    );
    assert_eq!(
        seen["states"].as_array().unwrap().last().unwrap(),
        "TASK_STATE_COMPLETED",
        "{seen:#}"
    );
    let called: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["toolCall"]["name"].as_str())
        .collect();
    assert_eq!(called, ["calculator"], "{seen:#}");
    assert!(seen["answer"].as_str().unwrap().contains("82"), "{seen:#}");
}

/// A GET's body, with the standard library only.
fn ureq_get(url: &str) -> String {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let (host, path) = address.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    body.to_owned()
}

/// `agentry serve` over AG-UI on the local model, as the official client
/// (`@ag-ui/client`) sees it: README command 1's question, the calculator
/// call announced and answered, the answer streamed as text.
#[test]
fn the_ag_ui_client_sees_the_local_models_tool_call_and_answer() {
    if !repo().join("npm/node_modules/@ag-ui/client").exists() {
        if std::env::var("AGENTRY_REQUIRE_NPM").as_deref() == Ok("1") {
            panic!("@ag-ui/client is missing and AGENTRY_REQUIRE_NPM=1: run scripts/setup");
        }
        eprintln!("\n*** SKIPPED: run scripts/setup (npm ci) for @ag-ui/client ***\n");
        return;
    }
    if !models_present(true) {
        return;
    }
    let (served, _dir) = serve("agui", &["--provider", "local", "--model", SMALL]);
    let seen = common::json_of(
        Command::new("node")
            .arg(repo().join("npm/web/drive-agui.mjs"))
            .arg(format!("{}/agui", served.url))
            .args(["test-key-1", "answer", "What is 17.5 times 4, plus 12?"])
            .current_dir(repo().join("npm")),
    );
    let types: Vec<&str> = seen["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"RUN_STARTED"), "{seen:#}");
    assert_eq!(types.last(), Some(&"RUN_FINISHED"), "{seen:#}");
    let start = types.iter().position(|t| *t == "TOOL_CALL_START").unwrap();
    assert_eq!(
        &types[start..start + 4],
        [
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT"
        ],
        "{seen:#}"
    );
    assert!(types.contains(&"TEXT_MESSAGE_CONTENT"), "{seen:#}");
    assert!(types.contains(&"STATE_SNAPSHOT"), "{seen:#}");
    assert_eq!(seen["toolCalls"][0]["name"], "calculator", "{seen:#}");
    assert!(
        seen["results"][0]["content"]
            .as_str()
            .unwrap()
            .contains("82")
    );
    assert!(seen["text"].as_str().unwrap().contains("82"), "{seen:#}");
    assert!(seen["result"]["answer"].as_str().unwrap().contains("82"));
}
