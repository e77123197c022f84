//! Durable runs' journals in PostgreSQL ([`RunJournal`]): one row per entry
//! in `agentry_run_journal`, shared by every process on the database and
//! sealed ([`JournalKey`]); one row per run in `agentry_run_lease` with who
//! holds the run (fencing token, owner, expiry by the database's clock) and
//! its sealed head. An append locks the run's lease row, checks the token
//! and writes in one transaction; the primary key (run, entry number) keeps
//! two writers from both writing the same next entry.
//!
//! The key is `AGENTRY_JOURNAL_KEY` when the host gives one (every process
//! sharing the database needs the same key), else the file named by
//! `AGENTRY_JOURNAL_KEY_FILE`, else `agentry/journal.key` in the user's data
//! directory (`$XDG_DATA_HOME`, or `~/.local/share`), made on first use.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentry_core::BoxFuture;
use agentry_core::journal::{
    JournalError, JournalKey, Lease, RunEntry, RunJournal, SealedEntry, SealedHead, expect_next,
};

use super::PgStore;

/// The tables' definitions (one statement), made with the memory table. A
/// journal made before journals were sealed gets the seal column; its
/// entries have none and are not replayed.
pub(super) const SCHEMA: &str = "DO $$ BEGIN
CREATE TABLE IF NOT EXISTS agentry_run_journal (
    run   TEXT      NOT NULL,
    seq   BIGINT    NOT NULL,
    entry TEXT      NOT NULL,
    added BIGSERIAL NOT NULL,
    PRIMARY KEY (run, seq)
);
ALTER TABLE agentry_run_journal ADD COLUMN IF NOT EXISTS seal BYTEA;
CREATE TABLE IF NOT EXISTS agentry_run_lease (
    run        TEXT        PRIMARY KEY,
    token      BIGINT      NOT NULL,
    owner      TEXT        NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    entries    BIGINT      NOT NULL DEFAULT 0,
    head       BYTEA
);
END $$";

/// The lease's end in milliseconds since the Unix epoch, in SQL.
const UNTIL_MS: &str = "(extract(epoch FROM expires_at) * 1000)::bigint";

fn store_error(error: impl std::fmt::Display) -> JournalError {
    JournalError::Store(format!("postgres: {error}"))
}

/// The key that seals the database's journals.
/// Read once per process (from its environment or its file), then kept:
/// a key file swapped later changes nothing.
fn key() -> Result<Arc<JournalKey>, JournalError> {
    static KEY: Mutex<Option<Arc<JournalKey>>> = Mutex::new(None);
    let mut kept = KEY.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(key) = kept.as_ref() {
        return Ok(key.clone());
    }
    let key = Arc::new(read_key()?);
    *kept = Some(key.clone());
    Ok(key)
}

fn read_key() -> Result<JournalKey, JournalError> {
    if let Some(key) = JournalKey::from_env()? {
        return Ok(key);
    }
    let path = match std::env::var_os("AGENTRY_JOURNAL_KEY_FILE") {
        Some(path) => PathBuf::from(path),
        None => {
            let data = std::env::var_os("XDG_DATA_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
                .ok_or_else(|| {
                    JournalError::Store(
                        "the journal key: set AGENTRY_JOURNAL_KEY (64 hex digits) or AGENTRY_JOURNAL_KEY_FILE"
                            .into(),
                    )
                })?;
            let dir = data.join("agentry");
            std::fs::create_dir_all(&dir).map_err(|error| {
                JournalError::Store(format!("the journal key's folder cannot be made: {error}"))
            })?;
            dir.join("journal.key")
        }
    };
    JournalKey::load_or_create(&path)
}

fn ttl_ms(ttl: Duration) -> i64 {
    ttl.as_millis().min(i64::MAX as u128 / 2) as i64
}

impl PgStore {
    async fn append_sealed(
        &self,
        run: &str,
        seq: u64,
        text: &str,
        token: u64,
    ) -> Result<(), JournalError> {
        let key = key()?;
        let mut tx = self.pool.begin().await.map_err(store_error)?;
        // The row lock orders this write with any take-over of the lease.
        let lease: Option<(i64, bool, i64)> = sqlx::query_as(
            "SELECT token, expires_at > clock_timestamp(), entries
             FROM agentry_run_lease WHERE run = $1 FOR UPDATE",
        )
        .bind(run)
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?;
        let next = match lease {
            Some((held, true, entries)) if held as u64 == token => entries as u64,
            _ => {
                return Err(JournalError::Fenced {
                    run: run.to_owned(),
                });
            }
        };
        expect_next(run, next, seq)?;
        let previous: Option<Vec<u8>> = match seq {
            0 => None,
            _ => sqlx::query_scalar::<_, Option<Vec<u8>>>(
                "SELECT seal FROM agentry_run_journal WHERE run = $1 AND seq = $2",
            )
            .bind(run)
            .bind(seq as i64 - 1)
            .fetch_optional(&mut *tx)
            .await
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
        let seal = key.seal_entry(run, seq, previous.as_deref(), text);
        let head = key.seal_head(run, seq + 1, &seal);
        let inserted = sqlx::query(
            "INSERT INTO agentry_run_journal (run, seq, entry, seal) VALUES ($1, $2, $3, $4)",
        )
        .bind(run)
        .bind(seq as i64)
        .bind(text)
        .bind(&seal)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
                return Err(JournalError::Conflict {
                    run: run.to_owned(),
                    seq,
                });
            }
            Err(error) => return Err(store_error(error)),
        }
        sqlx::query("UPDATE agentry_run_lease SET entries = $2, head = $3 WHERE run = $1")
            .bind(run)
            .bind(seq as i64 + 1)
            .bind(&head)
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        tx.commit().await.map_err(store_error)
    }
}

