//! Counting a model's work: totals the decoding thread adds to, and the
//! snapshot [`LocalModel::stats`](crate::LocalModel::stats) returns.

use std::sync::atomic::{AtomicU64, Ordering};

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
}

impl Counters {
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
        }
    }
}

/// What a [`LocalModel`](crate::LocalModel) has done since it was loaded
/// ([`LocalModel::stats`](crate::LocalModel::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
}

impl LocalStats {
    /// Prompt tokens the model actually evaluated.
    pub fn evaluated_tokens(&self) -> u64 {
        self.prompt_tokens - self.cached_tokens
    }
}
