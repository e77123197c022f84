//! One call or a list of calls: the first choice inside a call block
//! (agentry-local's `LocalConfig::list_floor`).
//!
//! With the template's JSON a call block holds one call (`{"name": …}`) or
//! a JSON list of calls (`[{"name": …}, …]`), and the model picks by the
//! first token after the block's opening. The 0.5B model, asked for the
//! weather in two cities, usually opens one bare call and stops after it;
//! but where several calls are wanted it gives the list a real chance, and
//! where one is wanted hardly any. So a list is opened when its share of
//! the probability, against a bare call's, reaches the floor; the model
//! still writes every call in it, and later calls the conversation does not
//! ground are left out afterwards ([`grounding`](crate::grounding)).
//!
//! ```
//! use agentry_local_calls::list_opening::{Shape, opens_list};
//!
//! // The model's logits for the allowed first tokens of a call block.
//! let allowed = [(2.0, Shape::Call), (0.0, Shape::List)];
//! // A list gets e^0 / (e^2 + e^0) = 0.12 of the probability.
//! assert!(opens_list(allowed, 0.05));
//! assert!(!opens_list(allowed, 0.2));
//! // Nothing to choose between: the grammar already decided.
//! assert!(!opens_list([(0.0, Shape::List)], 0.05));
//! ```

/// What an allowed first token of a call block begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A JSON list of calls (`[`).
    List,
    /// One bare call (`{`).
    Call,
    /// Anything else (blank space the grammar allows).
    Other,
}

impl Shape {
    /// The shape a token's text begins, blank space skipped.
    pub fn of(piece: &str) -> Shape {
        match piece.trim_start().chars().next() {
            Some('[') => Shape::List,
            Some('{') => Shape::Call,
            _ => Shape::Other,
        }
    }
}

/// Whether a list is opened: the tokens that begin one hold at least
/// `floor` of the probability that list-opening and call-opening tokens
/// hold together ([`list_share`]). `false` when either shape is not
/// allowed: then there is nothing to choose.
pub fn opens_list(allowed: impl IntoIterator<Item = (f32, Shape)>, floor: f32) -> bool {
    list_share(allowed).is_some_and(|share| share >= floor)
}

/// The share of the probability (a softmax over `allowed`'s logits) that
/// the tokens opening a list hold, against those opening one bare call;
/// `None` unless both shapes are allowed.
pub fn list_share(allowed: impl IntoIterator<Item = (f32, Shape)>) -> Option<f32> {
    let allowed: Vec<(f32, Shape)> = allowed
        .into_iter()
        .filter(|(logit, shape)| *shape != Shape::Other && logit.is_finite())
        .collect();
    let top = allowed.iter().map(|(logit, _)| *logit).reduce(f32::max)?;
    let mass = |wanted: Shape| -> f32 {
        allowed
            .iter()
            .filter(|(_, shape)| *shape == wanted)
            .map(|(logit, _)| (logit - top).exp())
            .sum()
    };
    let both = [Shape::List, Shape::Call]
        .iter()
        .all(|wanted| allowed.iter().any(|(_, shape)| shape == wanted));
    let (list, call) = (mass(Shape::List), mass(Shape::Call));
    // The likeliest token counts e^0 = 1, so the sum is never zero.
    both.then(|| list / (list + call))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_read_after_blank_space() {
        assert_eq!(Shape::of("["), Shape::List);
        assert_eq!(Shape::of("[{\""), Shape::List);
        assert_eq!(Shape::of(" {\n"), Shape::Call);
        assert_eq!(Shape::of("\n"), Shape::Other);
        assert_eq!(Shape::of(""), Shape::Other);
    }

    #[test]
    fn the_list_share_counts_every_token_of_a_shape() {
        // Two list tokens at logit 0 against one call token at logit ln 8:
        // the list holds 2 / 10 of the probability.
        let allowed = [
            (0.0, Shape::List),
            (0.0, Shape::List),
            (8f32.ln(), Shape::Call),
            (5.0, Shape::Other),
        ];
        assert!(opens_list(allowed, 0.2 - 1e-4));
        assert!(!opens_list(allowed, 0.2 + 1e-4));
    }

    #[test]
    fn masked_tokens_and_a_missing_shape_decide_nothing() {
        let masked = [(f32::NEG_INFINITY, Shape::List), (1.0, Shape::Call)];
        assert!(!opens_list(masked, 0.0));
        assert!(!opens_list([(1.0, Shape::Call)], 0.0));
        assert!(!opens_list(std::iter::empty(), 0.0));
        // Far apart logits do not overflow.
        assert!(opens_list(
            [(-1000.0, Shape::Call), (1000.0, Shape::List)],
            0.99
        ));
    }
}
