//! [`Bm25`]: BM25 scoring over posting lists. Tokens and term weights come
//! from the `bm25` crate (English stemming and stop words, `k1` 1.2, `b`
//! 0.75, average length fitted to the documents), so scores are the crate's;
//! only the lookup differs: a query reads the postings of its own terms into
//! one score array instead of visiting every matching document's terms, which
//! keeps a search over 10,000 tools well under a millisecond.

use std::collections::HashMap;

use bm25::{Embedder, EmbedderBuilder, Language};

/// The documents holding one term, with the term's weight in each, and the
/// term's inverse document frequency.
struct Postings {
    idf: f32,
    documents: Vec<(u32, f32)>,
}

/// A BM25 index over a fixed list of documents, known by their position.
pub(crate) struct Bm25 {
    embedder: Embedder<u32>,
    terms: HashMap<u32, Postings>,
    len: usize,
}

impl Bm25 {
    /// The index over `texts` (document `i` is `texts[i]`).
    pub(crate) fn new(texts: &[String]) -> Self {
        let corpus: Vec<&str> = texts.iter().map(String::as_str).collect();
        let embedder =
            EmbedderBuilder::<u32>::with_fit_to_corpus(Language::English, &corpus).build();
        let mut postings: HashMap<u32, Vec<(u32, f32)>> = HashMap::new();
        for (document, text) in texts.iter().enumerate() {
            for token in embedder.embed(text).iter() {
                let documents = postings.entry(token.index).or_default();
                // A term occurring twice is one posting: its weight already counts both.
                if documents
                    .last()
                    .is_none_or(|(last, _)| *last != document as u32)
                {
                    documents.push((document as u32, token.value));
                }
            }
        }
        let count = texts.len() as f32;
        let terms = postings
            .into_iter()
            .map(|(term, documents)| {
                let frequency = documents.len() as f32;
                let idf = (1.0 + (count - frequency + 0.5) / (frequency + 0.5)).ln();
                (term, Postings { idf, documents })
            })
            .collect();
        Self {
            embedder,
            terms,
            len: texts.len(),
        }
    }

    /// Every document sharing a term with `query`, with its score, in no
    /// particular order. A query term written twice counts twice.
    pub(crate) fn scores(&self, query: &str) -> Vec<(usize, f32)> {
        let mut scores = vec![0f32; self.len];
        let mut matched = Vec::new();
        for token in self.embedder.embed(query).iter() {
            let Some(postings) = self.terms.get(&token.index) else {
                continue;
            };
            for &(document, weight) in &postings.documents {
                let score = &mut scores[document as usize];
                if *score == 0.0 {
                    matched.push(document as usize);
                }
                *score += postings.idf * weight;
            }
        }
        matched
            .into_iter()
            .map(|document| (document, scores[document]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bm25::{Document, SearchEngineBuilder};

    /// The posting lists score exactly as the `bm25` crate's own search engine.
    #[test]
    fn scores_match_the_bm25_crate() {
        let texts: Vec<String> = [
            "Get the weather forecast for a city, day by day",
            "Severe weather alerts for a region; weather warnings",
            "Book a flight between two airports",
            "Convert an amount between currencies at today's rate",
            "",
            "forecast forecast forecast sales for next quarter",
        ]
        .map(String::from)
        .to_vec();
        let engine = SearchEngineBuilder::<usize>::with_documents(
            Language::English,
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| Document::new(i, t.clone())),
        )
        .build();
        let index = Bm25::new(&texts);
        for query in [
            "weather forecast",
            "forecast forecast city",
            "flights and currencies",
            "nothing matches zzz",
            "",
        ] {
            let mut ours = index.scores(query);
            ours.sort_by_key(|(document, _)| *document);
            let mut theirs: Vec<(usize, f32)> = engine
                .search(query, None)
                .into_iter()
                .map(|hit| (hit.document.id, hit.score))
                .collect();
            theirs.sort_by_key(|(document, _)| *document);
            assert_eq!(ours.len(), theirs.len(), "{query}");
            for ((a, x), (b, y)) in ours.iter().zip(&theirs) {
                assert_eq!(a, b, "{query}");
                assert!((x - y).abs() < 1e-5, "{query}: {x} vs {y}");
            }
        }
    }
}
