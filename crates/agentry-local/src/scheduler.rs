//! The decoding thread behind a [`LocalModel`](crate::LocalModel).
//!
//! One llama.cpp context serves every request of a model. Its sequences are
//! *slots*: each request runs in one, and the next token of every generating
//! request is decoded in one call (continuous batching), so on a
//! memory-bound CPU several sessions cost less than as many one at a time.
//! Between those calls, prompts are read one call at a time, each alone
//! (`reads.rs` says why and how they are split).
//!
//! A finished request leaves its tokens in its slot's KV cache. The next
//! request takes the idle slot whose cached tokens share the longest prefix
//! with its prompt and evaluates only the rest: the second step of an agent
//! run, or the next turn of a chat, reads little more than what is new.
//! Slots that share nothing are reused least recently used first.
//!
//! With a [`PromptStore`], a prompt that evaluated many new tokens is also
//! written to disk, and a request that finds a longer prefix there than in
//! any slot loads it into its slot first: the next process starts warm.
//!
//! Requests are admitted first come, first served; a request that needs a
//! longer window than the slots have waits until the context is idle and is
//! then given a larger one (the cache starts over).

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agentry_core::model::ModelError;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llguidance::Matcher;

use crate::engine::Loaded;
use crate::prompt_store::{self, PromptStore};
use reads::next_read;
pub(crate) use reads::{MIN_PROMPT_READ, reusable_prefix};
use sample::next_token;
use slots::{Slot, choose_slot};

mod exit;
mod reads;
mod sample;
mod slots;

/// Most tokens per decode call.
pub(crate) const BATCH_SIZE: usize = 512;
/// While other requests generate, a prompt read is at most this long, so
/// that their tokens keep coming between reads.
const SHARED_READ: usize = 128;
/// How long the model waits idle before it reads a finished reply again
/// (`reread`): the next step of an agent run, or the end of the process,
/// usually comes sooner, and then nothing is read in vain.
const IDLE_BEFORE_REREAD: Duration = Duration::from_millis(100);
/// Slot windows are whole multiples of this (llama.cpp pads them so).
const WINDOW_STEP: u32 = 256;
/// The most sequences one context may have (llama.cpp's `LLAMA_MAX_SEQ`),
/// and fewer than the batch's tokens, so every generating request fits a batch.
pub(crate) const MAX_SLOTS: u32 = 256;

/// How the decoding thread is set up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Smallest window per slot, in tokens.
    pub window: u32,
    /// Slots: requests decoded together, and prompts kept cached.
    pub slots: u32,
    /// CPU threads.
    pub threads: i32,
    /// Reuse cached prompt prefixes.
    pub prompt_cache: bool,
}

/// One request for the decoding thread.
pub(crate) struct Job {
    /// The whole prompt, tokenised.
    pub tokens: Vec<LlamaToken>,
    /// The grammar every token must keep to, if any. The decoding thread
    /// masks the logits with it itself: should the grammar engine fail
    /// midway, the request ends with that error instead of going on
    /// unconstrained (as llama.cpp's own llguidance sampler would).
    pub grammar: Option<Matcher>,
    /// Picks a token from the masked logits, built by the caller.
    pub sampler: LlamaSampler,
    /// The list floor of the reply's first call-block choice, where it
    /// applies ([`list_opening`](agentry_local_calls::list_opening)).
    pub list_floor: Option<f32>,
    /// The call floor of the reply's first choice between text and a call,
    /// where it applies ([`LocalConfig::call_floor`](crate::LocalConfig::call_floor)).
    pub call_floor: Option<f32>,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Generation ends at the first of these strings (cut from the text).
    pub stop: Vec<String>,
    /// Receives the request's events; returning `false` cancels it.
    pub sink: Box<dyn FnMut(Event) -> bool + Send>,
}

/// What a running request reports, in this order: `Prompt` once, `Text`
/// for each decoded piece, `Done` last.
pub(crate) enum Event {
    /// The prompt is read.
    Prompt {
        /// Prompt tokens in all.
        tokens: u64,
        /// Of those, how many came from the cache without being evaluated.
        cached: u64,
        /// Seconds from admission to the first token's logits.
        seconds: f64,
    },
    /// A decoded piece of text.
    Text {
        /// The piece.
        piece: String,
        /// Tokens generated so far, this piece's included.
        produced: u64,
    },
    /// The request ended.
    Done(Result<Finished, ModelError>),
}

/// How a request ended.
pub(crate) struct Finished {
    /// The generated text, cut at a stop string.
    pub text: String,
    /// Generated tokens (the end-of-generation token excluded).
    pub output_tokens: u64,
    /// Seconds from the first generated token to the end.
    pub seconds: f64,
}

