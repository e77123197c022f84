//! What the SQLite store reads for recall: each session's index rows
//! (sketches from the covering index; vectors only for small sessions),
//! topped up since the last look, and the exact re-scoring of a large
//! session's candidates from the vectors in the file.

use std::collections::HashMap;

use agentry_core::embed::dot;
use agentry_core::memory::{MemoryError, RecallOpts};
use rusqlite::{Connection, OptionalExtension, params};

use super::blocks;
use super::index::{self, SessionIndex, rank};
use super::sketch::{Sketch, sketch};
use super::{Indexes, decode_embedding, failed, unit, unusable};

/// Each stored embedding's length in values: two bytes (half precision) a value.
pub(super) fn session_dimensions(
    conn: &Connection,
    session: &str,
) -> Result<Option<usize>, MemoryError> {
    conn.prepare_cached(
        "SELECT length(embedding) FROM memory WHERE session = ?1 AND length(embedding) > 0 LIMIT 1",
    )
    .map_err(failed)?
    .query_row([session], |row| row.get::<_, i64>(0))
    .optional()
    .map_err(failed)
    .map(|bytes| bytes.map(|b| b as usize / 2))
}

/// The index of `session`, topped up with every record added since the last
/// look (by this or any process); every index is dropped first when any
/// connection deleted records since. `None` for a session with no records.
pub(super) fn refresh<'i>(
    conn: &Connection,
    indexes: &'i mut Indexes,
    session: &str,
) -> Result<Option<&'i SessionIndex>, MemoryError> {
    let forgotten: i64 = conn
        .prepare_cached("SELECT count FROM memory_forgotten WHERE id = 1")
        .map_err(failed)?
        .query_row([], |row| row.get(0))
        .optional()
        .map_err(failed)?
        .unwrap_or(0);
    if forgotten != indexes.forgotten {
        indexes.sessions.clear();
        indexes.forgotten = forgotten;
    }
    // One snapshot: the sketches and the vectors read agree.
    let tx = conn.unchecked_transaction().map_err(failed)?;
    let index = indexes.sessions.entry(session.to_owned()).or_default();
    let first_look = index.len() == 0 && index.last_id == 0;
    if first_look {
        load_blocks(&tx, session, index)?;
    }
    let with_vectors = index.wants_vectors() && !first_look;
    let rows = new_rows(&tx, session, index.last_id, i64::MAX, with_vectors)?;
    // A first look reads sketches only; vectors follow for a small session.
    let small = index.wants_vectors() && rows.len() <= index::EXACT_LIMIT;
    let vectors: HashMap<i64, Vec<f32>> = if first_look && small {
        vectors_up_to(&tx, session, rows.last().map_or(0, |r| r.0))?
    } else {
        HashMap::new()
    };
    if first_look && !small {
        index.drop_vectors();
    }
    push_rows(index, rows, vectors);
    tx.finish().map_err(failed)?;
    if index.len() == 0 {
        indexes.sessions.remove(session);
        return Ok(None);
    }
    Ok(indexes.sessions.get(session))
}

/// Add `rows` to `index`, each with its vector from the row or `vectors`.
fn push_rows(index: &mut SessionIndex, rows: Vec<IndexRow>, mut vectors: HashMap<i64, Vec<f32>>) {
    for (id, sketch, vector) in rows {
        let vector = vector.or_else(|| vectors.remove(&id));
        let Some(sketch) = sketch else {
            tracing::warn!(id, "a memory record's embedding is not searchable");
            index.last_id = index.last_id.max(id);
            continue;
        };
        if !index.push(id, &sketch, vector.as_deref()) {
            tracing::warn!(
                id,
                "a memory record's embedding has another length; it is not searchable"
            );
            index.last_id = index.last_id.max(id);
        }
    }
}

/// On a first look at a large session: its blocks' records, and the
/// records in the gaps between blocks one by one, into `index` (which then
/// keeps no vectors). Blocks that together hold no more than
/// [`index::EXACT_LIMIT`] records are not used: the session has shrunk
/// since, and is read whole to be scanned exactly.
fn load_blocks(
    conn: &Connection,
    session: &str,
    index: &mut SessionIndex,
) -> Result<(), MemoryError> {
    let blocks = blocks::read(conn, session)?;
    if blocks.iter().map(|b| b.ids.len()).sum::<usize>() <= index::EXACT_LIMIT {
        return Ok(());
    }
    index.drop_vectors();
    for block in blocks {
        let gap = new_rows(conn, session, index.last_id, block.first_id, false)?;
        push_rows(index, gap, HashMap::new());
        for (i, &id) in block.ids.iter().enumerate() {
            let (signs, large) = block.record(i);
            if !index.push_planes(id, signs, large, None) {
                tracing::warn!(
                    id,
                    "a memory record's embedding has another length; it is not searchable"
                );
            }
        }
        index.last_id = index.last_id.max(block.last_id);
    }
    Ok(())
}

/// A row as the index reads it: id, sketch (`None`: unsearchable), and the
/// unit vector when asked for.
type IndexRow = (i64, Option<Sketch>, Option<Vec<f32>>);

