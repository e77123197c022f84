//! Every error `#[tool]` and `#[skill]` report, as a user sees it: each
//! `tests/ui/*.rs` must fail to compile with exactly its `.stderr`.
//! After changing a message on purpose, regenerate with `TRYBUILD=overwrite`.

#[test]
fn macro_errors_read_well() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
