//! The model cache's own safety: where it is (never a shared world-writable
//! folder), that it is private to this user, that a cached file is used only
//! after its sha256 matched once (recorded beside it, re-checked whenever the
//! file changes), and unique temporary files for downloads in progress.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::FetchError;
use super::catalog::{EmbeddingSpec, ModelSpec};

/// Where models are kept: `$AGENTRY_MODEL_DIR`, else the user cache dir's
/// `agentry/models`, else (no home directory) a folder of this user's own in
/// the temporary directory, never one shared with other users.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTRY_MODEL_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    match dirs::cache_dir() {
        Some(dir) => dir.join("agentry").join("models"),
        None => std::env::temp_dir()
            .join(format!("agentry-{}", rustix::process::getuid().as_raw()))
            .join("models"),
    }
}

/// Where [`LocalConfig::prompt_store`](crate::LocalConfig::prompt_store)
/// keeps prompt prefixes by default: `prompts` in the model cache (private,
/// like the models: a planted state would steer the model).
pub fn prompt_store_dir() -> PathBuf {
    cache_dir().join("prompts")
}

/// Why `dir` may not hold models: owned by another user, or writable by
/// group or others (who could swap a model in).
pub(crate) fn not_private(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).ok()?;
    if meta.uid() != rustix::process::getuid().as_raw() {
        return Some(format!("{} belongs to another user", dir.display()));
    }
    if meta.mode() & 0o022 != 0 {
        return Some(format!(
            "{} is writable by group or others; make it private (chmod 700)",
            dir.display()
        ));
    }
    None
}

/// The cache folder, created private (0700) if missing; an error when it
/// exists but is not private.
pub(crate) fn private_cache_dir() -> Result<PathBuf, FetchError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = cache_dir();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| FetchError::Io(format!("{}: {e}", dir.display())))?;
    match not_private(&dir) {
        Some(problem) => Err(FetchError::Io(format!(
            "the model cache is unsafe: {problem}"
        ))),
        None => Ok(dir),
    }
}

/// A new, unique temporary path in `dir` for a download of `name`; two
/// pulls at once never share one, and a file planted there in advance is
/// never written through (the file is created with `create_new`).
pub(crate) fn unique_partial(dir: &Path, name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.{}.{n}.partial", std::process::id()))
}

/// The sha256 of a file, lowercase hex.
pub(crate) fn file_sha256(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hash.update(&buffer[..n]);
    }
    Ok(hash
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// Where the check of `path` is recorded.
fn record_of(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.verified"))
}

/// What the record holds: the checksum, the size and the modification time
/// the file had when it matched.
fn stamp(path: &Path, sha256: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(format!("{sha256} {} {modified}\n", meta.len()))
}

/// Note that `path` matched `sha256` (after a download checked it).
pub(crate) fn record_verified(path: &Path, sha256: &str) {
    if let Some(stamp) = stamp(path, sha256) {
        let _ = std::fs::write(record_of(path), stamp);
    }
}

/// True when `path` has `size` bytes and its sha256 is `sha256`: read from
/// the record when the file has not changed since it was checked, computed
/// (and recorded) otherwise. A file of the right size but other content is
/// never used.
pub(crate) fn verified(path: &Path, size: u64, sha256: &str) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() || meta.len() != size {
        return false;
    }
    let expected = stamp(path, sha256);
    if expected.is_some() && std::fs::read_to_string(record_of(path)).ok() == expected {
        return true;
    }
    match file_sha256(path) {
        Ok(actual) if actual == sha256 => {
            record_verified(path, sha256);
            true
        }
        Ok(actual) => {
            tracing::warn!(file = %path.display(), expected = sha256, %actual, "a cached model does not match its checksum; it is not used");
            false
        }
        Err(_) => false,
    }
}

/// True when the cache folder may be trusted (private to this user).
fn trusted(dir: &Path) -> bool {
    match not_private(dir) {
        Some(problem) => {
            tracing::warn!(%problem, "the model cache is not used");
            false
        }
        None => true,
    }
}

/// The cached file of `spec`, if it is there, in a private cache, with the
/// right size and sha256 (checked once, then while unchanged read from the
/// record).
pub fn installed(spec: &ModelSpec) -> Option<PathBuf> {
    let dir = cache_dir();
    let path = dir.join(spec.file_name);
    (trusted(&dir) && verified(&path, spec.size, spec.sha256)).then_some(path)
}

/// The cached folder of `spec`, if every file is there, in a private
/// cache, with the right size and sha256.
pub fn installed_embedding(spec: &EmbeddingSpec) -> Option<PathBuf> {
    let root = cache_dir();
    let dir = root.join(spec.dir_name);
    let complete = spec
        .files
        .iter()
        .all(|file| verified(&dir.join(file.name), file.size, file.sha256));
    (trusted(&root) && complete).then_some(dir)
}
