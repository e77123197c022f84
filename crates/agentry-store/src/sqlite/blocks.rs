//! Blocks of sketches: a session's sketches packed [`BLOCK_RECORDS`] to a
//! row of `memory_sketch_block`, so the first recall after opening a large
//! store reads a few hundred blobs instead of stepping through a row of the
//! covering index for every record.
//!
//! A block holds the ids and sketches of the searchable records from
//! `first_id` to `last_id`, packed in the transaction that wrote the last
//! of them ([`pack`]): once a session has that many records after its last
//! block. Records after the last block, and in the range of a block that is
//! gone, are read one by one as before. Forgetting a record drops the block
//! that holds it (forgetting a session or by date, the session's blocks, or
//! every block), in the same transaction, so a forgotten record's sketch
//! does not outlive it.

use agentry_core::memory::{Forget, MemoryError};
use rusqlite::{Connection, params};

use super::index::EXACT_LIMIT;
use super::lookup::record_sketch;
use super::sketch::{FORMAT, OUTDATED_SQL, Sketch};
use super::{decode_embedding, failed, unit};

/// How many records a block holds.
pub const BLOCK_RECORDS: usize = 4096;

/// The blocks' table (made with the schema).
pub const BLOCKS: &str = "
CREATE TABLE IF NOT EXISTS memory_sketch_block (
    id       INTEGER PRIMARY KEY,
    session  TEXT    NOT NULL,
    first_id INTEGER NOT NULL,
    last_id  INTEGER NOT NULL,
    ids      BLOB    NOT NULL,
    sketches BLOB    NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS memory_sketch_block_session ON memory_sketch_block (session, first_id);
";

/// A block as read back: its records' ids and both sketch planes of each,
/// `words` words a plane, one record after another.
pub struct Block {
    /// The first record id the block covers.
    pub first_id: i64,
    /// The last record id the block covers.
    pub last_id: i64,
    /// Words per plane.
    pub words: usize,
    /// The records' ids, in id order.
    pub ids: Vec<i64>,
    /// For each record, its sign words then its size words.
    pub planes: Vec<u64>,
}

impl Block {
    /// The sign and size planes of the `i`th record.
    pub fn record(&self, i: usize) -> (&[u64], &[u64]) {
        let start = i * 2 * self.words;
        let signs = &self.planes[start..start + self.words];
        let large = &self.planes[start + self.words..start + 2 * self.words];
        (signs, large)
    }
}

/// `session`'s blocks, in id order. A block that cannot be read (another
/// format, a wrong length) is left out: its records are read one by one.
pub fn read(conn: &Connection, session: &str) -> Result<Vec<Block>, MemoryError> {
    let mut select = conn
        .prepare_cached(
            "SELECT first_id, last_id, ids, sketches FROM memory_sketch_block
             WHERE session = ?1 ORDER BY first_id",
        )
        .map_err(failed)?;
    let mut rows = select.query([session]).map_err(failed)?;
    let mut blocks = Vec::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let first_id: i64 = row.get(0).map_err(failed)?;
        let last_id: i64 = row.get(1).map_err(failed)?;
        let ids = row
            .get_ref(2)
            .and_then(|v| Ok(v.as_blob()?))
            .map_err(failed)?;
        let sketches = row
            .get_ref(3)
            .and_then(|v| Ok(v.as_blob()?))
            .map_err(failed)?;
        if let Some(block) = parse(first_id, last_id, ids, sketches) {
            blocks.push(block);
        }
    }
    Ok(blocks)
}

/// A block from its stored blobs: `ids` as little-endian `i64`s, `sketches`
/// as the format byte, the words per plane, then each record's planes.
fn parse(first_id: i64, last_id: i64, ids: &[u8], sketches: &[u8]) -> Option<Block> {
    let [format, words, planes @ ..] = sketches else {
        return None;
    };
    let words = *words as usize;
    let count = ids.len() / 8;
    if *format != FORMAT
        || words == 0
        || !ids.len().is_multiple_of(8)
        || planes.len() != count * 16 * words
    {
        return None;
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("eight bytes"));
    Some(Block {
        first_id,
        last_id,
        words,
        ids: ids
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("eight bytes")))
            .collect(),
        planes: planes.chunks_exact(8).map(word).collect(),
    })
}

/// A block being filled.
#[derive(Default)]
struct Packing {
    words: usize,
    ids: Vec<u8>,
    sketches: Vec<u8>,
    first: i64,
    last: i64,
    count: usize,
}

