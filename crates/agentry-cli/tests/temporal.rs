//! `agentry worker --temporal` and `agentry run --temporal` on a real
//! Temporal dev server: the README question on the local model as a
//! workflow gives the calls and the answer `agentry run` gives, and a
//! destructive call waits for `agentry runs approve --temporal`.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use agentry_temporal::DevServer;
use common::{AGENTRY, Dir, SMALL};

/// A dev server, or a loud skip (a failure under `AGENTRY_REQUIRE_TEMPORAL=1`).
fn dev_server() -> Option<DevServer> {
    let Some(program) = DevServer::program(&common::repo()) else {
        if std::env::var("AGENTRY_REQUIRE_TEMPORAL").as_deref() == Ok("1") {
            panic!(
                "there is no `temporal` program and AGENTRY_REQUIRE_TEMPORAL=1: run scripts/setup"
            );
        }
        eprintln!("\n*** SKIPPED: no `temporal` program: run scripts/setup ***\n");
        return None;
    };
    Some(DevServer::start(&program).unwrap())
}

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn worker(dir: &PathBuf, address: &str, queue: &str) -> Worker {
    let child = Command::new(AGENTRY)
        .current_dir(dir)
        .args([
            "worker",
            "--temporal",
            address,
            "--task-queue",
            queue,
            "--model",
            SMALL,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Worker(child)
}

fn stdout(command: &mut Command) -> String {
    let output = command.output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

#[test]
fn the_readme_question_as_a_workflow_gives_what_agentry_run_gives() {
    if !common::models_present(true) {
        return;
    }
    let Some(server) = dev_server() else { return };
    let dir = Dir::new("temporal-readme");
    let _worker = worker(&dir.0, server.address(), "readme");
    let question = "What is 17.5 times 4, plus 12?";
    let remote = stdout(Command::new(AGENTRY).current_dir(&dir.0).args([
        "run",
        "--temporal",
        server.address(),
        "--task-queue",
        "readme",
        question,
    ]));
    let local = stdout(
        Command::new(AGENTRY)
            .current_dir(&dir.0)
            .args(["run", "--model", SMALL, question]),
    );
    // The same calls, results and answer; token counts differ only in what
    // each process's prompt cache held.
    let same = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("step ") || l.starts_with("answer: "))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(same(&remote), same(&local), "{remote}\n---\n{local}");
    assert!(
        remote.starts_with("step 1: calculator({\"expression\":\"17.5 * 4 + 12\"}) => 82.0\n"),
        "{remote}"
    );
    assert!(remote.contains("over 2 steps"), "{remote}");
    let id = remote
        .lines()
        .find_map(|l| l.strip_prefix("run: "))
        .expect("the run's id");
    let listed =
        stdout(Command::new(AGENTRY).args(["runs", "list", "--temporal", server.address()]));
    assert!(
        listed.contains(id) && listed.contains("Completed"),
        "{listed}"
    );
    let shown =
        stdout(Command::new(AGENTRY).args(["runs", "show", id, "--temporal", server.address()]));
    assert!(
        shown.contains("calculator") && shown.contains("status: ended"),
        "{shown}"
    );
}

/// `agentry serve --temporal`: the HTTP server loads no model and hands each
/// agent loop to the workers. A chat turn streams the worker's calculator
/// call and the answer, and is stored in the server's memory; a chat
/// completion gets the same answer; both runs are on the Temporal server.
#[test]
fn serve_hands_turns_to_temporal_workers() {
    if !common::models_present(true) {
        return;
    }
    let Some(server) = dev_server() else { return };
    let dir = Dir::new("temporal-serve");
    let _worker = worker(&dir.0, server.address(), "served");
    let mut command = Command::new(AGENTRY);
    command
        .current_dir(&dir.0)
        .args(["serve", "--listen", "127.0.0.1:0", "--memory"])
        .arg(dir.0.join("memory.db"))
        .args(["--temporal", server.address(), "--task-queue", "served"])
        .env("AGENTRY_API_KEYS", "test-key-1");
    let served = common::Served::start(command);
    let url = served.url.clone();
    let question = "What is 17.5 times 4, plus 12?";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (turn, messages, completion) = runtime.block_on(async {
        let http = reqwest::Client::new();
        let turn = http
            .post(format!("{url}/v1/sessions/s/turns"))
            .bearer_auth("test-key-1")
            .header("Accept", "text/event-stream")
            .json(&serde_json::json!({"text": question}))
            .send()
            .await
            .unwrap();
        assert_eq!(turn.status(), 200);
        let turn = turn.text().await.unwrap();
        let messages: serde_json::Value = http
            .get(format!("{url}/v1/sessions/s/messages"))
            .bearer_auth("test-key-1")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let completion: serde_json::Value = http
            .post(format!("{url}/v1/chat/completions"))
            .bearer_auth("test-key-1")
            .json(&serde_json::json!({
                "model": "agentry",
                "messages": [{"role": "user", "content": question}],
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (turn, messages, completion)
    });
    // The worker's call streamed through the turn, and its answer.
    assert!(
        turn.contains("event: tool:call") && turn.contains("calculator"),
        "{turn}"
    );
    let end = turn
        .split("event: reply:end")
        .nth(1)
        .expect("the reply's end");
    assert!(end.contains("82"), "{turn}");
    assert!(turn.contains("event: turn:end"), "{turn}");
    // The server stored both sides of the turn in its memory.
    let stored = messages.to_string();
    assert!(
        stored.contains("17.5 times 4") && stored.contains("82"),
        "{stored}"
    );
    // The chat completion ran on a worker too.
    let content = completion["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(content.contains("82"), "{completion}");
    // Both runs are on the server: the turn's `s~MESSAGE`, the completion's `chatcmpl-…`.
    let listed =
        stdout(Command::new(AGENTRY).args(["runs", "list", "--temporal", server.address()]));
    assert!(listed.contains("s~"), "{listed}");
    assert!(listed.contains("chatcmpl-"), "{listed}");
}

/// The TLS flags reach the connection: half a client certificate, or a CA
/// file that is not there, is refused before any connection, saying why.
#[test]
fn temporal_tls_flags_are_read_before_connecting() {
    let output = Command::new(AGENTRY)
        .args(["runs", "list", "--temporal", "127.0.0.1:9"])
        .args(["--temporal-tls-cert", "client.pem"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("mutual TLS needs both a certificate and its key"),
        "{stderr}"
    );
    let output = Command::new(AGENTRY)
        .args(["runs", "list", "--temporal", "127.0.0.1:9"])
        .args(["--temporal-tls-ca", "/nonexistent/ca.pem"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("reading /nonexistent/ca.pem"), "{stderr}");
}
