//! A durable run killed with SIGKILL at every point: after each journal
//! entry is written (every step boundary, every call started and finished)
//! and in the middle of each call of its non-idempotent tool (before and
//! after its side effect). Each time the run is resumed in a new process
//! until it ends or stops for a person's decision, and:
//!
//! - a run that ends ends exactly as the uninterrupted run did;
//! - the non-idempotent `pay` tool's side effect happened exactly once for
//!   each call, or the run stopped for a decision on that call (then the
//!   test, as the person, approves a call whose effect is not there and
//!   denies one whose effect is, and the run goes on to its end).
//!
//! The run: 5 steps, each of the first four calling `pay` (not idempotent)
//! and `note` (idempotent), then an answer that lists every result. The
//! model is scripted from the conversation (loop logic, not model quality).
//! The child is this test binary run again (`durable_child`).

use std::process::{Command, Stdio};
use std::time::Duration;

use agentry::agent::durable::{Decision, RunJournal, RunStatus, Waiting, decide, status};
use agentry::agent::{Agent, Outcome};
use agentry::model::{ChatRequest, Message, ScriptedModel, Step, Usage};
use agentry::tool::{ToolCall, ToolHints, function};
use agentry_core::BoxFuture;
use agentry_core::journal::{JournalError, Lease, RunEntry, now_ms};
use agentry_store::SqliteStore;
use serde::Deserialize;
use serde_json::json;

const RUN: &str = "kill-run";
const STEPS: usize = 5;

/// Step k (1..=4) pays k and notes k; step 5 answers with every result.
fn plan(request: &ChatRequest) -> Result<Step, agentry::model::ModelError> {
    let step = 1 + request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    if step < STEPS {
        return Ok(Step::Tool {
            calls: vec![
                ToolCall::new(format!("pay-{step}"), "pay", json!({ "amount": step })),
                ToolCall::new(format!("note-{step}"), "note", json!({ "amount": step })),
            ],
            text: String::new(),
            tokens: Usage::new(100, 10),
        });
    }
    let results: Vec<String> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { result } => Some(match result.error_message() {
                Some(error) => format!("error: {error}"),
                None => result.output.as_str().unwrap_or_default().to_owned(),
            }),
            _ => None,
        })
        .collect();
    Ok(Step::Final {
        text: results.join("; "),
        tokens: Usage::new(100, 20),
    })
}

#[derive(Deserialize)]
struct Amount {
    amount: u64,
}

/// Appends one line to the effects file, killing this process where told.
fn effect(effects: &std::path::Path, line: &str, kill_in: Option<&str>) {
    use std::io::Write;
    if kill_in == Some(&format!("{line}:before")) {
        kill_self();
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(effects)
        .unwrap();
    writeln!(file, "{line}").unwrap();
    file.sync_all().unwrap();
    if kill_in == Some(&format!("{line}:after")) {
        kill_self();
    }
}

fn kill_self() -> ! {
    // SAFETY: kill on this process's own id.
    unsafe { libc_kill() };
    unreachable!("SIGKILL ends the process")
}

unsafe fn libc_kill() {
    unsafe extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    unsafe { kill(std::process::id() as i32, 9) };
}

/// A journal that kills the process right after its `after`-th write.
struct KillingJournal {
    store: SqliteStore,
    after: Option<usize>,
    writes: std::sync::atomic::AtomicUsize,
}

impl RunJournal for KillingJournal {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            self.store.append(run, seq, entry, token).await?;
            let n = 1 + self
                .writes
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if self.after == Some(n) {
                kill_self();
            }
            Ok(())
        })
    }
    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        self.store.entries(run)
    }
    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        self.store.runs()
    }
    fn acquire<'a>(
        &'a self,
        run: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        self.store.acquire(run, owner, ttl)
    }
    fn renew<'a>(
        &'a self,
        run: &'a str,
        token: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        self.store.renew(run, token, ttl)
    }
    fn release<'a>(&'a self, run: &'a str, token: u64) -> BoxFuture<'a, Result<(), JournalError>> {
        self.store.release(run, token)
    }
}

