//! How [`Memory`](super::Memory) ranks what it recalls beyond cosine
//! similarity, all off by default so plain recall (cosine similarity) keeps
//! its meaning:
//! keyword search fused with the vector ranking (hybrid recall), and
//! recency and importance as extra scoring terms.
//!
//! Hybrid recall asks the store for its best vector matches and its best
//! keyword matches ([`MemoryStore::search_text`](super::MemoryStore::search_text):
//! SQLite FTS5 BM25, PostgreSQL full-text search) and fuses the two lists
//! by reciprocal rank (each list gives `1 / (60 + rank)`), so a record
//! that names the exact identifier, number or rare word asked about is
//! found even where its embedding is not close.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::store::{RecallOpts, Recalled};

/// The constant of reciprocal rank fusion (Cormack et al., 2009): a list's
/// first hit adds `1/61`, its tenth `1/70`.
pub const FUSION_K: f32 = 60.0;

/// How recall ranks records. The default is cosine similarity alone.
///
/// ```
/// use agentry_core::memory::Ranking;
///
/// let ranking: Ranking = serde_json::from_str(r#"{"keywords": true, "recency_weight": 0.2}"#).unwrap();
/// assert!(ranking.keywords);
/// assert_eq!(ranking.recency_half_life_secs, 7 * 24 * 3600);
/// assert!(Ranking::default().is_plain());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Ranking {
    /// Also search the records' text for the query's words and fuse that
    /// ranking with the vector ranking (reciprocal rank fusion). Records
    /// found by their words alone are kept even below `min_score`.
    pub keywords: bool,
    /// Weight of recency: `weight × 0.5^(age / half-life)` is added to a
    /// record's score (0, the default, turns it off).
    pub recency_weight: f32,
    /// Age at which recency counts half, in seconds (default 7 days).
    pub recency_half_life_secs: i64,
    /// Weight of importance: `weight × metadata["importance"]` (a number
    /// from 0 to 1; missing counts 0) is added to a record's score (0, the
    /// default, turns it off).
    pub importance_weight: f32,
}

impl Default for Ranking {
    fn default() -> Self {
        Self {
            keywords: false,
            recency_weight: 0.0,
            recency_half_life_secs: 7 * 24 * 3600,
            importance_weight: 0.0,
        }
    }
}

impl Ranking {
    /// Cosine similarity alone (plain recall): nothing to fuse or add.
    pub fn is_plain(&self) -> bool {
        !self.keywords && self.recency_weight == 0.0 && self.importance_weight == 0.0
    }

    /// How many records to ask each source for, so the terms can reorder
    /// more than the `limit` best by cosine.
    pub fn candidates(&self, limit: usize) -> usize {
        if self.is_plain() {
            limit
        } else {
            limit.saturating_mul(4).max(20)
        }
    }

    /// Rank the hits of the vector search (best first, already above
    /// `min_score`) and of the keyword search (best first) together, at
    /// `now` (seconds since the epoch), keeping `opts.limit`.
    ///
    /// A record's score is its cosine similarity (as the store gave it) when keywords
    /// are off, and its fused reciprocal rank scaled to 0..1 (1 = first in
    /// both lists) when they are on; recency and importance are added to
    /// it. Records found in both lists count once (same text, role and
    /// timestamp).
    pub fn rank(
        &self,
        by_vector: Vec<Recalled>,
        by_keywords: Vec<Recalled>,
        opts: RecallOpts,
        now: i64,
    ) -> Vec<Recalled> {
        let mut ranked: Vec<Recalled> = Vec::with_capacity(by_vector.len() + by_keywords.len());
        if self.keywords {
            let best = 2.0 / (FUSION_K + 1.0);
            let mut fused: Vec<(Recalled, f32)> = Vec::new();
            let lists = [by_vector, by_keywords];
            for list in lists {
                for (rank, hit) in list.into_iter().enumerate() {
                    let share = 1.0 / (FUSION_K + 1.0 + rank as f32);
                    match fused
                        .iter_mut()
                        .find(|(seen, _)| same(&seen.record, &hit.record))
                    {
                        Some((_, score)) => *score += share,
                        None => fused.push((hit, share)),
                    }
                }
            }
            ranked.extend(fused.into_iter().map(|(mut hit, score)| {
                hit.score = score / best;
                hit
            }));
        } else {
            ranked.extend(by_vector);
        }
        for hit in &mut ranked {
            hit.score += self.terms(&hit.record, now);
        }
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
        ranked.truncate(opts.limit);
        ranked
    }

