//! [`SqliteStore`]: memory in one SQLite file (WAL mode), embeddings stored
//! as half-precision blobs, recall by an exact cosine scan over vectors kept
//! in RAM and topped up incrementally from the file (so writes by other
//! processes are seen on the next recall). A database file that goes away
//! under the store (deleted, moved, its disk unmounted) is an error of every
//! call until it is back; another file put in its place is an error until the
//! store is opened again.

use std::collections::{BinaryHeap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use agentry_core::BoxFuture;
use agentry_core::embed::dot;
use agentry_core::memory::{
    MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts,
};
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use crate::watched::{FileState, WatchedFile};

/// `AUTOINCREMENT`: a deleted row's id is never given to a new row, so the
/// incremental cache never misses one. (Files made before it keep plain
/// ids; lookups check the session, so a reused id cannot leak either.)
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memory (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    session   TEXT    NOT NULL,
    role      TEXT    NOT NULL,
    source    TEXT    NOT NULL,
    text      TEXT    NOT NULL,
    metadata  TEXT    NOT NULL,
    timestamp INTEGER NOT NULL,
    embedding BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_session_time ON memory (session, timestamp, id);
";

/// Memory records in one SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Mutex<Db>,
    cache: Mutex<Cache>,
    /// One operation at a time goes to a blocking thread, in the order they
    /// came (a fair queue): many concurrent callers neither pile threads up
    /// on the connection's lock nor overtake one another for long.
    turn: Arc<tokio::sync::Semaphore>,
}

/// The connection and the file it opened (none in memory).
struct Db {
    conn: Connection,
    file: Option<WatchedFile>,
}

/// Unit vectors of every record seen so far, by session.
#[derive(Default)]
struct Cache {
    last_id: i64,
    sessions: HashMap<String, SessionVectors>,
}

#[derive(Default)]
struct SessionVectors {
    ids: Vec<i64>,
    dims: usize,
    /// `ids.len() * dims` values, each vector scaled to unit length.
    values: Vec<f32>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

fn failed(error: impl std::fmt::Display) -> MemoryError {
    MemoryError(format!("sqlite: {error}"))
}

/// Lock a mutex even if a thread panicked while holding it: the data it
/// guards (a connection, a cache topped up row by row) stays usable, and one
/// panic must not turn every later call into "lock poisoned".
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why `vector` cannot be stored, if it cannot: empty, or not finite.
fn unusable(vector: &[f32]) -> Option<&'static str> {
    if vector.is_empty() {
        Some("is empty")
    } else if vector.iter().any(|x| !x.is_finite()) {
        Some("has a value that is not a finite number")
    } else {
        None
    }
}

/// Half-precision little-endian bytes of `vector`.
pub fn encode_embedding(vector: &[f32]) -> Vec<u8> {
    vector
        .iter()
        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
        .collect()
}

/// The vector in half-precision little-endian `bytes`.
pub fn decode_embedding(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|pair| half::f16::from_le_bytes([pair[0], pair[1]]).to_f32())
        .collect()
}

