//! [`SqliteStore`]: memory in one SQLite file (WAL mode), embeddings stored
//! as half-precision blobs. Recall goes through a per-session index in RAM
//! ([`index`]): small sessions are scanned exactly; large ones by 2-bit
//! sketches ([`sketch`]) read from a covering index, with the nearest candidates
//! re-scored exactly from the file. The index is topped up incrementally
//! (writes by other processes are seen on the next recall) and dropped when
//! any connection deletes records. Keyword search ([`text`]) goes through
//! an FTS5 index of the records' words, ranked by BM25. A database file that goes away under the
//! store (deleted, moved, its disk unmounted) is an error of every call
//! until it is back; another file put in its place is an error until the
//! store is opened again.

mod blocks;
mod index;
mod journal;
mod lookup;
mod manage;
mod private;
mod schema;
mod sketch;
mod text;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agentry_core::BoxFuture;
use agentry_core::memory::{
    Forget, ListOpts, MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts,
    SessionSummary, StoredRecord,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params, params_from_iter};

use crate::watched::{FileState, WatchedFile};
use index::{Found, SessionIndex};
use lookup::{refresh, rescore, session_dimensions};
use schema::configured;
use sketch::sketch;

/// Memory records in one SQLite file. Each store (one connection) keeps
/// SQLite's page cache at up to 64 MiB, filled as pages are read.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    db: Mutex<Db>,
    indexes: Mutex<Indexes>,
    /// Records of a large session re-scored exactly per recall (0: the
    /// default for the session's size).
    candidates: AtomicUsize,
    /// One operation at a time goes to a blocking thread, in the order they
    /// came (a fair queue): many concurrent callers neither pile threads up
    /// on the connection's lock nor overtake one another for long.
    turn: Arc<tokio::sync::Semaphore>,
}

/// The connection and the file it opened (none in memory).
struct Db {
    conn: Connection,
    file: Option<WatchedFile>,
    /// Whether keyword search's temporary tables exist on this connection.
    keyword_helpers: bool,
}

/// The recall index of every session looked at so far.
#[derive(Default)]
struct Indexes {
    /// `memory_forgotten.count` when the indexes were loaded: when another
    /// value is read, records were deleted and every index is reloaded.
    forgotten: i64,
    sessions: HashMap<String, SessionIndex>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SqliteStore")
    }
}

