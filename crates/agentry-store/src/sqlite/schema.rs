//! The SQLite store's tables, the connection settings, and bringing a file
//! written by an earlier version up to date (sketches for its records, the
//! keyword index over their text).

use rusqlite::{Connection, params};

use super::sketch::{OUTDATED_SQL, sketch};
use super::{decode_embedding, failed, unit, unusable};
use agentry_core::memory::MemoryError;

/// `AUTOINCREMENT`: a deleted row's id is never given to a new row, so the
/// incremental index never misses one. (Files made before it keep plain
/// ids; lookups check the session, so a reused id cannot leak either.)
/// `memory_sketch` covers what the recall index loads (session, id,
/// sketch), so opening a store never reads the rows themselves.
/// `memory_forgotten` counts deletions, so every connection drops the
/// sketches of deleted records on its next look. `run_journal` holds durable
/// runs' journals, one JSON entry per row.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memory (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    session   TEXT    NOT NULL,
    role      TEXT    NOT NULL,
    source    TEXT    NOT NULL,
    text      TEXT    NOT NULL,
    metadata  TEXT    NOT NULL,
    timestamp INTEGER NOT NULL,
    embedding BLOB    NOT NULL,
    sketch    BLOB
);
CREATE INDEX IF NOT EXISTS memory_session_time ON memory (session, timestamp, id);
CREATE TABLE IF NOT EXISTS memory_forgotten (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS run_journal (
    run   TEXT    NOT NULL,
    seq   INTEGER NOT NULL,
    entry TEXT    NOT NULL,
    PRIMARY KEY (run, seq)
);
";

/// Made after the sketches of an older file are filled in.
const SKETCH_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS memory_sketch ON memory (session, id, sketch)";

/// Keyword search over `memory.text`: an FTS5 index that keeps only the
/// words (the text stays in `memory`), kept in step by triggers. Porter
/// stemming over Unicode words, diacritics folded. With `secure-delete`
/// (set when the index is made) a deleted record's words are removed from
/// the index itself, not only marked deleted.
const TEXT_INDEX: &str = "
CREATE VIRTUAL TABLE IF NOT EXISTS memory_text USING fts5(
    text, content = 'memory', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memory_text_insert AFTER INSERT ON memory BEGIN
    INSERT INTO memory_text (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_text_delete AFTER DELETE ON memory BEGIN
    INSERT INTO memory_text (memory_text, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_text_update AFTER UPDATE OF text ON memory BEGIN
    INSERT INTO memory_text (memory_text, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO memory_text (rowid, text) VALUES (new.id, new.text);
END;
";

/// The file's `user_version` once every record has a sketch in the current
/// format. Opening a file at this version reads no row: a record written
/// since by an older version (no sketch, or one of the first format) has
/// its sketch computed from its vector when the index reads it.
const SKETCHES_VERSION: i64 = 2;

/// Rows given sketches per transaction when an older file is brought up to date.
const MIGRATION_BATCH: i64 = 10_000;

/// The most memory SQLite's page cache takes per store, in KiB (SQLite's
/// own default is 2 MiB). Re-scoring a large session's candidates reads
/// rows all over the file; measured at 100,000 records, 64 MiB took recall
/// from p50 3.5 to 2.4 ms and inserts from 15,800 to 22,800 records/s. It
/// fills only as pages are read.
pub const PAGE_CACHE_KIB: i64 = 64 * 1024;

/// A connection in WAL mode with the schema in place. Deleted records are
/// overwritten with zeros in the file (`secure_delete`), not only unlinked.
pub fn configured(conn: Connection) -> Result<Connection, MemoryError> {
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(failed)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(failed)?;
    conn.pragma_update(None, "secure_delete", "ON")
        .map_err(failed)?;
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
        .map_err(failed)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    conn.execute_batch(SCHEMA).map_err(failed)?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(failed)?;
    if version < SKETCHES_VERSION {
        add_sketches(&conn)?;
        conn.pragma_update(None, "user_version", SKETCHES_VERSION)
            .map_err(failed)?;
    }
    conn.execute_batch(SKETCH_INDEX).map_err(failed)?;
    conn.execute_batch(super::blocks::BLOCKS).map_err(failed)?;
    add_text_index(&conn)?;
    Ok(conn)
}

/// Create the keyword index, and fill it from the records already stored
/// when the file was written before it existed (one transaction).
fn add_text_index(conn: &Connection) -> Result<(), MemoryError> {
    let tx = conn.unchecked_transaction().map_err(failed)?;
    let existed = tx
        .prepare("SELECT 1 FROM sqlite_master WHERE name = 'memory_text'")
        .and_then(|mut s| s.exists([]))
        .map_err(failed)?;
    tx.execute_batch(TEXT_INDEX).map_err(failed)?;
    if !existed {
        // Both settings persist in the index; a read-only file opened later
        // is not written to.
        tx.execute_batch(
            "INSERT INTO memory_text (memory_text, rank) VALUES ('secure-delete', 1);
             INSERT INTO memory_text (memory_text) VALUES ('rebuild');",
        )
        .map_err(failed)?;
    }
    tx.commit().map_err(failed)
}

/// Give every record without a sketch in the current format one: files
/// written before sketches existed (the column is added), rows written by
/// an older version since, and sketches of the first format (signs only,
/// a whole number of 8-byte words). Unsearchable embeddings get an empty
/// sketch and are skipped by the index. In id order, a batch per
/// transaction.
fn add_sketches(conn: &Connection) -> Result<(), MemoryError> {
    let has_column = conn
        .prepare("SELECT 1 FROM pragma_table_info('memory') WHERE name = 'sketch'")
        .and_then(|mut s| s.exists([]))
        .map_err(failed)?;
    if !has_column {
        conn.execute_batch("ALTER TABLE memory ADD COLUMN sketch BLOB")
            .map_err(failed)?;
    }
    let mut after = 0i64;
    loop {
        let tx = conn.unchecked_transaction().map_err(failed)?;
        let rows: Vec<(i64, Vec<u8>)> = {
            let mut select = tx
                .prepare_cached(&format!(
                    "SELECT id, embedding FROM memory
                     WHERE id > ?1 AND {OUTDATED_SQL} ORDER BY id LIMIT ?2"
                ))
                .map_err(failed)?;
            select
                .query_map(params![after, MIGRATION_BATCH], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .map_err(failed)?
                .collect::<Result<_, _>>()
                .map_err(failed)?
        };
        let Some(last) = rows.last().map(|row| row.0) else {
            return Ok(());
        };
        after = last;
        {
            let mut update = tx
                .prepare_cached("UPDATE memory SET sketch = ?2 WHERE id = ?1")
                .map_err(failed)?;
            for (id, blob) in &rows {
                let vector = unit(decode_embedding(blob));
                let bytes = match unusable(&vector) {
                    Some(_) => Vec::new(),
                    None => sketch(&vector).to_bytes(),
                };
                update.execute(params![id, bytes]).map_err(failed)?;
            }
        }
        tx.commit().map_err(failed)?;
    }
}
