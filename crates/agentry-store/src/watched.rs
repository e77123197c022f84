//! Whether the file a [`SqliteStore`](crate::SqliteStore) opened is still the
//! one at its path. An open connection keeps writing into a database file
//! that was deleted, moved away or left on a disk that was unmounted, and
//! those writes are lost to everyone who opens the path later; the store
//! checks before and after each operation instead.

use std::io;
use std::path::{Path, PathBuf};

/// The file at a path, as it was when last seen.
pub(crate) struct WatchedFile {
    path: PathBuf,
    identity: Identity,
}

/// What is at the path now.
pub(crate) enum FileState {
    /// The same file.
    Same,
    /// Nothing (or nothing reachable).
    Gone(io::Error),
    /// Another file: restored from a backup, or put back in place.
    Replaced,
}

#[cfg(unix)]
type Identity = (u64, u64);
#[cfg(not(unix))]
type Identity = ();

#[cfg(unix)]
fn identity(path: &Path) -> io::Result<Identity> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path)?;
    Ok((metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> io::Result<Identity> {
    std::fs::metadata(path).map(|_| ())
}

impl WatchedFile {
    /// Watch the file now at `path`.
    pub(crate) fn new(path: &Path) -> io::Result<Self> {
        Ok(Self {
            path: path.to_path_buf(),
            identity: identity(path)?,
        })
    }

    /// The watched path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What is at the path now, compared with what was.
    pub(crate) fn state(&self) -> FileState {
        match identity(&self.path) {
            Ok(now) if now == self.identity => FileState::Same,
            Ok(_) => FileState::Replaced,
            Err(error) => FileState::Gone(error),
        }
    }
}
