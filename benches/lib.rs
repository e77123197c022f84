//! Shared helpers for agentry benchmarks (none yet; each bench is self-contained).
