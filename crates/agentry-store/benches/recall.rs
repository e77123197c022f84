//! Recall latency of the memory stores, and the overhead of a chat turn
//! without model time. A plain binary (no criterion): each scenario fills a
//! store with N random 384-dimension records in one session, warms up, then
//! times 200 recalls of random queries and prints p50/p95.
//!
//! ```sh
//! cargo bench -p agentry-store --bench recall                       # SQLite 10k, 100k, 1M; turn overhead
//! AGENTRY_POSTGRES_URL=postgres://… cargo bench -p agentry-store --bench recall   # adds Postgres 100k
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentry_agent::turn::{TurnConfig, TurnInput};
use agentry_core::BoxFuture;
use agentry_core::embed::{EmbedError, Embedder};
use agentry_core::memory::{Memory, MemoryRecord, MemoryStore, RecallOpts};
use agentry_core::model::OfflineModel;
use agentry_core::tool::{Identity, Session};
use agentry_store::{PgStore, SqliteStore};

const DIMS: usize = 384;
const QUERIES: usize = 200;

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn vector(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIMS).map(|_| self.next()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{name:<34} p50 {:>9.3} ms   p95 {:>9.3} ms",
        percentile(&times, 0.50).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3
    );
}

fn records(rng: &mut Rng, session: &str, n: usize) -> Vec<MemoryRecord> {
    (0..n)
        .map(|i| {
            let mut record =
                MemoryRecord::new(session, "user", format!("record {i}"), rng.vector());
            record.timestamp = i as i64;
            record
        })
        .collect()
}

async fn time_recalls(store: &dyn MemoryStore, session: &str, rng: &mut Rng) -> Vec<Duration> {
    let opts = RecallOpts {
        limit: 5,
        min_score: -1.0,
    };
    // Warm up (the SQLite store loads its vectors on first recall).
    store
        .recall(session, &rng.vector(), opts)
        .await
        .expect("recall");
    let mut times = Vec::with_capacity(QUERIES);
    for _ in 0..QUERIES {
        let query = rng.vector();
        let started = Instant::now();
        let hits = store.recall(session, &query, opts).await.expect("recall");
        times.push(started.elapsed());
        assert_eq!(hits.len(), 5);
    }
    times
}

async fn sqlite(n: usize) {
    let dir = std::env::temp_dir().join(format!("agentry-bench-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("memory.db")).unwrap();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let mut left = n;
    while left > 0 {
        let batch = left.min(50_000);
        store
            .add_many_blocking(&records(&mut rng, "bench", batch))
            .unwrap();
        left -= batch;
    }
    let times = time_recalls(&store, "bench", &mut rng).await;
    report(&format!("sqlite, {n} records"), times);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn postgres(url: &str, n: usize) {
    let store = PgStore::connect(url, DIMS).await.unwrap();
    let session = format!("bench-{}-{n}", std::process::id());
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let mut left = n;
    while left > 0 {
        let batch = left.min(1_000);
        store
            .add_many(&records(&mut rng, &session, batch))
            .await
            .unwrap();
        left -= batch;
    }
    let times = time_recalls(&store, &session, &mut rng).await;
    report(&format!("postgres+pgvector, {n} records"), times);
}

/// Bag-of-bytes vectors: cost next to nothing, so the turn's own overhead shows.
struct Cheap;

impl Embedder for Cheap {
    fn model_id(&self) -> &str {
        "cheap"
    }
    fn dimensions(&self) -> usize {
        DIMS
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|t| {
                    let mut v = vec![0.01f32; DIMS];
                    for b in t.bytes() {
                        v[b as usize % DIMS] += 1.0;
                    }
                    v
                })
                .collect())
        })
    }
}

async fn turn_overhead() {
    let dir = std::env::temp_dir().join(format!("agentry-bench-turn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("memory.db")).unwrap();
    let config = TurnConfig::new(
        "bench",
        OfflineModel,
        Memory::new(Arc::new(store), Arc::new(Cheap)),
    )
    .system_base("You are a benchmark.");
    let mut times = Vec::new();
    for i in 0..(QUERIES + 20) {
        let input = TurnInput::new(
            Session::new("turns"),
            Identity::new("u"),
            format!("message number {i} about pasta"),
        );
        let started = Instant::now();
        let reply = config
            .run(input)
            .await
            .expect("a turn without a model answers");
        if i >= 20 {
            times.push(started.elapsed());
        }
        assert_eq!(reply.text, "[no llm provider]");
    }
    report("chat turn overhead (sqlite)", times);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    println!(
        "recall: top 5 of N records in one session, {QUERIES} random queries, {DIMS} dimensions"
    );
    for n in [10_000, 100_000, 1_000_000] {
        sqlite(n).await;
    }
    match std::env::var("AGENTRY_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => postgres(&url, 100_000).await,
        _ => println!("postgres: skipped (set AGENTRY_POSTGRES_URL)"),
    }
    turn_overhead().await;
}
