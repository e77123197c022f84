//! How much a tool's description raises the local model's likelihood of a
//! request: log P(request | a system prompt naming the tool) − log P(request
//! | the same prompt without it), for each tool offered with the request.
//! A probe for the relevance gate (`benches/request_likelihood.py` writes
//! its input and reads its output; `BENCHMARKS.md` has what it found).
//!
//! ```sh
//! python3 benches/request_likelihood.py input > in.jsonl
//! cargo run -p agentry-local --example request_likelihood -- MODEL.gguf < in.jsonl > out.jsonl
//! python3 benches/request_likelihood.py score in.jsonl out.jsonl
//! ```
//!
//! Each input line is `{"id", "label", "request", "tools": [text, …]}`;
//! each output line `{"id", "label", "tokens", "pmi": [per tool]}`.

use std::io::{BufRead, Write};
use std::num::NonZeroU32;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

/// The chat template's opening, with `system` as the system prompt.
fn opening(system: &str) -> String {
    format!("<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n")
}

/// log P(`text` | `prefix`) under the model, and how many tokens `text` is.
fn log_likelihood(
    ctx: &mut LlamaContext,
    model: &LlamaModel,
    prefix: &str,
    text: &str,
) -> Result<(f64, usize), Box<dyn std::error::Error>> {
    let start = model.vocab().tokenize(prefix.as_bytes(), false, true).len();
    let all = model
        .vocab()
        .tokenize(format!("{prefix}{text}").as_bytes(), false, true);
    ctx.clear_kv_cache_seq(Some(0), None, None)?;
    let mut batch = LlamaBatch::new(all.len().max(1), 1);
    for (at, token) in all.iter().enumerate() {
        // The logits at `at` predict the token after it.
        let wanted = at + 1 >= start && at + 1 < all.len();
        batch.add(*token, at as i32, &[0], wanted)?;
    }
    ctx.decode(&mut batch)?;
    let mut total = 0.0;
    for at in start.saturating_sub(1)..all.len() - 1 {
        let logits = ctx.get_logits_ith(at as i32);
        let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let norm: f64 = logits.iter().map(|l| f64::from(l - top).exp()).sum();
        let next = usize::try_from(all[at + 1].0)?;
        total += f64::from(logits[next] - top) - norm.ln();
    }
    Ok((total, all.len() - start))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: request_likelihood MODEL.gguf < in.jsonl")?;
    let backend = agentry_local::backend()?;
    let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default())?;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(4096))
        .with_n_batch(4096)
        .with_n_ubatch(512)
        .with_n_threads(2)
        .with_n_threads_batch(2);
    let mut ctx = model.new_context(backend, params)?;
    let plain = opening("You are a helpful assistant.");
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let case: serde_json::Value = serde_json::from_str(&line?)?;
        let request = case["request"].as_str().ok_or("a line without a request")?;
        let (alone, tokens) = log_likelihood(&mut ctx, &model, &plain, request)?;
        let mut pmi = Vec::new();
        for tool in case["tools"].as_array().ok_or("a line without tools")? {
            let tool = tool.as_str().ok_or("a tool that is not text")?;
            let system = opening(&format!(
                "You are a helpful assistant with one tool: {tool}"
            ));
            pmi.push(log_likelihood(&mut ctx, &model, &system, request)?.0 - alone);
        }
        let record = serde_json::json!({
            "id": case["id"], "label": case["label"], "tokens": tokens, "pmi": pmi,
        });
        writeln!(out, "{record}")?;
    }
    Ok(())
}
