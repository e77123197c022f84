//! What a person needs to control what is remembered: the sessions a store
//! holds ([`SessionSummary`]), a session's records with the ids their store
//! gave them ([`StoredRecord`], paged by [`ListOpts`]), and what to delete
//! ([`Forget`]: one record, a session, or everything older than a date).

use serde::{Deserialize, Serialize};

use super::store::MemoryRecord;

/// A record with the id its store gave it: the handle for
/// [`Forget::Record`]. Ids grow with insertion order and are never reused
/// within a store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredRecord {
    /// The store's id of the record.
    pub id: i64,
    /// The record.
    #[serde(flatten)]
    pub record: MemoryRecord,
}

/// One session in a store: how many records it holds and the timestamps of
/// its oldest and newest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session key.
    pub session: String,
    /// How many records it holds.
    pub records: u64,
    /// The oldest record's timestamp (seconds since the Unix epoch).
    pub first: i64,
    /// The newest record's timestamp.
    pub last: i64,
}

/// Which records [`MemoryStore::list`](super::MemoryStore::list) returns:
/// a page of one session in id (insertion) order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListOpts {
    /// Only records with an id above this one (the last id of the previous page).
    pub after: Option<i64>,
    /// At most this many (all when `None`).
    pub limit: Option<usize>,
}

/// What [`MemoryStore::forget`](super::MemoryStore::forget) deletes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Forget {
    /// Every record of one session.
    Session(String),
    /// One record of a session, by the id [`StoredRecord::id`] gave it. The
    /// session must match: an id alone never deletes another session's record.
    Record {
        /// The session the record belongs to.
        session: String,
        /// Its id.
        id: i64,
    },
    /// Every record stamped strictly before `timestamp` (seconds since the
    /// Unix epoch), in one session or, with `session: None`, in all of them.
    Before {
        /// The one session to prune, or all of them.
        session: Option<String>,
        /// The cut-off; records at or after it stay.
        timestamp: i64,
    },
}

impl Forget {
    /// Whether a record of `session` stamped `timestamp` with id `id` is deleted.
    pub fn covers(&self, session: &str, id: i64, timestamp: i64) -> bool {
        match self {
            Forget::Session(s) => s == session,
            Forget::Record { session: s, id: i } => s == session && *i == id,
            Forget::Before {
                session: s,
                timestamp: cut,
            } => s.as_deref().is_none_or(|s| s == session) && timestamp < *cut,
        }
    }
}
