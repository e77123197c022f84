//! Durable runs' journals in the SQLite file ([`RunJournal`]): one row per
//! entry in `run_journal`, written in its own transaction (committed in WAL
//! mode, so a process killed right after finds it), numbered per run and
//! sealed ([`JournalKey`]); one row per run in `run_lease` with who holds
//! the run (fencing token, owner, expiry) and its sealed head.
//!
//! The key is `AGENTRY_JOURNAL_KEY` when the host gives one, else the file
//! next to the database named as it with `.key` added (made on first use,
//! mode 0600; see [`JournalKey::load_or_create`] for what a file must be);
//! a store in memory uses a key of this process. A store reads its key
//! once, at its first journal use, and refuses a run found with fewer
//! entries than it saw of it while open (rolled back).

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use agentry_core::BoxFuture;
use agentry_core::journal::{
    JournalError, JournalKey, Lease, RunEntry, RunJournal, SealedEntry, SealedHead, expect_next,
    now_ms,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{Db, Inner, SqliteStore, blocking};

fn store_error(error: impl std::fmt::Display) -> JournalError {
    JournalError::Store(format!("sqlite: {error}"))
}

/// The lease table, and the seal column of files made before journals
/// were sealed (their entries have none, and are not replayed).
const LEASE_TABLE: &str = "CREATE TABLE IF NOT EXISTS run_lease (
    run      TEXT    PRIMARY KEY,
    token    INTEGER NOT NULL,
    owner    TEXT    NOT NULL,
    until_ms INTEGER NOT NULL,
    entries  INTEGER NOT NULL DEFAULT 0,
    head     BLOB
)";

/// Bring the file's journal tables up to date (once per file, by whichever
/// connection comes first).
fn prepared(conn: &mut Connection) -> Result<(), JournalError> {
    let ready = |conn: &Connection| -> rusqlite::Result<bool> {
        let sealed: bool = conn.query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info('run_journal') WHERE name = 'seal'",
            [],
            |row| row.get(0),
        )?;
        let leased: bool = conn.query_row(
            "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'run_lease'",
            [],
            |row| row.get(0),
        )?;
        Ok(sealed && leased)
    };
    if ready(conn).map_err(store_error)? {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(store_error)?;
    if !ready(&tx).map_err(store_error)? {
        tx.execute(LEASE_TABLE, []).map_err(store_error)?;
        let sealed: bool = tx
            .query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('run_journal') WHERE name = 'seal'",
                [],
                |row| row.get(0),
            )
            .map_err(store_error)?;
        if !sealed {
            tx.execute("ALTER TABLE run_journal ADD COLUMN seal BLOB", [])
                .map_err(store_error)?;
        }
    }
    tx.commit().map_err(store_error)
}

/// The key that seals this file's journals.
fn key(db: &Db) -> Result<Arc<JournalKey>, JournalError> {
    static IN_MEMORY: OnceLock<Arc<JournalKey>> = OnceLock::new();
    if let Some(key) = JournalKey::from_env()? {
        return Ok(Arc::new(key));
    }
    match &db.file {
        Some(file) => {
            let mut path = file.path().as_os_str().to_owned();
            path.push(".key");
            JournalKey::load_or_create(std::path::Path::new(&path)).map(Arc::new)
        }
        None => match IN_MEMORY.get() {
            Some(key) => Ok(key.clone()),
            None => {
                let key = Arc::new(JournalKey::generate()?);
                Ok(IN_MEMORY.get_or_init(|| key).clone())
            }
        },
    }
}

/// The key of each store (by its shared state) that used its journal:
/// read once, at its first use, so a key file swapped or removed later
/// changes nothing for that store.
static KEYS: Mutex<Vec<(Weak<Inner>, Arc<Sealing>)>> = Mutex::new(Vec::new());

/// What a store keeps for its journals while it is open: its key, and the
/// most entries it has seen of each run (written or read and checked). A
/// run found with fewer was rolled back to an earlier sealed state (old
/// pages of the `-wal` file, a backup put back): refused. Only this store
/// knows: another process, or this one after a restart, does not.
struct Sealing {
    key: Arc<JournalKey>,
    seen: Mutex<std::collections::HashMap<String, u64>>,
}

impl Sealing {
    /// `run` was found with `entries`: an error when fewer than were seen.
    fn check(&self, run: &str, entries: u64) -> Result<(), JournalError> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let most = seen.entry(run.to_owned()).or_insert(0);
        if entries < *most {
            return Err(JournalError::Tampered {
                run: run.to_owned(),
                seq: entries,
                why: format!(
                    "it was rolled back: {most} entries were seen and {entries} are there",
                    most = *most
                ),
            });
        }
        *most = entries;
        Ok(())
    }
}

