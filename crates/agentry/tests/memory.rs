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
        Box::pin(async { Err(MemoryError::refused("disk full")) })
    }
    fn recall<'a>(
        &'a self,
        _session: &'a str,
        _query: &'a [f32],
        _opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        Box::pin(async { Err(MemoryError::refused("connection lost")) })
    }
    fn recent<'a>(
        &'a self,
        _session: &'a str,
        _opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        Box::pin(async { Err(MemoryError::refused("connection lost")) })
    }
}

#[tokio::test]
async fn memory_remembers_recalls_and_builds_prompt_text() {
    let memory = Memory::new(
        InMemoryStore::new(),
        KeywordEmbedder::new(["pasta", "weather"]),
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
    let memory = Memory::new(Broken, KeywordEmbedder::new(["pasta", "weather"]));
    assert_eq!(
        memory
            .build_context_safe("s", "anything", RecallOpts::default())
            .await,
        ""
    );
    let error = memory
        .remember("s", "x", Remember::default())
        .await
        .unwrap_err();
    assert!(matches!(error, MemoryError::Refused(_)), "{error:?}");
    assert_eq!(error.to_string(), "memory store: disk full");
}

/// A store that recalls by vector but cannot search text (the trait's default).
struct VectorOnly(InMemoryStore);

impl MemoryStore for VectorOnly {
    fn add<'a>(&'a self, record: MemoryRecord) -> BoxFuture<'a, Result<(), MemoryError>> {
        self.0.add(record)
    }
    fn recall<'a>(
        &'a self,
        session: &'a str,
        query: &'a [f32],
        opts: RecallOpts,
    ) -> BoxFuture<'a, Result<Vec<Recalled>, MemoryError>> {
        self.0.recall(session, query, opts)
    }
    fn recent<'a>(
        &'a self,
        session: &'a str,
        opts: &'a RecentOpts,
    ) -> BoxFuture<'a, Result<Vec<MemoryRecord>, MemoryError>> {
        self.0.recent(session, opts)
    }
}

#[tokio::test]
async fn hybrid_recall_finds_a_record_by_its_words_and_falls_back_to_vectors() {
    // No bias: a text without the keywords embeds as zeros and matches nothing.
    let embedder = Arc::new(KeywordEmbedder::new(["pasta", "weather"]).with_bias(0.0));
    let what = || Remember {
        role: "user".into(),
        ..Remember::default()
    };
    let store = Arc::new(InMemoryStore::new());
    let plain = Memory::new(store.clone(), embedder.clone());
    plain.remember("s", "I love pasta", what()).await.unwrap();
    plain
        .remember("s", "My locker code is 7731", what())
        .await
        .unwrap();
    let opts = RecallOpts::default();
    assert!(
        plain
            .recall("s", "what is 7731?", opts)
            .await
            .unwrap()
            .is_empty()
    );

    let keywords = Ranking {
        keywords: true,
        ..Ranking::default()
    };
    let hybrid = plain.clone().with_ranking(keywords);
    assert_eq!(hybrid.ranking(), keywords);
    let hits = hybrid.recall("s", "what is 7731?", opts).await.unwrap();
    let found: Vec<(&str, f32)> = hits
        .iter()
        .map(|h| (h.record.text.as_str(), h.score))
        .collect();
    // First by its words, absent by vector: half the best fused score.
    assert_eq!(found, [("My locker code is 7731", 0.5)]);
    let both = hybrid.recall("s", "pasta 7731", opts).await.unwrap();
    assert_eq!(both[0].record.text, "I love pasta", "first in both lists");
    assert_eq!(both[0].score, 1.0);
    assert_eq!(both[1].record.text, "My locker code is 7731");

    // A store that cannot search text: recall goes on by vector alone.
    let store = Arc::new(VectorOnly(InMemoryStore::new()));
    let fallback = Memory::new(store, embedder).with_ranking(keywords);
    fallback
        .remember("s", "I love pasta", what())
        .await
        .unwrap();
    fallback
        .remember("s", "My locker code is 7731", what())
        .await
        .unwrap();
    let hits = fallback.recall("s", "pasta 7731", opts).await.unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.record.text.as_str()).collect();
    assert_eq!(texts, ["I love pasta"]);
}

#[tokio::test]
async fn recency_and_importance_reorder_what_is_recalled() {
    let embedder = Arc::new(KeywordEmbedder::new(["pasta", "weather"]));
    let store = Arc::new(InMemoryStore::new());
    let day = 24 * 3600;
    let now = now_secs();
    for (text, age, importance) in [("pasta last month", 30 * day, 1.0), ("pasta today", 0, 0.0)] {
        let mut record = MemoryRecord::new("s", "user", text, vec![1.0, 0.0, 0.1]);
        record.timestamp = now - age;
        record
            .metadata
            .insert("importance".into(), serde_json::json!(importance));
        store.add(record).await.unwrap();
    }
    let texts =
        |hits: Vec<Recalled>| -> Vec<String> { hits.into_iter().map(|h| h.record.text).collect() };
    let memory = Memory::new(store, embedder);
    let opts = RecallOpts::default();
    let recent = memory.clone().with_ranking(Ranking {
        recency_weight: 0.2,
        ..Ranking::default()
    });
    let hits = recent.recall("s", "pasta?", opts).await.unwrap();
    // Same cosine (1.0); today adds 0.2, a month ago 0.2 × 0.5^(30/7).
    assert!((hits[0].score - 1.2).abs() < 1e-3, "{}", hits[0].score);
    assert_eq!(texts(hits), ["pasta today", "pasta last month"]);
    let important = memory.with_ranking(Ranking {
        recency_weight: 0.2,
        importance_weight: 0.5,
        ..Ranking::default()
    });
    let hits = important.recall("s", "pasta?", opts).await.unwrap();
    assert_eq!(texts(hits), ["pasta last month", "pasta today"]);
}
