//! Durable runs' journals in PostgreSQL ([`RunJournal`]): one row per entry
//! in `agentry_run_journal`, shared by every process on the database. The
//! primary key (run, entry number) is what keeps two processes from both
//! writing the same next entry.

use agentry_core::BoxFuture;
use agentry_core::agent::durable::{JournalError, RunEntry, RunJournal, entry_from_json};

use super::PgStore;

/// The table's definition, made with the memory table.
pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS agentry_run_journal (
    run   TEXT      NOT NULL,
    seq   BIGINT    NOT NULL,
    entry TEXT      NOT NULL,
    added BIGSERIAL NOT NULL,
    PRIMARY KEY (run, seq)
)";

fn store_error(error: impl std::fmt::Display) -> JournalError {
    JournalError::Store(format!("postgres: {error}"))
}

impl RunJournal for PgStore {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            let text = serde_json::to_string(entry).map_err(store_error)?;
            // Written only right after the entry before it.
            let inserted = sqlx::query(
                "INSERT INTO agentry_run_journal (run, seq, entry)
                 SELECT $1, $2, $3
                 WHERE $2 = 0 OR EXISTS (
                     SELECT 1 FROM agentry_run_journal WHERE run = $1 AND seq = $2 - 1)",
            )
            .bind(run)
            .bind(seq as i64)
            .bind(text)
            .execute(&self.pool)
            .await;
            match inserted {
                Ok(done) if done.rows_affected() == 1 => Ok(()),
                Ok(_) => Err(JournalError::Store(format!(
                    "run \"{run}\" has no entry {}; entry {seq} cannot follow",
                    seq.saturating_sub(1)
                ))),
                Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
                    Err(JournalError::Conflict {
                        run: run.to_owned(),
                        seq,
                    })
                }
                Err(error) => Err(store_error(error)),
            }
        })
    }

    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        Box::pin(async move {
            let rows: Vec<String> = sqlx::query_scalar(
                "SELECT entry FROM agentry_run_journal WHERE run = $1 ORDER BY seq",
            )
            .bind(run)
            .fetch_all(&self.pool)
            .await
            .map_err(store_error)?;
            if rows.is_empty() {
                return Err(JournalError::NotFound(run.to_owned()));
            }
            rows.iter().map(|text| entry_from_json(run, text)).collect()
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
}
