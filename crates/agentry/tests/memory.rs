//! The in-memory store against the shared behaviour suite, and `Memory`'s
//! prompt text (with a deterministic test embedder: logic only; the real
//! MiniLM embedder is tested in agentry-local).

use std::sync::Arc;

use agentry::BoxFuture;
use agentry::embed::KeywordEmbedder;
use agentry::memory::*;

#[tokio::test]
async fn in_memory_store_passes_the_behaviour_suite() {
    let store = InMemoryStore::new();
    conformance::check_store(&store, "mem").await;
    assert_eq!(store.len(), 4, "five added, session b's one forgotten");
}

#[tokio::test]
async fn in_memory_store_passes_the_management_suite() {
    let store = InMemoryStore::new();
    conformance::check_management(&store, "mem").await;
    assert!(store.is_empty(), "the suite forgets what it added");
}

#[tokio::test]
async fn in_memory_store_passes_the_keyword_suite() {
    let store = InMemoryStore::new();
    conformance::check_keywords(&store, "mem").await;
    assert!(store.is_empty(), "the suite forgets what it added");
}

struct Broken;

impl MemoryStore for Broken {
    fn add<'a>(&'a self, _record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async { Err(MemoryError("disk full".into())) })
    }
    fn recall<'a>(
        &'a self,
        _session: &'a str,
        _query: &'a [f32],
        _opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        Box::pin(async { Err(MemoryError("connection lost".into())) })
    }
    fn recent<'a>(
        &'a self,
        _session: &'a str,
        _opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        Box::pin(async { Err(MemoryError("connection lost".into())) })
    }
}

#[tokio::test]
async fn memory_remembers_recalls_and_builds_prompt_text() {
    let memory = Memory::new(
        Arc::new(InMemoryStore::new()),
        Arc::new(KeywordEmbedder::new(["pasta", "weather"])),
    );
    let user = |role: &str| Remember {
        role: role.into(),
        source: "test".into(),
        ..Remember::default()
    };
    memory
        .remember("s1", "I love pasta", user("user"))
        .await
        .unwrap();
    memory
        .remember("s1", "Weather is nice", user("assistant"))
        .await
        .unwrap();
    memory
        .remember("s2", "pasta elsewhere", user("user"))
        .await
        .unwrap();
    let context = memory
        .build_context_safe("s1", "pasta tonight?", RecallOpts::default())
        .await;
    assert_eq!(context, "- user: I love pasta");
    assert_eq!(
        memory
            .recent_text("s1", &RecentOpts::default())
            .await
            .unwrap(),
        "user: I love pasta\nassistant: Weather is nice"
    );
    assert_eq!(
        with_memory_block("Be brief.", DEFAULT_MEMORY_HEADING, &context),
        "Be brief.\n\n## Memory\n- user: I love pasta"
    );
    assert_eq!(with_memory_block("Be brief.", "## Memory", ""), "Be brief.");
    assert_eq!(with_memory_block("", "## Notes", "x"), "## Notes\nx");
}

#[tokio::test]
async fn build_context_safe_never_fails() {
    let memory = Memory::new(
        Arc::new(Broken),
        Arc::new(KeywordEmbedder::new(["pasta", "weather"])),
    );
    assert_eq!(
        memory
            .build_context_safe("s", "anything", RecallOpts::default())
            .await,
        ""
    );
    assert_eq!(
        memory.remember("s", "x", Remember::default()).await,
        Err(MemoryError("disk full".into()))
    );
}
