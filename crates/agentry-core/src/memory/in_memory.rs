//! [`InMemoryStore`]: a [`MemoryStore`] in a `Vec`, for tests and
//! single-process programs that need no persistence. Recall scans every
//! vector; keyword search scores every record with BM25.

use std::sync::RwLock;

use crate::BoxFuture;

use super::manage::{Forget, ListOpts, SessionSummary, StoredRecord};
use super::ranking::keywords;
use super::store::{MemoryError, MemoryRecord, MemoryStore, RecallOpts, Recalled, RecentOpts};
use crate::embed::cosine;

/// Records kept in process memory, scanned exactly on recall.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    records: RwLock<Records>,
}

/// The records in insertion order, each with its id, and the last id given.
#[derive(Debug, Default)]
struct Records {
    kept: Vec<StoredRecord>,
    last_id: i64,
}

impl Records {
    fn iter(&self) -> impl Iterator<Item = &MemoryRecord> {
        self.kept.iter().map(|stored| &stored.record)
    }
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.records.read().map_or(0, |records| records.kept.len())
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every record, in the order they were added.
    pub fn records(&self) -> Vec<MemoryRecord> {
        self.records
            .read()
            .map(|records| records.iter().cloned().collect())
            .unwrap_or_default()
    }
}

fn poisoned() -> MemoryError {
    MemoryError::refused("the in-memory store's lock was poisoned by a panic")
}

impl MemoryStore for InMemoryStore {
    fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            let mut records = self.records.write().map_err(|_| poisoned())?;
            records.last_id += 1;
            let id = records.last_id;
            records.kept.push(StoredRecord { id, record });
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
        Box::pin(async move { self.forget_now(&Forget::Session(session.to_owned())) })
    }

    fn search_text<'a>(
        &'a self,
        session: &'a str,
        text: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        Box::pin(async move {
            let records = self.records.read().map_err(|_| poisoned())?;
            let session: Vec<&MemoryRecord> =
                records.iter().filter(|r| r.session == session).collect();
            Ok(bm25(&session, &keywords(text), limit))
        })
    }

    fn add_many<'a>(
        &'a self,
        records: &'a [MemoryRecord],
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            let mut kept = self.records.write().map_err(|_| poisoned())?;
            for record in records {
                kept.last_id += 1;
                let id = kept.last_id;
                kept.kept.push(StoredRecord {
                    id,
                    record: record.clone(),
                });
            }
            Ok(())
        })
    }

    fn sessions<'a>(&'a self) -> BoxFuture<'a, Result<Vec<SessionSummary>, MemoryError>> {
        Box::pin(async move {
            let records = self.records.read().map_err(|_| poisoned())?;
            let mut sessions: std::collections::BTreeMap<&str, SessionSummary> =
                std::collections::BTreeMap::new();
            for record in records.iter() {
                let summary = sessions
                    .entry(&record.session)
                    .or_insert_with(|| SessionSummary {
                        session: record.session.clone(),
                        records: 0,
                        first: record.timestamp,
                        last: record.timestamp,
                    });
                summary.records += 1;
                summary.first = summary.first.min(record.timestamp);
                summary.last = summary.last.max(record.timestamp);
            }
            Ok(sessions.into_values().collect())
        })
    }

    fn list<'a>(
        &'a self,
        session: &'a str,
        opts: ListOpts,
    ) -> BoxFuture<'a, Result<Vec<StoredRecord>, MemoryError>> {
        Box::pin(async move {
            let records = self.records.read().map_err(|_| poisoned())?;
            Ok(records
                .kept
                .iter()
                .filter(|stored| {
                    stored.record.session == session && opts.after.is_none_or(|a| stored.id > a)
                })
                .take(opts.limit.unwrap_or(usize::MAX))
                .cloned()
                .collect())
        })
    }

    fn forget<'a>(&'a self, what: &'a Forget) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(async move { self.forget_now(what) })
    }
}

/// The lowercased words of `text` (runs of letters, digits and `_`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Okapi BM25 (k1 1.2, b 0.75) of `records` for `terms`, best first; records
/// matching no term are left out.
fn bm25(records: &[&MemoryRecord], terms: &[String], limit: usize) -> Vec<Recalled> {
    if terms.is_empty() || records.is_empty() {
        return Vec::new();
    }
    let docs: Vec<Vec<String>> = records.iter().map(|r| words(&r.text)).collect();
    let n = docs.len() as f32;
    let average = docs.iter().map(Vec::len).sum::<usize>() as f32 / n;
    let idf: Vec<f32> = terms
        .iter()
        .map(|term| {
            let with = docs.iter().filter(|d| d.contains(term)).count() as f32;
            ((n - with + 0.5) / (with + 0.5) + 1.0).ln()
        })
        .collect();
    let mut hits: Vec<Recalled> = Vec::new();
    for (record, doc) in records.iter().zip(&docs) {
        let mut score = 0.0;
        for (term, idf) in terms.iter().zip(&idf) {
            let count = doc.iter().filter(|w| *w == term).count() as f32;
            if count > 0.0 {
                let norm = 1.2 * (0.25 + 0.75 * doc.len() as f32 / average.max(1.0));
                score += idf * count * 2.2 / (count + norm);
            }
        }
        if score > 0.0 {
            hits.push(Recalled {
                record: (*record).clone(),
                score,
            });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    hits
}

impl InMemoryStore {
    fn forget_now(&self, what: &Forget) -> Result<u64, MemoryError> {
        let mut records = self.records.write().map_err(|_| poisoned())?;
        let before = records.kept.len();
        records.kept.retain(|stored| {
            !what.covers(&stored.record.session, stored.id, stored.record.timestamp)
        });
        Ok((before - records.kept.len()) as u64)
    }
}