    /// Recency and importance of `record` at `now`, weighted.
    pub fn terms(&self, record: &super::MemoryRecord, now: i64) -> f32 {
        let mut extra = 0.0;
        if self.recency_weight != 0.0 && self.recency_half_life_secs > 0 {
            let age = (now - record.timestamp).max(0) as f64;
            let fresh = 0.5f64.powf(age / self.recency_half_life_secs as f64);
            extra += self.recency_weight * fresh as f32;
        }
        if self.importance_weight != 0.0 {
            let importance = record
                .metadata
                .get("importance")
                .and_then(Value::as_f64)
                .map_or(0.0, |v| v.clamp(0.0, 1.0));
            extra += self.importance_weight * importance as f32;
        }
        extra
    }
}

fn same(a: &super::MemoryRecord, b: &super::MemoryRecord) -> bool {
    a.timestamp == b.timestamp && a.role == b.role && a.text == b.text
}

/// Words too common to find anything by (English), left out of keyword queries.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "get", "give", "had",
    "has", "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "just", "me", "my", "no", "not", "of", "on", "or", "our", "please", "she", "so", "some",
    "tell", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to",
    "up", "us", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will",
    "with", "would", "you", "your",
];

/// Most words a keyword query keeps (the first ones).
pub const MAX_KEYWORDS: usize = 32;

/// The words of `text` a keyword search looks for: runs of letters, digits
/// and `_`, lowercased, without common English words and repeats, at most
/// [`MAX_KEYWORDS`]. Stores build their query language's terms from these,
/// so no user text reaches a query parser unescaped.
///
/// ```
/// use agentry_core::memory::keywords;
///
/// assert_eq!(keywords("What is the status of order #A-1042?"), ["status", "order", "1042"]);
/// assert_eq!(keywords("get_weather(\"Lima\") OR *"), ["get_weather", "lima"]);
/// assert!(keywords("?!").is_empty());
/// ```
pub fn keywords(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
    {
        let word = word.to_lowercase();
        if STOPWORDS.binary_search(&word.as_str()).is_ok() || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == MAX_KEYWORDS {
            break;
        }
    }
    words
}

/// How many records (postings) the words a store's keyword search matches
/// may hold together, beyond the rarest word's own: see [`rarest_within`].
pub const KEYWORD_POSTINGS: f64 = 2_000.0;