fn unit(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

impl SqliteStore {
    /// Open (or create) the store in the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let conn = configured(Connection::open(path).map_err(failed)?)?;
        // The file SQLite opened, also when `path` is a `file:` URI.
        let file = match conn.path() {
            Some(opened) if !opened.is_empty() => {
                Some(WatchedFile::new(Path::new(opened)).map_err(failed)?)
            }
            _ => None,
        };
        Ok(Self::with_connection(conn, file))
    }

    /// A store in a private in-memory database (for tests).
    pub fn in_memory() -> Result<Self, MemoryError> {
        let conn = configured(Connection::open_in_memory().map_err(failed)?)?;
        Ok(Self::with_connection(conn, None))
    }

    fn with_connection(conn: Connection, file: Option<WatchedFile>) -> Self {
        Self {
            inner: Arc::new(Inner {
                db: Mutex::new(Db { conn, file }),
                cache: Mutex::new(Cache::default()),
                turn: Arc::new(tokio::sync::Semaphore::new(1)),
            }),
        }
    }

    /// The connection, once the file is known to be the one opened: an error
    /// while it is gone, and when another file took its place.
    fn db(&self) -> Result<MutexGuard<'_, Db>, MemoryError> {
        let db = lock(&self.inner.db);
        let Some(file) = &db.file else {
            return Ok(db);
        };
        match file.state() {
            FileState::Same => Ok(db),
            FileState::Gone(error) => Err(MemoryError(format!(
                "sqlite: the database file {} is gone ({error}): deleted, moved, or on a disk that went away; nothing was read or written",
                file.path().display()
            ))),
            // Reopening could replay this connection's write-ahead log onto
            // the new file; the caller opens the store again instead.
            FileState::Replaced => Err(MemoryError(format!(
                "sqlite: the database file {} was replaced by another file while open; open the store again to use it",
                file.path().display()
            ))),
        }
    }

    /// Cap the database file at about `bytes` (a quota; also how a full disk
    /// is tested). A write past it fails with a [`MemoryError`] and stores
    /// nothing; records already stored stay readable, and writes work again
    /// once the cap is raised.
    pub fn set_max_size(&self, bytes: u64) -> Result<(), MemoryError> {
        let db = self.db()?;
        let page_size: u64 = db
            .conn
            .pragma_query_value(None, "page_size", |row| row.get(0))
            .map_err(failed)?;
        db.conn
            .pragma_update(None, "max_page_count", (bytes / page_size).max(1))
            .map_err(failed)
    }

    /// The database file's size in bytes (pages in use × page size).
    pub fn size(&self) -> Result<u64, MemoryError> {
        let db = self.db()?;
        let conn = &db.conn;
        let pages: u64 = conn
            .pragma_query_value(None, "page_count", |row| row.get(0))
            .map_err(failed)?;
        let page_size: u64 = conn
            .pragma_query_value(None, "page_size", |row| row.get(0))
            .map_err(failed)?;
        Ok(pages * page_size)
    }

    /// Keep many records in one transaction. A record whose embedding is
    /// empty, not finite, or of another length than its session's refuses
    /// the whole batch (nothing is stored). Embeddings are stored scaled to
    /// unit length, so no value overflows half precision.
    pub fn add_many_blocking(&self, records: &[MemoryRecord]) -> Result<(), MemoryError> {
        let mut db = self.db()?;
        {
            let mut cache = lock(&self.inner.cache);
            refresh(&db.conn, &mut cache)?;
            let mut dims: HashMap<&str, usize> = HashMap::new();
            for record in records {
                if let Some(problem) = unusable(&record.embedding) {
                    return Err(MemoryError(format!(
                        "sqlite: the embedding of a record for session {:?} {problem}",
                        record.session
                    )));
                }
                let known = cache
                    .sessions
                    .get(&record.session)
                    .filter(|vectors| !vectors.ids.is_empty())
                    .map(|vectors| vectors.dims);
                let expected = *dims
                    .entry(record.session.as_str())
                    .or_insert(known.unwrap_or(record.embedding.len()));
                if record.embedding.len() != expected {
                    return Err(MemoryError(format!(
                        "sqlite: session {:?} holds {expected}-dimension embeddings, got {}",
                        record.session,
                        record.embedding.len()
                    )));
                }
            }
        }
        let tx = db.conn.transaction().map_err(failed)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO memory (session, role, source, text, metadata, timestamp, embedding)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(failed)?;
            for record in records {
                insert
                    .execute(params![
                        record.session,
                        record.role,
                        record.source,
                        record.text,
                        serde_json::Value::Object(record.metadata.clone()).to_string(),
                        record.timestamp,
                        encode_embedding(&unit(record.embedding.clone())),
                    ])
                    .map_err(failed)?;
            }
        }
        tx.commit().map_err(failed)?;
        // Gone while writing: the commit went to a file no one will open again.
        match &db.file {
            Some(file) if !matches!(file.state(), FileState::Same) => Err(MemoryError(format!(
                "sqlite: the database file {} went away while writing; the records may not be stored",
                file.path().display()
            ))),
            _ => Ok(()),
        }
    }

    /// Recall on the calling thread (blocking).
    pub fn recall_blocking(
        &self,
        session: &str,
        query: &[f32],
        opts: RecallOpts,
    ) -> Result<Vec<Recalled>, MemoryError> {
        if let Some(problem) = unusable(query) {
            return Err(MemoryError(format!("sqlite: the query vector {problem}")));
        }
        let db = self.db()?;
        let conn = &db.conn;
        let mut cache = lock(&self.inner.cache);
        refresh(conn, &mut cache)?;
        let Some(vectors) = cache.sessions.get(session) else {
            return Ok(Vec::new());
        };
        let query = unit(query.to_vec());
        if vectors.ids.is_empty() || vectors.dims != query.len() || opts.limit == 0 {
            return Ok(Vec::new());
        }
        // Keep the best `limit` in a min-heap of (score, position).
        let mut best: BinaryHeap<std::cmp::Reverse<(Score, usize)>> = BinaryHeap::new();
        for (position, vector) in vectors.values.chunks_exact(vectors.dims).enumerate() {
            let score = dot(vector, &query);
            if score < opts.min_score {
                continue;
            }
            if best.len() < opts.limit {
                best.push(std::cmp::Reverse((Score(score), position)));
            } else if best.peek().is_some_and(|worst| Score(score) > worst.0.0) {
                best.pop();
                best.push(std::cmp::Reverse((Score(score), position)));
            }
        }
        let mut ranked: Vec<(f32, i64)> = best
            .into_iter()
            .map(|std::cmp::Reverse((score, position))| (score.0, vectors.ids[position]))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // The session is checked again on every lookup: a row id freed by a
        // delete and reused must never serve another session's text.
        let mut select = conn
            .prepare_cached(
                "SELECT session, role, source, text, metadata, timestamp, embedding FROM memory WHERE id = ?1 AND session = ?2",
            )
            .map_err(failed)?;
        let mut hits = Vec::with_capacity(ranked.len());
        for (score, id) in ranked {
            if let Some(record) = select
                .query_row(params![id, session], read_record)
                .optional()
                .map_err(failed)?
            {
                hits.push(Recalled { record, score });
            }
        }
        Ok(hits)
    }

    /// Delete every record of `session` on the calling thread (blocking).
    pub fn forget_session_blocking(&self, session: &str) -> Result<u64, MemoryError> {
        let db = self.db()?;
        let deleted = db
            .conn
            .execute("DELETE FROM memory WHERE session = ?", [session])
            .map_err(failed)?;
        lock(&self.inner.cache).sessions.remove(session);
        Ok(deleted as u64)
    }

    /// The recent window on the calling thread (blocking).
    pub fn recent_blocking(
        &self,
        session: &str,
        opts: &RecentOpts,
    ) -> Result<Vec<MemoryRecord>, MemoryError> {
        let db = self.db()?;
        let conn = &db.conn;
        let mut sql = String::from(
            "SELECT session, role, source, text, metadata, timestamp, embedding FROM memory WHERE session = ?",
        );
        let mut args: Vec<String> = vec![session.to_owned()];
        if !opts.include_roles.is_empty() {
            sql.push_str(&format!(
                " AND role IN ({})",
                vec!["?"; opts.include_roles.len()].join(", ")
            ));
            args.extend(opts.include_roles.iter().cloned());
        }
        if !opts.exclude_roles.is_empty() {
            sql.push_str(&format!(
                " AND role NOT IN ({})",
                vec!["?"; opts.exclude_roles.len()].join(", ")
            ));
            args.extend(opts.exclude_roles.iter().cloned());
        }
        sql.push_str(" ORDER BY timestamp DESC, id DESC");
        if let Some(limit) = opts.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut statement = conn.prepare(&sql).map_err(failed)?;
        let mut records: Vec<MemoryRecord> = statement
            .query_map(params_from_iter(args), read_record)
            .map_err(failed)?
            .collect::<Result<_, _>>()
            .map_err(failed)?;
        records.reverse();
        Ok(records)
    }
}

