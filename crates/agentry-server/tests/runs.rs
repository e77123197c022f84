//! Durable runs over HTTP: a turn whose agent reaches a destructive call
//! stops with `run:waiting` (SSE) or `waiting` (JSON); `GET /v1/runs/{id}`
//! shows it; `POST /v1/runs/{id}/approvals` refuses what it must (another
//! key, a call that does not wait, a denial without a reason) and, once no
//! call waits, resumes the run and stores its answer in the session. The
//! journal is SQLite, and a second server on the same file (another
//! process, in production) takes the approval. Scripted model: loop logic.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentry_agent::Agent;
use agentry_agent::durable::RunJournal;
use agentry_store::{PgStore, SqliteStore};
use serde_json::{Value, json};

async fn durable_server(
    db: &std::path::Path,
    path: &str,
    runs: Arc<AtomicUsize>,
) -> support::Running {
    let agent = Agent::builder(support::deleting_model(path, "", "Done: "))
        .tool(support::delete_tool(runs))
        .build()
        .unwrap();
    let journal = Arc::new(SqliteStore::open(db).unwrap());
    support::serve_agent(agent, |server| server.durable_runs(journal)).await
}

fn temp_db(name: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("agentry-server-runs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("runs.db")
}

/// `instance` validates against schema `name` of the server's OpenAPI document.
async fn conforms(server: &support::Running, name: &str, instance: &Value) {
    let document: Value = server
        .http
        .get(format!("{}/openapi.json", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    support::assert_conforms(&document, name, instance);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_waits_for_approval_and_an_approval_resumes_it_in_another_server() {
    let db = temp_db("approve");
    let runs = Arc::new(AtomicUsize::new(0));
    let first = durable_server(&db, "a.log", runs.clone()).await;
    let answer = first
        .post_json(
            "/v1/sessions/files/turns",
            "alice-key",
            &json!({"text": "delete a.log", "payload": {"message_id": "m1"}}),
        )
        .await;
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["text"], "");
    assert_eq!(
        answer["waiting"],
        json!({"run": "files~m1", "calls": [{"call_id": "c1", "tool": "delete",
               "input": {"path": "a.log"}, "reason": "approval"}]})
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    conforms(&first, "TurnResponse", &answer).await;

    let shown = first.get_json("/v1/runs/files~m1", "alice-key").await;
    assert_eq!(shown["status"], "waiting", "{shown}");
    conforms(&first, "RunResponse", &shown).await;
    assert_eq!(shown["waiting"][0]["call_id"], "c1");
    // Another key sees nothing; a malformed id is refused.
    assert_eq!(
        first
            .get("/v1/runs/files~m1", Some("bob-key"))
            .await
            .status(),
        404
    );
    assert_eq!(
        first
            .get("/v1/runs/no-tilde", Some("alice-key"))
            .await
            .status(),
        400
    );

    // Another server on the same journal takes the decision.
    let second = durable_server(&db, "a.log", runs.clone()).await;
    let post = |body: Value| {
        let second = &second;
        async move {
            let response = second
                .http
                .post(format!("{}/v1/runs/files~m1/approvals", second.url))
                .bearer_auth("alice-key")
                .json(&body)
                .send()
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, body) = post(json!({"call_id": "c1", "decision": "deny"})).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["message"], "a denial needs a `reason`");
    let (status, body) = post(json!({"call_id": "c9", "decision": "approve"})).await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = post(json!({"call_id": "c1", "decision": "maybe"})).await;
    assert_eq!(status, 422, "{body}");
    let (status, done) = post(json!({"call_id": "c1", "decision": "approve"})).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "ended");
    conforms(&second, "RunResponse", &done).await;
    assert_eq!(done["answer"], "Done: deleted a.log");
    assert_eq!(
        done["steps"][0]["calls"][0]["result"]["output"],
        "deleted a.log"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The answer joined the session's memory (the store is the second server's).
    let messages = second
        .get_json("/v1/sessions/files/messages", "alice-key")
        .await;
    let texts: Vec<&str> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["Done: deleted a.log"]);
    // Decided once: a second approval is a conflict.
    let (status, _) = post(json!({"call_id": "c1", "decision": "approve"})).await;
    assert_eq!(status, 409);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streamed_turn_sends_run_waiting_and_an_edit_changes_the_input() {
    let db = temp_db("stream");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = durable_server(&db, "/etc/passwd", runs.clone()).await;
    let events = server
        .post_events(
            "/v1/sessions/s2/turns",
            "alice-key",
            &json!({"text": "clean up", "payload": {"message_id": "m2"}}),
        )
        .await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "reply:start",
            "tool:call",
            "run:waiting",
            "reply:end",
            "turn:end"
        ]
    );
    assert_eq!(events[2].1["run"], "s2~m2");
    assert_eq!(
        events[2].1["calls"][0]["input"],
        json!({"path": "/etc/passwd"})
    );
    let done = server
        .post_json(
            "/v1/runs/s2~m2/approvals",
            "alice-key",
            &json!({"call_id": "c1", "decision": "edit", "input": {"path": "tmp/old.log"}}),
        )
        .await;
    assert_eq!(done["answer"], "Done: deleted tmp/old.log", "{done}");
    assert_eq!(
        done["steps"][0]["calls"][0]["call"]["input"],
        json!({"path": "tmp/old.log"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_durable_runs_the_runs_routes_say_so() {
    let agent = Agent::builder(support::deleting_model("x", "", ""))
        .build()
        .unwrap();
    let server = support::serve_agent(agent, |s| s).await;
    let response = server.get("/v1/runs/s~m", Some("alice-key")).await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "this server keeps no durable runs"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_fails_on_resume_leaves_the_run_incomplete_and_resume_goes_on() {
    use agentry_core::model::{ModelError, ScriptedModel, Step, Usage};
    use agentry_core::tool::ToolCall;
    let db = temp_db("incomplete");
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "delete", json!({"path": "a.log"}))],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .fail(ModelError::Transport("connection reset".into()))
        .reply(Step::Final {
            text: "Deleted.".into(),
            tokens: Usage::new(12, 4),
        });
    let agent = Agent::builder(model)
        .tool(support::delete_tool(runs.clone()))
        .build()
        .unwrap();
    let journal = Arc::new(SqliteStore::open(&db).unwrap());
    let server = support::serve_agent(agent, |s| s.durable_runs(journal)).await;
    let bad = server
        .http
        .post(format!("{}/v1/sessions/s3/turns", server.url))
        .bearer_auth("alice-key")
        .json(&json!({"text": "go", "payload": {"message_id": "a/b"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400, "a message id no run id can hold");
    server
        .post_json(
            "/v1/sessions/s3/turns",
            "alice-key",
            &json!({"text": "delete a.log", "payload": {"message_id": "m3"}}),
        )
        .await;
    let (status, body) = post(&server, "/v1/runs/s3~m3/resume", None).await;
    assert_eq!(status, 409, "calls wait for decisions: {body}");
    let (status, after) = post(
        &server,
        "/v1/runs/s3~m3/approvals",
        Some(json!({"call_id": "c1", "decision": "approve"})),
    )
    .await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["status"], "incomplete");
    assert_eq!(
        after["error"],
        "the model failed: transport error: connection reset"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the approved call ran");
    conforms(&server, "RunResponse", &after).await;
    let (status, done) = post(&server, "/v1/runs/s3~m3/resume", None).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["answer"], "Deleted.");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "not run again");
    // Resuming an ended run shows it and stores nothing twice.
    let (status, again) = post(&server, "/v1/runs/s3~m3/resume", None).await;
    assert_eq!(status, 200);
    assert_eq!(again["answer"], "Deleted.");
    let stored = server
        .get_json("/v1/sessions/s3/messages", "alice-key")
        .await;
    let answers = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["text"] == "Deleted.")
        .count();
    assert_eq!(answers, 1, "{stored}");
}

/// `POST path` (with `body` as JSON when given) as alice: status and JSON.
async fn post(server: &support::Running, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = server
        .http
        .post(format!("{}{path}", server.url))
        .bearer_auth("alice-key");
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    (
        response.status().as_u16(),
        response.json::<Value>().await.unwrap(),
    )
}

/// A `pay` tool (not idempotent, not destructive: it runs at once) that
/// says when it began and holds until `go` is notified.
fn held_pay(
    effects: Arc<AtomicUsize>,
    began: tokio::sync::mpsc::UnboundedSender<()>,
    go: Arc<tokio::sync::Notify>,
) -> agentry_core::tool::Tool {
    #[derive(serde::Deserialize)]
    struct Amount {
        amount: u64,
    }
    agentry_core::tool::function("pay")
        .arg::<u64>("amount", "how much")
        .handler(
            move |a: Amount, _context: agentry_core::tool::ToolContext| {
                let (effects, began, go) = (effects.clone(), began.clone(), go.clone());
                async move {
                    let _ = began.send(());
                    go.notified().await;
                    effects.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(format!("paid {}", a.amount))
                }
            },
        )
        .build()
        .unwrap()
        .with_name("pay")
}

fn paying_model() -> agentry_core::model::ScriptedModel {
    use agentry_core::model::{ScriptedModel, Step, Usage};
    use agentry_core::tool::ToolCall;
    ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "pay", json!({"amount": 3}))],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "Paid.".into(),
            tokens: Usage::new(10, 2),
        })
}