/// Start the decoding thread for `model`; it ends when the returned sender
/// (and every clone of it) is dropped, after the work in progress.
pub(crate) fn spawn(
    model: Arc<Loaded>,
    settings: Settings,
    store: Option<PromptStore>,
) -> Result<(Sender<Job>, JoinHandle<()>), ModelError> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("agentry-local-decode".into())
        .spawn(move || {
            run(&model, settings, store.as_ref(), receiver);
            let _working = exit::working();
            drop(model); // the last handle frees the model under the lock
        })
        .map_err(|error| ModelError::Local(format!("starting the decoding thread: {error}")))?;
    Ok((sender, thread))
}

/// A request being decoded.
struct Running {
    job: Job,
    slot: usize,
    /// Prompt tokens not yet evaluated.
    pending: VecDeque<LlamaToken>,
    cached: u64,
    /// Of the cached tokens, how many were loaded from the prompt store.
    stored: u64,
    admitted: Instant,
    generating: Option<Instant>,
    /// The token to feed next (the last one sampled).
    feed: Option<LlamaToken>,
    produced: u64,
    text: String,
    partial_utf8: Vec<u8>,
    /// Why the request ended early, if it failed.
    failure: Option<String>,
}

struct Engine<'m> {
    context: LlamaContext<'m>,
    slots: Vec<Slot>,
    window: u32,
}

fn run(loaded: &Loaded, settings: Settings, store: Option<&PromptStore>, jobs: Receiver<Job>) {
    let model = &loaded.model;
    let mut engine: Option<Engine<'_>> = None;
    let mut queue: VecDeque<Job> = VecDeque::new();
    let mut running: Vec<Running> = Vec::new();
    let mut clock = 0u64;
    let mut batch = LlamaBatch::new(BATCH_SIZE, 1);
    // Each round of work holds `exit::working()`; waiting for a job does not.
    'serve: loop {
        if running.is_empty() && queue.is_empty() {
            let stale = engine
                .as_ref()
                .filter(|_| settings.prompt_cache)
                .and_then(|engine| slots::stale(&engine.slots));
            let next = if stale.is_some() {
                jobs.recv_timeout(IDLE_BEFORE_REREAD)
            } else {
                jobs.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            match next {
                Ok(job) => queue.push_back(job),
                Err(RecvTimeoutError::Disconnected) => break 'serve,
                Err(RecvTimeoutError::Timeout) => {
                    let _working = exit::working();
                    if let (Some(engine), Some(index)) = (engine.as_mut(), stale) {
                        reread(loaded, engine, &mut batch, index);
                    }
                    continue 'serve;
                }
            }
        }
        let _working = exit::working();
        queue.extend(jobs.try_iter());
        admit(
            model,
            settings,
            store,
            &mut engine,
            &mut queue,
            &mut running,
        );
        if let Some(engine) = engine.as_mut()
            && !running.is_empty()
        {
            step(loaded, store, engine, &mut batch, &mut running, &mut clock);
        }
    }
    let _working = exit::working();
    drop(engine); // the context is freed under the lock too
}

/// Move queued jobs into free slots, first come first served.
fn admit<'m>(
    model: &'m LlamaModel,
    settings: Settings,
    store: Option<&PromptStore>,
    engine: &mut Option<Engine<'m>>,
    queue: &mut VecDeque<Job>,
    running: &mut Vec<Running>,
) {
    while let Some(job) = queue.front() {
        if job.tokens.is_empty() {
            let mut job = queue.pop_front().expect("front exists");
            (job.sink)(Event::Done(Err(ModelError::Local(
                "the prompt is empty".into(),
            ))));
            continue;
        }
        let needed = job.tokens.len() as u64 + u64::from(job.max_tokens) + 1;
        let fits = engine
            .as_ref()
            .is_some_and(|e| needed <= u64::from(e.window));
        if !fits {
            if !running.is_empty() {
                return; // wait until the context is idle, then grow it
            }
            let window = u32::try_from(needed)
                .unwrap_or(u32::MAX)
                .max(settings.window)
                .next_multiple_of(WINDOW_STEP);
            *engine = None; // free the old cache before allocating the new one
            match new_engine(model, settings, window) {
                Ok(created) => *engine = Some(created),
                Err(error) => {
                    let mut job = queue.pop_front().expect("front exists");
                    (job.sink)(Event::Done(Err(error)));
                    continue;
                }
            }
        }
        let engine = engine.as_mut().expect("created above");
        let Some((slot, common)) = choose_slot(&engine.slots, &job.tokens, settings.prompt_cache)
        else {
            return; // every slot is busy
        };
        let job = queue.pop_front().expect("front exists");
        // Only what a prompt read computed is reused (reads.rs).
        let mut common = common.min(engine.slots[slot].clean);
        let from_store = match store {
            Some(store) if settings.prompt_cache => store.load_into(
                &mut engine.context,
                slot,
                &mut engine.slots[slot].tokens,
                engine.window as usize,
                &job.tokens,
                common,
            ),
            _ => None,
        };
        if let Some(loaded) = from_store {
            // Stored prompts were all read as prompts.
            engine.slots[slot].clean = engine.slots[slot].tokens.len();
            common = loaded;
        }
        let reuse = reusable_prefix(job.tokens.len(), common);
        if engine
            .context
            .clear_kv_cache_seq(Some(slot as u32), Some(reuse as u32), None)
            .is_err()
        {
            forget(engine, slot);
        } else {
            engine.slots[slot].tokens.truncate(reuse);
        }
        let state = &mut engine.slots[slot];
        state.clean = state.clean.min(state.tokens.len());
        let reuse = state.tokens.len();
        state.busy = true;
        running.push(Running {
            pending: job.tokens[reuse..].iter().copied().collect(),
            cached: reuse as u64,
            stored: if from_store.is_some() {
                reuse as u64
            } else {
                0
            },
            job,
            slot,
            admitted: Instant::now(),
            generating: None,
            feed: None,
            failure: None,
            produced: 0,
            text: String::new(),
            partial_utf8: Vec::new(),
        });
    }
}

