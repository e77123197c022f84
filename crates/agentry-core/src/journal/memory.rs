//! [`InMemoryJournal`]: runs' journals and leases in this process's memory.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::{JournalError, Lease, RunEntry, RunJournal, expect_next, now_ms};
use crate::BoxFuture;

/// A journal in this process's memory: for tests, and for runs that only
/// need to pause for approval, not to survive the process. Leases work as
/// in the stores (tasks of one process can race for a run too); nothing
/// outside the process can change the entries, so they carry no seals.
#[derive(Debug, Default)]
pub struct InMemoryJournal {
    runs: Mutex<Runs>,
}

#[derive(Debug, Default)]
struct Runs {
    /// Run ids, oldest first.
    order: Vec<String>,
    entries: HashMap<String, Vec<RunEntry>>,
    leases: HashMap<String, Held>,
}

/// A run's lease as the journal keeps it: `until_ms` 0 once released.
#[derive(Debug, Clone)]
struct Held {
    token: u64,
    owner: String,
    until_ms: u64,
}

impl Held {
    fn lease(&self) -> Lease {
        Lease {
            token: self.token,
            owner: self.owner.clone(),
            until_ms: self.until_ms,
        }
    }
}

impl InMemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, work: impl FnOnce(&mut Runs) -> T) -> T {
        work(&mut self.runs.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(async move { value })
}

impl RunJournal for InMemoryJournal {
    fn append<'a>(
        &'a self,
        run: &'a str,
        seq: u64,
        entry: &'a RunEntry,
        token: u64,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        ready(self.with(|runs| {
            let live = runs
                .leases
                .get(run)
                .is_some_and(|held| held.token == token && held.until_ms > now_ms());
            if !live {
                return Err(JournalError::Fenced {
                    run: run.to_owned(),
                });
            }
            let entries = runs.entries.entry(run.to_owned()).or_default();
            expect_next(run, entries.len() as u64, seq)?;
            entries.push(entry.clone());
            if seq == 0 {
                runs.order.push(run.to_owned());
            }
            Ok(())
        }))
    }

    fn entries<'a>(&'a self, run: &'a str) -> BoxFuture<'a, Result<Vec<RunEntry>, JournalError>> {
        ready(self.with(|runs| {
            runs.entries
                .get(run)
                .filter(|entries| !entries.is_empty())
                .cloned()
                .ok_or_else(|| JournalError::NotFound(run.to_owned()))
        }))
    }

    fn runs(&self) -> BoxFuture<'_, Result<Vec<String>, JournalError>> {
        ready(Ok(self.with(|runs| runs.order.clone())))
    }

    fn acquire<'a>(
        &'a self,
        run: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        ready(self.with(|runs| {
            let now = now_ms();
            let token = match runs.leases.get(run) {
                Some(held) if held.until_ms > now => {
                    return Err(JournalError::Leased {
                        run: run.to_owned(),
                        owner: held.owner.clone(),
                        until_ms: held.until_ms,
                    });
                }
                Some(held) => held.token + 1,
                None => 1,
            };
            let held = Held {
                token,
                owner: owner.to_owned(),
                until_ms: now + ttl.as_millis() as u64,
            };
            let lease = held.lease();
            runs.leases.insert(run.to_owned(), held);
            Ok(lease)
        }))
    }

    fn renew<'a>(
        &'a self,
        run: &'a str,
        token: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Lease, JournalError>> {
        ready(self.with(|runs| match runs.leases.get_mut(run) {
            Some(held) if held.token == token && held.until_ms > 0 => {
                held.until_ms = now_ms() + ttl.as_millis() as u64;
                Ok(held.lease())
            }
            _ => Err(JournalError::Fenced {
                run: run.to_owned(),
            }),
        }))
    }

    fn release<'a>(&'a self, run: &'a str, token: u64) -> BoxFuture<'a, Result<(), JournalError>> {
        ready(self.with(|runs| {
            if let Some(held) = runs.leases.get_mut(run)
                && held.token == token
            {
                held.until_ms = 0;
            }
            Ok(())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_in_memory_journal_passes_the_checks() {
        super::super::check_journal(&InMemoryJournal::new(), "check").await;
    }
}
