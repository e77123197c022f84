//! [`InMemoryStore`]: a [`MemoryStore`] in a `Vec`, for tests and
//! single-process programs that need no persistence.

use std::sync::RwLock;

use crate::BoxFuture;

use super::store::{MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts};
use crate::embed::cosine;

/// Records kept in process memory, scanned exactly on recall.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    records: RwLock<Vec<MemoryRecord>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.records.read().map_or(0, |records| records.len())
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every record, in the order they were added.
    pub fn records(&self) -> Vec<MemoryRecord> {
        self.records
            .read()
            .map(|records| records.clone())
            .unwrap_or_default()
    }
}

fn poisoned() -> MemoryError {
    MemoryError("the in-memory store's lock was poisoned by a panic".into())
}

impl MemoryStore for InMemoryStore {
    fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            self.records.write().map_err(|_| poisoned())?.push(record);
            Ok(())
        })
    }

    fn recall<'a>(
        &'a self,
        session: &'a str,
        query: &'a [f32],
        opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        Box::pin(async move {
            let records = self.records.read().map_err(|_| poisoned())?;
            let mut hits: Vec<Recalled> = records
                .iter()
                .filter(|record| record.session == session)
                .map(|record| Recalled {
                    score: cosine(query, &record.embedding),
                    record: record.clone(),
                })
                .filter(|hit| hit.score >= opts.min_score)
                .collect();
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits.truncate(opts.limit);
            Ok(hits)
        })
    }

    fn recent<'a>(
        &'a self,
        session: &'a str,
        opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        Box::pin(async move {
            let records = self.records.read().map_err(|_| poisoned())?;
            let mut matching: Vec<MemoryRecord> = records
                .iter()
                .filter(|record| record.session == session && opts.admits(&record.role))
                .cloned()
                .collect();
            // Oldest first; equal timestamps keep insertion order.
            matching.sort_by_key(|record| record.timestamp);
            if let Some(limit) = opts.limit {
                let skip = matching.len().saturating_sub(limit);
                matching.drain(..skip);
            }
            Ok(matching)
        })
    }

    fn forget_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(async move {
            let mut records = self.records.write().map_err(|_| poisoned())?;
            let before = records.len();
            records.retain(|record| record.session != session);
            Ok((before - records.len()) as u64)
        })
    }
}
