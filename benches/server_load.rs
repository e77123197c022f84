//! Load on `agentry-server`: many concurrent chat sessions, each turn
//! streamed as server-sent events, the model a scripted one that streams 50
//! deltas (so the server, its memory store and the HTTP stack are what is
//! measured, not a model). Side by side, in the same run, a bare axum SSE
//! handler that streams the same 50 events with no agent, memory or auth:
//! the ceiling.
//!
//! The server runs in a child process (this binary with `serve`), so its
//! memory is its own: the bench reads its RSS from `/proc`.
//!
//! ```text
//! ulimit -n 16384 && cargo bench -p agentry-benches --bench server_load -- [SESSIONS] [SECONDS]
//! ```
//! `AGENTRY_POSTGRES_URL` adds the PostgreSQL store. Prints a Markdown table.
//! `-- serve sqlite 0` runs one server alone (it prints its URL) and
//! `-- client URL SESSIONS SECONDS` loads it, for profiling one side.

#[path = "../crates/agentry-server/tests/support/mod.rs"]
#[allow(unused_imports)]
mod support;

use std::convert::Infallible;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentry_agent::Agent;
use agentry_core::embed::KeywordEmbedder;
use agentry_core::memory::{Memory, MemoryStore};
use agentry_server::{AgentServer, ApiKeys};
use axum::response::sse::{Event, Sse};
use futures_util::StreamExt;

/// Deltas per reply.
const DELTAS: usize = 50;
/// The one API key of the bench.
const KEY: &str = "bench-key";

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("serve") {
        return serve(&args[1], args[2].parse().unwrap(), args.get(3).cloned());
    }
    if args.first().map(String::as_str) == Some("client") {
        // Load on a server started elsewhere (under a profiler, say).
        let (url, sessions, seconds) =
            (&args[1], args[2].parse().unwrap(), args[3].parse().unwrap());
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let load = runtime.block_on(throughput(url, sessions, seconds));
        println!(
            "{:.0} turns/s, first delta p50 {}, {} errors",
            load.turns_per_second,
            ms(percentile(&load.first_delta, 0.5)),
            load.errors
        );
        return;
    }
    let sessions: usize = args.first().map_or(1000, |a| a.parse().unwrap());
    let seconds: u64 = args.get(1).map_or(10, |a| a.parse().unwrap());
    let mut kinds = vec!["bare axum SSE", "agentry, SQLite"];
    let postgres = std::env::var("AGENTRY_POSTGRES_URL").ok();
    if postgres.is_some() {
        kinds.push("agentry, PostgreSQL");
    }
    println!("{sessions} concurrent sessions, {DELTAS} deltas per reply, {seconds} s per row\n");
    println!(
        "| server | turns/s | server CPU per turn | first delta p50 | first delta p99 | whole turn p50 | whole turn p99 | errors | RSS idle | RSS, {sessions} streams open | per open stream | RSS after, {sessions} stored sessions |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut light = Vec::new();
    for kind in kinds {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let load = {
            let mut server = Server::start(kind, 0, postgres.clone());
            let cpu_before = server.cpu();
            let mut load = runtime.block_on(throughput(&server.url, sessions, seconds));
            load.server_cpu = server.cpu().saturating_sub(cpu_before);
            // What the server adds when it is not saturated: one session at a time.
            light.push((kind, runtime.block_on(throughput(&server.url, 1, 3))));
            server.stop();
            load
        };
        // Memory: a slow model (40 ms between deltas) keeps every stream open.
        let memory = {
            let mut server = Server::start(kind, 40, postgres.clone());
            let memory = runtime.block_on(memory(&server, sessions));
            server.stop();
            memory
        };
        println!(
            "| {kind} | {:.0} | {:.0} µs | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            load.turns_per_second,
            load.server_cpu.as_secs_f64() * 1e6 / load.whole.len().max(1) as f64,
            ms(percentile(&load.first_delta, 0.50)),
            ms(percentile(&load.first_delta, 0.99)),
            ms(percentile(&load.whole, 0.50)),
            ms(percentile(&load.whole, 0.99)),
            load.errors,
            mib(memory.idle),
            mib(memory.streaming),
            kib((memory.streaming.saturating_sub(memory.idle)) / sessions as u64),
            mib(memory.after),
        );
    }
    println!("\nOne session at a time, 3 s:\n");
    println!(
        "| server | turns/s | first delta p50 | first delta p99 | whole turn p50 | whole turn p99 |"
    );
    println!("|---|---|---|---|---|---|");
    for (kind, load) in light {
        println!(
            "| {kind} | {:.0} | {} | {} | {} | {} |",
            load.turns_per_second,
            ms(percentile(&load.first_delta, 0.50)),
            ms(percentile(&load.first_delta, 0.99)),
            ms(percentile(&load.whole, 0.50)),
            ms(percentile(&load.whole, 0.99)),
        );
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// A server in a child process.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(kind: &str, gap_ms: u64, postgres: Option<String>) -> Self {
        let kind = match kind {
            "bare axum SSE" => "bare",
            "agentry, SQLite" => "sqlite",
            _ => "postgres",
        };
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args(["serve", kind, &gap_ms.to_string()])
            .stdout(Stdio::piped());
        if let Some(url) = postgres {
            command.arg(url);
        }
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_owned();
        assert!(url.starts_with("http://"), "the server said {line:?}");
        Self { child, url }
    }

    /// CPU time the server process has used (user and system).
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        // Fields 14 and 15 (utime, stime), after the command name in parentheses.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // The kernel's USER_HZ is 100 on Linux.
        Duration::from_millis(ticks * 10)
    }

    /// Resident memory of the server process, in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        kib * 1024
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one throughput row measured.
struct Load {
    turns_per_second: f64,
    first_delta: Vec<Duration>,
    whole: Vec<Duration>,
    errors: usize,
    /// CPU the server used for the row.
    server_cpu: Duration,
}