/// A row of the journal read with its run's head.
type Row = (i64, String, Option<Vec<u8>>, Option<i64>, Option<Vec<u8>>);

impl RunJournal for PgStore {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let text = serde_json::to_string(entry).map_err(store_error)?;
            self.append_sealed(run, seq, &text, token).await
        })
    }

    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        Box::pin(async move {
            let key = key()?;
            // One statement: the entries and the head as of one moment.
            let rows: Vec<Row> = sqlx::query_as(
                "SELECT j.seq, j.entry, j.seal, l.entries, l.head
                 FROM agentry_run_journal j LEFT JOIN agentry_run_lease l ON l.run = j.run
                 WHERE j.run = $1 ORDER BY j.seq",
            )
            .bind(run)
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
            let Some(last) = rows.last() else {
                return Err(JournalError::NotFound(run.to_owned()));
            };
            let head = last.3.map(|entries| SealedHead {
                entries: entries as u64,
                seal: last.4.clone(),
            });
            let rows = rows
                .into_iter()
                .map(|(seq, text, seal, ..)| SealedEntry {
                    seq: seq as u64,
                    text,
                    seal,
                })
                .collect();
            key.open(run, rows, head)
        })
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        Box::pin(async move {
            sqlx::query_scalar("SELECT run FROM agentry_run_journal WHERE seq = 0 ORDER BY added")
                .fetch_all(&self.pool)
                .await
                .map_err(store_error)
        })
    }

    fn acquire<'a>(
        &'a self,
        run: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        Box::pin(async move {
            // A lease never lasts more than one `ttl` from when it is seen:
            // a later end (written by hand) is cut to that, so no value
            // holds the run for ever.
            sqlx::query(
                "UPDATE agentry_run_lease
                 SET expires_at = clock_timestamp() + $2::bigint * interval '1 millisecond'
                 WHERE run = $1
                   AND expires_at > clock_timestamp() + $2::bigint * interval '1 millisecond'",
            )
            .bind(run)
            .bind(ttl_ms(ttl))
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
            // Taken when free or expired, by the database's clock; the row
            // lock makes one of many takers win.
            let taken: Option<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "INSERT INTO agentry_run_lease AS l (run, token, owner, expires_at)
                 VALUES ($1, 1, $2, clock_timestamp() + $3::bigint * interval '1 millisecond')
                 ON CONFLICT (run) DO UPDATE
                 SET token = l.token + 1, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
                 WHERE l.expires_at <= clock_timestamp()
                 RETURNING token, {UNTIL_MS}"
            )))
            .bind(run)
            .bind(owner)
            .bind(ttl_ms(ttl))
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
            if let Some((token, until_ms)) = taken {
                return Ok(Lease {
                    token: token as u64,
                    owner: owner.to_owned(),
                    until_ms: until_ms as u64,
                });
            }
            let held: Option<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT owner, {UNTIL_MS} FROM agentry_run_lease WHERE run = $1"
            )))
            .bind(run)
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
            let (owner, until_ms) = held.unwrap_or_default();
            Err(JournalError::Leased {
                run: run.to_owned(),
                owner,
                until_ms: until_ms.max(0) as u64,
            })
        })
    }

    fn renew<'a>(
        &'a self,
        run: &'a str,
        token: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        Box::pin(async move {
            let renewed: Option<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "UPDATE agentry_run_lease
                 SET expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond'
                 WHERE run = $1 AND token = $2 AND expires_at > 'epoch'::timestamptz
                 RETURNING owner, {UNTIL_MS}"
            )))
            .bind(run)
            .bind(token as i64)
            .bind(ttl_ms(ttl))
            .fetch_optional(&self.pool)
            .await
            .map_err(store_error)?;
            renewed
                .map(|(owner, until_ms)| Lease {
                    token,
                    owner,
                    until_ms: until_ms as u64,
                })
                .ok_or_else(|| JournalError::Fenced {
                    run: run.to_owned(),
                })
        })
    }

    fn release<'a>(&'a self, run: &'a str, token: u64) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            sqlx::query(
                "UPDATE agentry_run_lease SET expires_at = 'epoch'::timestamptz
                 WHERE run = $1 AND token = $2",
            )
            .bind(run)
            .bind(token as i64)
            .execute(&self.pool)
            .await
            .map_err(store_error)?;
            Ok(())
        })
    }
}