/// `session`'s rows after `after` and before `before`, in id order: from
/// the covering index alone unless `with_vectors`. A row without a sketch in the current
/// format (written by an older version) has it computed from its embedding.
fn new_rows(
    conn: &Connection,
    session: &str,
    after: i64,
    before: i64,
    with_vectors: bool,
) -> Result<Vec<IndexRow>, MemoryError> {
    let sql = if with_vectors {
        "SELECT id, sketch, embedding FROM memory WHERE session = ?1 AND id > ?2 AND id < ?3 ORDER BY id"
    } else {
        "SELECT id, sketch, NULL FROM memory WHERE session = ?1 AND id > ?2 AND id < ?3 ORDER BY id"
    };
    let mut select = conn.prepare_cached(sql).map_err(failed)?;
    let mut rows = select
        .query(params![session, after, before])
        .map_err(failed)?;
    let mut found = Vec::new();
    while let Some(row) = rows.next().map_err(failed)? {
        let id: i64 = row.get(0).map_err(failed)?;
        let stored: Option<Vec<u8>> = row.get(1).map_err(failed)?;
        let blob: Option<Vec<u8>> = row.get(2).map_err(failed)?;
        let vector = blob.map(|b| unit(decode_embedding(&b)));
        let found_sketch = record_sketch(conn, id, stored.as_deref(), vector.as_deref())?;
        let vector = vector.filter(|v| unusable(v).is_none());
        found.push((id, found_sketch, vector));
    }
    Ok(found)
}

/// The unit vectors of `session`'s records up to id `last`.
fn vectors_up_to(
    conn: &Connection,
    session: &str,
    last: i64,
) -> Result<HashMap<i64, Vec<f32>>, MemoryError> {
    let mut select = conn
        .prepare_cached(
            "SELECT id, embedding FROM memory WHERE session = ?1 AND id <= ?2 ORDER BY id",
        )
        .map_err(failed)?;
    let rows = select
        .query_map(params![session, last], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?))
        })
        .map_err(failed)?;
    let mut vectors = HashMap::new();
    for row in rows {
        let (id, blob) = row.map_err(failed)?;
        vectors.insert(id, unit(decode_embedding(&blob)));
    }
    Ok(vectors)
}

/// Record `id`'s sketch: the `stored` one when it is in the current format,
/// computed otherwise from its unit `vector` (read from the row when not
/// given); `None` for an unsearchable record.
pub(super) fn record_sketch(
    conn: &Connection,
    id: i64,
    stored: Option<&[u8]>,
    vector: Option<&[f32]>,
) -> Result<Option<Sketch>, MemoryError> {
    if let Some(found) = stored.and_then(Sketch::from_bytes) {
        return Ok(Some(found));
    }
    let read;
    let vector = match vector {
        Some(vector) => vector,
        None => match vector_of(conn, id)? {
            Some(vector) => {
                read = vector;
                &read
            }
            None => return Ok(None),
        },
    };
    Ok(unusable(vector).is_none().then(|| sketch(vector)))
}

/// One record's unit vector, read from its row.
fn vector_of(conn: &Connection, id: i64) -> Result<Option<Vec<f32>>, MemoryError> {
    conn.prepare_cached("SELECT embedding FROM memory WHERE id = ?1")
        .map_err(failed)?
        .query_row([id], |row| row.get::<_, Vec<u8>>(0))
        .optional()
        .map_err(failed)
        .map(|blob| blob.map(|b| unit(decode_embedding(&b))))
}

/// Score `candidates` exactly against `query` with the vectors in the file;
/// the best `opts.limit` at or above `opts.min_score`, best first. Rows are
/// read in id order (neighbouring rows share pages) into one reused buffer.
pub(super) fn rescore(
    conn: &Connection,
    session: &str,
    candidates: &[i64],
    query: &[f32],
    opts: RecallOpts,
) -> Result<Vec<(f32, i64)>, MemoryError> {
    use half::slice::HalfFloatSliceExt;
    let mut select = conn
        .prepare_cached("SELECT embedding FROM memory WHERE id = ?1 AND session = ?2")
        .map_err(failed)?;
    let mut ids = candidates.to_vec();
    ids.sort_unstable();
    let mut halves = vec![half::f16::ZERO; query.len()];
    let mut vector = vec![0.0f32; query.len()];
    let mut scored = Vec::with_capacity(ids.len());
    for id in ids {
        let mut rows = select.query(params![id, session]).map_err(failed)?;
        let Some(row) = rows.next().map_err(failed)? else {
            continue; // deleted since the index was loaded
        };
        let blob = row
            .get_ref(0)
            .and_then(|v| Ok(v.as_blob()?))
            .map_err(failed)?;
        if blob.len() != query.len() * 2 {
            continue;
        }
        for (half, pair) in halves.iter_mut().zip(blob.chunks_exact(2)) {
            *half = half::f16::from_le_bytes([pair[0], pair[1]]);
        }
        halves.convert_to_f32_slice(&mut vector);
        let norm = dot(&vector, &vector).sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            continue;
        }
        let score = dot(&vector, query) / norm;
        if score >= opts.min_score {
            scored.push((score, id));
        }
    }
    rank(&mut scored);
    scored.truncate(opts.limit);
    Ok(scored)
}