/// One turn: the time to its first `reply:delta`, and to its `turn:end`.
async fn turn(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    n: usize,
) -> Result<(Duration, Duration), String> {
    let started = Instant::now();
    let response = http
        .post(format!("{url}/v1/sessions/{session}/turns"))
        .bearer_auth(KEY)
        .header("Accept", "text/event-stream")
        .json(&serde_json::json!({"text": format!("message {n} of {session}")}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != 200 {
        return Err(format!("status {}", response.status()));
    }
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    let mut first = None;
    while let Some(chunk) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.map_err(|e| e.to_string())?));
        if first.is_none() && seen.contains("event: reply:delta") {
            first = Some(started.elapsed());
        }
        if seen.contains("event: turn:end") {
            let deltas = seen.matches("event: reply:delta").count();
            if deltas != DELTAS {
                return Err(format!("{deltas} deltas"));
            }
            return Ok((first.unwrap_or_default(), started.elapsed()));
        }
    }
    Err("the stream ended without turn:end".into())
}

fn client(sessions: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(sessions)
        .build()
        .unwrap()
}

/// `sessions` clients, each taking turns in its own session for `seconds`.
async fn throughput(url: &str, sessions: usize, seconds: u64) -> Load {
    let http = client(sessions);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..sessions)
        .map(|i| {
            let (http, url) = (http.clone(), url.to_owned());
            tokio::spawn(async move {
                let session = format!("load-{i}");
                let mut results = Vec::new();
                let mut n = 0;
                while Instant::now() < deadline {
                    results.push(turn(&http, &url, &session, n).await);
                    n += 1;
                }
                results
            })
        })
        .collect();
    let mut load = Load {
        turns_per_second: 0.0,
        first_delta: Vec::new(),
        whole: Vec::new(),
        errors: 0,
        server_cpu: Duration::ZERO,
    };
    for task in tasks {
        for result in task.await.unwrap() {
            match result {
                Ok((first, whole)) => {
                    load.first_delta.push(first);
                    load.whole.push(whole);
                }
                Err(_) => load.errors += 1,
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    load.turns_per_second = load.whole.len() as f64 / elapsed;
    load.first_delta.sort_unstable();
    load.whole.sort_unstable();
    load
}

/// Resident memory: idle, with a stream open in every session, and after.
struct MemoryUse {
    idle: u64,
    streaming: u64,
    after: u64,
}

async fn memory(server: &Server, sessions: usize) -> MemoryUse {
    let http = client(sessions);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = server.rss();
    let opened = Arc::new(tokio::sync::Semaphore::new(0));
    let tasks: Vec<_> = (0..sessions)
        .map(|i| {
            let (http, url, opened) = (http.clone(), server.url.clone(), opened.clone());
            tokio::spawn(async move {
                let response = http
                    .post(format!("{url}/v1/sessions/idle-{i}/turns"))
                    .bearer_auth(KEY)
                    .header("Accept", "text/event-stream")
                    .json(&serde_json::json!({"text": "hello"}))
                    .send()
                    .await
                    .unwrap();
                let mut stream = response.bytes_stream();
                let mut seen = String::new();
                let mut counted = false;
                while let Some(chunk) = stream.next().await {
                    seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
                    if !counted && seen.contains("event: reply:delta") {
                        opened.add_permits(1);
                        counted = true;
                    }
                }
            })
        })
        .collect();
    // Every stream has begun: the peak, sampled a few times.
    let _all = opened.acquire_many(sessions as u32).await.unwrap();
    let mut streaming = 0;
    for _ in 0..5 {
        streaming = streaming.max(server.rss());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for task in tasks {
        task.await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    MemoryUse {
        idle,
        streaming,
        after: server.rss(),
    }
}

/// The child: serve `kind` (`bare`, `sqlite`, `postgres`) with `gap_ms`
/// between deltas; print the URL on stdout; run until killed.
fn serve(kind: &str, gap_ms: u64, postgres: Option<String>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let gap = Duration::from_millis(gap_ms);
        let router = if kind == "bare" {
            axum::Router::new().route(
                "/v1/sessions/{id}/turns",
                axum::routing::post(move || async move { bare_turn(gap) }),
            )
        } else {
            let store: Arc<dyn MemoryStore> = if kind == "sqlite" {
                let file =
                    std::env::temp_dir().join(format!("agentry-load-{}.db", std::process::id()));
                let _ = std::fs::remove_file(&file);
                Arc::new(agentry_store::SqliteStore::open(&file).unwrap())
            } else {
                let url = postgres.expect("a PostgreSQL URL");
                Arc::new(agentry_store::PgStore::connect(&url, 3).await.unwrap())
            };
            let model = support::DripModel {
                pieces: vec!["word ".to_owned(); DELTAS],
                gap,
                fail_after: None,
            };
            let agent = Agent::builder(model).system("You help.").build().unwrap();
            let memory = Memory::new(store, KeywordEmbedder::new(["message", "hello"]));
            AgentServer::new("bench", agent, memory)
                .api_keys(ApiKeys::from_list(KEY))
                .max_running_per_key(1 << 20)
                .router()
        };
        println!("{url}");
        // As `AgentServer::serve` does: every event leaves at once.
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|stream| stream.set_nodelay(true).unwrap());
        axum::serve(listener, router).await.unwrap();
    });
}

/// The ceiling: the same events as a turn, from nothing.
fn bare_turn(gap: Duration) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let names = std::iter::once("reply:start")
        .chain(std::iter::repeat_n("reply:delta", DELTAS))
        .chain(["reply:end", "turn:end"]);
    let events = futures_util::stream::iter(names).then(move |name| async move {
        if gap.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(gap).await;
        }
        Ok(Event::default().event(name).data(r#"{"text":"word "}"#))
    });
    Sse::new(events)
}
