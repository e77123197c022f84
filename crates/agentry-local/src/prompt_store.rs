//! Prompt prefixes kept on disk between processes
//! ([`LocalConfig::prompt_store`](crate::LocalConfig::prompt_store)).
//!
//! The in-memory prompt cache lives as long as the model: a one-shot
//! `agentry run` loads the model, reads its system prompt and tool schemas,
//! and exits, so the next run reads them all again. Here each prompt the
//! decoding thread evaluates is also written to disk as llama.cpp's state of
//! its sequence, with its tokens beside it. A later process whose prompt
//! begins with the same tokens loads the state into a sequence and evaluates
//! only the rest, exactly as a sequence that never left memory would.
//!
//! Entries live in a folder per model file (its path, size and modification
//! time) and [`FORMAT`], so a state is never loaded into another model. An
//! entry is two files, `KEY.kv` (the state) and `KEY.tokens` (its tokens,
//! little-endian `i32`); each is written to a temporary name and renamed, the
//! tokens last, so a reader never sees half an entry. The least recently used entries go
//! beyond [`CAPACITY`].

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;

/// Entries kept per model; the least recently used go first.
pub(crate) const CAPACITY: usize = 16;
/// Prompts with fewer new tokens than this are not written: the next
/// process would save little by loading them.
pub(crate) const MIN_NEW_TOKENS: usize = 64;
/// A stored prefix is loaded only when it saves at least this many tokens
/// over what the sequence chosen in memory already holds.
pub(crate) const MIN_GAIN: usize = 32;

/// Entries written under an older way of reading prompts (whose cached
/// tokens a full read would not reproduce bit for bit) live in other
/// folders and are never loaded. 2: reads of at least 64 tokens from
/// multiples of 32 (the scheduler's `reads.rs`); 1 (unnamed): 64-token chunks.
const FORMAT: u32 = 2;

/// The folder of one model's stored prompts.
pub(crate) struct PromptStore {
    dir: PathBuf,
}

/// A stored prompt that begins like a new one.
pub(crate) struct Found {
    /// The state file.
    pub kv: PathBuf,
    /// The stored tokens.
    pub tokens: Vec<LlamaToken>,
    /// How many leading tokens it shares with the new prompt.
    pub common: usize,
}

impl PromptStore {
    /// The store under `root` for the model file at `model`, created private
    /// (0700). `None`, with a warning, when it cannot be used.
    pub(crate) fn open(root: &Path, model: &Path) -> Option<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let meta = match std::fs::metadata(model) {
            Ok(meta) => meta,
            Err(error) => {
                tracing::warn!(model = %model.display(), %error, "prompt store off: the model file");
                return None;
            }
        };
        let mut hasher = std::hash::DefaultHasher::new();
        std::fs::canonicalize(model)
            .unwrap_or_else(|_| model.to_path_buf())
            .hash(&mut hasher);
        meta.len().hash(&mut hasher);
        meta.modified().ok().hash(&mut hasher);
        FORMAT.hash(&mut hasher);
        let dir = root.join(format!("{:016x}", hasher.finish()));
        if let Err(error) = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
        {
            tracing::warn!(dir = %dir.display(), %error, "prompt store off");
            return None;
        }
        if let Some(problem) = crate::fetch::not_private(root) {
            tracing::warn!(%problem, "prompt store off: its folder is not private");
            return None;
        }
        Some(Self { dir })
    }

    /// The stored prompt sharing the longest prefix with `tokens`, among
    /// those no longer than `window` tokens.
    pub(crate) fn best(&self, tokens: &[LlamaToken], window: usize) -> Option<Found> {
        let entries = std::fs::read_dir(&self.dir).ok()?;
        let mut best: Option<Found> = None;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "tokens") {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let stored = decode(&bytes);
            if stored.is_empty() || stored.len() > window {
                continue;
            }
            let common = shared_prefix(&stored, tokens);
            if best.as_ref().is_none_or(|found| common > found.common) {
                best = Some(Found {
                    kv: path.with_extension("kv"),
                    tokens: stored,
                    common,
                });
            }
        }
        best.filter(|found| found.common > 0)
    }

    /// Load into sequence `seq`, whose cache holds `held` (sharing `common`
    /// reusable leading tokens with `tokens`), the stored prompt sharing the longest
    /// prefix with `tokens`, when that lets at least [`MIN_GAIN`] more tokens
    /// be reused ([`reusable_prefix`](crate::scheduler::reusable_prefix)) and fits `window`. Then `held` is what the sequence holds, and the result
    /// how many leading tokens it shares with `tokens`. A file that fails to
    /// load is removed and leaves the sequence empty.
    pub(crate) fn load_into(
        &self,
        context: &mut LlamaContext<'_>,
        seq: usize,
        held: &mut Vec<LlamaToken>,
        window: usize,
        tokens: &[LlamaToken],
        common: usize,
    ) -> Option<usize> {
        let reused = |held| crate::scheduler::reusable_prefix(tokens.len(), held);
        if reused(usize::MAX) < reused(common) + MIN_GAIN {
            return None;
        }
        let found = self.best(tokens, window)?;
        if reused(found.common) < reused(common) + MIN_GAIN {
            return None;
        }
        held.clear();
        context
            .clear_kv_cache_seq(Some(seq as u32), None, None)
            .ok();
        match context.state_seq_load_file(&found.kv, seq as i32, found.tokens.len()) {
            Ok((loaded, _)) if loaded == found.tokens => {
                touch(&found.kv.with_extension("tokens"));
                *held = loaded;
                Some(found.common)
            }
            outcome => {
                let why = match outcome {
                    Ok(_) => "its tokens differ from the list beside it".to_owned(),
                    Err(error) => error.to_string(),
                };
                tracing::warn!(file = %found.kv.display(), %why, "a stored prompt failed to load; removed");
                remove(&found.kv);
                context
                    .clear_kv_cache_seq(Some(seq as u32), None, None)
                    .ok();
                Some(0)
            }
        }
    }

    /// Write sequence `seq`, which holds `tokens`, as an entry (unless one
    /// holds exactly these tokens), then drop the oldest beyond [`CAPACITY`].
    pub(crate) fn save(&self, context: &LlamaContext<'_>, seq: i32, tokens: &[LlamaToken]) {
        let mut hasher = std::hash::DefaultHasher::new();
        tokens
            .iter()
            .map(|t| t.0)
            .collect::<Vec<i32>>()
            .hash(&mut hasher);
        let key = self.dir.join(format!("{:016x}", hasher.finish()));
        let (kv, list) = (key.with_extension("kv"), key.with_extension("tokens"));
        if list.exists() {
            touch(&list);
            return;
        }
        let partial = |path: &Path| {
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".{}.partial", std::process::id()));
            PathBuf::from(name)
        };
        let (kv_partial, list_partial) = (partial(&kv), partial(&list));
        let written = context
            .state_seq_save_file(&kv_partial, seq, tokens)
            .map_err(|error| error.to_string())
            .and_then(|_| std::fs::rename(&kv_partial, &kv).map_err(|e| e.to_string()))
            .and_then(|()| std::fs::write(&list_partial, encode(tokens)).map_err(|e| e.to_string()))
            .and_then(|()| std::fs::rename(&list_partial, &list).map_err(|e| e.to_string()));
        if let Err(error) = written {
            tracing::warn!(dir = %self.dir.display(), %error, "storing a prompt failed");
            for path in [&kv_partial, &list_partial, &kv] {
                std::fs::remove_file(path).ok();
            }
            return;
        }
        self.evict();
    }

    /// Remove the least recently used entries beyond [`CAPACITY`].
    fn evict(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut lists: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "tokens"))
            .filter_map(|path| Some((std::fs::metadata(&path).ok()?.modified().ok()?, path)))
            .collect();
        if lists.len() <= CAPACITY {
            return;
        }
        lists.sort();
        for (_, list) in &lists[..lists.len() - CAPACITY] {
            remove(&list.with_extension("kv"));
        }
    }
}

