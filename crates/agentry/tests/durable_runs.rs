//! Durable runs with a scripted model (loop logic only): approval as a pause
//! (approve, deny, edit, remembered decisions), calls started and never
//! finished (re-run only when idempotent), ended runs, model errors, a
//! journal that fails, and two processes resuming one run. The journal is
//! the in-memory one here; `agentry-store`'s tests run the same journal
//! checks on SQLite and PostgreSQL, and kill real processes mid-run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentry::BoxFuture;
use agentry::agent::durable::{
    DecideError, Decision, InMemoryJournal, JournalError, Lease, RunEntry, RunJournal, RunStatus,
    Waiting, decide, status,
};
use agentry::agent::{Agent, Approval, Outcome};
use agentry::model::{Message, ModelError, ScriptedModel, Step, Usage};
use agentry::tool::{Tool, ToolCall, ToolHints, function};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Target {
    path: String,
}

/// A tool that counts its runs; `hints` says what kind of tool it is.
fn counting(name: &str, hints: ToolHints, runs: Arc<AtomicUsize>) -> Tool {
    function(name)
        .arg::<String>("path", "the file")
        .hints(hints)
        .handler(move |target: Target| {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("done with {}", target.path))
        })
        .build()
        .unwrap()
        .with_name(name)
}

fn destructive() -> ToolHints {
    ToolHints {
        destructive: true,
        ..Default::default()
    }
}

/// A journal holding run `id` with `entries`, written as a process would have.
async fn journal_with(id: &str, entries: &[RunEntry]) -> Arc<InMemoryJournal> {
    let journal = Arc::new(InMemoryJournal::new());
    append_all(journal.as_ref(), id, entries).await;
    journal
}

/// Write `entries` as run `id`'s journal, numbered from 0, under a lease
/// taken and released around them (the process that wrote them stopped).
async fn append_all(journal: &dyn RunJournal, id: &str, entries: &[RunEntry]) {
    let lease = journal.acquire(id, "writer", LONG).await.unwrap();
    for (seq, entry) in entries.iter().enumerate() {
        journal
            .append(id, seq as u64, entry, lease.token)
            .await
            .unwrap();
    }
    journal.release(id, lease.token).await.unwrap();
}

/// A lease that does not lapse while a test runs.
const LONG: Duration = Duration::from_secs(600);

/// The lease methods of a journal that wraps another (field `$inner`).
macro_rules! leases_of {
    ($inner:ident) => {
        fn acquire<'a>(
            &'a self,
            run: &'a str,
            owner: &'a str,
            ttl: Duration,
        ) -> BoxFuture<'a, Result<Lease, JournalError>> {
            self.$inner.acquire(run, owner, ttl)
        }
        fn renew<'a>(
            &'a self,
            run: &'a str,
            token: u64,
            ttl: Duration,
        ) -> BoxFuture<'a, Result<Lease, JournalError>> {
            self.$inner.renew(run, token, ttl)
        }
        fn release<'a>(
            &'a self,
            run: &'a str,
            token: u64,
        ) -> BoxFuture<'a, Result<(), JournalError>> {
            self.$inner.release(run, token)
        }
    };
}

/// How a journalled run opens: the user's message, then step 1 asking for
/// `calls`.
fn opening(user: &str, calls: Vec<ToolCall>) -> [RunEntry; 2] {
    [
        RunEntry::Started {
            messages: vec![Message::user(user)],
            system: None,
            at_ms: 0,
        },
        RunEntry::ToolStep {
            step: 1,
            text: String::new(),
            calls,
            tokens: Usage::new(10, 5),
        },
    ]
}

/// A destructive `delete` that logs the path of every run in `seen`.
fn logging_delete(seen: Arc<std::sync::Mutex<Vec<String>>>) -> Tool {
    function("delete")
        .arg::<String>("path", "the file")
        .hints(destructive())
        .handler(move |target: Target| {
            seen.lock().unwrap().push(target.path.clone());
            Ok::<_, String>(format!("done with {}", target.path))
        })
        .build()
        .unwrap()
        .with_name("delete")
}

