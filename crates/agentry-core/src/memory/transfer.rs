//! Moving a session out of a store and back in, as JSON lines: one
//! [`MemoryRecord`] a line, its embedding included, so an import needs no
//! embedder and recalls exactly as before.
//!
//! ```
//! use agentry_core::memory::{export_session, import_records, InMemoryStore, MemoryRecord, MemoryStore};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let store = InMemoryStore::new();
//! store.add(MemoryRecord::new("s1", "user", "I love pasta", vec![1.0, 0.0])).await?;
//! let mut lines = Vec::new();
//! assert_eq!(export_session(&store, "s1", &mut lines).await?, 1);
//!
//! let other = InMemoryStore::new();
//! assert_eq!(import_records(&other, lines.as_slice(), Some("copy")).await?, 1);
//! assert_eq!(other.records()[0].session, "copy");
//! assert_eq!(other.records()[0].text, "I love pasta");
//!
//! let broken = "{\"session\": \"s1\"}\n";
//! let error = import_records(&other, broken.as_bytes(), None).await.unwrap_err();
//! assert!(error.detail().starts_with("line 1: "), "{error}");
//! assert_eq!(other.len(), 1, "a bad file imports nothing");
//! # Ok::<_, agentry_core::memory::MemoryError>(())
//! # });
//! ```

use std::io::{BufRead, Write};

use super::manage::ListOpts;
use super::store::{MemoryError, MemoryRecord, MemoryStore};

/// Records read from the store per page while exporting.
const EXPORT_PAGE: usize = 1_000;

/// Write every record of `session` to `out`, one JSON object a line, in
/// insertion order; the number written.
pub async fn export_session(
    store: &dyn MemoryStore,
    session: &str,
    out: &mut impl Write,
) -> Result<u64, MemoryError> {
    let mut written = 0;
    let mut after = None;
    loop {
        let page = store
            .list(
                session,
                ListOpts {
                    after,
                    limit: Some(EXPORT_PAGE),
                },
            )
            .await?;
        let Some(last) = page.last() else {
            break;
        };
        after = Some(last.id);
        for stored in &page {
            serde_json::to_writer(&mut *out, &stored.record)
                .map_err(|e| MemoryError::backend("writing the export", e))?;
            out.write_all(b"\n")
                .map_err(|e| MemoryError::backend("writing the export", e))?;
            written += 1;
        }
        if page.len() < EXPORT_PAGE {
            break;
        }
    }
    out.flush()
        .map_err(|e| MemoryError::backend("writing the export", e))?;
    Ok(written)
}

/// Read JSON lines written by [`export_session`] and keep every record,
/// in session `into` when given (else each record's own). Every line is
/// read and checked before anything is stored: a line that is not a record,
/// or whose embedding is empty or not finite, fails the import with its line
/// number and nothing is kept. Blank lines are skipped. The records go to
/// the store in one [`add_many`](MemoryStore::add_many) (one transaction on
/// SQLite and PostgreSQL); the number imported.
pub async fn import_records(
    store: &dyn MemoryStore,
    input: impl BufRead,
    into: Option<&str>,
) -> Result<u64, MemoryError> {
    let mut records = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|e| MemoryError::backend(format!("line {number}"), e))?;
        if line.trim().is_empty() {
            continue;
        }
        let mut record: MemoryRecord = serde_json::from_str(&line)
            .map_err(|e| MemoryError::backend(format!("line {number}: not a memory record"), e))?;
        if record.embedding.is_empty() {
            return Err(MemoryError::refused(format!(
                "line {number}: the embedding is empty"
            )));
        }
        if record.embedding.iter().any(|x| !x.is_finite()) {
            return Err(MemoryError::refused(format!(
                "line {number}: the embedding has a value that is not a finite number"
            )));
        }
        if let Some(into) = into {
            record.session = into.to_owned();
        }
        records.push(record);
    }
    store.add_many(&records).await?;
    Ok(records.len() as u64)
}
