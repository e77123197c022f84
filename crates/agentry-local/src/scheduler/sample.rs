//! Each request's next token: sampled from its logits under its grammar,
//! reported to its sink, checked against its limits and stop strings.

use std::sync::atomic::Ordering;
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llguidance::Matcher;

use super::{Event, Running};
use crate::engine::Loaded;
use crate::list_opening::{OPENINGS, Shape, list_share};

/// Sample one token for `request` from the logits at `logits`; `false` when
/// the request is finished.
pub(super) fn next_token(
    loaded: &Loaded,
    context: &LlamaContext<'_>,
    request: &mut Running,
    logits: i32,
) -> bool {
    if request.generating.is_none() {
        request.generating = Some(Instant::now());
        let stats = &loaded.stats;
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let tokens = request.job.tokens.len() as u64;
        stats.prompt_tokens.fetch_add(tokens, Ordering::Relaxed);
        stats
            .cached_tokens
            .fetch_add(request.cached, Ordering::Relaxed);
        stats
            .stored_tokens
            .fetch_add(request.stored, Ordering::Relaxed);
        let event = Event::Prompt {
            tokens,
            cached: request.cached,
            seconds: request.admitted.elapsed().as_secs_f64(),
        };
        if !(request.job.sink)(event) {
            return false;
        }
    }
    if request.produced >= u64::from(request.job.max_tokens) {
        return false;
    }
    let vocab = loaded.model.vocab();
    let token = match request.job.grammar.as_mut() {
        None => request.job.sampler.sample(context, logits),
        Some(grammar) => {
            let list_floor = request
                .job
                .list_floor
                .filter(|_| OPENINGS.contains(&request.text.as_str()));
            let choice = Choice { list_floor, loaded };
            match constrained_token(context, logits, grammar, &mut request.job.sampler, choice) {
                Ok(token) => token,
                Err(error) => {
                    request.failure = Some(format!("the grammar engine failed: {error}"));
                    return false;
                }
            }
        }
    };
    if vocab.is_eog(token) {
        return false;
    }
    request.produced += 1;
    request
        .partial_utf8
        .extend(vocab.token_to_piece(token, true, None));
    let valid = match std::str::from_utf8(&request.partial_utf8) {
        Ok(all) => all.len(),
        Err(error) => error.valid_up_to(),
    };
    if valid > 0 {
        let piece = String::from_utf8_lossy(&request.partial_utf8[..valid]).into_owned();
        request.partial_utf8.drain(..valid);
        request.text.push_str(&piece);
        let produced = request.produced;
        if !(request.job.sink)(Event::Text { piece, produced }) {
            return false;
        }
        if let Some(stop_at) = request
            .job
            .stop
            .iter()
            .find_map(|stop| request.text.find(stop.as_str()))
        {
            request.text.truncate(stop_at);
            return false;
        }
    }
    if request.produced >= u64::from(request.job.max_tokens) {
        return false;
    }
    request.feed = Some(token);
    true
}

/// What, besides the grammar, decides a token.
struct Choice<'a> {
    /// At a call block's first choice, the list floor that applies.
    list_floor: Option<f32>,
    loaded: &'a Loaded,
}

/// Pick a token from the logits at `logits` that `grammar` allows, and
/// advance the grammar past it. An end-of-generation token is allowed only
/// where the grammar may end. At a call block's first choice with a list
/// floor, only list-opening tokens stay allowed when a list holds at least
/// the floor's share ([`crate::list_opening`]).
fn constrained_token(
    context: &LlamaContext<'_>,
    logits: i32,
    grammar: &mut Matcher,
    sampler: &mut LlamaSampler,
    choice: Choice<'_>,
) -> Result<LlamaToken, String> {
    let mask = grammar.compute_mask_or_eos().map_err(|e| e.to_string())?;
    let mut candidates = context.token_data_array_ith(logits);
    let mut shapes = Vec::new();
    for (index, candidate) in candidates.data.iter_mut().enumerate() {
        if !mask.is_allowed(candidate.id().0 as u32) {
            candidate.set_logit(f32::NEG_INFINITY);
        } else if choice.list_floor.is_some() {
            let vocab = choice.loaded.model.vocab();
            let piece = vocab.token_to_piece(candidate.id(), true, None);
            shapes.push((index, Shape::of(&String::from_utf8_lossy(&piece))));
        }
    }
    if let Some(floor) = choice.list_floor {
        let share = list_share(
            shapes
                .iter()
                .map(|&(index, shape)| (candidates.data[index].logit(), shape)),
        );
        if share.is_some_and(|share| share >= floor) {
            for &(index, shape) in &shapes {
                if shape != Shape::List {
                    candidates.data[index].set_logit(f32::NEG_INFINITY);
                }
            }
            if share.is_some_and(|share| share < 0.5) {
                let stats = &choice.loaded.stats;
                stats.lists_opened.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    candidates.apply_sampler(sampler);
    let token = candidates
        .selected_token()
        .ok_or_else(|| "no token was allowed".to_owned())?;
    sampler.accept(token);
    if !grammar.is_stopped() {
        grammar
            .consume_token(token.0 as u32)
            .map_err(|e| e.to_string())?;
    }
    Ok(token)
}
