//! The prompt cache and batched sessions of `LocalModel`, each A/B in one run:
//!
//! 1. a five-turn chat, cache off and on: seconds and prompt tokens
//!    evaluated per turn; with the cache, once with each turn sent as soon
//!    as the last one ends and once after a pause, as a person reading the
//!    reply would leave (the idle model then reads the reply again as a
//!    prompt, so that the next turn reuses it; the pause is not counted);
//! 2. 1, 2, 4 and 8 sessions at once: total generated tokens per second and
//!    each session's time to its first token, beside the same prompts
//!    decoded by a plain llama-cpp-2 batch loop (one token of every
//!    sequence per step, nothing else): the most batching gives on this
//!    machine.
//!
//! Run: `cargo bench -p agentry-local --bench local_sessions`
//! (needs the model: `agentry model pull`). Prints Markdown tables.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use agentry::model::{ChatRequest, Message};
use agentry_local::fetch;
use agentry_local::{LocalConfig, LocalModel};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;

const TURNS: [&str; 5] = [
    "I am planning a three-day trip to Lisbon in May. What should I pack?",
    "Which neighbourhoods are good to stay in?",
    "What is a good day trip from there?",
    "How do I get there by public transport?",
    "Summarise the plan in three bullet points.",
];
const SYSTEM: &str = "You are a helpful travel assistant. Answer in at most three sentences.";
const CHAT_MAX_TOKENS: u32 = 64;
const SESSION_MAX_TOKENS: u32 = 96;
/// The pause between turns of the second cached chat.
const READING: Duration = Duration::from_secs(2);

fn load(path: &std::path::Path, config: LocalConfig) -> LocalModel {
    LocalModel::load_with(path, config).expect("the model loads")
}

/// One five-turn chat, `pause` between turns; per turn: (seconds, prompt
/// tokens, evaluated tokens).
fn chat(model: &LocalModel, pause: Duration) -> Vec<(f64, u64, u64)> {
    let mut messages = Vec::new();
    let mut turns = Vec::new();
    for question in TURNS {
        std::thread::sleep(pause);
        messages.push(Message::user(question));
        let request = ChatRequest {
            system: Some(SYSTEM.into()),
            messages: messages.clone(),
            ..ChatRequest::default()
        };
        let started = Instant::now();
        let prompt = model.render_prompt(&request).unwrap();
        let reply = model
            .generate(&prompt, None, CHAT_MAX_TOKENS, None, &[], |_| true)
            .unwrap();
        turns.push((
            started.elapsed().as_secs_f64(),
            reply.prompt_tokens,
            reply.prompt_tokens - reply.cached_tokens,
        ));
        messages.push(Message::assistant(reply.text));
    }
    turns
}

const TOPICS: [&str; 8] = [
    "the history of the printing press",
    "how volcanoes form",
    "the life cycle of a star",
    "how a compiler works",
    "the rules of chess",
    "how bread rises",
    "the water cycle",
    "how vaccines work",
];

/// The prompts of `n` sessions, each a different question.
fn session_prompts(model: &LocalModel, n: usize) -> Vec<agentry_local::Prompt> {
    TOPICS[..n]
        .iter()
        .map(|topic| {
            model
                .render_prompt(&ChatRequest {
                    messages: vec![Message::user(format!(
                        "Write a detailed explanation of {topic}."
                    ))],
                    ..ChatRequest::default()
                })
                .unwrap()
        })
        .collect()
}

