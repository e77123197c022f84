//! Keyword search in the SQLite store: the query's words
//! ([`keywords`]) matched in the FTS5 index over the records' text, ranked
//! by BM25, within one session.

use agentry_core::memory::{MemoryError, Recalled, keywords};
use rusqlite::params;

use super::{SqliteStore, failed, read_record};

/// An FTS5 query matching any of `words`, each a quoted string (so no word
/// is read as query syntax; a word holding `_` is the phrase of its parts,
/// as the tokenizer splits it).
fn match_any(words: &[String]) -> String {
    words
        .iter()
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
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
        let db = self.db()?;
        let mut select = db
            .conn
            .prepare_cached(
                "SELECT m.session, m.role, m.source, m.text, m.metadata, m.timestamp, m.embedding,
                        -bm25(memory_text)
                 FROM memory_text JOIN memory AS m ON m.id = memory_text.rowid
                 WHERE memory_text MATCH ?1 AND m.session = ?2
                 ORDER BY bm25(memory_text) LIMIT ?3",
            )
            .map_err(failed)?;
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = select
            .query_map(params![match_any(&words), session, limit], |row| {
                Ok(Recalled {
                    record: read_record(row)?,
                    score: row.get::<_, f64>(7)? as f32,
                })
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }
}
