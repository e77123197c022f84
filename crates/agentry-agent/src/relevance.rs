//! The relevance gate: before the first step, decide whether calling a tool
//! can make sense at all.
//!
//! Small models call *something* when offered tools, even when nothing fits
//! ("what is the area of a rectangle?" with only `draw_circle` on offer). The
//! gate compares the request with each tool's name, description and
//! arguments ([`ToolText`]) by the
//! cosine similarity of their embeddings; when no tool reaches the floor, the
//! first step is asked for a text answer (`ToolChoice::None`), and the model
//! cannot call. The price is paid where a tool does fit but is described in
//! few words: MiniLM then rates a plain request such as "Show me what's in
//! Cargo.toml." against `read_file` under the floor, and the request gets
//! text instead of a call (`BENCHMARKS.md` measures both sides). Hence the
//! gate is opt-in ([`AgentBuilder::relevance_gate`](super::AgentBuilder::relevance_gate)).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hashlink::LruCache;

use super::agent::Settings;
use agentry_core::embed::{EmbedError, Embedder, cosine};
use agentry_core::model::{Message, ToolChoice};
use agentry_core::tool::ToolSchema;

/// The floor [`RelevanceGate::new`] callers start from with all-MiniLM-L6-v2
/// (the local embedder) and [`ToolText::WithArguments`]: measured for what
/// it turns away of BFCL's questions no tool fits, of those a tool fits, and
/// of single-tool agent tasks (`BENCHMARKS.md` has the figures; 0.25 turns
/// away more of both).
pub const DEFAULT_RELEVANCE_FLOOR: f32 = 0.2;

/// How many tool texts' vectors a gate keeps (least recently used dropped):
/// enough for every tool of a large catalog, bounded for a long-lived
/// server whose tool sets change (about 6 MB at 384 dimensions).
pub(crate) const TOOL_VECTORS_KEPT: usize = 4096;

/// How much of a tool the gate compares with a request.
///
/// With the arguments (the default), fewer requests a tool fits are turned
/// away and more that none fits are: on BFCL `simple_python` 4 of 400
/// instead of 5, on single-tool agent tasks 12 of 40 instead of 14, on BFCL
/// `irrelevance` 133 of 240 instead of 124, at the default floor
/// (`agentry-eval relevance-gate`, `BENCHMARKS.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolText {
    /// `name: description`.
    NameAndDescription,
    /// `name: description`, then each argument's name and description
    /// (`(city: City name, e.g. Paris; unit: …)`).
    #[default]
    WithArguments,
}

impl ToolText {
    /// The text of `tool` that is embedded.
    pub fn of(self, tool: &ToolSchema) -> String {
        let mut text = format!(
            "{}: {}",
            tool.name,
            tool.description.as_deref().unwrap_or("")
        );
        if self == ToolText::WithArguments
            && let Some(properties) = tool
                .input_schema
                .get("properties")
                .and_then(serde_json::Value::as_object)
            && !properties.is_empty()
        {
            let arguments: Vec<String> = properties
                .iter()
                .map(|(name, schema)| {
                    match schema
                        .get("description")
                        .and_then(serde_json::Value::as_str)
                    {
                        Some(description) => format!("{name}: {description}"),
                        None => name.clone(),
                    }
                })
                .collect();
            text.push_str(&format!(" ({})", arguments.join("; ")));
        }
        text
    }
}

/// Decides, from embeddings, whether any offered tool is close enough to a
/// request for a call to make sense ([`AgentBuilder::relevance_gate`](super::AgentBuilder::relevance_gate)).
///
/// ```
/// use std::sync::Arc;
/// use agentry_agent::RelevanceGate;
/// use agentry_core::embed::KeywordEmbedder;
/// use agentry_core::tool::ToolSchema;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let gate = RelevanceGate::new(KeywordEmbedder::new(["weather", "circle"]), 0.5);
/// let tools = [ToolSchema {
///     name: "weather".into(),
///     description: Some("The weather in a city.".into()),
///     input_schema: serde_json::json!({"type": "object"}),
///     output_schema: None,
/// }];
/// assert!(gate.allows_calls("What is the weather in Lima?", &tools).await.unwrap());
/// assert!(!gate.allows_calls("Draw a circle", &tools).await.unwrap());
/// # });
/// ```
pub struct RelevanceGate {
    embedder: Arc<dyn Embedder>,
    floor: f32,
    text: ToolText,
    /// Tool texts already embedded: a run's tools are embedded once, and at
    /// most [`TOOL_VECTORS_KEPT`] are kept.
    known: Mutex<LruCache<String, Vec<f32>>>,
}

impl std::fmt::Debug for RelevanceGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelevanceGate")
            .field("embedder", &self.embedder.model_id())
            .field("floor", &self.floor)
            .finish()
    }
}

impl RelevanceGate {
    /// A gate that lets calls through when some tool's similarity to the
    /// request is at least `floor`.
    pub fn new(embedder: impl Embedder + 'static, floor: f32) -> Self {
        Self::keeping(Arc::new(embedder), floor, TOOL_VECTORS_KEPT)
    }

