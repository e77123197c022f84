//! Finding 3 of issue 39 under races: many resumers against one live run,
//! in SQLite (each resumer on its own connection, as another process
//! would be) and in PostgreSQL (resumers split over two pools, as two
//! servers would be). The run pays once (`pay`, not idempotent) and then
//! answers; every resumer, acting also as the worst possible person,
//! approves any call it finds waiting. The invariant: each started call
//! has at most one effect, so `pay` runs exactly once per run.
//!
//! `AGENTRY_RACE_ROUNDS` sets how many runs (8 by default); the counts go
//! to RELIABILITY.md. PostgreSQL runs with `AGENTRY_POSTGRES_URL` set
//! (skipped loudly otherwise, as in `postgres.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentry::agent::durable::{Decision, JournalError, RunJournal, decide};
use agentry::agent::{Agent, Outcome};
use agentry::model::{Message, ScriptedModel, Step, Usage};
use agentry::tool::{Tool, ToolCall, ToolContext, function};
use agentry_store::{PgStore, SqliteStore};
use serde::Deserialize;
use serde_json::json;

const RESUMERS: usize = 16;

fn rounds() -> usize {
    std::env::var("AGENTRY_RACE_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(8)
}

#[derive(Deserialize)]
struct Amount {
    amount: u64,
}

/// `pay`: counts its effect after holding `hold` (the call is live meanwhile).
fn pay(effects: Arc<AtomicUsize>, hold: Duration) -> Tool {
    function("pay")
        .arg::<u64>("amount", "how much")
        .handler(move |a: Amount, _context: ToolContext| {
            let effects = effects.clone();
            async move {
                tokio::time::sleep(hold).await;
                effects.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("paid {}", a.amount))
            }
        })
        .build()
        .unwrap()
        .with_name("pay")
}

fn agent(effects: Arc<AtomicUsize>, hold: Duration) -> Agent {
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "pay", json!({"amount": 7}))],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "Paid.".into(),
            tokens: Usage::new(10, 2),
        });
    Agent::builder(model)
        .tool(pay(effects, hold))
        .build()
        .unwrap()
}

/// What the resumers saw in one run.
#[derive(Debug, Default)]
struct Seen {
    leased: AtomicUsize,
    waiting: AtomicUsize,
    ended: AtomicUsize,
}

