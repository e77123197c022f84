//! Listing and forgetting in the SQLite store, and making sure forgotten
//! text is gone from the file: deleted rows are zeroed in place
//! (`secure_delete`), the write-ahead log is emptied after every delete,
//! and [`SqliteStore::vacuum`] rebuilds the file.

use agentry_core::memory::{Forget, ListOpts, MemoryError, SessionSummary, StoredRecord};
use rusqlite::{ToSql, params};

use super::{SqliteStore, failed, read_record};

impl SqliteStore {
    /// Every session with its record count and oldest and newest
    /// timestamps, by name, on the calling thread (blocking).
    pub fn sessions_blocking(&self) -> Result<Vec<SessionSummary>, MemoryError> {
        let db = self.db()?;
        let mut select = db
            .conn
            .prepare_cached(
                "SELECT session, count(*), min(timestamp), max(timestamp) FROM memory
                 GROUP BY session ORDER BY session",
            )
            .map_err(failed)?;
        let rows = select
            .query_map([], |row| {
                Ok(SessionSummary {
                    session: row.get(0)?,
                    records: row.get::<_, i64>(1)? as u64,
                    first: row.get(2)?,
                    last: row.get(3)?,
                })
            })
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }

    /// A page of `session`'s records with their ids, in id order, on the
    /// calling thread (blocking).
    pub fn list_blocking(
        &self,
        session: &str,
        opts: ListOpts,
    ) -> Result<Vec<StoredRecord>, MemoryError> {
        let db = self.db()?;
        let mut select = db
            .conn
            .prepare_cached(
                "SELECT session, role, source, text, metadata, timestamp, embedding, id FROM memory
                 WHERE session = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
            )
            .map_err(failed)?;
        let limit = opts.limit.map_or(-1, |l| l.min(i64::MAX as usize) as i64);
        let rows = select
            .query_map(
                params![session, opts.after.unwrap_or(i64::MIN), limit],
                |row| {
                    Ok(StoredRecord {
                        id: row.get(7)?,
                        record: read_record(row)?,
                    })
                },
            )
            .map_err(failed)?;
        rows.collect::<Result<_, _>>().map_err(failed)
    }

    /// Delete what `what` names on the calling thread (blocking); the number
    /// deleted. The deleted rows are zeroed in the file and the write-ahead
    /// log is emptied (when no reader holds it), so their text does not
    /// linger; [`vacuum`](Self::vacuum) also gives the space back.
    pub fn forget_blocking(&self, what: &Forget) -> Result<u64, MemoryError> {
        let mut db = self.db()?;
        let (condition, args): (&str, Vec<&dyn ToSql>) = match what {
            Forget::Session(session) => ("session = ?1", vec![session]),
            Forget::Record { session, id } => ("session = ?1 AND id = ?2", vec![session, id]),
            Forget::Before {
                session: Some(session),
                timestamp,
            } => ("session = ?1 AND timestamp < ?2", vec![session, timestamp]),
            Forget::Before {
                session: None,
                timestamp,
            } => ("timestamp < ?1", vec![timestamp]),
        };
        let tx = db.conn.transaction().map_err(failed)?;
        let deleted = tx
            .execute(&format!("DELETE FROM memory WHERE {condition}"), &args[..])
            .map_err(failed)?;
        if deleted > 0 {
            super::blocks::forget(&tx, what)?;
            tx.execute(
                "INSERT INTO memory_forgotten (id, count) VALUES (1, 1)
                 ON CONFLICT (id) DO UPDATE SET count = count + 1",
                [],
            )
            .map_err(failed)?;
        }
        tx.commit().map_err(failed)?;
        // Every connection, this one included, reloads its indexes on its
        // next look: `memory_forgotten` changed.
        if deleted > 0 {
            checkpoint(&db.conn)?;
        }
        Ok(deleted as u64)
    }

    /// Rebuild the file without the space deleted records took (SQLite's
    /// `VACUUM`), then empty the write-ahead log.
    pub fn vacuum(&self) -> Result<(), MemoryError> {
        let db = self.db()?;
        db.conn.execute_batch("VACUUM").map_err(failed)?;
        checkpoint(&db.conn)
    }
}

/// Copy the write-ahead log into the file and truncate it to nothing.
fn checkpoint(conn: &rusqlite::Connection) -> Result<(), MemoryError> {
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(failed)
}