/// The rarest of `words` (each with how many records hold it) while the
/// records they hold together, beyond the rarest one's, stay within
/// `budget`, rarest first; the rarest word is always kept. A keyword search
/// that scores every record holding any word (FTS5, PostgreSQL) would
/// otherwise spend most of its time on words so common that they barely
/// change the ranking.
///
/// ```
/// use agentry_core::memory::rarest_within;
///
/// let words = vec![("info", 40_000.0), ("7731", 3.0), ("locker", 900.0), ("code", 1_500.0)];
/// assert_eq!(rarest_within(words, 2_000.0), [("7731", 3.0), ("locker", 900.0)]);
/// assert_eq!(rarest_within(vec![("info", 40_000.0)], 2_000.0), [("info", 40_000.0)]);
/// ```
pub fn rarest_within<T: Ord>(mut words: Vec<(T, f64)>, budget: f64) -> Vec<(T, f64)> {
    words.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let mut spent = 0.0;
    let mut kept = Vec::new();
    for (word, postings) in words {
        if !kept.is_empty() {
            if spent + postings > budget {
                break;
            }
            spent += postings;
        }
        kept.push((word, postings));
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryRecord;

    fn hit(text: &str, timestamp: i64, score: f32) -> Recalled {
        let mut record = MemoryRecord::new("s", "user", text, vec![1.0]);
        record.timestamp = timestamp;
        Recalled { record, score }
    }

    fn assert_scores(ranked: &[Recalled], expected: &[(&str, f32)]) {
        let got: Vec<(&str, f32)> = ranked
            .iter()
            .map(|h| (h.record.text.as_str(), h.score))
            .collect();
        assert_eq!(got.len(), expected.len(), "{got:?}");
        for ((text, score), (want_text, want)) in got.iter().zip(expected) {
            assert_eq!(text, want_text, "{got:?}");
            assert!((score - want).abs() < 1e-5, "{got:?}");
        }
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn plain_ranking_is_cosine_and_keeps_the_limit() {
        let ranking = Ranking::default();
        let hits = vec![hit("a", 0, 1.0), hit("b", 0, 0.6)];
        let opts = RecallOpts {
            limit: 1,
            min_score: 0.0,
        };
        let ranked = ranking.rank(hits, Vec::new(), opts, 0);
        assert_eq!(ranked.len(), 1);
        assert_eq!(
            (ranked[0].record.text.as_str(), ranked[0].score),
            ("a", 1.0)
        );
    }

    #[test]
    fn fusion_counts_a_record_in_both_lists_once_and_ranks_it_first() {
        let ranking = Ranking {
            keywords: true,
            ..Ranking::default()
        };
        let by_vector = vec![hit("near", 1, 1.0), hit("both", 2, 0.6)];
        let by_keywords = vec![hit("both", 2, 0.6), hit("word", 3, 0.0)];
        let opts = RecallOpts {
            limit: 5,
            min_score: 0.3,
        };
        let ranked = ranking.rank(by_vector, by_keywords, opts, 0);
        let texts: Vec<&str> = ranked.iter().map(|h| h.record.text.as_str()).collect();
        assert_eq!(texts, ["both", "near", "word"]);
        // Second in one list and first in the other, against first in both.
        let expected = (1.0 / 62.0 + 1.0 / 61.0) / (2.0 / 61.0);
        assert!(
            (ranked[0].score - expected).abs() < 1e-6,
            "{}",
            ranked[0].score
        );
        // Found by its words alone: kept though its cosine is 0.
        assert!(ranked[2].score > 0.0);
    }

    #[test]
    fn recency_and_importance_reorder_and_are_weighted() {
        let day = 24 * 3600;
        let ranking = Ranking {
            recency_weight: 0.5,
            recency_half_life_secs: day,
            importance_weight: 0.0,
            ..Ranking::default()
        };
        let old = hit("old", 0, 1.0);
        let new = hit("new", 2 * day, 0.8);
        let opts = RecallOpts {
            limit: 5,
            min_score: 0.0,
        };
        let ranked = ranking.rank(vec![old, new], Vec::new(), opts, 2 * day);
        // new: 0.8 + 0.5 × 1; old: 1.0 + 0.5 × 0.25.
        assert_scores(&ranked, &[("new", 1.3), ("old", 1.125)]);

        let ranking = Ranking {
            importance_weight: 0.4,
            ..Ranking::default()
        };
        let mut vital = hit("vital", 0, 0.8);
        vital
            .record
            .metadata
            .insert("importance".into(), 2.0.into()); // clamped to 1
        let plain = hit("plain", 0, 1.0);
        let ranked = ranking.rank(vec![plain, vital], Vec::new(), opts, 0);
        assert_scores(&ranked, &[("vital", 1.2), ("plain", 1.0)]);
    }

    #[test]
    fn keywords_drop_query_syntax_and_cap_the_count() {
        assert_eq!(
            keywords("NEAR(a b) AND \"x\" - y*"),
            ["near", "b", "x", "y"]
        );
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(keywords(&many).len(), MAX_KEYWORDS);
        assert_eq!(keywords("Zürich ZÜRICH"), ["zürich"]);
    }
}
