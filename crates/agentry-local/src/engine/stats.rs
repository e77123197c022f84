//! Counting a model's work: totals the decoding thread adds to, and the
//! snapshot [`LocalModel::stats`](crate::LocalModel::stats) returns.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Running totals of a model's work, updated by the decoding thread.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) prompt_tokens: AtomicU64,
    pub(crate) cached_tokens: AtomicU64,
    pub(crate) stored_tokens: AtomicU64,
    pub(crate) output_tokens: AtomicU64,
    pub(crate) peak_sequences: AtomicU64,
    pub(crate) reread_tokens: AtomicU64,
    pub(crate) lists_opened: AtomicU64,
    pub(crate) calls_opened: AtomicU64,
    pub(crate) call_choices: AtomicU64,
    /// The last call share's `f32` bits.
    pub(crate) last_call_share: AtomicU32,
    pub(crate) cpu_waits: AtomicU64,
    pub(crate) cpu_wait_micros: AtomicU64,
}

impl Counters {
    /// A reply's first choice between text and a call was weighed: `share`
    /// of the probability opened a call.
    pub(crate) fn record_call_share(&self, share: f32) {
        self.last_call_share
            .store(share.to_bits(), Ordering::Relaxed);
        self.call_choices.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> LocalStats {
        LocalStats {
            requests: self.requests.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            cached_tokens: self.cached_tokens.load(Ordering::Relaxed),
            stored_tokens: self.stored_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
            peak_sequences: self.peak_sequences.load(Ordering::Relaxed),
            reread_tokens: self.reread_tokens.load(Ordering::Relaxed),
            lists_opened: self.lists_opened.load(Ordering::Relaxed),
            calls_opened: self.calls_opened.load(Ordering::Relaxed),
            call_choices: self.call_choices.load(Ordering::Relaxed),
            last_call_share: (self.call_choices.load(Ordering::Relaxed) > 0)
                .then(|| f32::from_bits(self.last_call_share.load(Ordering::Relaxed))),
            cpu_waits: self.cpu_waits.load(Ordering::Relaxed),
            cpu_waited: std::time::Duration::from_micros(
                self.cpu_wait_micros.load(Ordering::Relaxed),
            ),
        }
    }
}

/// What a [`LocalModel`](crate::LocalModel) has done since it was loaded
/// ([`LocalModel::stats`](crate::LocalModel::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LocalStats {
    /// Requests whose prompt was read.
    pub requests: u64,
    /// Prompt tokens of those requests.
    pub prompt_tokens: u64,
    /// Prompt tokens taken from the cache rather than evaluated.
    pub cached_tokens: u64,
    /// Of the cached tokens, how many were loaded from the prompt store
    /// ([`LocalConfig::prompt_store`](crate::LocalConfig::prompt_store)) rather than found in memory.
    pub stored_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// The most requests decoded together in one batch.
    pub peak_sequences: u64,
    /// Tokens read again while the model was idle: what requests generated
    /// (and up to 96 tokens before it: a prompt read is at least 64 tokens
    /// long and starts at a multiple of 32), so that the
    /// next turn of a conversation reuses its last reply. Not counted in
    /// [`evaluated_tokens`](Self::evaluated_tokens).
    pub reread_tokens: u64,
    /// Replies whose call block was opened as a list by
    /// [`LocalConfig::list_floor`](crate::LocalConfig::list_floor) where one
    /// bare call was the likelier choice.
    pub lists_opened: u64,
    /// Replies that opened a call by
    /// [`LocalConfig::call_floor`](crate::LocalConfig::call_floor) where
    /// text was the likelier choice.
    pub calls_opened: u64,
    /// Replies whose first choice between text and a call was weighed (the
    /// call floor applied and the grammar allowed a call).
    pub call_choices: u64,
    /// The share of the probability the last weighed reply gave to opening a
    /// call; `None` before the first.
    pub last_call_share: Option<f32>,
    /// Decode calls that waited for another process (or model) to finish
    /// its turn on the cores ([`LocalConfig::cpu_lock`](crate::LocalConfig::cpu_lock)).
    pub cpu_waits: u64,
    /// How long those waits took in all.
    pub cpu_waited: std::time::Duration,
}

impl LocalStats {
    /// Prompt tokens the model actually evaluated.
    pub fn evaluated_tokens(&self) -> u64 {
        self.prompt_tokens - self.cached_tokens
    }
}