fn calls(calls: &[(&str, &str, &str)]) -> Step {
    Step::Tool {
        calls: calls
            .iter()
            .map(|(id, name, path)| ToolCall::new(*id, *name, json!({ "path": path })))
            .collect(),
        text: String::new(),
        tokens: Usage::new(10, 5),
    }
}

fn answer(text: &str) -> Step {
    Step::Final {
        text: text.into(),
        tokens: Usage::new(10, 2),
    }
}

fn waiting_ids(outcome: &Outcome) -> Vec<(String, Waiting)> {
    match outcome {
        Outcome::AwaitingDecision(calls) => calls
            .iter()
            .map(|w| (w.call.id.clone(), w.waiting))
            .collect(),
        other => panic!("expected a run waiting for a decision, got {other:?}"),
    }
}

#[tokio::test]
async fn a_destructive_call_waits_and_approval_from_the_journal_runs_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(calls(&[("c1", "delete", "a.log")]))
        .reply(answer("deleted"));
    let agent = Agent::builder(model)
        .tool(counting("delete", destructive(), runs.clone()))
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let durable = agent.durable(journal.clone());
    let run = durable.start("delete a.log").await.unwrap();
    assert_eq!(
        waiting_ids(&run.outcome.outcome),
        [("c1".to_owned(), Waiting::Approval)]
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing ran before approval"
    );
    let RunStatus::Waiting(waiting) = status(journal.as_ref(), &run.id).await.unwrap() else {
        panic!("status says waiting")
    };
    assert_eq!(waiting[0].call.name, "delete");
    // Resuming without a decision changes nothing and writes nothing new.
    let before = journal.entries(&run.id).await.unwrap().len();
    let again = durable.resume(&run.id).await.unwrap();
    assert_eq!(
        waiting_ids(&again.outcome.outcome),
        [("c1".to_owned(), Waiting::Approval)]
    );
    assert_eq!(journal.entries(&run.id).await.unwrap().len(), before);

    decide(journal.as_ref(), &run.id, "c1", Decision::Approve, false)
        .await
        .unwrap();
    let done = durable.resume(&run.id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("deleted".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(
        done.outcome.steps[0].calls[0].result.output,
        json!("done with a.log")
    );
    assert_eq!(done.outcome.usage, Usage::new(20, 7));
    // An ended run resumes as it ended, without asking the model again.
    let ended = durable.resume(&run.id).await.unwrap();
    assert_eq!(ended.outcome.outcome, Outcome::Final("deleted".into()));
    assert_eq!(ended.outcome.steps.len(), 2);
    assert_eq!(
        status(journal.as_ref(), &run.id).await.unwrap(),
        RunStatus::Ended {
            outcome: "final".into(),
            detail: "deleted".into()
        }
    );
    assert_eq!(
        decide(journal.as_ref(), &run.id, "c1", Decision::Approve, false).await,
        Err(DecideError::NotWaiting {
            run: run.id.clone(),
            call: "c1".into()
        })
    );
}

#[tokio::test]
async fn denial_feeds_the_reason_back_and_edits_change_the_input() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(calls(&[
            ("c1", "delete", "a.log"),
            ("c2", "delete", "/etc"),
        ]))
        .respond(|request| {
            let results: Vec<String> = request
                .messages
                .iter()
                .filter_map(|m| match m {
                    Message::Tool { result } => Some(result.output.to_string()),
                    _ => None,
                })
                .collect();
            Ok(answer(&results.join(" | ")))
        });
    let agent = Agent::builder(model)
        .tool(counting("delete", destructive(), runs.clone()))
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let durable = agent.durable(journal.clone());
    let run = durable.start("clean up").await.unwrap();
    // One after another: the second call waits behind the first.
    assert_eq!(
        waiting_ids(&run.outcome.outcome),
        [("c1".to_owned(), Waiting::Approval)]
    );
    let edit = Decision::Edit {
        input: json!({"path": "b.log"}),
    };
    decide(journal.as_ref(), &run.id, "c1", edit, false)
        .await
        .unwrap();
    let next = durable.resume(&run.id).await.unwrap();
    assert_eq!(
        waiting_ids(&next.outcome.outcome),
        [("c2".to_owned(), Waiting::Approval)]
    );
    let deny = Decision::Deny {
        reason: "never touch /etc".into(),
    };
    decide(journal.as_ref(), &run.id, "c2", deny, false)
        .await
        .unwrap();
    let done = durable.resume(&run.id).await.unwrap();
    assert_eq!(
        done.outcome.text(),
        r#""done with b.log" | "tool \"delete\" was not approved: never touch /etc""#
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The record shows the input that ran.
    assert_eq!(
        done.outcome.steps[0].calls[0].call.input,
        json!({"path": "b.log"})
    );
}

#[tokio::test]
async fn a_remembered_decision_covers_the_tools_later_calls() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(calls(&[("c1", "delete", "a")]))
        .reply(calls(&[("c2", "delete", "b"), ("c3", "delete", "c")]))
        .reply(answer("all gone"));
    let agent = Agent::builder(model)
        .tool(counting("delete", destructive(), runs.clone()))
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let durable = agent.durable(journal.clone());
    let run = durable.start("delete three").await.unwrap();
    decide(journal.as_ref(), &run.id, "c1", Decision::Approve, true)
        .await
        .unwrap();
    let done = durable.resume(&run.id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("all gone".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_approver_still_decides_in_process_and_may_defer_to_a_person() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = || {
        ScriptedModel::new()
            .reply(calls(&[("c1", "delete", "a")]))
            .reply(answer("ok"))
    };
    let approving = Agent::builder(script())
        .tool(counting("delete", destructive(), runs.clone()))
        .approver(|_: &Tool, _: &ToolCall| Approval::Approve)
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let run = approving
        .durable(journal.clone())
        .start("go")
        .await
        .unwrap();
    assert_eq!(run.outcome.outcome, Outcome::Final("ok".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let deferring = Agent::builder(script())
        .tool(counting("delete", destructive(), runs.clone()))
        .approver(|_: &Tool, _: &ToolCall| Approval::Defer)
        .build()
        .unwrap();
    let run = deferring
        .durable(journal.clone())
        .start("go")
        .await
        .unwrap();
    assert_eq!(
        waiting_ids(&run.outcome.outcome),
        [("c1".to_owned(), Waiting::Approval)]
    );
    // Not durable: nobody can answer later, so a deferred call is refused.
    let deferring = Agent::builder(script())
        .tool(counting("delete", destructive(), runs.clone()))
        .approver(|_: &Tool, _: &ToolCall| Approval::Defer)
        .build()
        .unwrap();
    let refused = deferring.run("go").await;
    assert_eq!(
        refused.steps[0].calls[0].result.error_message(),
        Some(
            "tool \"delete\" was not approved: it needs a person's approval, and only a \
             durable run can wait for one"
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A journal holding a run whose process stopped inside call `c1`.
async fn interrupted_run(journal: &dyn RunJournal, tool: &str) -> String {
    let id = format!("interrupted-{tool}");
    let call = ToolCall::new("c1", tool, json!({"path": "a"}));
    let [started, step] = opening("go", vec![call.clone()]);
    let entries = [
        started,
        step,
        RunEntry::CallStarted {
            call_id: "c1".into(),
            input: call.input,
        },
    ];
    append_all(journal, &id, &entries).await;
    id
}

#[tokio::test]
async fn a_call_started_and_never_finished_runs_again_only_if_idempotent() {
    let journal = Arc::new(InMemoryJournal::new());
    let runs = Arc::new(AtomicUsize::new(0));
    let idempotent = ToolHints {
        idempotent: true,
        ..Default::default()
    };
    let model = ScriptedModel::new().reply(answer("fine"));
    let agent = Agent::builder(model)
        .tool(counting("touch", idempotent, runs.clone()))
        .build()
        .unwrap();
    let id = interrupted_run(journal.as_ref(), "touch").await;
    let done = agent.durable(journal.clone()).resume(&id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("fine".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "re-run once");

    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new().reply(answer("fine"));
    let agent = Agent::builder(model)
        .tool(counting("charge", ToolHints::default(), runs.clone()))
        .build()
        .unwrap();
    let id = interrupted_run(journal.as_ref(), "charge").await;
    let durable = agent.durable(journal.clone());
    let stopped = durable.resume(&id).await.unwrap();
    assert_eq!(
        waiting_ids(&stopped.outcome.outcome),
        [("c1".to_owned(), Waiting::Interrupted)]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "not run again by itself");
    let deny = Decision::Deny {
        reason: "it already charged the card".into(),
    };
    decide(journal.as_ref(), &id, "c1", deny, false)
        .await
        .unwrap();
    let done = durable.resume(&id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("fine".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        done.outcome.steps[0].calls[0].result.error_message(),
        Some("tool \"charge\" was not approved: it already charged the card")
    );
}

#[tokio::test]
async fn a_model_error_leaves_the_run_resumable() {
    let model = ScriptedModel::new()
        .fail(ModelError::Transport("connection reset".into()))
        .reply(answer("second try"));
    let agent = Agent::builder(model).build().unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let durable = agent.durable(journal.clone());
    let run = durable.start("hello").await.unwrap();
    assert!(matches!(run.outcome.outcome, Outcome::ModelError(_)));
    assert_eq!(
        status(journal.as_ref(), &run.id).await.unwrap(),
        RunStatus::Incomplete
    );
    let done = durable.resume(&run.id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("second try".into()));
}

/// A journal that fails every write after the first `ok` ones.
struct FailingJournal {
    inner: InMemoryJournal,
    ok: usize,
    writes: AtomicUsize,
}

impl RunJournal for FailingJournal {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        if self.writes.fetch_add(1, Ordering::SeqCst) >= self.ok {
            return Box::pin(async { Err(JournalError::Store("disk I/O error".into())) });
        }
        self.inner.append(run, seq, entry, token)
    }
    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        self.inner.entries(run)
    }
    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        self.inner.runs()
    }
    leases_of!(inner);
}

#[tokio::test]
async fn a_journal_that_fails_stops_the_run_before_the_tool_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(calls(&[("c1", "touch", "a")]))
        .reply(answer("never"));
    let agent = Agent::builder(model)
        .tool(counting("touch", ToolHints::default(), runs.clone()))
        .build()
        .unwrap();
    // Started and the step are written; "call started" fails.
    let journal = Arc::new(FailingJournal {
        inner: InMemoryJournal::new(),
        ok: 2,
        writes: AtomicUsize::new(0),
    });
    let run = agent.durable(journal).start("go").await.unwrap();
    assert_eq!(
        run.outcome.outcome,
        Outcome::JournalFailed(JournalError::Store("disk I/O error".into()))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn two_processes_resuming_one_run_cannot_both_run_its_call() {
    let journal = Arc::new(InMemoryJournal::new());
    let id = interrupted_run(journal.as_ref(), "touch").await;
    let next = journal.entries(&id).await.unwrap().len();
    let runs = Arc::new(AtomicUsize::new(0));
    let idempotent = ToolHints {
        idempotent: true,
        ..Default::default()
    };
    let agent = Agent::builder(ScriptedModel::new().reply(answer("x")))
        .tool(counting("touch", idempotent, runs.clone()))
        .build()
        .unwrap();
    // This process read the journal; then another one, resuming the same
    // run, wrote the next entry first.
    let stale = Arc::new(StaleJournal {
        inner: journal.clone(),
        entries: next,
    });
    let theirs = RunEntry::CallStarted {
        call_id: "c1".into(),
        input: json!({"path": "a"}),
    };
    let lease = journal.acquire(&id, "theirs", LONG).await.unwrap();
    journal
        .append(&id, next as u64, &theirs, lease.token)
        .await
        .unwrap();
    journal.release(&id, lease.token).await.unwrap();
    let mine = agent.durable(stale).resume(&id).await.unwrap();
    assert_eq!(
        mine.outcome.outcome,
        Outcome::JournalFailed(JournalError::Conflict {
            run: id.clone(),
            seq: next as u64
        })
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// Reads a journal as it was `entries` entries ago; writes go through.
struct StaleJournal {
    inner: Arc<InMemoryJournal>,
    entries: usize,
}

impl RunJournal for StaleJournal {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        self.inner.append(run, seq, entry, token)
    }
    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        Box::pin(async move {
            let mut entries = self.inner.entries(run).await?;
            entries.truncate(self.entries);
            Ok(entries)
        })
    }
    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        self.inner.runs()
    }
    leases_of!(inner);
}

#[tokio::test]
async fn a_durable_chat_turn_waits_for_approval_and_resumes_with_its_system_prompt() {
    use agentry::embed::KeywordEmbedder;
    use agentry::memory::{InMemoryStore, Memory, MemoryStore, RecentOpts};
    use agentry::tool::{Identity, Session};
    use agentry::turn::{TurnConfig, TurnEvent, TurnInput, turn_run_id};
    use std::sync::Mutex;

    let runs = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(
        ScriptedModel::new()
            .reply(calls(&[("c1", "delete", "a.log")]))
            .reply(answer("Deleted a.log.")),
    );
    let agent = Agent::builder(model.clone())
        .system("You tidy files.")
        .tool(counting("delete", destructive(), runs.clone()))
        .build()
        .unwrap();
    let store = Arc::new(InMemoryStore::new());
    let memory = Memory::new(store.clone(), KeywordEmbedder::new(["log"]));
    // Something to recall, so the turn's system prompt is not the agent's own.
    let earlier = agentry::memory::Remember {
        role: "user".into(),
        source: "tidy".into(),
        metadata: Default::default(),
    };
    memory
        .remember("s-1", "old log files can go", earlier)
        .await
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let config = TurnConfig::for_agent("tidy", agent.clone(), memory)
        .durable_runs(journal.clone())
        .on_event(move |event| sink.lock().unwrap().push(event.clone()));
    let mut input = TurnInput::new(Session::new("s-1"), Identity::new("ana"), "delete a.log");
    input.message_id = Some("m1".into());
    let reply = config.run(input).await;
    assert_eq!(reply.map(|reply| reply.text), Ok(String::new()));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let id = turn_run_id("s-1", "m1");
    assert_eq!(id, "s-1~m1");
    let seen = events.lock().unwrap().clone();
    let waiting = seen
        .iter()
        .find_map(|event| match event {
            TurnEvent::AwaitingDecision { run, calls, .. } => Some((run.clone(), calls.clone())),
            _ => None,
        })
        .expect("a run:waiting event");
    assert_eq!(waiting.0, id);
    assert_eq!(waiting.1[0].call.id, "c1");
    let names: Vec<&str> = seen.iter().map(TurnEvent::name).collect();
    assert_eq!(
        names[3..],
        [
            "reply:start",
            "tool:call",
            "run:waiting",
            "reply:end",
            "assistant_persisted"
        ]
    );
    // The earlier record and the user's message; no reply yet.
    let stored = store.recent("s-1", &RecentOpts::default()).await.unwrap();
    assert_eq!(stored.len(), 2);

    decide(journal.as_ref(), &id, "c1", Decision::Approve, false)
        .await
        .unwrap();
    let done = agent.durable(journal).resume(&id).await.unwrap();
    assert_eq!(
        done.outcome.outcome,
        Outcome::Final("Deleted a.log.".into())
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The resumed step saw the turn's system prompt (with its memory block), not the agent's bare one.
    let requests = model.requests();
    assert_eq!(requests[1].system, requests[0].system);
    assert_eq!(
        requests[0].system.as_deref(),
        Some("You tidy files.\n\n## Memory\n- user: old log files can go")
    );
}

#[tokio::test]
async fn a_decision_is_used_once_even_when_the_model_reuses_a_call_id() {
    // Local models number their calls per step: `call_1` again in step 2.
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(calls(&[("call_1", "delete", "a")]))
        .reply(calls(&[("call_1", "delete", "b")]))
        .reply(answer("both"));
    let agent = Agent::builder(model)
        .tool(counting("delete", destructive(), runs.clone()))
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let durable = agent.durable(journal.clone());
    let run = durable.start("delete a, then b").await.unwrap();
    decide(
        journal.as_ref(),
        &run.id,
        "call_1",
        Decision::Approve,
        false,
    )
    .await
    .unwrap();
    let second = durable.resume(&run.id).await.unwrap();
    assert_eq!(
        waiting_ids(&second.outcome.outcome),
        [("call_1".to_owned(), Waiting::Approval)],
        "step 2's call waits for its own decision"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    decide(
        journal.as_ref(),
        &run.id,
        "call_1",
        Decision::Approve,
        false,
    )
    .await
    .unwrap();
    let done = durable.resume(&run.id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("both".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_edited_call_interrupted_mid_run_is_shown_and_run_again_with_its_edit() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let call = ToolCall::new("c1", "delete", json!({"path": "/"}));
    let [started, step] = opening("clean up", vec![call]);
    let entries = [
        started,
        step,
        RunEntry::AwaitingDecision {
            call_id: "c1".into(),
            waiting: Waiting::Approval,
        },
        RunEntry::Decided {
            call_id: "c1".into(),
            decision: Decision::Edit {
                input: json!({"path": "/tmp/x"}),
            },
            remember: false,
        },
        // Started with the edit; the process stopped before it finished.
        RunEntry::CallStarted {
            call_id: "c1".into(),
            input: json!({"path": "/tmp/x"}),
        },
    ];
    let journal = journal_with("r", &entries).await;
    let agent = Agent::builder(ScriptedModel::new().reply(answer("ok")))
        .tool(logging_delete(seen.clone()))
        .build()
        .unwrap();
    let durable = agent.durable(journal.clone());
    let stopped = durable.resume("r").await.unwrap();
    let Outcome::AwaitingDecision(waiting) = &stopped.outcome.outcome else {
        panic!("{:?}", stopped.outcome.outcome)
    };
    assert_eq!(waiting[0].waiting, Waiting::Interrupted);
    assert_eq!(
        waiting[0].call.input,
        json!({"path": "/tmp/x"}),
        "shown as it ran"
    );
    let RunStatus::Waiting(listed) = status(journal.as_ref(), "r").await.unwrap() else {
        panic!("waiting")
    };
    assert_eq!(listed[0].call.input, json!({"path": "/tmp/x"}));
    decide(journal.as_ref(), "r", "c1", Decision::Approve, false)
        .await
        .unwrap();
    let done = durable.resume("r").await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("ok".into()));
    assert_eq!(
        *seen.lock().unwrap(),
        ["/tmp/x"],
        "run again with the edit, never with /"
    );
}

#[tokio::test]
async fn a_remembered_edit_approves_later_calls_with_their_own_input() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let model = ScriptedModel::new()
        .reply(calls(&[("c1", "delete", "a")]))
        .reply(calls(&[("c2", "delete", "b")]))
        .reply(answer("fine"));
    let agent = Agent::builder(model)
        .tool(logging_delete(seen.clone()))
        .build()
        .unwrap();
    let journal = Arc::new(InMemoryJournal::new());
    let durable = agent.durable(journal.clone());
    let run = durable.start("go").await.unwrap();
    let edit = Decision::Edit {
        input: json!({"path": "a2"}),
    };
    decide(journal.as_ref(), &run.id, "c1", edit, true)
        .await
        .unwrap();
    let done = durable.resume(&run.id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("fine".into()));
    assert_eq!(*seen.lock().unwrap(), ["a2", "b"]);
}

#[tokio::test]
async fn a_child_agents_tokens_count_after_a_resume() {
    // Journal a finished call whose child agent spent 1,000 tokens.
    let [started, step] = opening(
        "go",
        vec![ToolCall::new("c1", "helper", json!({"path": "x"}))],
    );
    let entries = [
        started,
        step,
        RunEntry::CallFinished {
            result: agentry::tool::ToolResult::ok("c1", json!("helped")),
            duration_ms: 3,
            child_usage: Some(Usage::new(900, 100)),
        },
    ];
    let journal = journal_with("r", &entries).await;
    let runs = Arc::new(AtomicUsize::new(0));
    // A budget the child's tokens use up: the resumed run stops there.
    let agent = Agent::builder(ScriptedModel::new().reply(answer("never asked")))
        .tool(counting("helper", ToolHints::default(), runs))
        .token_budget(1_000)
        .build()
        .unwrap();
    let run = agent.durable(journal).resume("r").await.unwrap();
    assert_eq!(run.outcome.outcome, Outcome::OverBudget);
    assert_eq!(run.outcome.usage, Usage::new(910, 105));
}

#[derive(Deserialize)]
struct Amount {
    amount: u64,
}

/// A `pay` tool (not idempotent) that counts its effects and, once started,
/// says so on `began` and holds until `hold` has passed.
fn slow_pay(
    effects: Arc<AtomicUsize>,
    began: tokio::sync::mpsc::UnboundedSender<()>,
    hold: Duration,
) -> Tool {
    function("pay")
        .arg::<u64>("amount", "how much")
        .handler(move |a: Amount, _context: agentry::tool::ToolContext| {
            let (effects, began) = (effects.clone(), began.clone());
            async move {
                let _ = began.send(());
                tokio::time::sleep(hold).await;
                effects.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>(format!("paid {}", a.amount))
            }
        })
        .build()
        .unwrap()
        .with_name("pay")
}

fn pay_then_answer() -> ScriptedModel {
    ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "pay", json!({"amount": 3}))],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(answer("Paid."))
}

/// Finding 3 of issue 39: a 3 s `pay` call and a resume one second in. The
/// resume finds the run leased (by whom, until when) and changes nothing;
/// the call is not shown as interrupted, a decision on it is refused, and
/// the live run goes on to its end with one payment. The lease (1 s) is
/// renewed while the call runs past it.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_being_carried_out_is_not_resumed_or_decided_elsewhere() {
    let journal = Arc::new(InMemoryJournal::new());
    let effects = Arc::new(AtomicUsize::new(0));
    let (began, mut started) = tokio::sync::mpsc::unbounded_channel();
    let live = Agent::builder(pay_then_answer())
        .tool(slow_pay(
            effects.clone(),
            began.clone(),
            Duration::from_millis(3000),
        ))
        .build()
        .unwrap()
        .durable(journal.clone())
        .owner("worker-1")
        .lease_ttl(Duration::from_secs(1));
    let id = "pay-run".to_owned();
    let running = tokio::spawn({
        let id = id.clone();
        async move {
            live.start_messages(id, vec![Message::user("pay 3")])
                .await
                .unwrap()
        }
    });
    started.recv().await.expect("pay began");
    tokio::time::sleep(Duration::from_millis(1500)).await; // past the lease's first term
    let other = Agent::builder(pay_then_answer())
        .tool(slow_pay(effects.clone(), began, Duration::ZERO))
        .build()
        .unwrap()
        .durable(journal.clone());
    let before = journal.entries(&id).await.unwrap();
    match other.resume(&id).await {
        Err(JournalError::Leased {
            run,
            owner,
            until_ms,
        }) => {
            assert_eq!((run.as_str(), owner.as_str()), ("pay-run", "worker-1"));
            assert!(until_ms > agentry::journal::now_ms(), "a live lease");
        }
        other => panic!("expected the run to be leased, got {other:?}"),
    }
    assert_eq!(
        status(journal.as_ref(), &id).await.unwrap(),
        RunStatus::Incomplete,
        "not shown as interrupted"
    );
    assert_eq!(
        decide(journal.as_ref(), &id, "c1", Decision::Approve, false).await,
        Err(DecideError::NotWaiting {
            run: id.clone(),
            call: "c1".into()
        })
    );
    assert_eq!(
        journal.entries(&id).await.unwrap(),
        before,
        "nothing written"
    );
    let done = running.await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("Paid.".into()));
    assert_eq!(effects.load(Ordering::SeqCst), 1, "paid once");
    // Stopped: its lease was released, and the ended run resumes as it ended.
    let again = other.resume(&id).await.unwrap();
    assert!(again.already_ended);
    assert_eq!(effects.load(Ordering::SeqCst), 1);
}

/// A holder that died mid-call keeps the run until its lease expires; then
/// the run is taken over (the call waits for a person: it may have paid)
/// and the dead holder's token can write nothing more.
#[tokio::test]
async fn a_dead_holders_lease_expires_and_its_token_is_fenced() {
    let journal = Arc::new(InMemoryJournal::new());
    let id = "dead-holder".to_owned();
    let call = ToolCall::new("c1", "pay", json!({"amount": 3}));
    let [started, step] = opening("pay 3", vec![call.clone()]);
    let dead = journal
        .acquire(&id, "worker-dead", Duration::from_millis(300))
        .await
        .unwrap();
    let entries = [
        started,
        step,
        RunEntry::CallStarted {
            call_id: "c1".into(),
            input: call.input.clone(),
        },
    ];
    for (seq, entry) in entries.iter().enumerate() {
        journal
            .append(&id, seq as u64, entry, dead.token)
            .await
            .unwrap();
    }
    let effects = Arc::new(AtomicUsize::new(0));
    let (began, _started) = tokio::sync::mpsc::unbounded_channel();
    let runs = Agent::builder(pay_then_answer())
        .tool(slow_pay(effects.clone(), began, Duration::ZERO))
        .build()
        .unwrap()
        .durable(journal.clone());
    assert!(
        matches!(runs.resume(&id).await, Err(JournalError::Leased { ref owner, .. }) if owner == "worker-dead"),
        "held until it expires"
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    let taken = runs.resume(&id).await.unwrap();
    assert_eq!(
        waiting_ids(&taken.outcome.outcome),
        [("c1".to_owned(), Waiting::Interrupted)]
    );
    let late = RunEntry::CallFinished {
        result: agentry::tool::ToolResult::ok("c1", json!("paid 3")),
        duration_ms: 1,
        child_usage: None,
    };
    let next = journal.entries(&id).await.unwrap().len() as u64;
    assert_eq!(
        journal.append(&id, next, &late, dead.token).await,
        Err(JournalError::Fenced { run: id.clone() })
    );
    assert_eq!(
        journal.renew(&id, dead.token, LONG).await,
        Err(JournalError::Fenced { run: id.clone() })
    );
    assert_eq!(effects.load(Ordering::SeqCst), 0);
}

/// A run whose lease was taken over while its call ran (its process was
/// thought dead) writes nothing more: the call's result is refused with
/// the old token, and the run stops with the fenced error instead of
/// going on to its next step.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_lease_was_taken_over_writes_nothing_more_and_stops() {
    let journal = Arc::new(InMemoryJournal::new());
    let effects = Arc::new(AtomicUsize::new(0));
    let go = Arc::new(tokio::sync::Notify::new());
    let (began, mut started) = tokio::sync::mpsc::unbounded_channel::<()>();
    let pay = {
        let (effects, go) = (effects.clone(), go.clone());
        function("pay")
            .arg::<u64>("amount", "how much")
            .handler(move |a: Amount, _context: agentry::tool::ToolContext| {
                let (effects, go, began) = (effects.clone(), go.clone(), began.clone());
                async move {
                    let _ = began.send(());
                    go.notified().await;
                    effects.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(format!("paid {}", a.amount))
                }
            })
            .build()
            .unwrap()
            .with_name("pay")
    };
    let live = Agent::builder(pay_then_answer())
        .tool(pay)
        .build()
        .unwrap()
        .durable(journal.clone());
    let id = "taken-over".to_owned();
    let running = tokio::spawn({
        let id = id.clone();
        async move { live.start_messages(id, vec![Message::user("pay 3")]).await }
    });
    started.recv().await.expect("pay began");
    // Its lease (the run's first, token 1) ends; another process takes it.
    journal.release(&id, 1).await.unwrap();
    let thief = journal.acquire(&id, "other", LONG).await.unwrap();
    assert_eq!(thief.token, 2);
    let before = journal.entries(&id).await.unwrap();
    go.notify_one();
    let stopped = running.await.unwrap().unwrap();
    assert_eq!(
        stopped.outcome.outcome,
        Outcome::JournalFailed(JournalError::Fenced { run: id.clone() })
    );
    assert_eq!(
        journal.entries(&id).await.unwrap(),
        before,
        "nothing more written"
    );
    assert_eq!(
        effects.load(Ordering::SeqCst),
        1,
        "the call in flight finished once"
    );
}