/// An `f32` ordered for the heap (NaN-free by construction: cosine of finite vectors).
#[derive(Clone, Copy, PartialEq)]
struct Score(f32);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A connection in WAL mode with the schema in place.
fn configured(conn: Connection) -> Result<Connection, MemoryError> {
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(failed)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(failed)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    conn.execute_batch(SCHEMA).map_err(failed)?;
    Ok(conn)
}

fn read_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryRecord> {
    let metadata: String = row.get(4)?;
    let blob: Vec<u8> = row.get(6)?;
    Ok(MemoryRecord {
        session: row.get(0)?,
        role: row.get(1)?,
        source: row.get(2)?,
        text: row.get(3)?,
        metadata: serde_json::from_str(&metadata).unwrap_or_default(),
        timestamp: row.get(5)?,
        embedding: decode_embedding(&blob),
    })
}

/// Load every record added since the last look (by this or any process).
fn refresh(conn: &Connection, cache: &mut Cache) -> Result<(), MemoryError> {
    let mut statement = conn
        .prepare_cached("SELECT id, session, embedding FROM memory WHERE id > ?1 ORDER BY id")
        .map_err(failed)?;
    let mut rows = statement.query([cache.last_id]).map_err(failed)?;
    while let Some(row) = rows.next().map_err(failed)? {
        let id: i64 = row.get(0).map_err(failed)?;
        let session: String = row.get(1).map_err(failed)?;
        let blob: Vec<u8> = row.get(2).map_err(failed)?;
        let vector = unit(decode_embedding(&blob));
        cache.last_id = id;
        // Rows this store did not check (older files, other writers) are
        // skipped, never trusted: an empty or non-finite vector is unsearchable.
        if let Some(problem) = unusable(&vector) {
            tracing::warn!(id, problem, "a memory record's embedding is not searchable");
            continue;
        }
        let entry = cache.sessions.entry(session).or_default();
        if entry.ids.is_empty() {
            entry.dims = vector.len();
        }
        if vector.len() == entry.dims {
            entry.ids.push(id);
            entry.values.extend_from_slice(&vector);
        } else {
            tracing::warn!(
                id,
                "a memory record's embedding has another length; it is not searchable"
            );
        }
    }
    Ok(())
}