/// A token list as a `.tokens` file holds it: little-endian `i32`s.
fn encode(tokens: &[LlamaToken]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.0.to_le_bytes()).collect()
}

/// The tokens of a `.tokens` file (a trailing partial token is ignored).
fn decode(bytes: &[u8]) -> Vec<LlamaToken> {
    bytes
        .chunks_exact(4)
        .map(|b| LlamaToken(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        .collect()
}

/// How many leading tokens `a` and `b` share.
pub(crate) fn shared_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Remove an entry: its token list first, so no reader finds a list without
/// its state.
fn remove(kv: &Path) {
    std::fs::remove_file(kv.with_extension("tokens")).ok();
    std::fs::remove_file(kv).ok();
}

/// Mark an entry as just used.
fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        file.set_modified(std::time::SystemTime::now()).ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty store in a fresh temporary folder named after `test`.
    fn scratch(test: &str) -> PromptStore {
        let dir = std::env::temp_dir().join(format!("agentry-store-{test}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
        PromptStore { dir }
    }

    #[test]
    fn the_least_recently_used_entries_go_beyond_capacity() {
        let store = scratch("evict");
        let dir = store.dir.clone();
        let start = std::time::SystemTime::now() - std::time::Duration::from_secs(1000);
        for i in 0..CAPACITY + 3 {
            let list = dir.join(format!("{i:02}.tokens"));
            std::fs::write(&list, encode(&[LlamaToken(1)])).unwrap();
            std::fs::write(list.with_extension("kv"), b"state").unwrap();
            let file = std::fs::File::options().append(true).open(&list).unwrap();
            file.set_modified(start + std::time::Duration::from_secs(i as u64))
                .unwrap();
        }
        // Entry 0 is used again: it is now the most recent.
        touch(&dir.join("00.tokens"));
        store.evict();
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left.len(), CAPACITY * 2);
        for gone in ["01", "02", "03"] {
            assert!(!left.contains(&format!("{gone}.tokens")), "{left:?}");
            assert!(!left.contains(&format!("{gone}.kv")), "{left:?}");
        }
        assert!(left.contains(&"00.kv".to_owned()));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_longest_shared_prefix_wins_and_longer_than_the_window_is_skipped() {
        let store = scratch("best");
        let dir = store.dir.clone();
        let write = |name: &str, tokens: &[i32]| {
            let tokens: Vec<LlamaToken> = tokens.iter().copied().map(LlamaToken).collect();
            std::fs::write(dir.join(format!("{name}.tokens")), encode(&tokens)).unwrap();
        };
        write("short", &[1, 2, 3]);
        write("long", &[1, 2, 3, 4, 5, 9]);
        write("huge", &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        write("other", &[7, 7, 7, 7, 7]);
        let prompt: Vec<LlamaToken> = [1, 2, 3, 4, 5, 6, 7, 8].map(LlamaToken).to_vec();
        let found = store.best(&prompt, 8).unwrap();
        assert_eq!(found.common, 5);
        assert_eq!(found.kv, dir.join("long.kv"));
        let unrelated: Vec<LlamaToken> = [4, 4].map(LlamaToken).to_vec();
        assert!(store.best(&unrelated, 8).is_none());
        std::fs::remove_dir_all(&dir).ok();
    }
}
