//! What the scheduler's prompt reads rest on, checked on llama.cpp itself
//! with the default model: a prompt read after a cached prefix gives the
//! same logits, bit for bit, as one read of the whole prompt, when the
//! prefix was computed by prompt reads, every read has at least
//! [`MIN_PROMPT_READ`] tokens and starts at a multiple of [`PROMPT_ALIGN`];
//! and a read shorter than that does not.
//!
//! Needs the model in the cache (`agentry model pull`); without it the test
//! says so loudly and passes, unless `AGENTRY_REQUIRE_MODEL=1` (set by CI).

use std::num::NonZeroU32;
use std::path::PathBuf;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;

use super::{MIN_PROMPT_READ, PROMPT_ALIGN, reusable_prefix};
use crate::fetch;

/// Where the default model is; `None`, after a loud message, when it is
/// not in the cache, unless `AGENTRY_REQUIRE_MODEL=1` (then it panics).
fn model_path() -> Option<PathBuf> {
    let Some(path) = fetch::installed(&fetch::QWEN) else {
        if std::env::var("AGENTRY_REQUIRE_MODEL").as_deref() == Ok("1") {
            panic!("{} is missing and AGENTRY_REQUIRE_MODEL=1", fetch::QWEN.id);
        }
        eprintln!(
            "\n*** SKIPPED: {} is not in {}; run `agentry model pull` to run this test ***\n",
            fetch::QWEN.id,
            fetch::cache_dir().display()
        );
        return None;
    };
    Some(path)
}

/// Read `tokens[from..]` into sequence 1, which holds `tokens[..from]`, in
/// calls of `sizes`; the last token's logits.
fn read_on(
    ctx: &mut LlamaContext,
    tokens: &[LlamaToken],
    from: usize,
    sizes: &[usize],
) -> Vec<f32> {
    let mut batch = LlamaBatch::new(512, 1);
    let mut at = from;
    for &size in sizes {
        batch.clear();
        for (i, token) in tokens.iter().enumerate().skip(at).take(size) {
            batch
                .add(*token, i as i32, &[1], i + 1 == tokens.len())
                .unwrap();
        }
        ctx.decode(&mut batch).unwrap();
        at += size;
    }
    assert_eq!(at, tokens.len());
    ctx.get_logits_ith(batch.n_tokens() - 1).to_vec()
}

/// Sequence 1 emptied, then `tokens[..held]` read as one prompt, then cut
/// back to `from`.
fn cached(ctx: &mut LlamaContext, tokens: &[LlamaToken], held: usize, from: usize) {
    ctx.clear_kv_cache_seq(Some(1), None, None).unwrap();
    if held > 0 {
        read_on(ctx, &tokens[..held], 0, &[held]);
    }
    ctx.clear_kv_cache_seq(Some(1), Some(from as u32), None)
        .unwrap();
}

#[test]
fn reads_after_a_cached_prefix_match_one_read_bit_for_bit() {
    let Some(path) = model_path() else {
        return;
    };
    let backend = crate::backend().unwrap();
    let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).unwrap();
    let text = "<|im_start|>system\nYou are a careful technical writer.<|im_end|>\n\
                <|im_start|>user\n"
        .to_owned()
        + &"Explain how a hash map handles collisions, and compare separate chaining \
            with open addressing. "
            .repeat(18)
        + "<|im_end|>\n<|im_start|>assistant\n";
    let tokens = model.vocab().tokenize(text.as_bytes(), false, true);
    let n = tokens.len();
    assert!(n > 250, "{n} tokens");
    // The scheduler's context: one cache per sequence, 512-token calls.
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(1024 * 2))
        .with_n_seq_max(2)
        .with_kv_unified(false)
        .with_n_batch(512)
        .with_n_threads(2)
        .with_n_threads_batch(2);
    let mut ctx = model.new_context(backend, params).unwrap();

    cached(&mut ctx, &tokens, 0, 0);
    let whole = read_on(&mut ctx, &tokens, 0, &[n]);

    // Earlier prompts of several lengths (not all aligned), reused as the
    // scheduler reuses them, the rest read in one call.
    for held in [n, 203, 150, 130, 97] {
        let from = reusable_prefix(n, held);
        assert!(from > 0 && from.is_multiple_of(PROMPT_ALIGN) && n - from >= MIN_PROMPT_READ);
        cached(&mut ctx, &tokens, held, from);
        let logits = read_on(&mut ctx, &tokens, from, &[n - from]);
        assert!(logits == whole, "held {held}, reused {from}");
    }
    // Several reads, each long enough and aligned.
    let from = reusable_prefix(n, 97);
    cached(&mut ctx, &tokens, 97, from);
    let sizes = [64, 64, n - from - 128];
    assert!(sizes[2] >= MIN_PROMPT_READ);
    assert!(read_on(&mut ctx, &tokens, from, &sizes) == whole);

    // A last read shorter than the minimum takes llama.cpp's other attention
    // path: the logits move (this is what the minimum guards against).
    let short = (n - MIN_PROMPT_READ / 2) / PROMPT_ALIGN * PROMPT_ALIGN;
    cached(&mut ctx, &tokens, short, short);
    let logits = read_on(&mut ctx, &tokens, short, &[n - short]);
    assert!(logits != whole, "a {}-token last read", n - short);
    // Tokens decoded one at a time (as generated tokens are) move them too:
    // they are never reused before a prompt read computes them again.
    cached(&mut ctx, &tokens, 96, 96);
    let mut sizes = vec![1; 32];
    sizes.push(n - 128);
    assert!(read_on(&mut ctx, &tokens, 96, &sizes) != whole);
}
