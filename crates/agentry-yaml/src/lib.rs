//! # agentry-yaml
//!
//! YAML read within budgets: nesting depth and alias expansion checked
//! before a text is deserialised, so a hostile text (a deep `[[[…` or an
//! alias bomb) is refused in bounded time and memory.
//!
//! ```
//! use agentry_yaml::{Nesting, Refusal, nesting_within, within_budget};
//!
//! // A mapping, two keys, a list and its three items, a scalar: 8 nodes,
//! // nested two deep.
//! let plain = "a: [1, 2, 3]\nb: x\n";
//! assert!(matches!(nesting_within(plain, 2), Nesting::Within));
//! assert!(matches!(nesting_within(plain, 1), Nesting::Deeper));
//! assert!(within_budget(plain, 8).is_ok());
//! assert!(matches!(within_budget(plain, 7), Err(Refusal::OverBudget)));
//!
//! // Each use of an alias counts its anchor's whole node again.
//! let aliased = "a: &l [1, 2, 3]\nb: *l\n";
//! assert!(within_budget(aliased, 11).is_ok());
//! assert!(matches!(within_budget(aliased, 10), Err(Refusal::OverBudget)));
//!
//! // Not YAML: the parser's own error.
//! assert!(matches!(within_budget("a: [", 100), Err(Refusal::Parse(_))));
//! ```
//!
//! [`nesting_within`] refuses a text nested deeper than `serde_yaml_ng`
//! reads (its recursion limit), in time linear in the text: that parser
//! spends time quadratic in the depth of flow collections (`[[[…`) before
//! its own limit refuses them.
//!
//! [`within_budget`] is a budget on the nodes a YAML document makes, each
//! use of an alias counted again: it walks the document through
//! `serde_yaml_ng` with a visitor that builds nothing and counts every node
//! visited, alias replays included, stopping at the budget, so an alias bomb
//! (nested, or one wide anchor used many times) is refused before the
//! document is read.

#![warn(missing_docs)]

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use yaml_rust2::parser::{Event, Parser};

/// How deeply a text's collections nest, against a limit.
#[derive(Debug)]
pub enum Nesting {
    /// At most the limit.
    Within,
    /// Deeper than the limit.
    Deeper,
    /// The event parser does not read the text; `flow_openers` is an upper
    /// bound on its depth (every `[` and `{` in it, quoted or not).
    Unread {
        /// The `[` and `{` characters in the text.
        flow_openers: usize,
    },
}

/// Whether `text`'s sequences and mappings (flow `[`/`{` and block
/// indentation alike) nest at most `max` deep. Reads the parser's events
/// once and stops at the first one past `max`; the event parser's own limit
/// on flow levels (255) counts as deeper too.
pub fn nesting_within(text: &str, max: usize) -> Nesting {
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => return Nesting::Within,
            Ok((Event::SequenceStart(..) | Event::MappingStart(..), _)) => {
                depth += 1;
                if depth > max {
                    return Nesting::Deeper;
                }
            }
            Ok((Event::SequenceEnd | Event::MappingEnd, _)) => depth = depth.saturating_sub(1),
            Ok(_) => {}
            Err(error) if error.info() == "recursion limit exceeded" => return Nesting::Deeper,
            Err(_) => {
                return Nesting::Unread {
                    flow_openers: text.bytes().filter(|b| matches!(b, b'[' | b'{')).count(),
                };
            }
        }
    }
}

/// Why a document did not pass the count.
#[derive(Debug)]
pub enum Refusal {
    /// More nodes than the budget.
    OverBudget,
    /// Not YAML (the parser's own error).
    Parse(serde_yaml_ng::Error),
}

/// Walk `text`'s nodes, at most `budget` of them.
pub fn within_budget(text: &str, budget: usize) -> Result<(), Refusal> {
    let left = Cell::new(budget);
    let over = Cell::new(false);
    let count = Count {
        left: &left,
        over: &over,
    };
    match count.deserialize(serde_yaml_ng::Deserializer::from_str(text)) {
        Ok(()) => Ok(()),
        Err(_) if over.get() => Err(Refusal::OverBudget),
        Err(error) => Err(Refusal::Parse(error)),
    }
}

/// The nodes still allowed, shared by every level of the walk.
#[derive(Clone, Copy)]
struct Count<'a> {
    left: &'a Cell<usize>,
    over: &'a Cell<bool>,
}

impl Count<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.over.set(true);
                Err(E::custom("over the node budget"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }

    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.take()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }

    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.take()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.take()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }

    /// A tagged node (`!tag value`): the tag, then the value.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        use de::VariantAccess;
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(text: &str, budget: usize) -> &'static str {
        match within_budget(text, budget) {
            Ok(()) => "within",
            Err(Refusal::OverBudget) => "over",
            Err(Refusal::Parse(_)) => "parse",
        }
    }

    fn nesting(text: &str, max: usize) -> String {
        match nesting_within(text, max) {
            Nesting::Within => "within".into(),
            Nesting::Deeper => "deeper".into(),
            Nesting::Unread { flow_openers } => format!("unread {flow_openers}"),
        }
    }

    #[test]
    fn flow_and_block_nesting_count_alike() {
        assert_eq!(nesting("a: [[1]]\n", 3), "within");
        assert_eq!(nesting("a: [[1]]\n", 2), "deeper");
        assert_eq!(nesting("a:\n  b:\n    - {c: 1}\n", 4), "within");
        assert_eq!(nesting("a:\n  b:\n    - {c: 1}\n", 3), "deeper");
        // Closed collections do not add up.
        assert_eq!(nesting("[[1], [2], [[3]]]", 3), "within");
        // Brackets inside quotes and plain scalars are text.
        assert_eq!(nesting("a: \"[[[[\"\nb: x[[[[\n", 1), "within");
        // Past the event parser's own flow limit, on one line, unclosed.
        assert_eq!(nesting(&"[".repeat(300), 128), "deeper");
        assert_eq!(nesting("a: [\"x", 128), "unread 1");
    }

    #[test]
    fn every_node_and_every_use_of_an_alias_counts() {
        // A mapping, two keys, a list and its three items, a scalar: 8 nodes.
        let plain = "a: [1, 2, 3]\nb: x\n";
        assert_eq!(count(plain, 8), "within");
        assert_eq!(count(plain, 7), "over");
        // The list again through an alias: the list and its items count twice.
        let aliased = "a: &l [1, 2, 3]\nb: *l\n";
        assert_eq!(count(aliased, 11), "within");
        assert_eq!(count(aliased, 10), "over");
        assert_eq!(count("!tagged {a: 1}", 10), "within");
        assert_eq!(count("a: [", 100), "parse");
    }
}
