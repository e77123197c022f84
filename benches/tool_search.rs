//! Searching a big tool catalog, per query: agentry's BM25 (posting lists
//! over the `bm25` crate's tokens and weights) against the `bm25` crate's own
//! `SearchEngine` on the same texts, and the embedding scan (one 384-wide
//! dot product per tool, then the top five), at 10,000 and 100,000 tools.
//!
//! Run: `cargo bench -p agentry-benches --bench tool_search`
//!
//! The catalog is every distinct function of the BFCL files and MetaTool's
//! 199 tools, repeated under numbered namespaces up to the size (the
//! datasets' README suggests this for scale tests); the queries are
//! MetaTool's first 200 dev queries, in turn. The scan's vectors are random
//! unit vectors: its cost does not depend on their values.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use agentry_core::embed::KeywordEmbedder;
use agentry_search::HybridIndex;
use bm25::{Document, Language, SearchEngineBuilder};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::Value;

const DIMENSIONS: usize = 384;

/// `(name, search text)` of every distinct BFCL function and MetaTool tool.
fn base_catalog() -> Vec<(String, String)> {
    let datasets = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets");
    let mut functions = BTreeMap::new();
    for file in ["simple_python", "multiple", "parallel", "irrelevance"] {
        let path = format!("{datasets}/bfcl/{file}.jsonl");
        let text = std::fs::read_to_string(&path).expect("the BFCL files are in datasets/");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let question: Value = serde_json::from_str(line).unwrap();
            for function in question["function"].as_array().into_iter().flatten() {
                let name = function["name"].as_str().unwrap_or("").to_owned();
                let mut text = format!(
                    "{name} {}\n{}",
                    agentry_search::name_words(&name),
                    function["description"].as_str().unwrap_or("")
                );
                let properties = function["parameters"]["properties"].as_object();
                for (parameter, schema) in properties.into_iter().flatten() {
                    let described = schema["description"].as_str().unwrap_or("");
                    text.push_str(&format!("\n{parameter} {described}"));
                }
                functions.insert(name, text);
            }
        }
    }
    let tools: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{datasets}/metatool/tools.json")).unwrap(),
    )
    .unwrap();
    for tool in tools.as_array().unwrap() {
        let name = format!("plugins.{}", tool["name"].as_str().unwrap());
        let text = format!("{name}\n{}", tool["description"].as_str().unwrap());
        functions.insert(name, text);
    }
    functions.into_iter().collect()
}

fn queries() -> Vec<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../datasets/metatool/queries_dev.jsonl"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take(200)
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["query"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// `size` search texts: the base catalog under namespaces `n0.`, `n1.`, …
fn catalog(base: &[(String, String)], size: usize) -> Vec<String> {
    (0..size)
        .map(|i| {
            let (name, text) = &base[i % base.len()];
            format!("n{}.{name} {text}", i / base.len())
        })
        .collect()
}

/// `count` random unit vectors (a fixed xorshift sequence).
fn random_vectors(count: usize) -> Vec<Vec<f32>> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..count)
        .map(|_| (0..DIMENSIONS).map(|_| next()).collect())
        .collect()
}

fn tool_search(c: &mut Criterion) {
    let base = base_catalog();
    let queries = queries();
    let mut group = c.benchmark_group("tool_search");
    for size in [10_000, 100_000] {
        let texts = catalog(&base, size);
        let ours = HybridIndex::bm25(texts.clone());
        let mut turn = 0;
        group.bench_with_input(
            BenchmarkId::new("agentry_bm25_top5", size),
            &size,
            |b, _| {
                b.iter(|| {
                    turn = (turn + 1) % queries.len();
                    black_box(ours.top_bm25(&queries[turn], 5))
                })
            },
        );
        let documents = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Document::new(i, t.clone()));
        let theirs =
            SearchEngineBuilder::<usize>::with_documents(Language::English, documents).build();
        group.bench_with_input(BenchmarkId::new("bm25_crate_top5", size), &size, |b, _| {
            b.iter(|| {
                turn = (turn + 1) % queries.len();
                black_box(theirs.search(&queries[turn], 5))
            })
        });
        drop(theirs);
        let embedder = Arc::new(KeywordEmbedder::new(["unused"]));
        let scan = HybridIndex::bm25(vec![String::new(); size])
            .with_vectors(embedder, random_vectors(size))
            .unwrap();
        let probes = random_vectors(64);
        group.bench_with_input(
            BenchmarkId::new("embedding_scan_top5", size),
            &size,
            |b, _| {
                b.iter(|| {
                    turn = (turn + 1) % probes.len();
                    black_box(scan.nearest(&probes[turn], 5))
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, tool_search);
criterion_main!(benches);
