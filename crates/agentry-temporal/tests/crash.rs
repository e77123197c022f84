//! kill -9 the worker at each point of a run that calls an idempotent tool
//! (`lookup`) and then one that is not (`charge`); a second worker finishes
//! the run. Effects are counted in files: the lookup may run twice, the
//! charge never does without a person's say, and a call waiting for that
//! say still waits after the worker and the server restart.

mod common;

use common::{ChildWorker, record_until};

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentry_agent::{Agent, Outcome};
use agentry_core::journal::{Decision, Waiting};
use agentry_core::model::{ChatRequest, Message, ScriptedModel, Step, Usage};
use agentry_core::tool::{ToolCall, ToolHints, function};
use agentry_temporal::{RunInput, TemporalRuns};
use serde_json::json;

/// Set in a worker child: `ADDRESS|QUEUE|DIR`.
const CHILD: &str = "AGENTRY_TEMPORAL_CRASH_WORKER";
/// Each model step and each tool call takes this long after it has written
/// its line, so that a kill lands inside it.
const SLOW: Duration = Duration::from_millis(700);

fn note(dir: &Path, file: &str, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(file))
        .unwrap();
    writeln!(f, "{line}").unwrap();
    f.sync_all().unwrap();
}

fn lines(dir: &Path, file: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The model: its step depends only on the conversation (how many results
/// it holds), so a worker that never saw the run asks the same.
fn model(dir: PathBuf) -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for _ in 0..32 {
        let dir = dir.clone();
        model = model.respond(move |request: &ChatRequest| {
            let results = request
                .messages
                .iter()
                .filter(|m| matches!(m, Message::Tool { .. }))
                .count();
            note(&dir, "model", &format!("step {}", results + 1));
            std::thread::sleep(SLOW);
            let call = |id: &str, name: &str| Step::Tool {
                calls: vec![ToolCall::new(id, name, json!({"item": "tea"}))],
                text: String::new(),
                tokens: Usage::new(10, 5),
            };
            Ok(match results {
                0 => call("c1", "lookup"),
                1 => call("c2", "charge"),
                _ => Step::Final {
                    text: "Bought it.".into(),
                    tokens: Usage::new(10, 2),
                },
            })
        });
    }
    model
}

#[derive(serde::Deserialize)]
struct Item {
    item: String,
}

fn agent(dir: PathBuf) -> Agent {
    let (lookups, charges) = (dir.clone(), dir.clone());
    let lookup = function("lookup")
        .arg::<String>("item", "what to look up")
        .hints(ToolHints {
            read_only: true,
            idempotent: true,
            ..Default::default()
        })
        .handler(move |a: Item| {
            note(&lookups, "lookups", &a.item);
            std::thread::sleep(SLOW);
            Ok::<_, String>(format!("{} costs 3", a.item))
        })
        .build()
        .unwrap()
        .with_name("lookup");
    let charge = function("charge")
        .arg::<String>("item", "what to pay for")
        .handler(move |a: Item| {
            note(&charges, "charges", &a.item);
            std::thread::sleep(SLOW);
            Ok::<_, String>(format!("charged for {}", a.item))
        })
        .build()
        .unwrap()
        .with_name("charge");
    Agent::builder(model(dir.clone()))
        .tool(lookup)
        .tool(charge)
        .build()
        .unwrap()
}

/// Not a test: the worker process the crash test starts and kills.
#[test]
fn worker_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return; // only a helper: see `a_killed_worker_never_charges_twice`
    };
    let dir = PathBuf::from(spec.rsplit('|').next().unwrap());
    common::serve_child(&spec, agent(dir));
}

fn worker(address: &str, queue: &str, dir: &Path) -> ChildWorker {
    ChildWorker::start(CHILD, format!("{address}|{queue}|{}", dir.display()))
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

struct Scene {
    dir: PathBuf,
    queue: String,
    id: String,
}

impl Scene {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("agentry-crash-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self {
            dir,
            queue: format!("crash-{name}"),
            id: format!("crash-{name}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_worker_never_charges_twice() {
    let Some(server) = common::dev_server() else {
        return;
    };
    let address = server.address().to_owned();

    // Killed in each place where the run holds no person's decision: during
    // the first model step, during the idempotent lookup, and after the
    // charge (during the last model step). Each time a second worker
    // finishes the run alone, and the charge happens exactly once.
    for (name, file, count) in [
        ("model", "model", 1),
        ("lookup", "lookups", 1),
        ("after-charge", "model", 3),
    ] {
        let scene = Scene::new(name);
        let runs = TemporalRuns::connect(&address)
            .await
            .unwrap()
            .task_queue(&scene.queue);
        let first = worker(&address, &scene.queue, &scene.dir);
        runs.start(&scene.id, RunInput::new("buy tea"))
            .await
            .unwrap();
        until(name, || lines(&scene.dir, file).len() >= count).await;
        first.kill();
        let second = worker(&address, &scene.queue, &scene.dir);
        let outcome = runs.outcome(&scene.id).await.unwrap();
        second.kill();
        assert_eq!(
            outcome.outcome,
            Outcome::Final("Bought it.".into()),
            "{name}"
        );
        assert_eq!(
            lines(&scene.dir, "charges").len(),
            1,
            "{name}: charged once"
        );
        assert_eq!(
            outcome.steps[1].calls[0].result.output,
            json!("charged for tea"),
            "{name}"
        );
        let lookups = lines(&scene.dir, "lookups").len();
        let expected = if name == "lookup" { 2 } else { 1 };
        assert_eq!(
            lookups, expected,
            "{name}: the idempotent lookup runs again only when it was cut off"
        );
    }

    // Killed during the charge: it may have had its effect, so the run waits
    // for a person rather than charge again; the decision survives a server
    // restart, and the denial reaches the model.
    let scene = Scene::new("charge");
    let runs = TemporalRuns::connect(&address)
        .await
        .unwrap()
        .task_queue(&scene.queue);
    let first = worker(&address, &scene.queue, &scene.dir);
    runs.start(&scene.id, RunInput::new("buy tea"))
        .await
        .unwrap();
    until("the charge", || !lines(&scene.dir, "charges").is_empty()).await;
    first.kill();
    let second = worker(&address, &scene.queue, &scene.dir);
    let record = record_until(&runs, &scene.id, |r| !r.waiting.is_empty()).await;
    assert_eq!(record.waiting[0].call.name, "charge");
    assert_eq!(record.waiting[0].waiting, Waiting::Interrupted);
    second.kill();

    // The wait outlives the worker and the server: both start again, and the
    // run still waits for the same call.
    let mut server = server;
    server.restart().unwrap();
    let runs = TemporalRuns::connect(&address)
        .await
        .unwrap()
        .task_queue(&scene.queue);
    let third = worker(&address, &scene.queue, &scene.dir);
    let record = record_until(&runs, &scene.id, |r| !r.waiting.is_empty()).await;
    assert_eq!(record.waiting[0].call.id, "c2");
    let reason = "it went through the first time".to_owned();
    runs.decide(
        &scene.id,
        "c2",
        Decision::Deny {
            reason: reason.clone(),
        },
    )
    .await
    .unwrap();
    let outcome = runs.outcome(&scene.id).await.unwrap();
    third.kill();
    assert_eq!(outcome.outcome, Outcome::Final("Bought it.".into()));
    assert_eq!(lines(&scene.dir, "charges").len(), 1, "never charged twice");
    let denied = &outcome.steps[1].calls[0].result;
    assert!(denied.is_error);
    assert_eq!(
        denied.output,
        json!(format!(
            "not run again: {reason}; it was started before and may already have had its effect"
        ))
    );
}
