//! Prompt prefixes kept on disk between model instances
//! (`LocalConfig::prompt_store`), with the real local model
//! (Qwen2.5-Coder-0.5B-Instruct through llama.cpp).
//!
//! A second model instance stands for the next process: it loads what the
//! first stored and must answer token for token as a model without any cache
//! (greedy decoding). A damaged state file is dropped and the prompt read in
//! full, with the same answer.
//!
//! These tests need the model in the cache (`agentry model pull`). Without it
//! they say so loudly and pass, unless `AGENTRY_REQUIRE_MODEL=1` (set by CI).

mod common;

use std::path::{Path, PathBuf};

use agentry::model::{ChatRequest, Message, ToolChoice};
use agentry_local::LocalConfig;
use common::{generate, load, reusable, weather_tool};

/// A fresh, private store folder for one test.
fn store_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "agentry-prompt-store-{}-{test}",
        std::process::id()
    ));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

fn with_store(dir: &Path) -> LocalConfig {
    LocalConfig {
        prompt_store: Some(dir.to_owned()),
        ..LocalConfig::default()
    }
}

fn without_cache() -> LocalConfig {
    LocalConfig {
        prompt_cache: false,
        ..LocalConfig::default()
    }
}

fn request(question: &str) -> ChatRequest {
    ChatRequest {
        system: Some("Use the tools to answer. Be brief.".into()),
        messages: vec![Message::user(question)],
        tools: vec![weather_tool()],
        tool_choice: ToolChoice::Auto,
        ..ChatRequest::default()
    }
}

/// The store's entries: (state files, token lists), in all model folders.
fn entries(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut kv = Vec::new();
    let mut lists = Vec::new();
    for model in std::fs::read_dir(dir).unwrap().flatten() {
        for file in std::fs::read_dir(model.path()).unwrap().flatten() {
            let path = file.path();
            match path.extension().and_then(|e| e.to_str()) {
                Some("kv") => kv.push(path),
                Some("tokens") => lists.push(path),
                _ => panic!("unexpected file in the store: {}", path.display()),
            }
        }
    }
    (kv, lists)
}

#[test]
fn the_next_process_loads_the_stored_prefix_and_says_the_same() {
    let dir = store_dir("next-process");
    let Some(reference) = load(without_cache()) else {
        return;
    };
    let lisbon = request("What is the weather in Lisbon right now?");
    let oslo = request("Is it raining in Oslo?");

    let first = load(with_store(&dir)).unwrap();
    let cold = generate(&first, &lisbon);
    assert_eq!(cold.cached_tokens, 0, "the store starts empty");
    assert_eq!(first.stats().stored_tokens, 0);
    drop(first);
    let (kv, lists) = entries(&dir);
    assert_eq!((kv.len(), lists.len()), (1, 1), "one prompt, one entry");

    // A new instance, as the next `agentry run` would be.
    let second = load(with_store(&dir)).unwrap();
    let warm = generate(&second, &lisbon);
    assert_eq!(
        warm.cached_tokens,
        reusable(warm.prompt_tokens, warm.prompt_tokens),
        "all but the last read loaded"
    );
    assert_eq!(second.stats().stored_tokens, warm.cached_tokens);
    let alone = generate(&reference, &lisbon);
    assert_eq!(
        (&warm.text, warm.output_tokens),
        (&alone.text, alone.output_tokens)
    );
    assert_eq!(cold.text, alone.text);
    drop(second);

    // Another question: the system prompt and the tool schema come from disk.
    let third = load(with_store(&dir)).unwrap();
    let other = generate(&third, &oslo);
    let alone = generate(&reference, &oslo);
    assert!(
        other.cached_tokens * 2 > other.prompt_tokens,
        "loaded {} of {} prompt tokens",
        other.cached_tokens,
        other.prompt_tokens
    );
    assert!(other.cached_tokens < other.prompt_tokens - 1);
    assert_eq!(third.stats().stored_tokens, other.cached_tokens);
    assert_eq!(
        (&other.text, other.output_tokens),
        (&alone.text, alone.output_tokens)
    );
    eprintln!(
        "same question: {} of {} prompt tokens loaded; another question: {} of {}",
        warm.cached_tokens, warm.prompt_tokens, other.cached_tokens, other.prompt_tokens
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_damaged_stored_state_is_dropped_and_the_prompt_read_in_full() {
    let dir = store_dir("damaged");
    let Some(reference) = load(without_cache()) else {
        return;
    };
    let lisbon = request("What is the weather in Lisbon right now?");
    let first = load(with_store(&dir)).unwrap();
    generate(&first, &lisbon);
    drop(first);
    let (kv, _) = entries(&dir);
    std::fs::write(&kv[0], b"not a llama.cpp state").unwrap();

    let second = load(with_store(&dir)).unwrap();
    let reply = generate(&second, &lisbon);
    assert_eq!(reply.cached_tokens, 0, "nothing usable was loaded");
    assert_eq!(second.stats().stored_tokens, 0);
    let alone = generate(&reference, &lisbon);
    assert_eq!(
        (&reply.text, reply.output_tokens),
        (&alone.text, alone.output_tokens)
    );
    drop(second);
    // The damaged entry was replaced by a good one: the next instance loads it.
    let (kv, lists) = entries(&dir);
    assert_eq!((kv.len(), lists.len()), (1, 1));
    assert_ne!(std::fs::read(&kv[0]).unwrap(), b"not a llama.cpp state");
    let third = load(with_store(&dir)).unwrap();
    let warm = generate(&third, &lisbon);
    assert_eq!(
        warm.cached_tokens,
        reusable(warm.prompt_tokens, warm.prompt_tokens)
    );
    assert_eq!(warm.text, alone.text);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_store_is_written_with_the_prompt_cache_off() {
    let dir = store_dir("cache-off");
    let Some(model) = load(LocalConfig {
        prompt_cache: false,
        ..with_store(&dir)
    }) else {
        return;
    };
    generate(&model, &request("What is the weather in Lisbon right now?"));
    assert!(
        !dir.exists(),
        "the store folder was created with the cache off"
    );
}
