//! Agent runs on Temporal against agentry's own durable runs, side by side
//! in one process: completed runs per second with 1, 2 and 4 workers on one
//! dev server, the same runs as durable runs on SQLite (and PostgreSQL when
//! `AGENTRY_POSTGRES_URL` is set), the latency of one run alone (p50/p99),
//! and the workflow history per step.
//!
//! A run is two model steps (a scripted model that answers at once) and one
//! tool call that takes `TOOL_MS`. Run:
//! `cargo bench -p agentry-temporal --bench scale` (`AGENTRY_BENCH_RUNS`, default 64).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentry_agent::{Agent, Outcome};
use agentry_core::journal::RunJournal;
use agentry_core::model::{ChatRequest, Message, ScriptedModel, Step, Usage};
use agentry_core::tool::{ToolCall, ToolHints, function};
use agentry_store::{PgStore, SqliteStore};
use agentry_temporal::{DevServer, TemporalRuns, connect, serve};
use serde_json::json;

const TOOL_MS: u64 = 20;

#[derive(serde::Deserialize)]
struct Item {
    item: String,
}

/// A model whose step depends only on the conversation: call once, then answer.
fn model(runs: usize) -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for _ in 0..runs * 2 + 8 {
        model = model.respond(|request: &ChatRequest| {
            let done = request
                .messages
                .iter()
                .any(|m| matches!(m, Message::Tool { .. }));
            Ok(if done {
                Step::Final {
                    text: "ok".into(),
                    tokens: Usage::new(10, 1),
                }
            } else {
                Step::Tool {
                    calls: vec![ToolCall::new("c1", "lookup", json!({"item": "tea"}))],
                    text: String::new(),
                    tokens: Usage::new(10, 5),
                }
            })
        });
    }
    model
}

fn agent(runs: usize) -> Agent {
    let lookup = function("lookup")
        .arg::<String>("item", "what to look up")
        .hints(ToolHints {
            read_only: true,
            idempotent: true,
            ..Default::default()
        })
        .handler(|a: Item| {
            std::thread::sleep(Duration::from_millis(TOOL_MS));
            Ok::<_, String>(format!("{} costs 3", a.item))
        })
        .build()
        .unwrap()
        .with_name("lookup");
    Agent::builder(model(runs)).tool(lookup).build().unwrap()
}

fn workers(address: &str, queue: &str, count: usize, runs: usize) {
    for _ in 0..count {
        let (address, queue) = (address.to_owned(), queue.to_owned());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let client = connect(&address, "default").await.unwrap();
                let _ = serve(Arc::new(agent(runs)), client, &queue).await;
            });
        });
    }
}

async fn temporal_rate(address: &str, count: usize, runs: usize) -> f64 {
    let queue = format!("scale-{count}");
    workers(address, &queue, count, runs);
    let client = TemporalRuns::connect(address)
        .await
        .unwrap()
        .task_queue(&queue);
    // One run first, so the workers are polling before the clock starts.
    client
        .run(&format!("{queue}-warm"), "buy tea")
        .await
        .unwrap();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..runs {
        let client = client.clone();
        let id = format!("{queue}-{n}");
        tasks.push(tokio::spawn(async move {
            client.run(&id, "buy tea").await.unwrap()
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().outcome, Outcome::Final("ok".into()));
    }
    runs as f64 / started.elapsed().as_secs_f64()
}

async fn durable_rate(journal: Arc<dyn RunJournal>, tag: &str, runs: usize) -> f64 {
    let durable = Arc::new(agent(runs).durable(journal));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..runs {
        let durable = durable.clone();
        let id = format!("{tag}-{n}-{}", std::process::id());
        tasks.push(tokio::spawn(async move {
            durable
                .start_messages(id, vec![Message::user("buy tea")])
                .await
                .unwrap()
        }));
    }
    for task in tasks {
        assert_eq!(
            task.await.unwrap().outcome.outcome,
            Outcome::Final("ok".into())
        );
    }
    runs as f64 / started.elapsed().as_secs_f64()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn latency(address: &str, alone: usize) -> (Duration, Duration, Duration, Duration) {
    let queue = "latency";
    workers(address, queue, 1, alone);
    let client = TemporalRuns::connect(address)
        .await
        .unwrap()
        .task_queue(queue);
    client.run("latency-warm", "buy tea").await.unwrap();
    let mut on_temporal = Vec::new();
    for n in 0..alone {
        let started = Instant::now();
        client
            .run(&format!("latency-{n}"), "buy tea")
            .await
            .unwrap();
        on_temporal.push(started.elapsed());
    }
    let local = agent(alone);
    let mut in_process = Vec::new();
    for _ in 0..alone {
        let started = Instant::now();
        local.run("buy tea").await;
        in_process.push(started.elapsed());
    }
    on_temporal.sort();
    in_process.sort();
    (
        percentile(&on_temporal, 0.5),
        percentile(&on_temporal, 0.99),
        percentile(&in_process, 0.5),
        percentile(&in_process, 0.99),
    )
}

/// Events and JSON bytes of one finished run's history.
fn history(server: &DevServer, id: &str) -> (usize, usize) {
    let text = server.history(id).unwrap_or_default();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let events = value["events"].as_array().map_or(0, Vec::len);
    (events, text.len())
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("AGENTRY_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let program = DevServer::program(&root).expect("a `temporal` program (scripts/setup)");
    println!(
        "{runs} runs of 2 model steps and 1 tool call ({TOOL_MS} ms) each, all started at once"
    );
    println!("| engine | workers | runs/s |");
    println!("| --- | --- | --- |");
    for count in [1, 2, 4] {
        // A fresh server per row: rows do not inherit each other's history.
        let server = DevServer::start(&program).unwrap();
        let rate = temporal_rate(server.address(), count, runs).await;
        println!("| Temporal dev server | {count} | {rate:.1} |");
    }
    let dir = std::env::temp_dir().join(format!("agentry-scale-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let sqlite: Arc<dyn RunJournal> = Arc::new(SqliteStore::open(dir.join("runs.db")).unwrap());
    let rate = durable_rate(sqlite, "sqlite", runs).await;
    println!("| agentry durable runs, SQLite | in process | {rate:.1} |");
    match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => {
            let pg: Arc<dyn RunJournal> = Arc::new(PgStore::connect(&url, 2).await.unwrap());
            let rate = durable_rate(pg, "pg", runs).await;
            println!("| agentry durable runs, PostgreSQL | in process | {rate:.1} |");
        }
        _ => println!("| agentry durable runs, PostgreSQL | — | (AGENTRY_POSTGRES_URL not set) |"),
    }
    let _ = std::fs::remove_dir_all(&dir);

    let server = DevServer::start(&program).unwrap();
    let alone = 30;
    let (p50, p99, local50, local99) = latency(server.address(), alone).await;
    let steps = 4.0; // the limits, two model steps and one tool call: four activities
    println!();
    println!(
        "one run alone, {alone} times: Temporal p50 {p50:?} p99 {p99:?}; in process p50 {local50:?} p99 {local99:?}"
    );
    let added = (p50.saturating_sub(local50)).as_secs_f64() * 1000.0 / steps;
    println!("what the engine adds per activity at p50: {added:.1} ms");
    let (events, bytes) = history(&server, "latency-0");
    println!(
        "history of one run: {events} events, {bytes} bytes as JSON ({:.1} events and {:.0} bytes per activity)",
        events as f64 / steps,
        bytes as f64 / steps
    );
}
