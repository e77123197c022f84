//! Budgets on YAML aliases, checked before a document is read, so an alias
//! bomb (nested, or one wide anchor used many times) is refused in bounded
//! time and memory; and a budget on nesting, checked first on every text.
//!
//! [`nesting_within`] refuses a text nested deeper than `serde_yaml_ng`
//! reads (its recursion limit), in time linear in the text: that parser
//! spends time quadratic in the depth of flow collections (`[[[…`) before
//! its own limit refuses them.
//!
//! [`alias_nodes_within`] is exact: it reads the parser's events once, keeps
//! the size of each anchored node (aliases inside it included) and adds it
//! up at every use. [`within_budget`] is the fallback for a text that parser
//! does not read: it walks the document through `serde_yaml_ng` with a
//! visitor that builds nothing and counts every node visited, alias replays
//! included, stopping at the budget. [`nesting_within`] and
//! [`within_budget`] come from `agentry-yaml`, shared with skills' front
//! matter.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser};

pub(crate) use agentry_yaml::{Nesting, Refusal, nesting_within, within_budget};

/// What aliases add to a text, against a budget.
pub(crate) enum Aliases {
    /// At most the budget.
    Within,
    /// More than the budget.
    Over,
    /// The event parser does not read the text; count another way.
    Unread,
}

/// Whether the nodes `text`'s aliases add (each use counts its anchor's
/// whole node) stay within `budget`. Stops as soon as they pass it.
pub(crate) fn alias_nodes_within(text: &str, budget: usize) -> Aliases {
    let mut parser = Parser::new_from_str(text);
    // The size of each anchored node, by anchor id (0: no anchor).
    let mut sizes: HashMap<usize, usize> = HashMap::new();
    // Open collections: anchor id and the node count where each began.
    let mut open: Vec<(usize, usize)> = Vec::new();
    let (mut nodes, mut added) = (0usize, 0usize);
    loop {
        let event = match parser.next_token() {
            Ok((event, _)) => event,
            Err(_) => return Aliases::Unread,
        };
        match event {
            Event::StreamEnd => return Aliases::Within,
            Event::Scalar(_, _, anchor, _) => {
                nodes += 1;
                if anchor != 0 {
                    sizes.insert(anchor, 1);
                }
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                open.push((anchor, nodes));
                nodes += 1;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, start)) = open.pop()
                    && anchor != 0
                {
                    sizes.insert(anchor, nodes - start);
                }
            }
            Event::Alias(anchor) => {
                // An alias to a collection still open (a cycle) counts once.
                let size = sizes.get(&anchor).copied().unwrap_or(1);
                nodes += size;
                added += size;
                if added > budget {
                    return Aliases::Over;
                }
            }
            Event::Nothing | Event::StreamStart | Event::DocumentStart | Event::DocumentEnd => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(text: &str, budget: usize) -> &'static str {
        match alias_nodes_within(text, budget) {
            Aliases::Within => "within",
            Aliases::Over => "over",
            Aliases::Unread => "unread",
        }
    }

    #[test]
    fn each_use_of_an_alias_adds_its_anchor_s_whole_node() {
        // The list and its three items: 4 nodes a use.
        let twice = "a: &l [1, 2, 3]\nb: *l\nc: *l\n";
        assert_eq!(added(twice, 8), "within");
        assert_eq!(added(twice, 7), "over");
        // An anchor holding aliases holds what they add: m is 1 + 2 * 4 nodes.
        let nested = "a: &l [1, 2, 3]\nm: &m [*l, *l]\nb: *m\n";
        assert_eq!(added(nested, 8 + 9), "within");
        assert_eq!(added(nested, 8 + 8), "over");
        assert_eq!(added("plain: [1, 2]\n", 0), "within");
        assert_eq!(added("a: [", 100), "unread");
    }
}