/// One run started on `live` while `RESUMERS` tasks (journals from
/// `journal`, round robin) resume it until it has ended. Returns how many
/// times `pay` had its effect.
async fn race(
    id: String,
    live: Arc<dyn RunJournal>,
    journal: impl Fn(usize) -> Arc<dyn RunJournal>,
    hold: Duration,
    seen: Arc<Seen>,
) -> usize {
    let effects = Arc::new(AtomicUsize::new(0));
    let owner = agent(effects.clone(), hold).durable(live.clone());
    let started = tokio::spawn({
        let id = id.clone();
        async move { owner.start_messages(id, vec![Message::user("pay 7")]).await }
    });
    let mut resumers = Vec::new();
    for n in 0..RESUMERS {
        let journal = journal(n);
        let runs = agent(effects.clone(), hold).durable(journal.clone());
        let (id, seen) = (id.clone(), seen.clone());
        resumers.push(tokio::spawn(async move {
            loop {
                match runs.resume(&id).await {
                    Ok(run) if run.already_ended => {
                        seen.ended.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    Ok(run) => {
                        if let Outcome::AwaitingDecision(calls) = &run.outcome.outcome {
                            // The worst person: approves whatever waits.
                            seen.waiting.fetch_add(1, Ordering::SeqCst);
                            for call in calls {
                                let _ = decide(
                                    journal.as_ref(),
                                    &id,
                                    &call.call.id,
                                    Decision::Approve,
                                    false,
                                )
                                .await;
                            }
                        }
                    }
                    Err(JournalError::Leased { .. }) => {
                        seen.leased.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(JournalError::NotFound(_)) => {} // not started yet
                    Err(error) => panic!("resumer {n}: {error}"),
                }
                tokio::time::sleep(Duration::from_millis(1 + n as u64 % 4)).await;
            }
        }));
    }
    // Bounded: a run the resumers never see end fails as hung.
    let finished = tokio::time::timeout(Duration::from_secs(120), async {
        let run = started.await.unwrap();
        for resumer in resumers {
            resumer.await.unwrap();
        }
        run
    })
    .await;
    let run = finished.expect("the run and its resumers ended within 120 s (hung)");
    match run {
        Ok(run) => assert_eq!(run.outcome.outcome, Outcome::Final("Paid.".into())),
        // A resumer may have started nothing: the live run is the one
        // starting it, so its start cannot fail.
        Err(error) => panic!("the live run failed to start: {error}"),
    }
    effects.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread")]
async fn many_resumers_against_a_live_run_in_sqlite_pay_once() {
    let dir = std::env::temp_dir().join(format!(
        "agentry-durable-race-sqlite-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    let live: Arc<dyn RunJournal> = Arc::new(SqliteStore::open(&db).unwrap());
    // One connection per resumer: as many processes on the file.
    let journals: Vec<Arc<dyn RunJournal>> = (0..RESUMERS)
        .map(|_| Arc::new(SqliteStore::open(&db).unwrap()) as Arc<dyn RunJournal>)
        .collect();
    let seen = Arc::new(Seen::default());
    let rounds = rounds();
    for round in 0..rounds {
        let hold = Duration::from_millis(20 + (round as u64 * 37) % 80);
        let paid = race(
            format!("race-{round}"),
            live.clone(),
            |n| journals[n].clone(),
            hold,
            seen.clone(),
        )
        .await;
        assert_eq!(paid, 1, "round {round}: pay ran {paid} times");
    }
    assert_eq!(
        seen.waiting.load(Ordering::SeqCst),
        0,
        "a live call never waits"
    );
    println!(
        "sqlite: {rounds} runs x {RESUMERS} resumers: pay ran once each; {} resumes found the run leased, \
         {} found it ended, 0 found a call waiting",
        seen.leased.load(Ordering::SeqCst),
        seen.ended.load(Ordering::SeqCst)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn postgres_url() -> Option<String> {
    match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("AGENTRY_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("AGENTRY_POSTGRES_URL is not set and AGENTRY_REQUIRE_POSTGRES=1");
            }
            eprintln!(
                "\n*** SKIPPED: set AGENTRY_POSTGRES_URL (scripts/postgres start DIR prints one) to run the PostgreSQL race ***\n"
            );
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn many_resumers_on_two_postgres_pools_against_a_live_run_pay_once() {
    let Some(url) = postgres_url() else { return };
    // Two pools: two servers on one database.
    let first: Arc<dyn RunJournal> = Arc::new(PgStore::connect(&url, 2).await.unwrap());
    let second: Arc<dyn RunJournal> = Arc::new(PgStore::connect(&url, 2).await.unwrap());
    let seen = Arc::new(Seen::default());
    let rounds = rounds();
    let tag = format!("{}-{}", std::process::id(), agentry::journal::now_ms());
    for round in 0..rounds {
        let hold = Duration::from_millis(20 + (round as u64 * 37) % 80);
        let paid = race(
            format!("pg-race-{tag}-{round}"),
            first.clone(),
            |n| {
                if n % 2 == 0 {
                    first.clone()
                } else {
                    second.clone()
                }
            },
            hold,
            seen.clone(),
        )
        .await;
        assert_eq!(paid, 1, "round {round}: pay ran {paid} times");
    }
    assert_eq!(
        seen.waiting.load(Ordering::SeqCst),
        0,
        "a live call never waits"
    );
    println!(
        "postgres: {rounds} runs x {RESUMERS} resumers on two pools: pay ran once each; {} resumes found \
         the run leased, {} found it ended, 0 found a call waiting",
        seen.leased.load(Ordering::SeqCst),
        seen.ended.load(Ordering::SeqCst)
    );
}
