//! A front matter's YAML read within budgets, from `agentry-yaml`:
//! [`nesting_within`] refuses a text nested deeper than `serde_yaml_ng`
//! reads, in time linear in the text, and [`within_budget`] counts the nodes
//! a document makes, each use of an alias counted again, so an alias bomb is
//! refused in bounded time and memory before it is read.

pub(crate) use agentry_yaml::{Nesting, Refusal, nesting_within, within_budget};
