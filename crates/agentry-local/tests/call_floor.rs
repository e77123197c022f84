//! The call floor on the real local model (Qwen2.5-Coder-0.5B): asked what a
//! file says, the model's own first choice is to answer in text (it invents
//! the content), though it gives calling a share of the probability; with a
//! floor at or under that share the reply opens a call to the file reader.
//!
//! Needs the model in the cache (`agentry model pull`); without it the test
//! says so loudly and passes, unless `AGENTRY_REQUIRE_MODEL=1` (set by CI).

#[allow(dead_code)] // the other helpers are for the cache tests
mod common;

use agentry::model::{ChatModel, ChatRequest, Message, Step};
use agentry::tool::ToolSchema;
use agentry_local::LocalConfig;
use common::load;

fn read_file() -> ToolSchema {
    ToolSchema {
        name: "read_file".into(),
        description: Some("Read a text file and return its contents.".into()),
        input_schema: serde_json::json!({"type": "object",
            "properties": {"path": {"type": "string", "description": "File path"}},
            "required": ["path"]}),
        output_schema: None,
    }
}

fn request() -> ChatRequest {
    ChatRequest {
        system: Some("You are a helpful assistant.".into()),
        messages: vec![Message::user("What does notes.txt say?")],
        tools: vec![read_file()],
        max_tokens: Some(60),
        ..ChatRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_model_finds_likely_enough_is_opened() {
    // Off (the default): the floor is not weighed at all.
    let Some(off) = load(LocalConfig::default()) else {
        return;
    };
    let _ = off.step(&request()).await.unwrap();
    assert_eq!(
        (off.stats().call_choices, off.stats().last_call_share),
        (0, None)
    );
    drop(off);
    // A floor of 1 short of certainty changes nothing the model would do,
    // and reports the share it gave to calling.
    let weighed = load(LocalConfig {
        call_floor: 0.9999,
        ..LocalConfig::default()
    })
    .unwrap();
    let own_choice = weighed.step(&request()).await.unwrap();
    let stats = weighed.stats();
    let share = stats.last_call_share.expect("the first choice was weighed");
    assert_eq!(stats.call_choices, 1);
    assert!((0.0..1.0).contains(&share), "{share}");
    drop(weighed);
    // A floor at that share opens the call, to the file the user named.
    let floored = load(LocalConfig {
        call_floor: share,
        ..LocalConfig::default()
    })
    .unwrap();
    match floored.step(&request()).await.unwrap() {
        Step::Tool { calls, .. } => {
            assert_eq!(calls[0].name, "read_file");
            assert_eq!(calls[0].input["path"], "notes.txt");
        }
        other => panic!("expected a call to read_file, got {other:?} (own choice: {own_choice:?})"),
    }
    assert_eq!(floored.stats().last_call_share, Some(share));
    if !matches!(own_choice, Step::Tool { .. }) {
        // The floor changed the model's choice, and says so.
        assert_eq!(floored.stats().calls_opened, u64::from(share < 0.5));
    }
}
