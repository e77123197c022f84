//! The demo tools `agentry run` and `agentry mcp serve` carry, against
//! hostile input through a real `agentry mcp serve` over stdio: an
//! expression deep enough to overflow the evaluator's stack is refused (and
//! the server goes on answering), and `read_file` reads a bounded prefix of a
//! huge file and refuses a FIFO at once.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::{AGENTRY, Dir};
use serde_json::{Value, json};

/// `agentry mcp serve --dir DIR`, spoken to line by line; killed on drop.
struct Served {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
}

impl Served {
    fn start(dir: &Dir) -> Self {
        let mut child = Command::new(AGENTRY)
            .args(["mcp", "serve", "--dir"])
            .arg(&dir.0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Self {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        served.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "demo-tools-test", "version": "0"}
            }),
        );
        served.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        served
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The answer to one request; within 30 s or the test fails as hung
    /// (a server that died fails it at once).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = match self.lines.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => line,
                Err(error) => panic!(
                    "no answer to {method} ({error}); the server {}",
                    match self.child.try_wait() {
                        Ok(Some(status)) => format!("exited: {status}"),
                        _ => "is still running".into(),
                    }
                ),
            };
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// A tool call's result: `(is_error, text)`.
    fn call(&mut self, tool: &str, arguments: Value) -> (bool, String) {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &answer["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("a text result: {answer}"))
            .to_owned();
        (result["isError"] == json!(true), text)
    }

    /// The server's peak resident memory, in KiB (`VmHWM`).
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_calculator_expression_past_the_budget_is_refused_and_the_server_lives_on() {
    let dir = Dir::new("demo-calc");
    let mut served = Served::start(&dir);
    // 1,500 nested unary minus signs overflowed a 2 MiB worker stack and
    // aborted the whole server; 10,000 `+` terms (20 KB) did too.
    let deep = format!("{}1", "-".repeat(1_500));
    assert_eq!(
        served.call("calculator", json!({"expression": deep})),
        (
            true,
            "tool \"calculator\" failed: the expression is 1501 characters long; the calculator reads at most 500".into()
        )
    );
    let flat = vec!["1"; 10_000].join("+");
    assert_eq!(
        served.call("calculator", json!({"expression": flat})),
        (
            true,
            "tool \"calculator\" failed: the expression is 19999 characters long; the calculator reads at most 500".into()
        )
    );
    // The same server still answers; the worst shape at the budget evaluates.
    assert_eq!(
        served.call("calculator", json!({"expression": "2 + 3"})),
        (false, "5.0".into())
    );
    let at_budget = format!("{}1", "-".repeat(499));
    assert_eq!(
        served.call("calculator", json!({"expression": at_budget})),
        (false, "-1.0".into())
    );
}

#[test]
fn read_file_reads_a_bounded_prefix_and_refuses_a_fifo_at_once() {
    let dir = Dir::new("demo-read");
    // 1.5 GB of zeros that take no disk (sparse): read whole, 1.5 GB of memory.
    let huge = std::fs::File::create(dir.0.join("sparse.bin")).unwrap();
    huge.set_len(1_500_000_000).unwrap();
    drop(huge);
    let fifo = dir.0.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::write(dir.0.join("note.txt"), "héllo").unwrap();

    let mut served = Served::start(&dir);
    let (is_error, text) = served.call("read_file", json!({"path": "sparse.bin"}));
    assert!(!is_error, "{text}");
    assert_eq!(
        text,
        format!(
            "{}\n[… cut at 20000 bytes of 1500000000]",
            "\0".repeat(20_000)
        )
    );
    // A FIFO with no writer blocked the read until the call's 60 s time-out.
    assert_eq!(
        served.call("read_file", json!({"path": "pipe"})),
        (
            true,
            format!(
                "tool \"read_file\" failed: {:?}: not a regular file",
                fifo.display().to_string()
            )
        )
    );
    assert_eq!(
        served.call("read_file", json!({"path": "note.txt"})),
        (false, "héllo".into())
    );
    // The server never held the file: far below its 1.5 GB.
    let peak = served.peak_kib();
    assert!(peak < 200 * 1024, "peak resident memory {peak} KiB");
}