fn new_engine(
    model: &LlamaModel,
    settings: Settings,
    window: u32,
) -> Result<Engine<'_>, ModelError> {
    let slots = settings.slots.clamp(1, MAX_SLOTS);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(window.saturating_mul(slots)))
        .with_n_seq_max(slots)
        .with_kv_unified(false)
        .with_n_batch(BATCH_SIZE as u32)
        .with_n_threads(settings.threads)
        .with_n_threads_batch(settings.threads);
    let context = model
        .new_context(crate::engine::backend()?, params)
        .map_err(|error| ModelError::Local(format!("context: {error}")))?;
    Ok(Engine {
        context,
        slots: (0..slots).map(|_| Slot::default()).collect(),
        window,
    })
}

/// While nothing else runs: read again, as a prompt, the tokens the most
/// recently finished request generated in slot `index` (the one
/// `slots::stale` names; decoded one at a time, they cannot be reused as
/// they are; reads.rs), so that the next turn of its conversation reuses them.
fn reread(loaded: &Loaded, engine: &mut Engine<'_>, batch: &mut LlamaBatch, index: usize) {
    let slot = &mut engine.slots[index];
    let start = reusable_prefix(slot.tokens.len(), slot.clean);
    let tokens = slot.tokens.split_off(start);
    slot.clean = start;
    if engine
        .context
        .clear_kv_cache_seq(Some(index as u32), Some(start as u32), None)
        .is_err()
    {
        forget(engine, index);
        return;
    }
    let mut rest = &tokens[..];
    while !rest.is_empty() {
        let take = next_read(rest.len(), BATCH_SIZE);
        let read = Feed {
            request: None,
            slot: index,
            tokens: rest[..take].to_vec(),
            sample: true,
            prompt: true,
        };
        if decode(loaded, engine, batch, vec![read]).is_err() {
            forget(engine, index);
            return;
        }
        loaded
            .stats
            .reread_tokens
            .fetch_add(take as u64, Ordering::Relaxed);
        rest = &rest[take..];
    }
}

/// Empty slot `index` and its cache.
fn forget(engine: &mut Engine<'_>, index: usize) {
    engine
        .context
        .clear_kv_cache_seq(Some(index as u32), None, None)
        .ok();
    let slot = &mut engine.slots[index];
    slot.tokens.clear();
    slot.clean = 0;
}