fn failed(error: impl std::error::Error + Send + Sync + 'static) -> MemoryError {
    MemoryError::backend("sqlite", error)
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
    use half::slice::HalfFloatSliceExt;
    let halves: Vec<half::f16> = bytes
        .chunks_exact(2)
        .map(|pair| half::f16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    // Eight at a time with the CPU's conversion instructions where it has them.
    let mut values = vec![0.0f32; halves.len()];
    halves.convert_to_f32_slice(&mut values);
    values
}

fn unit(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

impl SqliteStore {
    /// Open (or create) the store in the file at `path`. A file it creates
    /// has mode 0600, and so have its `-wal` and `-shm` files. A `path` that
    /// is a symbolic link is refused (SQLite's `NOFOLLOW`): a link planted
    /// where the store is looked for (a cloned repository's `agentry.db`)
    /// would otherwise make or write a file elsewhere.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref();
        private::refuse_link(path)?;
        private::create(path);
        let flags = OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = configured(Connection::open_with_flags(path, flags).map_err(failed)?)?;
        // The file SQLite opened, also when `path` is a `file:` URI.
        let file = match conn.path() {
            Some(opened) if !opened.is_empty() => {
                if let Err(error) = private::companions(Path::new(opened)) {
                    tracing::warn!(%error, "the store's -wal and -shm files keep their mode");
                }
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
                db: Mutex::new(Db {
                    conn,
                    file,
                    keyword_helpers: false,
                }),
                indexes: Mutex::new(Indexes::default()),
                candidates: AtomicUsize::new(0),
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
            FileState::Gone(error) => Err(MemoryError::refused(format!(
                "sqlite: the database file {} is gone ({error}): deleted, moved, or on a disk that went away; nothing was read or written",
                file.path().display()
            ))),
            // Reopening could replay this connection's write-ahead log onto
            // the new file; the caller opens the store again instead.
            FileState::Replaced => Err(MemoryError::refused(format!(
                "sqlite: the database file {} was replaced by another file while open; open the store again to use it",
                file.path().display()
            ))),
        }
    }

    /// How many records of a large session (over 16,384) are re-scored
    /// exactly per recall, best by sketch first. The default is 64, or one
    /// record in 6,000 past 384,000 (166 at 1M). More finds more of the
    /// exact top results at the cost of reading more vectors; 0 goes back
    /// to the default. `BENCHMARKS.md` has the trade-off measured on real text.
    pub fn set_rescore_candidates(&self, candidates: usize) {
        self.inner.candidates.store(candidates, Ordering::Relaxed);
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
            let mut dims: HashMap<&str, usize> = HashMap::new();
            for record in records {
                if let Some(problem) = unusable(&record.embedding) {
                    return Err(MemoryError::refused(format!(
                        "sqlite: the embedding of a record for session {:?} {problem}",
                        record.session
                    )));
                }
                let expected = match dims.get(record.session.as_str()) {
                    Some(expected) => *expected,
                    None => {
                        let known = session_dimensions(&db.conn, &record.session)?;
                        *dims
                            .entry(record.session.as_str())
                            .or_insert(known.unwrap_or(record.embedding.len()))
                    }
                };
                if record.embedding.len() != expected {
                    return Err(MemoryError::refused(format!(
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
                    "INSERT INTO memory (session, role, source, text, metadata, timestamp, embedding, sketch)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(failed)?;
            for record in records {
                let vector = unit(record.embedding.clone());
                insert
                    .execute(params![
                        record.session,
                        record.role,
                        record.source,
                        record.text,
                        serde_json::Value::Object(record.metadata.clone()).to_string(),
                        record.timestamp,
                        encode_embedding(&vector),
                        sketch(&vector).to_bytes(),
                    ])
                    .map_err(failed)?;
            }
        }
        // Sessions that now have a block's worth of records after their
        // last block get it, in the same transaction.
        let mut sessions: Vec<&str> = records.iter().map(|r| r.session.as_str()).collect();
        sessions.sort_unstable();
        sessions.dedup();
        for session in sessions {
            blocks::pack(&tx, session)?;
        }
        tx.commit().map_err(failed)?;
        // Gone while writing: the commit went to a file no one will open again.
        match &db.file {
            Some(file) if !matches!(file.state(), FileState::Same) => {
                Err(MemoryError::refused(format!(
                    "sqlite: the database file {} went away while writing; the records may not be stored",
                    file.path().display()
                )))
            }
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
            return Err(MemoryError::refused(format!(
                "sqlite: the query vector {problem}"
            )));
        }
        let db = self.db()?;
        let conn = &db.conn;
        let query = unit(query.to_vec());
        let found = {
            let mut indexes = lock(&self.inner.indexes);
            let Some(index) = refresh(conn, &mut indexes, session)? else {
                return Ok(Vec::new());
            };
            let candidates = match self.inner.candidates.load(Ordering::Relaxed) {
                0 => index::default_candidates(index.len()),
                chosen => chosen,
            };
            index.search(&query, opts.limit, opts.min_score, candidates)
        };
        let ranked = match found {
            Found::Ranked(ranked) => ranked,
            Found::Rescore(candidates) => rescore(conn, session, &candidates, &query, opts)?,
        };
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
        self.forget_blocking(&Forget::Session(session.to_owned()))
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

fn blocking<T: Send + 'static>(
    store: &SqliteStore,
    work: impl FnOnce(SqliteStore) -> Result<T, MemoryError> + Send + 'static,
) -> BoxFuture<'static, Result<T, MemoryError>> {
    let store = store.clone();
    Box::pin(async move {
        let turn = store.inner.turn.clone().acquire_owned().await;
        let turn = turn.map_err(|e| MemoryError::backend("sqlite: worker", e))?;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            work(store)
        })
        .await
        .map_err(|e| MemoryError::backend("sqlite: worker", e))?
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

    fn search_text<'a>(
        &'a self,
        session: &'a str,
        text: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        let (session, text) = (session.to_owned(), text.to_owned());
        blocking(self, move |store| {
            store.search_text_blocking(&session, &text, limit)
        })
    }

    fn add_many<'a>(
        &'a self,
        records: &'a [MemoryRecord],
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        let records = records.to_vec();
        blocking(self, move |store| store.add_many_blocking(&records))
    }

    fn sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionSummary>, MemoryError>> {
        blocking(self, |store| store.sessions_blocking())
    }

    fn list<'a>(
        &'a self,
        session: &'a str,
        opts: ListOpts,
    ) -> BoxFuture<'a, Result<Vec<StoredRecord>, MemoryError>> {
        let session = session.to_owned();
        blocking(self, move |store| store.list_blocking(&session, opts))
    }

    fn forget<'a>(&'a self, what: &'a Forget) -> BoxFuture<'a, Result<u64, MemoryError>> {
        let what = what.clone();
        blocking(self, move |store| store.forget_blocking(&what))
    }
}