    /// A gate that keeps at most `kept` tool vectors.
    fn keeping(embedder: Arc<dyn Embedder>, floor: f32, kept: usize) -> Self {
        Self {
            embedder,
            floor,
            text: ToolText::default(),
            known: Mutex::new(LruCache::new(kept.max(1))),
        }
    }

    /// Compare requests with this much of each tool (by default its name,
    /// description and arguments).
    pub fn tool_text(mut self, text: ToolText) -> Self {
        self.text = text;
        self
    }

    /// The floor.
    pub fn floor(&self) -> f32 {
        self.floor
    }

    /// The highest similarity between `request` and any of `tools` (each
    /// read as its [`ToolText`]); `None` when there are no tools.
    pub async fn best_match(
        &self,
        request: &str,
        tools: &[ToolSchema],
    ) -> Result<Option<f32>, EmbedError> {
        if tools.is_empty() {
            return Ok(None);
        }
        let texts: Vec<String> = tools.iter().map(|tool| self.text.of(tool)).collect();
        // The vectors already known (marked as used), and each tool text not
        // yet known, once (`dedup` alone would miss duplicates that are not
        // next to each other).
        let (mut vectors_of, missing) = {
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let mut vectors_of: HashMap<&str, Vec<f32>> = HashMap::new();
            let mut missing = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for text in &texts {
                if !seen.insert(text.as_str()) {
                    continue;
                }
                match known.get(text) {
                    Some(vector) => {
                        vectors_of.insert(text, vector.clone());
                    }
                    None => missing.push(text.clone()),
                }
            }
            (vectors_of, missing)
        };
        let mut asked = self.embedder.embed_queries(&[request.to_owned()]).await?;
        if asked.len() != 1 {
            return Err(EmbedError::failed(format!(
                "{} vectors for 1 texts",
                asked.len()
            )));
        }
        let request_vector = asked.remove(0);
        let fresh = if missing.is_empty() {
            Vec::new()
        } else {
            self.embedder.embed(&missing).await?
        };
        if fresh.len() != missing.len() {
            return Err(EmbedError::failed(format!(
                "{} vectors for {} texts",
                fresh.len(),
                missing.len()
            )));
        }
        {
            let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            for (text, vector) in missing.iter().zip(&fresh) {
                known.insert(text.clone(), vector.clone());
            }
        }
        for (text, vector) in missing.iter().zip(fresh) {
            vectors_of.insert(text, vector);
        }
        let best = vectors_of
            .values()
            .map(|vector| cosine(&request_vector, vector))
            .fold(f32::NEG_INFINITY, f32::max);
        Ok(Some(best))
    }

    /// Step 1's tool choice for a conversation: `None` (answer in text) when
    /// no tool reaches the floor for the user's last message, `Auto`
    /// otherwise (and with no user message or no tools).
    pub async fn first_choice(
        &self,
        messages: &[Message],
        tools: &[ToolSchema],
    ) -> Result<ToolChoice, EmbedError> {
        let Some(request) = last_user_text(messages) else {
            return Ok(ToolChoice::Auto);
        };
        Ok(if self.allows_calls(request, tools).await? {
            ToolChoice::Auto
        } else {
            ToolChoice::None
        })
    }

    /// Whether a call may be made for `request`: some tool reaches the
    /// floor (with no tools, there is nothing to gate: `true`).
    pub async fn allows_calls(
        &self,
        request: &str,
        tools: &[ToolSchema],
    ) -> Result<bool, EmbedError> {
        Ok(self
            .best_match(request, tools)
            .await?
            .is_none_or(|best| best >= self.floor))
    }
}

/// Step 1's tool choice with the agent's gate applied: `None` (answer in
/// text) when the gate finds no tool near the user's last message, `Auto`
/// otherwise (see [`AgentBuilder::relevance_gate`](super::AgentBuilder::relevance_gate)
/// for when the gate stands aside).
pub(super) async fn first_step_choice(
    settings: &Settings,
    tools: &[ToolSchema],
    messages: &[Message],
) -> ToolChoice {
    let Some(gate) = &settings.relevance_gate else {
        return ToolChoice::Auto;
    };
    let has_skills = settings
        .skills
        .as_ref()
        .is_some_and(|skills| !skills.is_empty())
        || settings.skill_resolver.is_some();
    if settings.discovery || has_skills {
        return ToolChoice::Auto;
    }
    match gate.first_choice(messages, tools).await {
        Ok(ToolChoice::None) => {
            tracing::info!(
                floor = gate.floor,
                "no tool is near the request: step 1 answers in text"
            );
            ToolChoice::None
        }
        Ok(choice) => choice,
        Err(error) => {
            tracing::warn!(%error, "the relevance gate could not embed: calls stay allowed");
            ToolChoice::Auto
        }
    }
}

/// The user's last non-empty message in a conversation.
pub(super) fn last_user_text(messages: &[Message]) -> Option<&str> {
    messages.iter().rev().find_map(|message| match message {
        Message::User { text } if !text.trim().is_empty() => Some(text.as_str()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
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
        assert_eq!(gate.known.lock().unwrap().len(), 2);
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
        assert_eq!((asked(), gate.known.lock().unwrap().len()), (4, 2));
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
}
