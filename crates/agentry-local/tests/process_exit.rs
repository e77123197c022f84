//! The process ends cleanly while the local model is still working: here,
//! reading its last reply again while idle, with the model held for the
//! whole process (never dropped), then `std::process::exit`. The exit waits
//! for the decode call in progress instead of destroying llama.cpp under it
//! (`src/scheduler/exit.rs`), and does not hang.
//!
//! Needs the model in the cache (`agentry model pull`); without it the test
//! says so loudly and passes, unless `AGENTRY_REQUIRE_MODEL=1` (set by CI).

#[allow(dead_code)] // the other helpers are for the cache tests
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use agentry::model::{ChatRequest, Message};
use agentry_local::LocalConfig;

/// Set in the child process this test starts.
const CHILD: &str = "AGENTRY_EXIT_TEST_CHILD";

#[test]
fn exiting_while_the_model_reads_a_reply_again_is_clean() {
    if std::env::var_os(CHILD).is_some() {
        child();
    }
    if common::model_path().is_none() {
        return;
    }
    let log = std::env::temp_dir().join(format!("agentry-exit-test-{}.log", std::process::id()));
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "exiting_while_the_model_reads_a_reply_again_is_clean",
                "--exact",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        // A hang at exit fails the test instead of stalling it.
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(180) {
                child.kill().ok();
                panic!("round {round}: the child did not exit in 180 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stderr = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: String = stderr
            .chars()
            .skip(stderr.chars().count().saturating_sub(2000))
            .collect();
        assert!(status.success(), "round {round}: {status:?}\n{tail}");
        assert!(stderr.contains("exiting while rereading"), "{tail}");
    }
    std::fs::remove_file(&log).ok();
}

/// Answer once, wait until the idle model has begun reading the reply again,
/// and exit with the model still alive.
fn child() -> ! {
    let model = common::load(LocalConfig::default()).expect("the model is there");
    let request = ChatRequest {
        system: Some("You are a helpful travel assistant.".into()),
        messages: vec![Message::user(
            "I am planning a three-day trip to Lisbon in May. What should I pack?",
        )],
        ..ChatRequest::default()
    };
    let prompt = model.render_prompt(&request).unwrap();
    let reply = model
        .generate(&prompt, None, 160, None, &[], |_| true)
        .unwrap();
    assert!(reply.output_tokens > 64, "{reply:?}");
    // The model waits 100 ms idle before it reads the reply again, which
    // takes several hundred milliseconds more.
    std::thread::sleep(Duration::from_millis(250));
    eprintln!(
        "exiting while rereading ({} tokens generated)",
        reply.output_tokens
    );
    let model = Box::leak(Box::new(model)); // never dropped
    let _ = model;
    std::process::exit(0);
}
