//! Keyword search in the SQLite store: the query's words ([`keywords`])
//! matched in the FTS5 index over the records' text, ranked by BM25, within
//! one session.
//!
//! FTS5 scores every record that holds any of the words, so a word that
//! half the records hold would cost a scan of half the store for almost
//! nothing (BM25 weighs it near zero). The query's words are therefore
//! stemmed the way the index stems them, looked up in the index's
//! vocabulary, and taken rarest first while the records holding them stay
//! under [`KEYWORD_POSTINGS`] ([`rarest_within`]).

use agentry_core::memory::{KEYWORD_POSTINGS, MemoryError, Recalled, keywords, rarest_within};
use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, failed, read_record};

/// Per-connection helpers, made on a connection's first keyword search in
/// its temporary schema (nothing is written to the file, so a read-only
/// file can be searched): a one-row FTS5 table
/// with the index's tokenizer, whose vocabulary is the query's stemmed
/// words, and the index's own vocabulary with each word's record count.
const HELPERS: &str = "
CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_query USING fts5(
    text, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_query_terms USING fts5vocab(temp, memory_query, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.memory_text_terms USING fts5vocab(main, memory_text, 'row');
";

/// The index terms to match for `words`: stemmed as the index stems them,
/// only those some record holds, rarest first within the budget.
fn chosen_terms(conn: &Connection, words: &[String]) -> Result<Vec<String>, MemoryError> {
    conn.execute("DELETE FROM temp.memory_query", [])
        .map_err(failed)?;
    conn.execute(
        "INSERT INTO temp.memory_query (text) VALUES (?1)",
        [words.join(" ")],
    )
    .map_err(failed)?;
    let mut select = conn
        .prepare_cached(
            "SELECT q.term, t.doc FROM temp.memory_query_terms AS q
             JOIN temp.memory_text_terms AS t ON t.term = q.term
             ORDER BY t.doc, q.term",
        )
        .map_err(failed)?;
    let found: Vec<(String, f64)> = select
        .query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as f64)))
        .map_err(failed)?
        .collect::<Result<_, _>>()
        .map_err(failed)?;
    Ok(rarest_within(found, KEYWORD_POSTINGS)
        .into_iter()
        .map(|(term, _)| term)
        .collect())
}

/// An FTS5 query matching any of `terms`, each a quoted string (so no term
/// is read as query syntax).
fn match_any(terms: &[String]) -> String {
    terms
        .iter()
        .map(|term| format!("\"{}\"", term.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

impl SqliteStore {
    /// The records of `session` whose text best matches the words of
    /// `text`, best first (BM25, higher is better), on the calling thread
    /// (blocking).
    pub fn search_text_blocking(
        &self,
        session: &str,
        text: &str,
        limit: usize,
    ) -> Result<Vec<Recalled>, MemoryError> {
        let words = keywords(text);
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut db = self.db()?;
        if !db.keyword_helpers {
            db.conn.execute_batch(HELPERS).map_err(failed)?;
            db.keyword_helpers = true;
        }
        let terms = chosen_terms(&db.conn, &words)?;
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let query = match_any(&terms);
        // The best matches of the whole file first (no row of `memory` is
        // read for a record that does not make the cut), then theirs of
        // this session; more are asked for while other sessions' records
        // crowd this one's out.
        let mut ranked = db
            .conn
            .prepare_cached(
                "SELECT rowid, -bm25(memory_text) FROM memory_text WHERE memory_text MATCH ?1
                 ORDER BY rank LIMIT ?2",
            )
            .map_err(failed)?;
        let mut select = db
            .conn
            .prepare_cached(
                "SELECT session, role, source, text, metadata, timestamp, embedding
                 FROM memory WHERE id = ?1 AND session = ?2",
            )
            .map_err(failed)?;
        let mut wanted = limit.saturating_mul(4).max(20);
        loop {
            let best: Vec<(i64, f64)> = ranked
                .query_map(
                    params![query, wanted.min(i64::MAX as usize) as i64],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .map_err(failed)?
                .collect::<Result<_, _>>()
                .map_err(failed)?;
            let mut hits = Vec::new();
            for (id, score) in &best {
                if let Some(record) = select
                    .query_row(params![id, session], read_record)
                    .optional()
                    .map_err(failed)?
                {
                    hits.push(Recalled {
                        record,
                        score: *score as f32,
                    });
                    if hits.len() == limit {
                        return Ok(hits);
                    }
                }
            }
            if best.len() < wanted {
                return Ok(hits); // every match was looked at
            }
            wanted = wanted.saturating_mul(4);
        }
    }
}