/// Finding 3 (and 11d) of issue 39 over HTTP: while a turn's `pay` call
/// runs, 16 resumes and approvals race against it on two servers sharing
/// the journal. Each is a 409 that names the holder (a process label) and
/// until when, never the key's id; the call is never shown as interrupted;
/// the turn ends with one payment.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_being_carried_out_is_a_409_naming_its_holder_on_every_server() {
    let db = temp_db("leased");
    let journals: [Arc<dyn RunJournal>; 2] = [
        Arc::new(SqliteStore::open(&db).unwrap()),
        Arc::new(SqliteStore::open(&db).unwrap()),
    ];
    leased_run_race(journals, "s5").await;
}

/// The same race with two servers on one PostgreSQL, each with its own
/// pool (`AGENTRY_POSTGRES_URL`; skipped loudly without it).
#[tokio::test(flavor = "multi_thread")]
async fn a_run_being_carried_out_is_a_409_on_two_servers_sharing_postgres() {
    let url = match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            if std::env::var("AGENTRY_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("AGENTRY_POSTGRES_URL is not set and AGENTRY_REQUIRE_POSTGRES=1");
            }
            eprintln!(
                "\n*** SKIPPED: set AGENTRY_POSTGRES_URL (scripts/postgres start DIR prints one) to run the PostgreSQL server race ***\n"
            );
            return;
        }
    };
    let journals: [Arc<dyn RunJournal>; 2] = [
        Arc::new(PgStore::connect(&url, 2).await.unwrap()),
        Arc::new(PgStore::connect(&url, 2).await.unwrap()),
    ];
    let session = format!(
        "pg{}-{}",
        std::process::id(),
        agentry_core::journal::now_ms()
    );
    leased_run_race(journals, &session).await;
}

