//! [`Spend`]: the tokens a run and every run under it have spent, charged
//! up the chain of runs as they are spent. A child agent's tokens count in
//! its parent at once (even if the child is cut off by a timeout), and a run
//! stays within its own budget and every enclosing run's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agentry_core::model::Usage;

/// Tokens spent by one run and its descendants, with the run's budget.
#[derive(Debug)]
pub(crate) struct Spend {
    input: AtomicU64,
    output: AtomicU64,
    /// Of the input, what a prompt cache served.
    cached_input: AtomicU64,
    budget: u64,
    parent: Option<Arc<Spend>>,
}

impl Spend {
    /// The spend of a run the program starts.
    pub(crate) fn root(budget: u64) -> Arc<Self> {
        Arc::new(Self {
            input: AtomicU64::new(0),
            output: AtomicU64::new(0),
            cached_input: AtomicU64::new(0),
            budget,
            parent: None,
        })
    }

    /// The spend of a run started inside the run that `parent` belongs to.
    pub(crate) fn child_of(parent: &Arc<Spend>, budget: u64) -> Arc<Self> {
        Arc::new(Self {
            parent: Some(parent.clone()),
            ..Self::unchained(budget)
        })
    }

    fn unchained(budget: u64) -> Self {
        Self {
            input: AtomicU64::new(0),
            output: AtomicU64::new(0),
            cached_input: AtomicU64::new(0),
            budget,
            parent: None,
        }
    }

    /// Count `usage` here and in every enclosing run.
    pub(crate) fn charge(&self, usage: Usage) {
        let add = |counter: &AtomicU64, n: u64| {
            let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |value| {
                Some(value.saturating_add(n))
            });
        };
        add(&self.input, usage.input_tokens);
        add(&self.output, usage.output_tokens);
        add(&self.cached_input, usage.cached_input_tokens);
        if let Some(parent) = &self.parent {
            parent.charge(usage);
        }
    }

    /// Everything this run and its descendants have spent.
    pub(crate) fn usage(&self) -> Usage {
        Usage::new(
            self.input.load(Ordering::Relaxed),
            self.output.load(Ordering::Relaxed),
        )
        .with_cached_input(self.cached_input.load(Ordering::Relaxed))
    }

    /// True while this run and every enclosing run are within budget
    /// (the loop continues while tokens spent ≤ budget).
    pub(crate) fn within_budget(&self) -> bool {
        self.usage().total() <= self.budget
            && self
                .parent
                .as_ref()
                .is_none_or(|parent| parent.within_budget())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_climb_the_chain_and_every_budget_counts() {
        let root = Spend::root(100);
        let child = Spend::child_of(&root, 1_000);
        let sibling = Spend::child_of(&root, 1_000);
        root.charge(Usage::new(30, 10));
        child.charge(Usage::new(20, 5));
        assert_eq!(child.usage(), Usage::new(20, 5));
        assert_eq!(root.usage(), Usage::new(50, 15));
        assert!(child.within_budget() && root.within_budget());
        sibling.charge(Usage::new(40, 0));
        // The sibling's spending puts the shared parent over: both children stop.
        assert!(!root.within_budget());
        assert!(!child.within_budget(), "its parent is over budget");
        assert_eq!(child.usage().total(), 25);
        // Absurd counts saturate; they never wrap back under a budget.
        child.charge(Usage::new(u64::MAX, u64::MAX));
        assert_eq!(root.usage(), Usage::new(u64::MAX, u64::MAX));
        assert!(!root.within_budget());
    }
}
