//! Durable runs' journals in the SQLite file ([`RunJournal`]): one row per
//! entry in `run_journal`, written in its own transaction (committed in WAL
//! mode, so a process killed right after finds it), numbered per run.

use agentry_core::BoxFuture;
use agentry_core::agent::durable::{JournalError, RunEntry, RunJournal, entry_from_json};
use agentry_core::memory::MemoryError;
use rusqlite::{TransactionBehavior, params};

use super::{SqliteStore, blocking};

fn store_error(error: impl std::fmt::Display) -> JournalError {
    JournalError::Store(format!("sqlite: {error}"))
}

impl SqliteStore {
    fn append_blocking(&self, run: &str, seq: u64, entry: &str) -> Result<(), JournalError> {
        let mut db = self.db().map_err(|MemoryError(e)| JournalError::Store(e))?;
        // IMMEDIATE: the write lock is taken before the count is read, so
        // two processes cannot both find the same next number.
        let tx = db
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(store_error)?;
        let next: u64 = tx
            .query_row(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM run_journal WHERE run = ?1",
                [run],
                |row| row.get::<_, i64>(0),
            )
            .map_err(store_error)? as u64;
        if next > seq {
            return Err(JournalError::Conflict {
                run: run.to_owned(),
                seq,
            });
        }
        if next < seq {
            return Err(JournalError::Store(format!(
                "run \"{run}\" has {next} entries; entry {seq} cannot follow"
            )));
        }
        tx.execute(
            "INSERT INTO run_journal (run, seq, entry) VALUES (?1, ?2, ?3)",
            params![run, seq as i64, entry],
        )
        .map_err(store_error)?;
        tx.commit().map_err(store_error)
    }

    fn entries_blocking(&self, run: &str) -> Result<Vec<String>, JournalError> {
        let db = self.db().map_err(|MemoryError(e)| JournalError::Store(e))?;
        let mut select = db
            .conn
            .prepare_cached("SELECT entry FROM run_journal WHERE run = ?1 ORDER BY seq")
            .map_err(store_error)?;
        let entries = select
            .query_map([run], |row| row.get::<_, String>(0))
            .map_err(store_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(store_error)?;
        if entries.is_empty() {
            return Err(JournalError::NotFound(run.to_owned()));
        }
        Ok(entries)
    }

    fn runs_blocking(&self) -> Result<Vec<String>, JournalError> {
        let db = self.db().map_err(|MemoryError(e)| JournalError::Store(e))?;
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
}

/// Run `work` on the store's blocking worker, with journal errors.
fn on_worker<T: Send + 'static>(
    store: &SqliteStore,
    work: impl FnOnce(SqliteStore) -> Result<T, JournalError> + Send + 'static,
) -> BoxFuture<'static, Result<T, JournalError>> {
    let outer = blocking(store, move |store| Ok(work(store)));
    Box::pin(async move {
        outer
            .await
            .map_err(|MemoryError(e)| JournalError::Store(e))?
    })
}

impl RunJournal for SqliteStore {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        let text = serde_json::to_string(entry);
        let run = run.to_owned();
        match text {
            Ok(text) => on_worker(self, move |store| store.append_blocking(&run, seq, &text)),
            Err(error) => Box::pin(async move { Err(store_error(error)) }),
        }
    }

    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        let run = run.to_owned();
        on_worker(self, move |store| {
            store
                .entries_blocking(&run)?
                .iter()
                .map(|text| entry_from_json(&run, text))
                .collect()
        })
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        on_worker(self, |store| store.runs_blocking())
    }
}
