//! The stream readers' fuzz targets (`fuzz/`), replayed on stable: every
//! seed stream and thousands of mutations of them read into a step or a
//! typed error, never a panic.

#[path = "../../../fuzz/replay.rs"]
mod replay;

#[test]
fn openai_streams_mutated_never_panic() {
    replay::replay("openai_stream", |bytes| {
        let _ = agentry_providers::__fuzz::openai_step(bytes);
    });
}

#[test]
fn anthropic_streams_mutated_never_panic() {
    replay::replay("anthropic_stream", |bytes| {
        let _ = agentry_providers::__fuzz::anthropic_step(bytes);
    });
}

#[test]
fn a_whole_seed_stream_reads_into_a_step() {
    // The seeds are real streams: the replay above starts from inputs that parse.
    for target in ["openai_stream", "anthropic_stream"] {
        let seeds = replay::seeds(target);
        let read = seeds.iter().filter(|seed| match target {
            "openai_stream" => agentry_providers::__fuzz::openai_step(seed).is_ok(),
            _ => agentry_providers::__fuzz::anthropic_step(seed).is_ok(),
        });
        assert!(read.count() >= 2, "{target}: fewer than two seeds read");
    }
}
