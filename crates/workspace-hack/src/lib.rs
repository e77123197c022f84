//! The workspace hack, managed by `cargo hakari` (`.config/hakari.toml`): it
//! has no code, only dependencies, so that a crate depending on it builds the
//! shared registry crates with the same features wherever it is built, alone
//! or with the whole workspace, and nothing is built twice.
