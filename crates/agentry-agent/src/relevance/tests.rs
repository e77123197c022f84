//! The gate's own tests: vectors kept and dropped, tool texts, embedder faults.

use super::*;
use agentry_core::embed::KeywordEmbedder;
use serde_json::json;

fn tool(name: &str, description: &str) -> ToolSchema {
    ToolSchema {
        name: name.into(),
        description: Some(description.into()),
        input_schema: json!({"type": "object"}),
        output_schema: None,
    }
}

#[tokio::test]
async fn the_best_tool_decides_and_tool_texts_are_embedded_once() {
    let gate = RelevanceGate::new(KeywordEmbedder::new(["weather", "circle", "tax"]), 0.5);
    let tools = [
        tool("weather", "Weather in a city."),
        tool("draw", "Draw a circle."),
        tool("weather", "Weather in a city."),
    ];
    let best = gate.best_match("Weather in Lima?", &tools).await.unwrap();
    assert!(best.unwrap() > 0.9, "{best:?}");
    assert!(!gate.allows_calls("My tax return", &tools).await.unwrap());
    assert_eq!(gate.known.len(), 2);
    assert!(gate.allows_calls("Anything", &[]).await.unwrap());
    let asked = |text: &str| vec![Message::user(text), Message::assistant("")];
    let choice = gate.first_choice(&asked("My tax return"), &tools).await;
    assert_eq!(choice.unwrap(), ToolChoice::None);
    let choice = gate.first_choice(&asked("Weather in Lima?"), &tools).await;
    assert_eq!(choice.unwrap(), ToolChoice::Auto);
    assert_eq!(
        gate.first_choice(&[], &tools).await.unwrap(),
        ToolChoice::Auto
    );
}

/// An embedder that answers with the wrong number of vectors.
struct Short;
impl Embedder for Short {
    fn model_id(&self) -> &str {
        "short"
    }
    fn dimensions(&self) -> usize {
        1
    }
    fn embed<'a>(
        &'a self,
        _texts: &'a [String],
    ) -> agentry_core::BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async { Ok(vec![vec![1.0]]) })
    }
}

#[test]
fn a_tool_is_read_with_its_arguments_by_default() {
    let mut weather = tool("weather", "Weather in a city.");
    weather.input_schema = json!({"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Paris."},
        "unit": {"type": "string"},
    }});
    assert_eq!(
        ToolText::default().of(&weather),
        "weather: Weather in a city. (city: City name, e.g. Paris.; unit)"
    );
    assert_eq!(
        ToolText::NameAndDescription.of(&weather),
        "weather: Weather in a city."
    );
    assert_eq!(
        ToolText::WithArguments.of(&tool("now", "The time.")),
        "now: The time."
    );
}