impl Packing {
    fn push(&mut self, id: i64, sketch: &Sketch) -> bool {
        if self.count == 0 {
            self.words = sketch.signs.len();
            self.first = id;
            self.sketches = vec![FORMAT, self.words as u8];
        }
        if sketch.signs.len() != self.words || self.words > u8::MAX as usize {
            return false;
        }
        self.ids.extend_from_slice(&id.to_le_bytes());
        for word in sketch.signs.iter().chain(&sketch.large) {
            self.sketches.extend_from_slice(&word.to_le_bytes());
        }
        self.last = id;
        self.count += 1;
        true
    }
}

/// Pack `session`'s records after its last block into blocks, as many
/// whole blocks as they fill, once the session has more than
/// [`EXACT_LIMIT`] records (inside the caller's transaction). Unsearchable
/// records are left out; a record with a sketch of an older format has it
/// computed from its vector. Stops at a record whose sketch cannot join the
/// block (another length): the rest stay loose.
pub fn pack(conn: &Connection, session: &str) -> Result<(), MemoryError> {
    let after: i64 = conn
        .prepare_cached(
            "SELECT coalesce(max(last_id), 0) FROM memory_sketch_block WHERE session = ?1",
        )
        .map_err(failed)?
        .query_row([session], |row| row.get(0))
        .map_err(failed)?;
    // Counted up to what decides: a session without blocks gets them once
    // it is too large to be scanned exactly.
    let enough = if after > 0 {
        BLOCK_RECORDS
    } else {
        EXACT_LIMIT + 1
    };
    let loose: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM memory WHERE session = ?1 AND id > ?2 LIMIT ?3)",
        )
        .map_err(failed)?
        .query_row(params![session, after, enough as i64], |row| row.get(0))
        .map_err(failed)?;
    if (loose as usize) < enough {
        return Ok(());
    }
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT id, sketch, CASE WHEN {OUTDATED_SQL} THEN embedding END
             FROM memory WHERE session = ?1 AND id > ?2 ORDER BY id"
        ))
        .map_err(failed)?;
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO memory_sketch_block (session, first_id, last_id, ids, sketches)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(failed)?;
    let mut rows = select.query(params![session, after]).map_err(failed)?;
    let mut block = Packing::default();
    while let Some(row) = rows.next().map_err(failed)? {
        let id: i64 = row.get(0).map_err(failed)?;
        let stored: Option<Vec<u8>> = row.get(1).map_err(failed)?;
        let embedding: Option<Vec<u8>> = row.get(2).map_err(failed)?;
        let vector = embedding.map(|blob| unit(decode_embedding(&blob)));
        let Some(found) = record_sketch(conn, id, stored.as_deref(), vector.as_deref())? else {
            continue; // unsearchable: in no block
        };
        if !block.push(id, &found) {
            break;
        }
        if block.count == BLOCK_RECORDS {
            let full = std::mem::take(&mut block);
            insert
                .execute(params![
                    session,
                    full.first,
                    full.last,
                    full.ids,
                    full.sketches
                ])
                .map_err(failed)?;
        }
    }
    Ok(())
}

/// Drop the blocks that may hold a record `what` deletes (inside the
/// caller's transaction).
pub fn forget(conn: &Connection, what: &Forget) -> Result<(), MemoryError> {
    match what {
        Forget::Record { session, id } => conn.execute(
            "DELETE FROM memory_sketch_block WHERE session = ?1 AND first_id <= ?2 AND last_id >= ?2",
            params![session, id],
        ),
        Forget::Session(session)
        | Forget::Before {
            session: Some(session),
            ..
        } => conn.execute(
            "DELETE FROM memory_sketch_block WHERE session = ?1",
            [session],
        ),
        Forget::Before { session: None, .. } => {
            conn.execute("DELETE FROM memory_sketch_block", [])
        }
    }
    .map(|_| ())
    .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::sketch::sketch;

    #[test]
    fn a_block_round_trips_through_its_blobs_and_a_malformed_one_is_not_read() {
        let mut packing = Packing::default();
        let a = sketch(&[0.5, -0.9, 0.01, 0.3]);
        let b = sketch(&[-0.5, 0.9, 0.01, -0.3]);
        assert!(packing.push(7, &a));
        assert!(packing.push(9, &b));
        let long = sketch(&[0.1; 70]);
        assert!(!packing.push(10, &long), "another length");
        let block = parse(7, 9, &packing.ids, &packing.sketches).unwrap();
        assert_eq!(block.ids, [7, 9]);
        assert_eq!(block.record(0), (&a.signs[..], &a.large[..]));
        assert_eq!(block.record(1), (&b.signs[..], &b.large[..]));

        assert!(parse(7, 9, &packing.ids[..8], &packing.sketches).is_none());
        let mut other = packing.sketches.clone();
        other[0] = 1;
        assert!(parse(7, 9, &packing.ids, &other).is_none());
        assert!(parse(7, 9, &[], &[]).is_none());
    }
}