/// A turn in `session` pays on the first server while 16 requests race.
async fn leased_run_race(journals: [Arc<dyn RunJournal>; 2], session: &str) {
    let effects = Arc::new(AtomicUsize::new(0));
    let (began, mut started) = tokio::sync::mpsc::unbounded_channel();
    let go = Arc::new(tokio::sync::Notify::new());
    let serve = |began, go, journal: Arc<dyn RunJournal>| {
        let agent = Agent::builder(paying_model())
            .tool(held_pay(effects.clone(), began, go))
            .build()
            .unwrap();
        support::serve_agent(agent, |server| server.durable_runs(journal))
    };
    let [here, there] = journals;
    let first = serve(began.clone(), go.clone(), here).await;
    let second = serve(began, go.clone(), there).await;
    let run = format!("{session}~m5");
    let turn = tokio::spawn({
        let (http, url, session) = (first.http.clone(), first.url.clone(), session.to_owned());
        async move {
            http.post(format!("{url}/v1/sessions/{session}/turns"))
                .bearer_auth("alice-key")
                .json(&json!({"text": "pay 3", "payload": {"message_id": "m5"}}))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    });
    started.recv().await.expect("pay began");
    let holder = agentry_agent::durable::process_label();
    let key_id = {
        use sha2::{Digest, Sha256};
        let hash = Sha256::digest(b"alice-key");
        hash[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let mut racing = Vec::new();
    for n in 0..16 {
        let server = if n % 2 == 0 { &first } else { &second };
        let (http, url, run) = (server.http.clone(), server.url.clone(), run.clone());
        racing.push(tokio::spawn(async move {
            let request = if n % 4 < 2 {
                http.post(format!("{url}/v1/runs/{run}/resume"))
            } else {
                http.post(format!("{url}/v1/runs/{run}/approvals"))
                    .json(&json!({"call_id": "c1", "decision": "approve"}))
            };
            let response = request.bearer_auth("alice-key").send().await.unwrap();
            let retry = response.headers().get("retry-after").cloned();
            (
                n,
                response.status().as_u16(),
                retry,
                response.json::<Value>().await.unwrap(),
            )
        }));
    }
    for racer in racing {
        let (n, status, retry, body) = racer.await.unwrap();
        let message = body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(status, 409, "{n}: {body}");
        assert!(
            !message.contains(&key_id),
            "the key's id is not shown: {message}"
        );
        if n % 4 < 2 {
            let opening =
                format!("run \"{run}\" is being run by {holder} (its lease lasts until 20");
            assert!(message.starts_with(&opening), "{message}");
            assert!(
                message.ends_with("and is renewed while it runs); try again once it stops"),
                "{message}"
            );
            assert!(retry.is_some(), "Retry-After says when the lease ends");
        } else {
            assert_eq!(
                message,
                format!("call \"c1\" of run \"{run}\" is not waiting for a decision")
            );
        }
    }
    let shown = second
        .get_json(&format!("/v1/runs/{run}"), "alice-key")
        .await;
    assert_eq!(
        shown["status"], "incomplete",
        "never shown as interrupted: {shown}"
    );
    go.notify_one();
    let answer = turn.await.unwrap();
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["text"], "Paid.");
    assert_eq!(effects.load(Ordering::SeqCst), 1, "paid once");
    let (status, done) = post(&second, &format!("/v1/runs/{run}/resume"), None).await;
    assert_eq!((status, done["answer"].as_str()), (200, Some("Paid.")));
    assert_eq!(effects.load(Ordering::SeqCst), 1);
}

/// 11d of issue 39: a durable turn's journal error (here a message id used
/// twice) names the run as the client knows it, never with the key's id.
#[tokio::test(flavor = "multi_thread")]
async fn a_durable_turns_journal_error_does_not_show_the_keys_id() {
    let db = temp_db("reused");
    let runs = Arc::new(AtomicUsize::new(0));
    let server = durable_server(&db, "a.log", runs).await;
    let body = json!({"text": "delete a.log", "payload": {"message_id": "m6"}});
    let first = server
        .post_json("/v1/sessions/s6/turns", "alice-key", &body)
        .await;
    assert_eq!(first["waiting"]["run"], "s6~m6", "{first}");
    let again = server
        .post_json("/v1/sessions/s6/turns", "alice-key", &body)
        .await;
    assert_eq!(again["ok"], false, "{again}");
    assert_eq!(again["error"], "a run \"s6~m6\" exists already", "{again}");
}

/// S4 of the durable review: a client that hangs up while its approval's
/// run is in a call (here a destructive `pay`, not idempotent) leaves the
/// run going on its own task: the call finishes and is journaled, the run
/// ends, and nothing pays twice (before, the dropped request released the
/// lease mid-call and the run showed the call `interrupted`).
#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_hangs_up_mid_call_does_not_stop_an_approved_run() {
    let db = temp_db("hangup");
    let effects = Arc::new(AtomicUsize::new(0));
    let (began, mut started) = tokio::sync::mpsc::unbounded_channel();
    let go = Arc::new(tokio::sync::Notify::new());
    let pay =
        held_pay(effects.clone(), began, go.clone()).with_hints(agentry_core::tool::ToolHints {
            destructive: true,
            ..Default::default()
        });
    let agent = Agent::builder(paying_model()).tool(pay).build().unwrap();
    let journal = Arc::new(SqliteStore::open(&db).unwrap());
    let server = support::serve_agent(agent, |server| server.durable_runs(journal)).await;
    let answer = server
        .post_json(
            "/v1/sessions/s7/turns",
            "alice-key",
            &json!({"text": "pay 3", "payload": {"message_id": "m7"}}),
        )
        .await;
    assert_eq!(answer["waiting"]["run"], "s7~m7", "{answer}");

    let approval = tokio::spawn({
        let (http, url) = (server.http.clone(), server.url.clone());
        async move {
            http.post(format!("{url}/v1/runs/s7~m7/approvals"))
                .bearer_auth("alice-key")
                .json(&json!({"call_id": "c1", "decision": "approve"}))
                .send()
                .await
        }
    });
    tokio::time::timeout(std::time::Duration::from_secs(10), started.recv())
        .await
        .expect("pay began within 10 s")
        .expect("pay began");
    // The client hangs up mid-call: its connection is dropped.
    approval.abort();
    assert!(approval.await.unwrap_err().is_cancelled());
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    go.notify_one();

    let mut shown = Value::Null;
    for _ in 0..100 {
        shown = server.get_json("/v1/runs/s7~m7", "alice-key").await;
        if shown["status"] != "incomplete" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        shown["status"], "ended",
        "fails as hung after 10 s: {shown}"
    );
    assert_eq!(shown["answer"], "Paid.", "{shown}");
    assert_eq!(
        shown["steps"][0]["calls"][0]["result"]["output"], "paid 3",
        "{shown}"
    );
    assert_eq!(effects.load(Ordering::SeqCst), 1, "paid once");
    let (status, again) = post(&server, "/v1/runs/s7~m7/resume", None).await;
    assert_eq!((status, again["status"].as_str()), (200, Some("ended")));
    assert_eq!(effects.load(Ordering::SeqCst), 1, "still paid once");
}

/// S6 of the durable review: a key file that cannot be taken is a 500 that
/// says what is wrong with it, without its path (nor words said twice).
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_journal_key_file_is_a_500_without_its_path() {
    let db = temp_db("badkey");
    let mut key = db.clone().into_os_string();
    key.push(".key");
    std::fs::write(&key, "not a key\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let server = durable_server(&db, "a.log", Arc::new(AtomicUsize::new(0))).await;
    let response = server.get("/v1/runs/s8~m8", Some("alice-key")).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "the journal key file must hold exactly 64 hex digits (32 bytes) and an optional newline",
        "{body}"
    );
}
