//! The prompt cache and batched sessions of `LocalModel`, each A/B in one run:
//!
//! 1. a five-turn chat, cache off and on: seconds and prompt tokens
//!    evaluated per turn;
//! 2. 1, 2, 4 and 8 sessions at once: total generated tokens per second and
//!    each session's time to its first token.
//!
//! Run: `cargo bench -p agentry-local --bench local_sessions`
//! (needs the model: `agentry model pull`). Prints Markdown tables.

use std::time::Instant;

use agentry::model::{ChatRequest, Message};
use agentry_local::fetch;
use agentry_local::{LocalConfig, LocalModel};

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

fn load(path: &std::path::Path, config: LocalConfig) -> LocalModel {
    LocalModel::load_with(path, config).expect("the model loads")
}

/// One five-turn chat; per turn: (seconds, prompt tokens, evaluated tokens).
fn chat(model: &LocalModel) -> Vec<(f64, u64, u64)> {
    let mut messages = Vec::new();
    let mut turns = Vec::new();
    for question in TURNS {
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

/// `n` sessions at once, each a different question: (total generated
/// tokens per second, mean and worst seconds to the first token).
fn sessions(model: &LocalModel, n: usize) -> (f64, f64, f64, u64) {
    let topics = [
        "the history of the printing press",
        "how volcanoes form",
        "the life cycle of a star",
        "how a compiler works",
        "the rules of chess",
        "how bread rises",
        "the water cycle",
        "how vaccines work",
    ];
    let prompts: Vec<_> = topics[..n]
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
        .collect();
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
        "| turn | prompt tokens | off: evaluated | off: seconds | on: evaluated | on: seconds |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let off = chat(&load(
        &path,
        LocalConfig {
            prompt_cache: false,
            ..LocalConfig::default()
        },
    ));
    let on = chat(&load(&path, LocalConfig::default()));
    for (turn, (off, on)) in off.iter().zip(&on).enumerate() {
        println!(
            "| {} | {} | {} | {:.2} | {} | {:.2} |",
            turn + 1,
            on.1,
            off.2,
            off.0,
            on.2,
            on.0
        );
    }
    let total = |turns: &[(f64, u64, u64)]| turns.iter().map(|t| t.0).sum::<f64>();
    println!(
        "| all | | | {:.2} | | {:.2} ({:.2}×) |\n",
        total(&off),
        total(&on),
        total(&on) / total(&off)
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
    sessions(&model, 1); // warm-up
    let mut one = None;
    for n in [1, 2, 4, 8] {
        let (tps, mean, worst, generated) = sessions(&model, n);
        let base = *one.get_or_insert(tps);
        println!(
            "| {n} | {generated} | {tps:.1} | {:.2} | {mean:.2} | {worst:.2} |",
            tps / base
        );
    }
}