/// `n` sessions at once, each a different question: (total generated
/// tokens per second, mean and worst seconds to the first token).
fn sessions(model: &LocalModel, n: usize) -> (f64, f64, f64, u64) {
    let prompts = session_prompts(model, n);
    let started = Instant::now();
    let results: Vec<(f64, u64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = prompts
            .iter()
            .map(|prompt| {
                scope.spawn(move || {
                    let mut first = None;
                    let reply = model
                        .generate(prompt, None, SESSION_MAX_TOKENS, None, &[], |_| {
                            first.get_or_insert_with(|| started.elapsed().as_secs_f64());
                            true
                        })
                        .unwrap();
                    (first.unwrap_or(f64::NAN), reply.output_tokens)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let generated: u64 = results.iter().map(|(_, tokens)| tokens).sum();
    let firsts: Vec<f64> = results.iter().map(|(first, _)| *first).collect();
    let mean = firsts.iter().sum::<f64>() / firsts.len() as f64;
    let worst = firsts.iter().copied().fold(0.0, f64::max);
    (generated as f64 / wall, mean, worst, generated)
}

/// A context shaped like `LocalModel`'s for the plain loop: 8 sequences of
/// 4,096 cells, one cache per sequence.
fn plain_context(model: &LlamaModel, threads: i32) -> LlamaContext<'_> {
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(4096 * 8))
        .with_n_seq_max(8)
        .with_kv_unified(false)
        .with_n_batch(512)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    model
        .new_context(agentry_local::backend().unwrap(), params)
        .unwrap()
}

/// The same `n` prompts through llama-cpp-2's batch API and nothing else:
/// each prompt read into its own sequence, then one greedy token of every
/// unfinished sequence per decode call. The context is reused (cleared) from
/// run to run, as `LocalModel` reuses its own.
/// Returns (generated tokens, total tokens/s from the first prompt token,
/// tokens/s of the decode steps alone).
fn plain_batch(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    prompts: &[String],
) -> (u64, f64, f64) {
    ctx.clear_kv_cache();
    let vocab = model.vocab();
    let mut sampler = LlamaSampler::greedy();
    let mut batch = LlamaBatch::new(512, 8);
    let started = Instant::now();
    // Per sequence: its next position, the token sampled last (None once
    // finished) and how many it has generated.
    let mut sequences: Vec<(i32, Option<llama_cpp_2::token::LlamaToken>, u32)> = Vec::new();
    for (seq, prompt) in prompts.iter().enumerate() {
        let tokens = vocab.tokenize(prompt.as_bytes(), false, true);
        batch.clear();
        for (i, token) in tokens.iter().enumerate() {
            batch
                .add(*token, i as i32, &[seq as i32], i == tokens.len() - 1)
                .unwrap();
        }
        ctx.decode(&mut batch).unwrap();
        let token = sampler.sample(ctx, batch.n_tokens() - 1);
        sequences.push((
            tokens.len() as i32,
            (!vocab.is_eog(token)).then_some(token),
            1,
        ));
    }
    let decoding = Instant::now();
    let mut decoded = 0u64;
    loop {
        batch.clear();
        let mut rows = Vec::new();
        for (seq, (position, token, count)) in sequences.iter().enumerate() {
            if let Some(token) = token
                && *count < SESSION_MAX_TOKENS
            {
                rows.push(seq);
                batch.add(*token, *position, &[seq as i32], true).unwrap();
            }
        }
        if rows.is_empty() {
            break;
        }
        ctx.decode(&mut batch).unwrap();
        decoded += rows.len() as u64;
        for (row, seq) in rows.into_iter().enumerate() {
            let token = sampler.sample(ctx, row as i32);
            let (position, last, count) = &mut sequences[seq];
            *position += 1;
            *last = (!vocab.is_eog(token)).then_some(token);
            *count += u32::from(last.is_some());
        }
    }
    let generated: u64 = sequences.iter().map(|s| u64::from(s.2)).sum();
    (
        generated,
        generated as f64 / started.elapsed().as_secs_f64(),
        decoded as f64 / decoding.elapsed().as_secs_f64(),
    )
}

fn main() {
    let Some(path) = fetch::installed(&fetch::QWEN) else {
        eprintln!("SKIPPED: the local model is missing; run `agentry model pull` first");
        return;
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    println!("model: {} , {threads} threads\n", path.display());

    println!(
        "### Five-turn chat, prompt cache off and on (greedy, {CHAT_MAX_TOKENS} tokens at most per reply)\n"
    );
    println!(
        "| turn | prompt tokens | off: evaluated | off: seconds | on: evaluated | on: seconds | on, {}s pauses: evaluated | on, {}s pauses: seconds |",
        READING.as_secs(),
        READING.as_secs()
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let off = chat(
        &load(
            &path,
            LocalConfig {
                prompt_cache: false,
                ..LocalConfig::default()
            },
        ),
        Duration::ZERO,
    );
    let on = chat(&load(&path, LocalConfig::default()), Duration::ZERO);
    let paused = chat(&load(&path, LocalConfig::default()), READING);
    for (turn, ((off, on), paused)) in off.iter().zip(&on).zip(&paused).enumerate() {
        println!(
            "| {} | {} | {} | {:.2} | {} | {:.2} | {} | {:.2} |",
            turn + 1,
            on.1,
            off.2,
            off.0,
            on.2,
            on.0,
            paused.2,
            paused.0
        );
    }
    let total = |turns: &[(f64, u64, u64)]| turns.iter().map(|t| t.0).sum::<f64>();
    println!(
        "| all | | | {:.2} | | {:.2} ({:.2}×) | | {:.2} ({:.2}×) |\n",
        total(&off),
        total(&on),
        total(&on) / total(&off),
        total(&paused),
        total(&paused) / total(&off)
    );

    println!(
        "### Concurrent sessions (one model, 8 sequences; {SESSION_MAX_TOKENS} tokens at most each)\n"
    );
    println!(
        "| sessions | generated tokens | total tokens/s | × one session | mean first token (s) | worst first token (s) |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let model = load(
        &path,
        LocalConfig {
            sequences: 8,
            prompt_cache: false,
            ..LocalConfig::default()
        },
    );
    sessions(&model, 8); // warm-up: every sequence used once
    let mut one = None;
    let mut ours = Vec::new();
    for n in [1, 2, 4, 8] {
        let (tps, mean, worst, generated) = sessions(&model, n);
        let base = *one.get_or_insert(tps);
        ours.push(tps);
        println!(
            "| {n} | {generated} | {tps:.1} | {:.2} | {mean:.2} | {worst:.2} |",
            tps / base
        );
    }

    // The same prompts through llama-cpp-2 alone, right after, with the
    // model loaded again: how much one decode step of n sequences gains on
    // this machine, whoever schedules it.
    println!("\n### The same sessions through a plain llama-cpp-2 batch loop\n");
    println!(
        "| sessions | generated tokens | total tokens/s | × one session | decode steps alone: tokens/s | × one session | agentry / plain (total) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let plain_model = LlamaModel::load_from_file(
        agentry_local::backend().unwrap(),
        &path,
        &LlamaModelParams::default(),
    )
    .unwrap();
    let texts = |n| -> Vec<String> {
        session_prompts(&model, n)
            .iter()
            .map(|p| p.text())
            .collect()
    };
    let mut ctx = plain_context(&plain_model, threads as i32);
    plain_batch(&plain_model, &mut ctx, &texts(8)); // warm-up: every sequence's cache touched
    let mut one = None;
    for (n, ours) in [1, 2, 4, 8].into_iter().zip(ours) {
        let (generated, total, steps) = plain_batch(&plain_model, &mut ctx, &texts(n));
        let (base_total, base_steps) = *one.get_or_insert((total, steps));
        println!(
            "| {n} | {generated} | {total:.1} | {:.2} | {steps:.1} | {:.2} | {:.2} |",
            total / base_total,
            steps / base_steps,
            ours / total
        );
    }
}