fn blocking<T: Send + 'static>(
    store: &SqliteStore,
    work: impl FnOnce(SqliteStore) -> Result<T, MemoryError> + Send + 'static,
) -> BoxFuture<'static, Result<T, MemoryError>> {
    let store = store.clone();
    Box::pin(async move {
        let turn = store.inner.turn.clone().acquire_owned().await;
        let turn = turn.map_err(|e| failed(format!("worker: {e}")))?;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            work(store)
        })
        .await
        .map_err(|e| failed(format!("worker: {e}")))?
    })
}

impl MemoryStore for SqliteStore {
    fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        blocking(self, move |store| {
            store.add_many_blocking(std::slice::from_ref(&record))
        })
    }

    fn recall<'a>(
        &'a self,
        session: &'a str,
        query: &'a [f32],
        opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        let (session, query) = (session.to_owned(), query.to_vec());
        blocking(self, move |store| {
            store.recall_blocking(&session, &query, opts)
        })
    }

    fn recent<'a>(
        &'a self,
        session: &'a str,
        opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        let (session, opts) = (session.to_owned(), opts.clone());
        blocking(self, move |store| store.recent_blocking(&session, &opts))
    }

    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64, MemoryError>> {
        let session = session.to_owned();
        blocking(self, move |store| store.forget_session_blocking(&session))
    }
}
