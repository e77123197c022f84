//! How a prompt is split into decode calls, and how much of it a cached
//! prefix may supply, so that greedy output with the cache is token for token
//! what a full read gives.
//!
//! llama.cpp's CPU results for a token depend, in the last bits, on the call
//! that computed it, in two ways (measured on a prompt split in many ways
//! against one read of it, comparing logits bit for bit: every split that
//! keeps the rules below was equal, every other one tried was not;
//! `BENCHMARKS.md`, and the test in `reads/on_llama.rs` checks it):
//!
//! - flash attention takes a tiled path for a sequence with at least 64
//!   tokens in the call (`GGML_FA_TILE_Q`) and a row-by-row path otherwise;
//! - the repacked quantized matrix kernels multiply activations four rows at
//!   a time from the start of the call, and a call's last rows that do not
//!   fill a group one by one.
//!
//! So every prompt read is at least [`MIN_PROMPT_READ`] tokens long (when
//! the prompt has that many) and starts at a multiple of [`PROMPT_ALIGN`]; a
//! prompt of up to [`BATCH_SIZE`](super::BATCH_SIZE) tokens is read in one
//! call, as a plain llama.cpp loop reads it. A cached token is reused only
//! if a prompt read computed it: tokens the model generated were decoded one
//! at a time and are read again.

/// The fewest tokens a prompt read has, unless the whole prompt is shorter.
pub(crate) const MIN_PROMPT_READ: usize = 64;

/// Prompt reads start at multiples of this position. llama.cpp groups
/// activation rows by four (sixteen for AMX tiles); 32 is a multiple of each.
pub(crate) const PROMPT_ALIGN: usize = 32;

/// How many leading tokens of a prompt of `prompt` tokens come from a cache
/// whose first `held` tokens (a prompt read computed them) match it: at most
/// all but the last [`MIN_PROMPT_READ`], down to a multiple of
/// [`PROMPT_ALIGN`]. Shorter prompts are read whole.
pub(crate) fn reusable_prefix(prompt: usize, held: usize) -> usize {
    held.min(prompt.saturating_sub(MIN_PROMPT_READ)) / PROMPT_ALIGN * PROMPT_ALIGN
}

/// How many of the `remaining` prompt tokens the next call reads, at most
/// `limit` (a multiple of [`PROMPT_ALIGN`], at least twice
/// [`MIN_PROMPT_READ`]): all of them when they fit, else `limit` unless
/// that would leave a last read shorter than [`MIN_PROMPT_READ`].
pub(super) fn next_read(remaining: usize, limit: usize) -> usize {
    if remaining <= limit {
        remaining
    } else if remaining - limit >= MIN_PROMPT_READ {
        limit
    } else {
        (remaining - MIN_PROMPT_READ) / PROMPT_ALIGN * PROMPT_ALIGN
    }
}

#[cfg(test)]
mod on_llama;

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls `next_read` makes for a prompt of `remaining` tokens.
    fn reads(mut remaining: usize, limit: usize) -> Vec<usize> {
        let mut calls = Vec::new();
        while remaining > 0 {
            let take = next_read(remaining, limit);
            calls.push(take);
            remaining -= take;
        }
        calls
    }

    #[test]
    fn a_prompt_that_fits_is_read_in_one_call() {
        assert_eq!(reads(30, 512), [30]);
        assert_eq!(reads(512, 512), [512]);
    }

    #[test]
    fn longer_prompts_are_read_in_aligned_calls_the_last_not_short() {
        assert_eq!(reads(1100, 512), [512, 512, 76]);
        assert_eq!(reads(530, 512), [448, 82]);
        assert_eq!(reads(129, 128), [64, 65]);
        assert_eq!(reads(300, 128), [128, 96, 76]);
        for remaining in 1..2000 {
            for limit in [128, 256, 512] {
                let calls = reads(remaining, limit);
                assert_eq!(calls.iter().sum::<usize>(), remaining);
                let (last, before) = calls.split_last().unwrap();
                assert!(
                    before
                        .iter()
                        .all(|c| c % PROMPT_ALIGN == 0 && *c >= MIN_PROMPT_READ && *c <= limit)
                );
                assert!(
                    *last <= limit && (*last >= MIN_PROMPT_READ || calls.len() == 1),
                    "{remaining} {limit}: {calls:?}"
                );
            }
        }
    }

    #[test]
    fn reuse_leaves_a_full_read_and_ends_aligned() {
        assert_eq!(reusable_prefix(500, 400), 384); // 116 read
        assert_eq!(reusable_prefix(500, 480), 416); // 84 read, at least 64
        assert_eq!(reusable_prefix(60, 59), 0);
        assert_eq!(reusable_prefix(300, 300), 224);
        assert_eq!(reusable_prefix(300, 100), 96);
        assert_eq!(reusable_prefix(64, 64), 0);
        assert_eq!(reusable_prefix(96, 200), 32);
        assert_eq!(reusable_prefix(1000, 0), 0);
    }
}