/// One round: a decode call with the next token of every generating request
/// (so they are decoded together), then one prompt read of the earliest
/// admitted request still reading its prompt, alone in its call (reads.rs).
fn step(
    loaded: &Loaded,
    store: Option<&PromptStore>,
    engine: &mut Engine<'_>,
    batch: &mut LlamaBatch,
    running: &mut Vec<Running>,
    clock: &mut u64,
) {
    let mut finished = Vec::new();
    let generating: Vec<Feed> = running
        .iter_mut()
        .enumerate()
        .filter_map(|(index, request)| {
            request.feed.take().map(|token| Feed {
                request: Some(index),
                slot: request.slot,
                tokens: vec![token],
                sample: true,
                prompt: false,
            })
        })
        .collect();
    let mut calls = vec![generating];
    let reading = running
        .iter()
        .enumerate()
        .filter(|(_, request)| !request.pending.is_empty())
        .min_by_key(|(_, request)| request.admitted)
        .map(|(index, _)| index);
    if let Some(index) = reading {
        let others_generate = running.iter().any(|r| r.generating.is_some());
        let request = &mut running[index];
        let limit = if others_generate {
            SHARED_READ
        } else {
            BATCH_SIZE
        };
        let take = next_read(request.pending.len(), limit);
        let tokens: Vec<LlamaToken> = request.pending.drain(..take).collect();
        calls.push(vec![Feed {
            request: Some(index),
            slot: request.slot,
            tokens,
            sample: request.pending.is_empty(),
            prompt: true,
        }]);
    }
    for fed in calls.into_iter().filter(|fed| !fed.is_empty()) {
        let sampled = match decode(loaded, engine, batch, fed) {
            Ok(sampled) => sampled,
            Err(error) => {
                // The cache's state is unknown now: fail every running request and start over.
                engine.context.clear_kv_cache();
                for slot in &mut engine.slots {
                    *slot = Slot::default();
                }
                for mut request in running.drain(..) {
                    (request.job.sink)(Event::Done(Err(ModelError::Local(error.clone()))));
                }
                return;
            }
        };
        for (index, logits) in sampled {
            let Some(index) = index else { continue };
            let request = &running[index];
            if let Some(store) = store
                && request.generating.is_none()
            {
                let slot = &engine.slots[request.slot];
                let new_tokens = request.job.tokens.len() as u64 - request.cached;
                if new_tokens >= prompt_store::MIN_NEW_TOKENS as u64
                    && slot.clean == slot.tokens.len()
                {
                    // The slot holds exactly the prompt now: keep it for the next process.
                    store.save(&engine.context, request.slot as i32, &slot.tokens);
                }
            }
            if !next_token(loaded, &engine.context, &mut running[index], logits) {
                finished.push(index);
            }
        }
    }
    finished.sort_unstable();
    for index in finished.into_iter().rev() {
        let mut request = running.swap_remove(index);
        *clock += 1;
        let slot = &mut engine.slots[request.slot];
        slot.busy = false;
        slot.last_used = *clock;
        loaded
            .stats
            .output_tokens
            .fetch_add(request.produced, Ordering::Relaxed);
        let seconds = request
            .generating
            .map_or(0.0, |started| started.elapsed().as_secs_f64());
        if let Some(failure) = request.failure.take() {
            (request.job.sink)(Event::Done(Err(ModelError::Local(failure))));
            continue;
        }
        (request.job.sink)(Event::Done(Ok(Finished {
            text: std::mem::take(&mut request.text),
            output_tokens: request.produced,
            seconds,
        })));
    }
}

/// What one slot feeds a decode call.
struct Feed {
    /// The running request it is for (`None`: a reply read again while idle).
    request: Option<usize>,
    slot: usize,
    tokens: Vec<LlamaToken>,
    /// Keep the last token's logits (to sample the next token).
    sample: bool,
    /// A prompt read, rather than a generated token.
    prompt: bool,
}

/// Decode `feeds` in one call (in slot order), record the tokens in their
/// slots, and return (request, batch index of its logits) for each feed
/// that samples.
fn decode(
    loaded: &Loaded,
    engine: &mut Engine<'_>,
    batch: &mut LlamaBatch,
    mut feeds: Vec<Feed>,
) -> Result<Vec<(Option<usize>, i32)>, String> {
    // llama.cpp decodes the sequences of a per-sequence cache in one pass
    // only when the batch names them in increasing order, each one more than
    // the last (otherwise it splits the batch, and several sequences cost
    // nearly what they cost one at a time): add them in slot order.
    feeds.sort_by_key(|feed| feed.slot);
    batch.clear();
    let mut sampled = Vec::new();
    for feed in &feeds {
        let start = engine.slots[feed.slot].tokens.len();
        for (offset, token) in feed.tokens.iter().enumerate() {
            let logits = feed.sample && offset + 1 == feed.tokens.len();
            batch
                .add(*token, (start + offset) as i32, &[feed.slot as i32], logits)
                .map_err(|error| format!("batch: {error}"))?;
        }
        if feed.sample {
            sampled.push((feed.request, batch.n_tokens() - 1));
        }
    }
    loaded
        .stats
        .peak_sequences
        .fetch_max(feeds.len() as u64, Ordering::Relaxed);
    {
        let _turn = loaded.turns.as_ref().map(|turns| turns.turn(&loaded.stats));
        engine
            .context
            .decode(batch)
            .map_err(|error| format!("decode: {error}"))?;
    }
    for feed in feeds {
        let slot = &mut engine.slots[feed.slot];
        // A prompt read of at least MIN_PROMPT_READ tokens that continues
        // what prompt reads computed extends the reusable prefix (reads.rs).
        if feed.prompt && slot.clean == slot.tokens.len() && feed.tokens.len() >= MIN_PROMPT_READ {
            slot.clean += feed.tokens.len();
        }
        slot.tokens.extend(feed.tokens);
    }
    Ok(sampled)
}