/// Keyword vectors, counting the texts it is asked to embed.
struct Counting {
    inner: KeywordEmbedder,
    texts: std::sync::atomic::AtomicUsize,
}
impl Embedder for Counting {
    fn model_id(&self) -> &str {
        "counting"
    }
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> agentry_core::BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        self.texts
            .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

#[tokio::test]
async fn the_least_recently_used_tool_vectors_are_dropped() {
    let embedder = Arc::new(Counting {
        inner: KeywordEmbedder::new(["weather", "circle", "tax"]),
        texts: Default::default(),
    });
    let gate = RelevanceGate::keeping(embedder.clone(), 0.5, 2);
    let asked = || embedder.texts.load(std::sync::atomic::Ordering::SeqCst);
    let weather = tool("weather", "Weather in a city.");
    let draw = tool("draw", "Draw a circle.");
    let taxes = tool("taxes", "Tax owed.");
    // Three tools at once: all three decide, although only two are kept.
    let all = [weather.clone(), draw.clone(), taxes.clone()];
    let best = gate.best_match("My tax return", &all).await.unwrap();
    assert!(best.unwrap() > 0.9);
    assert_eq!((asked(), gate.known.len()), (4, 2));
    // `weather` was the least recently used and went; the other two are kept.
    assert!(
        gate.allows_calls("Draw a circle", &[draw.clone(), taxes.clone()])
            .await
            .unwrap()
    );
    assert_eq!(asked(), 5);
    // `weather` is embedded again, and `draw`, now the least recently used, goes.
    assert!(
        gate.allows_calls("Weather in Lima?", &[weather])
            .await
            .unwrap()
    );
    assert_eq!(asked(), 7);
    assert!(
        !gate
            .allows_calls("Weather in Lima?", &[taxes])
            .await
            .unwrap()
    );
    assert_eq!(asked(), 8);
    assert!(gate.allows_calls("Draw a circle", &[draw]).await.unwrap());
    assert_eq!(asked(), 10);
}

#[tokio::test]
async fn a_miscounting_embedder_is_an_error() {
    let gate = RelevanceGate::new(Short, 0.5);
    let two = [tool("a", "b"), tool("c", "d")];
    let error = gate.allows_calls("x", &two).await.unwrap_err();
    assert_eq!(error.to_string(), "embedding failed: 1 vectors for 2 texts");
}

#[tokio::test]
async fn small_talk_is_embedded_once_and_decides_only_with_its_margin() {
    let embedder = Arc::new(Counting {
        inner: KeywordEmbedder::new(["weather", "joke"]),
        texts: Default::default(),
    });
    let gate = RelevanceGate::keeping(embedder.clone(), 0.3, 8)
        .small_talk(["tell me a joke", "a joke please"], 0.1);
    let asked = || embedder.texts.load(std::sync::atomic::Ordering::SeqCst);
    let tools = [tool("weather", "Weather in a city.")];
    let joke = [Message::user("A joke about the weather")];
    let relevance = gate.assess(&joke, &tools).await.unwrap().unwrap();
    assert_eq!(relevance.first_step, FirstStep::Answer);
    assert!(relevance.margin() < 0.1, "{relevance:?}");
    // One request, one tool, two small-talk requests.
    assert_eq!(asked(), 4);
    let weather = [Message::user("The weather in Lima")];
    let relevance = gate.assess(&weather, &tools).await.unwrap().unwrap();
    assert_eq!(relevance.first_step, FirstStep::Choose);
    assert_eq!(relevance.tool_choice(), ToolChoice::Auto);
    // Only the new request was embedded.
    assert_eq!(asked(), 5);
}

#[tokio::test]
async fn a_named_file_calls_its_tool_even_far_from_it_by_embedding() {
    let gate = RelevanceGate::new(KeywordEmbedder::new(["weather", "port"]), 0.5);
    let mut reader = tool("read_file", "Read a file.");
    reader.input_schema = json!({"type": "object", "properties": {
        "path": {"type": "string", "examples": ["notes.txt"]},
    }});
    let tools = [tool("weather", "Weather in a city."), reader];
    let asked = [Message::user("port in notes.txt?")];
    let relevance = gate.assess(&asked, &tools).await.unwrap().unwrap();
    assert!(relevance.tool < 0.5, "{relevance:?}");
    assert_eq!(relevance.first_step, FirstStep::Call);
    assert_eq!(relevance.named_tool.as_deref(), Some("read_file"));
    assert_eq!(
        relevance.tool_choice(),
        ToolChoice::Tool("read_file".into())
    );
    assert_eq!(
        gate.first_choice(&asked, &tools).await.unwrap(),
        ToolChoice::Tool("read_file".into())
    );
}

#[tokio::test]
async fn a_small_talk_embedding_that_fails_is_the_gates_error() {
    let gate = RelevanceGate::new(Short, 0.5).small_talk(["hi", "thanks"], 0.0);
    let error = gate
        .assess(&[Message::user("x")], &[tool("a", "b")])
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "embedding failed: 1 vectors for 2 texts");
}