/// The lease the children take: short, so a killed child's run is free
/// again soon (`AGENTRY_LEASE_TTL_MS`, 400 ms by default).
fn lease_ttl() -> Duration {
    let ms = std::env::var("AGENTRY_LEASE_TTL_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(400);
    Duration::from_millis(ms)
}

#[tokio::test(flavor = "multi_thread")]
async fn durable_child() {
    let Some(dir) = std::env::var_os("AGENTRY_DURABLE_CHILD") else {
        return; // only a helper: see `a_run_killed_anywhere_resumes_to_the_same_end`
    };
    let dir = std::path::PathBuf::from(dir);
    let kill_in = std::env::var("AGENTRY_KILL_IN_CALL").ok();
    let after = std::env::var("AGENTRY_KILL_AFTER_WRITE")
        .ok()
        .and_then(|n| n.parse().ok());
    let effects = dir.join("effects.txt");
    let (pay_effects, pay_kill) = (effects.clone(), kill_in.clone());
    let pay = function("pay")
        .arg::<u64>("amount", "how much")
        .handler(move |a: Amount| {
            effect(
                &pay_effects,
                &format!("pay-{}", a.amount),
                pay_kill.as_deref(),
            );
            Ok::<_, String>(format!("paid {}", a.amount))
        })
        .build()
        .unwrap()
        .with_name("pay");
    let note = function("note")
        .arg::<u64>("amount", "what to note")
        .hints(ToolHints {
            idempotent: true,
            ..Default::default()
        })
        .handler(move |a: Amount| {
            effect(&effects, &format!("note-{}", a.amount), kill_in.as_deref());
            Ok::<_, String>(format!("noted {}", a.amount))
        })
        .build()
        .unwrap()
        .with_name("note");
    let mut model = ScriptedModel::new();
    for _ in 0..STEPS {
        model = model.respond(plan);
    }
    let agent = Agent::builder(model)
        .tools([pay, note])
        .max_steps(STEPS)
        .build()
        .unwrap();
    let store = SqliteStore::open(dir.join("runs.db")).unwrap();
    let journal = std::sync::Arc::new(KillingJournal {
        store: store.clone(),
        after,
        writes: Default::default(),
    });
    let runs = agent.durable(journal).lease_ttl(lease_ttl());
    let run = loop {
        let run = if store.entries(RUN).await.is_ok() {
            runs.resume(RUN).await
        } else {
            runs.start_messages(RUN.into(), vec![Message::user("pay four times")])
                .await
        };
        match run {
            Ok(run) => break run,
            // A killed holder's lease, or another resumer's: wait for it.
            Err(JournalError::Leased { until_ms, .. }) => {
                let left = until_ms.saturating_sub(now_ms());
                tokio::time::sleep(Duration::from_millis(left + 5)).await;
            }
            Err(JournalError::Exists(_)) => continue, // another child started it
            Err(error) => panic!("{error}"),
        }
    };
    let line = match run.outcome.outcome {
        Outcome::Final(text) => format!("final {text}"),
        other => format!("stopped {other:?}"),
    };
    println!("\noutcome {line}");
}

/// Run the child once; `Some(outcome line)` when it finished, `None` when killed.
fn child(dir: &std::path::Path, kill: Option<(&str, String)>) -> Option<String> {
    let exe = std::env::current_exe().unwrap();
    let mut command = Command::new(exe);
    command
        .args([
            "--exact",
            "durable_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("AGENTRY_DURABLE_CHILD", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some((name, value)) = kill {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("outcome ").map(str::to_owned));
    match (output.status.code(), line) {
        (Some(0), Some(line)) => Some(line),
        (None, None) => None, // killed by a signal
        other => panic!("unexpected child exit: {other:?}\n{stdout}"),
    }
}

fn effects(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("effects.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn fresh(dir: &std::path::Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_killed_anywhere_resumes_to_the_same_end() {
    if std::env::var_os("AGENTRY_DURABLE_CHILD").is_some() {
        return;
    }
    let root = std::env::temp_dir().join(format!("agentry-durable-kill-{}", std::process::id()));
    // The run as it goes when nothing happens to it.
    let dir = root.join("reference");
    fresh(&dir);
    let reference = child(&dir, None).expect("the uninterrupted run finishes");
    assert_eq!(
        reference,
        "final paid 1; noted 1; paid 2; noted 2; paid 3; noted 3; paid 4; noted 4"
    );
    let pays = |effects: &[String], k: usize| {
        effects
            .iter()
            .filter(|line| **line == format!("pay-{k}"))
            .count()
    };
    let store = SqliteStore::open(dir.join("runs.db")).unwrap();
    let writes = store.entries(RUN).await.unwrap().len();
    assert_eq!(writes, 1 + 4 * (1 + 2 + 2) + 1, "entries of the whole run");

    let mut points: Vec<(&str, String)> = (1..=writes)
        .map(|n| ("AGENTRY_KILL_AFTER_WRITE", n.to_string()))
        .collect();
    for k in 1..STEPS {
        for when in ["before", "after"] {
            points.push(("AGENTRY_KILL_IN_CALL", format!("pay-{k}:{when}")));
            points.push(("AGENTRY_KILL_IN_CALL", format!("note-{k}:{when}")));
        }
    }
    let (mut resumed_alone, mut approved, mut denied, mut lapsed) = (0, 0, 0, 0);
    for (at, point) in points.iter().enumerate() {
        let dir = root.join(format!("point-{at}"));
        fresh(&dir);
        let killed = child(&dir, Some((point.0, point.1.clone())));
        assert_eq!(killed, None, "the child was killed at {point:?}");
        let store = SqliteStore::open(dir.join("runs.db")).unwrap();
        let (mut stopped_for_decision, mut denied_here) = (false, false);
        let outcome = loop {
            let outcome = child(&dir, None).expect("a resumed run is not killed");
            if !outcome.starts_with("stopped") {
                break outcome;
            }
            if outcome.starts_with("stopped JournalFailed") {
                // Its lease lapsed (a machine stalled past it): it wrote
                // nothing more; resume again.
                lapsed += 1;
                continue;
            }
            // Stopped for a person: the only reason here is a `pay` call
            // that was started and never finished.
            let RunStatus::Waiting(waiting) = status(&store, RUN).await.unwrap() else {
                panic!("stopped without waiting calls at {point:?}: {outcome}");
            };
            assert_eq!(waiting.len(), 1, "{point:?}");
            let call = &waiting[0];
            assert_eq!(call.waiting, Waiting::Interrupted, "{point:?}");
            assert_eq!(call.call.name, "pay", "only pay waits: {point:?}");
            let k: usize = call.call.id.trim_start_matches("pay-").parse().unwrap();
            let done = pays(&effects(&dir), k);
            assert!(done <= 1, "pay-{k} ran {done} times at {point:?}");
            let decision = if done == 0 {
                approved += 1;
                Decision::Approve
            } else {
                denied += 1;
                denied_here = true;
                Decision::Deny {
                    reason: "it already paid".into(),
                }
            };
            decide(&store, RUN, &call.call.id, decision, false)
                .await
                .unwrap();
            stopped_for_decision = true;
        };
        let effects = effects(&dir);
        for k in 1..STEPS {
            assert_eq!(pays(&effects, k), 1, "pay-{k} once at {point:?}");
        }
        match (stopped_for_decision, denied_here) {
            (_, true) => assert!(
                outcome.contains("error: tool \"pay\" was not approved: it already paid"),
                "{point:?}: {outcome}"
            ),
            (stopped, false) => {
                assert_eq!(outcome, reference, "{point:?}");
                if !stopped {
                    resumed_alone += 1;
                }
            }
        }
    }
    println!(
        "{} kill points: {resumed_alone} resumed to the same end alone; {} stopped for a decision \
         on an interrupted pay call ({approved} approved, its effect absent; {denied} denied, its \
         effect present); every pay ran exactly once ({lapsed} resumes stopped by a lapsed lease)",
        points.len(),
        approved + denied
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// As the person: approve the one waiting `pay` call when its effect is not
/// there, deny it when it is. `true` when it denied.
async fn decide_waiting(store: &SqliteStore, dir: &std::path::Path, at: &str) -> bool {
    let RunStatus::Waiting(waiting) = status(store, RUN).await.unwrap() else {
        panic!("stopped without waiting calls at {at}");
    };
    assert_eq!(waiting.len(), 1, "{at}");
    let call = &waiting[0];
    assert_eq!(call.waiting, Waiting::Interrupted, "{at}");
    assert_eq!(call.call.name, "pay", "only pay waits: {at}");
    let k: usize = call.call.id.trim_start_matches("pay-").parse().unwrap();
    let done = effects(dir)
        .iter()
        .filter(|line| **line == format!("pay-{k}"))
        .count();
    assert!(done <= 1, "pay-{k} ran {done} times at {at}");
    let decision = if done == 0 {
        Decision::Approve
    } else {
        Decision::Deny {
            reason: "it already paid".into(),
        }
    };
    decide(store, RUN, &call.call.id, decision, false)
        .await
        .unwrap();
    done == 1
}

/// Finding 3 of issue 39 under kill -9: the run's process is killed at a
/// random moment (anywhere in its run, or after it ended), then three
/// processes race to resume it at once (each waits out the dead one's
/// lease, and then one another's). Each `pay` runs exactly once in every
/// round. `AGENTRY_KILL_ROUNDS` rounds (6 by default); the seed is printed.
#[tokio::test(flavor = "multi_thread")]
async fn killed_at_random_moments_with_racing_resumers_each_pay_runs_once() {
    if std::env::var_os("AGENTRY_DURABLE_CHILD").is_some() {
        return;
    }
    let rounds: usize = std::env::var("AGENTRY_KILL_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6);
    let root = std::env::temp_dir().join(format!("agentry-durable-race-{}", std::process::id()));
    // How long an uninterrupted run takes: kills fall within it.
    let mut span = u64::MAX;
    for timing in 0..2 {
        let dir = root.join(format!("timing-{timing}"));
        fresh(&dir);
        let began = std::time::Instant::now();
        child(&dir, None).expect("the uninterrupted run finishes");
        span = span.min(began.elapsed().as_micros() as u64);
    }
    let mut seed = std::env::var("AGENTRY_KILL_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(now_ms() | 1);
    println!("seed {seed}; an uninterrupted run takes {span} µs");
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut killed, mut decided, mut lapsed) = (0, 0, 0);
    for round in 0..rounds {
        let dir = root.join(format!("round-{round}"));
        fresh(&dir);
        let mut first = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "durable_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("AGENTRY_DURABLE_CHILD", &dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(random() % (span + 1)));
        if first.try_wait().unwrap().is_none() {
            first.kill().unwrap(); // SIGKILL
            killed += 1;
        }
        first.wait().unwrap();
        let store = SqliteStore::open(dir.join("runs.db")).unwrap();
        let at = format!("round {round}");
        loop {
            let outcomes: Vec<String> = std::thread::scope(|scope| {
                let racers: Vec<_> = (0..3)
                    .map(|_| scope.spawn(|| child(&dir, None).expect("a resumer is not killed")))
                    .collect();
                racers.into_iter().map(|r| r.join().unwrap()).collect()
            });
            if outcomes.iter().any(|o| o.starts_with("final")) {
                break;
            }
            match status(&store, RUN).await.unwrap() {
                RunStatus::Waiting(_) => {
                    decide_waiting(&store, &dir, &at).await;
                    decided += 1;
                }
                _ => lapsed += 1, // every racer's lease lapsed: go again
            }
        }
        let effects = effects(&dir);
        for k in 1..STEPS {
            let paid = effects.iter().filter(|l| **l == format!("pay-{k}")).count();
            assert_eq!(paid, 1, "pay-{k} ran {paid} times in {at}: {effects:?}");
        }
    }
    println!(
        "{rounds} rounds: {killed} killed (SIGKILL) before they exited, each round resumed by 3 racing processes; \
         {decided} decisions on interrupted pay calls; {lapsed} rounds of lapsed leases; \
         every pay ran exactly once"
    );
    let _ = std::fs::remove_dir_all(&root);
}
