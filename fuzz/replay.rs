//! Seed replay with mutations, on the stable toolchain: each crate whose
//! parser has a fuzz target includes this file in one of its tests
//! (`#[path = ".../fuzz/replay.rs"]`) and runs its target's function on
//! every seed in `fuzz/seeds/<target>` and on [`MUTATIONS`] inputs made from
//! them (cut, bytes flipped, inserted or repeated, two seeds spliced). The
//! generator is fixed, so a failure repeats; the failing input is printed.
//! Coverage-guided runs (cargo-fuzz on nightly) are in RELIABILITY.md.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Mutated inputs per target.
pub const MUTATIONS: usize = 4000;

/// The seeds of `target`, from the repository's `fuzz/seeds`.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a seed").path())
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no seeds in {}", dir.display());
    paths
        .iter()
        .map(|path| std::fs::read(path).expect("a readable seed"))
        .collect()
}

/// Run `check` on every seed of `target` and on [`MUTATIONS`] mutations of
/// them; a panic names the input that caused it.
pub fn replay(target: &str, mut check: impl FnMut(&[u8])) {
    let seeds = seeds(target);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.len() as u64);
    let inputs = seeds
        .iter()
        .cloned()
        .chain((0..MUTATIONS).map(|_| mutate(&seeds, &mut rng)));
    for input in inputs {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input)));
        if let Err(panic) = outcome {
            eprintln!(
                "{target}: this input panicked:\n{}",
                String::from_utf8_lossy(&input)
            );
            std::panic::resume_unwind(panic);
        }
    }
}

/// A seed changed in one to four ways.
fn mutate(seeds: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut bytes = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(6) {
            0 => bytes.truncate(at),
            1 if at < bytes.len() => bytes[at] ^= 1 << rng.below(8),
            2 => bytes.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            3 => {
                let end = (at + rng.below(32)).min(bytes.len());
                let piece = bytes[at..end].to_vec();
                bytes.splice(at..at, piece.iter().copied().cycle().take(piece.len() * 4));
            }
            4 => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len() + 1);
                bytes.truncate(at);
                bytes.extend_from_slice(&other[from..]);
            }
            _ if at < bytes.len() => bytes[at] = rng.below(256) as u8,
            _ => {}
        }
    }
    bytes
}

/// Bytes that matter to the formats fuzzed: JSON, SSE, YAML and the call tags.
const INTERESTING: &[u8] = b"{}[]\":,\\\n\r\t -0123456789.eE<>/`'#|!&*tfn\x00\xff\xc3";

/// xorshift64*: small, fixed, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}
