//! Each request's next token: sampled from its logits under its grammar,
//! reported to its sink, checked against its limits and stop strings.

use std::sync::atomic::Ordering;
use std::time::Instant;

use agentry_local_calls::list_opening::{Shape, list_share};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llguidance::Matcher;

use super::{Event, Running};
use crate::call_choices::OPENINGS;
use crate::engine::Loaded;

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
            let call_floor = request
                .job
                .call_floor
                .filter(|_| request.produced == 0 && request.text.is_empty());
            let sampler = &mut request.job.sampler;
            let floors = Floors {
                list: list_floor,
                call: call_floor,
            };
            match constrained_token(loaded, context, logits, grammar, sampler, floors) {
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

/// The floors that apply to one token's choice.
struct Floors {
    /// At a call block's first choice ([`open_likely_list`]).
    list: Option<f32>,
    /// At the reply's first token, between text and a call ([`open_likely_call`]).
    call: Option<f32>,
}

/// Pick a token from the logits at `logits` that `grammar` allows, and
/// advance the grammar past it. An end-of-generation token is allowed only
/// where the grammar may end. At a call block's first choice, the list
/// floor may leave only the tokens that open a list ([`open_likely_list`]);
/// at the reply's first token, the call floor only the call's opening
/// ([`open_likely_call`]).
fn constrained_token(
    loaded: &Loaded,
    context: &LlamaContext<'_>,
    logits: i32,
    grammar: &mut Matcher,
    sampler: &mut LlamaSampler,
    floors: Floors,
) -> Result<LlamaToken, String> {
    let mask = grammar.compute_mask_or_eos().map_err(|e| e.to_string())?;
    let mut candidates = context.token_data_array_ith(logits);
    for candidate in &mut candidates.data {
        if !mask.is_allowed(candidate.id().0 as u32) {
            candidate.set_logit(f32::NEG_INFINITY);
        }
    }
    if let Some(floor) = floors.list {
        open_likely_list(loaded, &mut candidates, floor);
    }
    if let Some(floor) = floors.call {
        open_likely_call(loaded, &mut candidates, floor);
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

/// Each token the grammar allows (its index among `candidates`), with what
/// `kind` makes of its text.
fn allowed_tokens<K>(
    loaded: &Loaded,
    candidates: &LlamaTokenDataArray,
    kind: impl Fn(&[u8]) -> K,
) -> Vec<(usize, K)> {
    let vocab = loaded.model.vocab();
    candidates
        .data
        .iter()
        .enumerate()
        .filter(|(_, candidate)| candidate.logit().is_finite())
        .map(|(index, candidate)| {
            (
                index,
                kind(&vocab.token_to_piece(candidate.id(), true, None)),
            )
        })
        .collect()
}

/// At a call block's first choice: when the allowed tokens that open a list
/// hold at least `floor` of the probability against those that open one
/// bare call ([`list_share`]), leave only the list's tokens allowed.
fn open_likely_list(loaded: &Loaded, candidates: &mut LlamaTokenDataArray, floor: f32) {
    let allowed = allowed_tokens(loaded, candidates, |piece| {
        Shape::of(&String::from_utf8_lossy(piece))
    });
    let logits = allowed
        .iter()
        .map(|&(index, shape)| (candidates.data[index].logit(), shape));
    let Some(share) = list_share(logits).filter(|share| *share >= floor) else {
        return;
    };
    for &(index, shape) in &allowed {
        if shape != Shape::List {
            candidates.data[index].set_logit(f32::NEG_INFINITY);
        }
    }
    if share < 0.5 {
        loaded.stats.lists_opened.fetch_add(1, Ordering::Relaxed);
    }
}

/// At the reply's first token: the share of the probability the allowed
/// tokens that open a call hold; when it is at least `floor`, only those
/// stay allowed. The share is recorded ([`LocalStats::last_call_share`]).
///
/// Under the call grammar a text answer may not open with `<` or a
/// backtick, so an allowed token that does opens a call: the template's
/// `<tool_call>` (one token in Qwen's vocabulary, or its first letter) or
/// the Markdown fence a small model falls back to.
///
/// [`LocalStats::last_call_share`]: crate::LocalStats::last_call_share
fn open_likely_call(loaded: &Loaded, candidates: &mut LlamaTokenDataArray, floor: f32) {
    let allowed = allowed_tokens(loaded, candidates, |piece| {
        matches!(piece.first(), Some(b'<' | b'`'))
    });
    let Some(top) = allowed
        .iter()
        .map(|&(index, _)| candidates.data[index].logit())
        .reduce(f32::max)
    else {
        return;
    };
    let (mut call, mut all) = (0.0f64, 0.0f64);
    for &(index, opens_call) in &allowed {
        let weight = f64::from(candidates.data[index].logit() - top).exp();
        all += weight;
        if opens_call {
            call += weight;
        }
    }
    if call == 0.0 {
        return;
    }
    let share = (call / all) as f32;
    loaded.stats.record_call_share(share);
    if share < floor {
        return;
    }
    for &(index, opens_call) in &allowed {
        if !opens_call {
            candidates.data[index].set_logit(f32::NEG_INFINITY);
        }
    }
    if share < 0.5 {
        loaded.stats.calls_opened.fetch_add(1, Ordering::Relaxed);
    }
}
