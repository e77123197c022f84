//! Prompt and generation speed of `LocalModel` against a plain llama-cpp-2
//! greedy loop on the same prompt and model, in the same run.
//!
//! Run: `cargo bench -p agentry-local --bench local_speed`
//! (needs the model: `agentry model pull`). Prints a Markdown table.

use std::num::NonZeroU32;
use std::time::Instant;

use agentry::model::{ChatRequest, Message};
use agentry_local::fetch;
use agentry_local::{LocalConfig, LocalModel};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;

const MAX_TOKENS: u32 = 128;
const ROUNDS: usize = 9;

struct Speed {
    prompt_tps: f64,
    generation_tps: f64,
    generated: u64,
}

/// The reference: llama-cpp-2's documented greedy loop, nothing else.
fn plain_loop(backend: &LlamaBackend, model: &LlamaModel, prompt: &str, threads: i32) -> Speed {
    let vocab = model.vocab();
    let tokens = vocab.tokenize(prompt.as_bytes(), false, true);
    let n_ctx = (tokens.len() as u32 + MAX_TOKENS + 8).max(4096);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(512)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model.new_context(backend, params).unwrap();
    let started = Instant::now();
    let mut batch = LlamaBatch::new(512, 1);
    for (c, chunk) in tokens.chunks(512).enumerate() {
        batch.clear();
        for (i, token) in chunk.iter().enumerate() {
            let position = c * 512 + i;
            batch
                .add(*token, position as i32, &[0], position == tokens.len() - 1)
                .unwrap();
        }
        ctx.decode(&mut batch).unwrap();
    }
    let prompt_seconds = started.elapsed().as_secs_f64();
    let mut sampler = LlamaSampler::greedy();
    let started = Instant::now();
    let mut position = tokens.len() as i32;
    let mut generated = 0u64;
    let mut text = Vec::new();
    while generated < u64::from(MAX_TOKENS) {
        let token = sampler.sample(&ctx, batch.n_tokens() - 1);
        if vocab.is_eog(token) {
            break;
        }
        generated += 1;
        text.extend(vocab.token_to_piece(token, true, None));
        batch.clear();
        batch.add(token, position, &[0], true).unwrap();
        position += 1;
        ctx.decode(&mut batch).unwrap();
    }
    Speed {
        prompt_tps: tokens.len() as f64 / prompt_seconds,
        generation_tps: generated as f64 / started.elapsed().as_secs_f64(),
        generated,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let Some(path) = fetch::installed(&fetch::QWEN) else {
        eprintln!("SKIPPED: the local model is missing; run `agentry model pull` first");
        return;
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let ours = LocalModel::load_with(
        &path,
        LocalConfig {
            threads: Some(threads),
            // Every round reads the same prompt: cached, it would not be read at all.
            prompt_cache: false,
            ..LocalConfig::default()
        },
    )
    .unwrap();
    // The same with one sequence: what serving several at once costs one.
    let single = LocalModel::load_with(
        &path,
        LocalConfig {
            threads: Some(threads),
            prompt_cache: false,
            sequences: 1,
            ..LocalConfig::default()
        },
    )
    .unwrap();
    let request = ChatRequest {
        system: Some("You are a careful technical writer.".into()),
        messages: vec![Message::user(
            "Explain, in about one hundred words, how a hash map handles collisions, \
             and compare separate chaining with open addressing. "
                .repeat(6),
        )],
        ..ChatRequest::default()
    };
    let prompt = ours.render_prompt(&request).unwrap();

    // The reference loads its own copy of the model through the same (process-wide) backend.
    let backend: &LlamaBackend = agentry_local::backend().unwrap();
    let reference_model =
        LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default()).unwrap();

    let (mut plain_prompt, mut plain_gen, mut our_prompt, mut our_gen) =
        (vec![], vec![], vec![], vec![]);
    let (mut single_prompt, mut single_gen) = (vec![], vec![]);
    let mut generated = (0, 0);
    for _ in 0..ROUNDS {
        let plain = plain_loop(backend, &reference_model, &prompt.text(), threads as i32);
        plain_prompt.push(plain.prompt_tps);
        plain_gen.push(plain.generation_tps);
        let run = ours
            .generate(&prompt, None, MAX_TOKENS, None, &[], |_| true)
            .unwrap();
        our_prompt.push(run.prompt_tokens as f64 / run.prompt_seconds);
        our_gen.push(run.output_tokens as f64 / run.generation_seconds);
        let run = single
            .generate(&prompt, None, MAX_TOKENS, None, &[], |_| true)
            .unwrap();
        single_prompt.push(run.prompt_tokens as f64 / run.prompt_seconds);
        single_gen.push(run.output_tokens as f64 / run.generation_seconds);
        generated = (plain.generated, run.output_tokens);
    }
    let (pp, pg, op, og) = (
        median(plain_prompt),
        median(plain_gen),
        median(our_prompt),
        median(our_gen),
    );
    let prompt_tokens = ours
        .generate(&prompt, None, 1, None, &[], |_| true)
        .unwrap()
        .prompt_tokens;
    println!(
        "model: {} ({}), {threads} threads, prompt {prompt_tokens} tokens, up to {MAX_TOKENS} generated (plain {}, ours {}), median of {ROUNDS} rounds",
        ours.name(),
        path.display(),
        generated.0,
        generated.1
    );
    println!("| engine | prompt tok/s | generation tok/s |");
    println!("| --- | --- | --- |");
    println!("| plain llama-cpp-2 greedy loop | {pp:.1} | {pg:.1} |");
    println!("| agentry LocalModel (4 sequences, the default) | {op:.1} | {og:.1} |");
    let (sp, sg) = (median(single_prompt), median(single_gen));
    println!("| agentry LocalModel (1 sequence) | {sp:.1} | {sg:.1} |");
    println!("| ratio (ours / plain) | {:.3} | {:.3} |", op / pp, og / pg);
    println!(
        "| ratio (1 sequence / plain) | {:.3} | {:.3} |",
        sp / pp,
        sg / pg
    );
}