fn ttl_ms(ttl: Duration) -> u64 {
    ttl.as_millis().min(i64::MAX as u128 / 2) as u64
}

impl SqliteStore {
    /// This store's key (read at its first journal use, then kept) and
    /// what it has seen of its runs.
    fn sealing(&self, db: &Db) -> Result<Arc<Sealing>, JournalError> {
        let mut keys = KEYS.lock().unwrap_or_else(PoisonError::into_inner);
        keys.retain(|(store, _)| store.strong_count() > 0);
        let this = Arc::as_ptr(&self.inner);
        if let Some((_, sealing)) = keys.iter().find(|(store, _)| store.as_ptr() == this) {
            return Ok(sealing.clone());
        }
        let sealing = Arc::new(Sealing {
            key: key(db)?,
            seen: Mutex::default(),
        });
        keys.push((Arc::downgrade(&self.inner), sealing.clone()));
        Ok(sealing)
    }

    fn journal_db(&self) -> Result<std::sync::MutexGuard<'_, Db>, JournalError> {
        let mut db = self.db().map_err(|e| JournalError::Store(e.detail()))?;
        prepared(&mut db.conn)?;
        Ok(db)
    }

    fn append_blocking(
        &self,
        run: &str,
        seq: u64,
        entry: &str,
        token: u64,
    ) -> Result<(), JournalError> {
        let mut db = self.journal_db()?;
        let sealing = self.sealing(&db)?;
        let key = &sealing.key;
        // IMMEDIATE: the write lock is taken before the lease is read, so
        // the check and the write are one step for every process.
        let tx = db
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(store_error)?;
        let lease: Option<(i64, i64, i64)> = tx
            .query_row(
                "SELECT token, until_ms, entries FROM run_lease WHERE run = ?1",
                [run],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()
            .map_err(store_error)?;
        let next = match lease {
            Some((held, until, entries)) if held as u64 == token && until > now_ms() as i64 => {
                entries as u64
            }
            _ => {
                return Err(JournalError::Fenced {
                    run: run.to_owned(),
                });
            }
        };
        expect_next(run, next, seq)?;
        let previous: Option<Vec<u8>> = match seq {
            0 => None,
            _ => tx
                .query_row(
                    "SELECT seal FROM run_journal WHERE run = ?1 AND seq = ?2",
                    params![run, seq as i64 - 1],
                    |row| row.get::<_, Option<Vec<u8>>>(0),
                )
                .optional()
                .map_err(store_error)?
                .flatten(),
        };
        if seq > 0 && previous.is_none() {
            return Err(JournalError::Tampered {
                run: run.to_owned(),
                seq: seq - 1,
                why: "it has no seal".into(),
            });
        }
        let seal = key.seal_entry(run, seq, previous.as_deref(), entry);
        let head = key.seal_head(run, seq + 1, &seal);
        tx.execute(
            "INSERT INTO run_journal (run, seq, entry, seal) VALUES (?1, ?2, ?3, ?4)",
            params![run, seq as i64, entry, seal],
        )
        .map_err(store_error)?;
        tx.execute(
            "UPDATE run_lease SET entries = ?2, head = ?3 WHERE run = ?1",
            params![run, seq as i64 + 1, head],
        )
        .map_err(store_error)?;
        tx.commit().map_err(store_error)?;
        sealing.check(run, seq + 1)
    }

    fn entries_blocking(&self, run: &str) -> Result<Vec<RunEntry>, JournalError> {
        let db = self.journal_db()?;
        let sealing = self.sealing(&db)?;
        let key = &sealing.key;
        // One statement: the entries and the head as of one moment.
        let mut select = db
            .conn
            .prepare_cached(
                "SELECT j.seq, j.entry, j.seal, l.entries, l.head
                 FROM run_journal j LEFT JOIN run_lease l ON l.run = j.run
                 WHERE j.run = ?1 ORDER BY j.seq",
            )
            .map_err(store_error)?;
        let mut head = None;
        let rows = select
            .query_map([run], |row| {
                let entries: Option<i64> = row.get(3)?;
                let seal: Option<Vec<u8>> = row.get(4)?;
                Ok((
                    SealedEntry {
                        seq: row.get::<_, i64>(0)? as u64,
                        text: row.get(1)?,
                        seal: row.get(2)?,
                    },
                    entries.map(|entries| SealedHead {
                        entries: entries as u64,
                        seal,
                    }),
                ))
            })
            .map_err(store_error)?
            .map(|row| {
                row.map(|(entry, sealed)| {
                    head = sealed;
                    entry
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(store_error)?;
        if rows.is_empty() {
            return Err(JournalError::NotFound(run.to_owned()));
        }
        let entries = key.open(run, rows, head)?;
        sealing.check(run, entries.len() as u64)?;
        Ok(entries)
    }

    fn runs_blocking(&self) -> Result<Vec<String>, JournalError> {
        let db = self.journal_db()?;
        let mut select = db
            .conn
            .prepare_cached("SELECT run FROM run_journal WHERE seq = 0 ORDER BY rowid")
            .map_err(store_error)?;
        select
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(store_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(store_error)
    }

    fn acquire_blocking(
        &self,
        run: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, JournalError> {
        let mut db = self.journal_db()?;
        let tx = db
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(store_error)?;
        let held: Option<(i64, String, i64)> = tx
            .query_row(
                "SELECT token, owner, until_ms FROM run_lease WHERE run = ?1",
                [run],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()
            .map_err(store_error)?;
        let now = now_ms();
        let until = now + ttl_ms(ttl);
        let token = match held {
            // A lease never lasts more than one `ttl` from when it is seen:
            // a later end (written by hand, or i64::MAX) is cut to that, so
            // no value holds the run for ever. A negative end has passed.
            Some((_, holder, held_until)) if held_until > now as i64 => {
                let held_until = (held_until as u64).min(until);
                tx.execute(
                    "UPDATE run_lease SET until_ms = ?2 WHERE run = ?1 AND until_ms > ?2",
                    params![run, held_until as i64],
                )
                .map_err(store_error)?;
                tx.commit().map_err(store_error)?;
                return Err(JournalError::Leased {
                    run: run.to_owned(),
                    owner: holder,
                    until_ms: held_until,
                });
            }
            Some((token, ..)) => {
                tx.execute(
                    "UPDATE run_lease SET token = ?2, owner = ?3, until_ms = ?4 WHERE run = ?1",
                    params![run, token + 1, owner, until as i64],
                )
                .map_err(store_error)?;
                token as u64 + 1
            }
            None => {
                tx.execute(
                    "INSERT INTO run_lease (run, token, owner, until_ms) VALUES (?1, 1, ?2, ?3)",
                    params![run, owner, until as i64],
                )
                .map_err(store_error)?;
                1
            }
        };
        tx.commit().map_err(store_error)?;
        Ok(Lease {
            token,
            owner: owner.to_owned(),
            until_ms: until,
        })
    }

    fn renew_blocking(&self, run: &str, token: u64, ttl: Duration) -> Result<Lease, JournalError> {
        let db = self.journal_db()?;
        let until = now_ms() + ttl_ms(ttl);
        db.conn
            .query_row(
                "UPDATE run_lease SET until_ms = ?3
                 WHERE run = ?1 AND token = ?2 AND until_ms > 0 RETURNING owner",
                params![run, token as i64, until as i64],
                |row| row.get::<_, String>(0),
            )
            .optional()
            .map_err(store_error)?
            .map(|owner| Lease {
                token,
                owner,
                until_ms: until,
            })
            .ok_or_else(|| JournalError::Fenced {
                run: run.to_owned(),
            })
    }

    fn release_blocking(&self, run: &str, token: u64) -> Result<(), JournalError> {
        let db = self.journal_db()?;
        db.conn
            .execute(
                "UPDATE run_lease SET until_ms = 0 WHERE run = ?1 AND token = ?2",
                params![run, token as i64],
            )
            .map_err(store_error)?;
        Ok(())
    }
}

/// Run `work` on the store's blocking worker, with journal errors.
fn on_worker<T: Send + 'static>(
    store: &SqliteStore,
    work: impl FnOnce(SqliteStore) -> Result<T, JournalError> + Send + 'static,
) -> BoxFuture<'static, Result<T, JournalError>> {
    let outer = blocking(store, move |store| Ok(work(store)));
    Box::pin(async move { outer.await.map_err(|e| JournalError::Store(e.detail()))? })
}

impl RunJournal for SqliteStore {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let text = serde_json::to_string(entry);
        let run = run.to_owned();
        match text {
            Ok(text) => on_worker(self, move |store| {
                store.append_blocking(&run, seq, &text, token)
            }),
            Err(error) => Box::pin(async move { Err(store_error(error)) }),
        }
    }

    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        let run = run.to_owned();
        on_worker(self, move |store| store.entries_blocking(&run))
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        on_worker(self, |store| store.runs_blocking())
    }

    fn acquire<'a>(
        &'a self,
        run: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        let (run, owner) = (run.to_owned(), owner.to_owned());
        on_worker(self, move |store| store.acquire_blocking(&run, &owner, ttl))
    }

    fn renew<'a>(
        &'a self,
        run: &'a str,
        token: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        let run = run.to_owned();
        on_worker(self, move |store| store.renew_blocking(&run, token, ttl))
    }

    fn release<'a>(&'a self, run: &'a str, token: u64) -> BoxFuture<'a, Result<(), JournalError>> {
        let run = run.to_owned();
        on_worker(self, move |store| store.release_blocking(&run, token))
    }
}
