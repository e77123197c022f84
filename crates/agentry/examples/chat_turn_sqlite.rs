//! Chat turns with memory: two memory-grounded turns on an SQLite file,
//! with the local model (Qwen2.5-Coder-0.5B) and local embeddings
//! (all-MiniLM-L6-v2). Prints each lifecycle step and each reply event in
//! order. The second turn's system prompt holds the first turn's memory and
//! not its own message (no RAG self-poisoning).
//!
//! Run: `cargo run -p agentry --example chat_turn_sqlite` (after
//! `agentry model pull`; without the chat model it answers with the offline
//! model's `[no llm provider]`).

mod support;

use std::sync::{Arc, Mutex};

use agentry::memory::Memory;
use agentry::tool::{Identity, Session};
use agentry::turn::{TurnConfig, TurnEvent, TurnInput};
use agentry_local::LocalEmbedder;
use agentry_store::SqliteStore;

/// Every event of both turns, in order, and each turn's reply.
async fn run(db: &std::path::Path) -> (Vec<TurnEvent>, Vec<String>) {
    let model = support::local_or_offline().await;
    let embedder = LocalEmbedder::minilm().await.expect("the embedding model");
    let store = SqliteStore::open(db).expect("the SQLite file");
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let config = TurnConfig::new(
        "chef",
        model,
        Memory::new(Arc::new(store), Arc::new(embedder)),
    )
    .system_base("You are a helpful cook. Answer in one short sentence.")
    .on_event(move |event| {
        print_event(event);
        sink.lock().unwrap().push(event.clone());
    });

    let mut replies = Vec::new();
    for (n, text) in [
        "My favourite food is mushroom risotto.",
        "What is my favourite food?",
    ]
    .into_iter()
    .enumerate()
    {
        println!("== turn {}: {text}", n + 1);
        let mut input = TurnInput::new(Session::new("kitchen-1"), Identity::new("ana"), text);
        input.message_id = Some(format!("m{}", n + 1));
        input.recall_opts = Some(agentry::memory::RecallOpts {
            limit: 5,
            min_score: 0.2,
        });
        // A failed turn has no reply: its text is empty.
        replies.push(
            config
                .run(input)
                .await
                .map(|reply| reply.text)
                .unwrap_or_default(),
        );
    }
    let events = events.lock().unwrap().clone();
    (events, replies)
}

fn print_event(event: &TurnEvent) {
    match event {
        TurnEvent::SystemBuilt { system } => println!("1. system prompt:\n{system}"),
        TurnEvent::UserPersisted { ok } => println!("2. user turn stored: {ok}"),
        TurnEvent::ToolContextBound => println!("3. tool context bound"),
        TurnEvent::ReplyStart {
            session_id,
            message_id,
            ..
        } => println!("4. reply:start {session_id}/{message_id}"),
        TurnEvent::ReplyDelta { text, .. } => println!("   reply:delta {text:?}"),
        TurnEvent::ReplyEnd { text, .. } => println!("   reply:end {text:?}"),
        TurnEvent::ToolCall { call, .. } => println!("   tool:call {}({})", call.name, call.input),
        TurnEvent::ToolResult { name, result, .. } => {
            println!("   tool:result {name} => {}", result.output)
        }
        TurnEvent::AssistantPersisted { ok, skipped } => {
            println!("5. assistant turn stored: {ok} (skipped: {skipped})")
        }
        // Events added in later versions.
        _ => {}
    }
}

fn temp_db() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("agentry-chat-turn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir.join("memory.db")
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    run(&temp_db()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn two_turns_ground_the_second_in_the_first() {
    if agentry_local::fetch::installed(&agentry_local::fetch::QWEN).is_none()
        && std::env::var("AGENTRY_REQUIRE_MODEL").as_deref() == Ok("1")
    {
        panic!("the local model is missing and AGENTRY_REQUIRE_MODEL=1");
    }
    let (events, replies) = run(&temp_db()).await;
    let names: Vec<&str> = events.iter().map(TurnEvent::name).collect();
    let one_turn = [
        "system_built",
        "user_persisted",
        "tool_context_bound",
        "reply:start",
    ];
    assert_eq!(names[..4], one_turn);
    let second = names.iter().rposition(|n| *n == "system_built").unwrap();
    assert_eq!(names[second..second + 4], one_turn);
    assert_eq!(names.last(), Some(&"assistant_persisted"));
    let TurnEvent::SystemBuilt { system: first } = &events[0] else {
        unreachable!()
    };
    assert_eq!(
        first, "You are a helpful cook. Answer in one short sentence.",
        "nothing in memory before the first turn"
    );
    let TurnEvent::SystemBuilt { system } = &events[second] else {
        unreachable!()
    };
    assert!(
        system.contains("## Memory\n")
            && system.contains("- user: My favourite food is mushroom risotto."),
        "{system}"
    );
    assert!(!system.contains("What is my favourite food?"), "{system}");
    if agentry_local::fetch::installed(&agentry_local::fetch::QWEN).is_some() {
        assert!(
            replies[1].to_lowercase().contains("risotto"),
            "the model answers from memory: {replies:?}"
        );
    }
}
