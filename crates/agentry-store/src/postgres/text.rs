//! Keyword search in the PostgreSQL store: the query's words ([`keywords`])
//! stemmed by the `english` configuration, matched against the generated
//! `words` column through its GIN index, and ranked by `ts_rank_cd` within
//! one session.
//!
//! PostgreSQL's own ranking functions weigh every word alike, so a record
//! holding a word half the table holds would rank with one holding the rare
//! word asked about. Each word is weighted by its rarity instead (BM25's
//! inverse document frequency, from PostgreSQL's statistics of the column:
//! `pg_stats.most_common_elems`, read at most every five minutes; a word
//! not among the most common counts as half as frequent as the least
//! common listed), and a record scores the sum of its words' weights.
//! Ranking reads every matching row, so the words are taken rarest first
//! while the rows holding them stay under [`KEYWORD_POSTINGS`]
//! ([`rarest_within`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentry_core::memory::{KEYWORD_POSTINGS, MemoryError, Recalled, keywords, rarest_within};
use sqlx::{AssertSqlSafe, Row};

use super::{PgStore, failed, read_record};

/// How long the column's statistics are used before they are read again.
const STATS_AGE: Duration = Duration::from_secs(300);

/// The words column's statistics: the table's estimated rows, and the share
/// of rows holding each of its most common words.
#[derive(Debug)]
pub(super) struct WordStats {
    read: Instant,
    rows: f64,
    common: HashMap<String, f64>,
    /// The share assumed for a word not among the most common.
    rare: f64,
}

/// The last statistics read, shared by a store's clones.
pub(super) type StatsCache = Arc<Mutex<Option<Arc<WordStats>>>>;

const READ_STATS: &str = "
SELECT e.elem, e.freq::float8,
       (SELECT greatest(reltuples, 0)::float8 FROM pg_class WHERE oid = $1::text::regclass)
FROM pg_stats AS s,
     unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(elem, freq)
WHERE s.schemaname = current_schema() AND s.tablename = $1::text AND s.attname = 'words'
  AND e.elem IS NOT NULL";

/// A lexeme as a `tsquery` term, quoted so it is never read as query syntax.
fn quoted(lexeme: &str) -> String {
    format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"))
}

impl PgStore {
    async fn word_stats(&self) -> Result<Arc<WordStats>, MemoryError> {
        if let Some(stats) = self
            .stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            && stats.read.elapsed() < STATS_AGE
        {
            return Ok(stats.clone());
        }
        let rows: Vec<(String, f64, f64)> = sqlx::query_as(READ_STATS)
            .bind(&self.table)
            .fetch_all(&self.pool)
            .await
            .map_err(failed)?;
        let rare = rows.iter().map(|r| r.1).fold(f64::INFINITY, f64::min) / 2.0;
        let stats = Arc::new(WordStats {
            read: Instant::now(),
            rows: rows.first().map_or(0.0, |r| r.2),
            rare: if rare.is_finite() { rare } else { 0.0 },
            common: rows
                .into_iter()
                .map(|(elem, freq, _)| (elem, freq))
                .collect(),
        });
        *self.stats.lock().unwrap_or_else(|p| p.into_inner()) = Some(stats.clone());
        Ok(stats)
    }

    /// The stemmed words of `words` to match, rarest first within the
    /// budget, each with its weight (inverse document frequency).
    async fn chosen_lexemes(&self, words: &[String]) -> Result<Vec<(String, f64)>, MemoryError> {
        let lexemes: Vec<String> =
            sqlx::query_scalar("SELECT lexeme FROM unnest(to_tsvector('english'::regconfig, $1))")
                .bind(words.join(" "))
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?;
        let stats = self.word_stats().await?;
        let counted: Vec<(String, f64)> = lexemes
            .into_iter()
            .map(|l| {
                let share = stats.common.get(&l).copied().unwrap_or(stats.rare);
                (l, share * stats.rows)
            })
            .collect();
        let chosen = rarest_within(counted, KEYWORD_POSTINGS)
            .into_iter()
            .map(|(lexeme, postings)| {
                // BM25's inverse document frequency.
                let weight = ((stats.rows - postings + 0.5) / (postings + 0.5) + 1.0).ln();
                (lexeme, weight.max(0.01))
            })
            .collect();
        Ok(chosen)
    }

    /// The records of `session` whose text best matches the words of `text`.
    pub(super) async fn search_words(
        &self,
        session: &str,
        text: &str,
        limit: usize,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let words = keywords(text);
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let lexemes = self.chosen_lexemes(&words).await?;
        if lexemes.is_empty() {
            return Ok(Vec::new());
        }
        // Rows holding any of the words (the GIN index), scored by the
        // weights of the words they hold; only the best are read whole.
        let table = &self.table;
        let sql = format!(
            "SELECT m.session, m.role, m.source, m.text, m.metadata, m.timestamp,
                    m.embedding::text AS embedding, best.score
             FROM (SELECT t.id,
                          (SELECT sum(w.weight) FROM unnest($4::text[], $5::float8[]) AS w(term, weight)
                           WHERE t.words @@ w.term::tsquery)::float4 AS score
                   FROM {table} AS t
                   WHERE t.session = $1 AND t.words @@ to_tsquery('simple'::regconfig, $2)
                   ORDER BY score DESC, t.id LIMIT $3) AS best
             JOIN {table} AS m ON m.id = best.id
             ORDER BY best.score DESC, m.id"
        );
        let terms: Vec<String> = lexemes.iter().map(|(l, _)| quoted(l)).collect();
        let weights: Vec<f64> = lexemes.iter().map(|(_, w)| *w).collect();
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(session)
            .bind(terms.join(" | "))
            .bind(limit.min(i64::MAX as usize) as i64)
            .bind(&terms)
            .bind(&weights)
            .fetch_all(&self.pool)
            .await
            .map_err(failed)?;
        rows.iter()
            .map(|row| {
                Ok(Recalled {
                    record: read_record(row)?,
                    score: row.try_get::<f32, _>("score").map_err(failed)?,
                })
            })
            .collect()
    }
}
