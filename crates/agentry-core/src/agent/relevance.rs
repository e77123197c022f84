//! The relevance gate: before the first step, decide whether calling a tool
//! can make sense at all.
//!
//! Small models call *something* when offered tools, even when nothing fits
//! ("what is the area of a rectangle?" with only `draw_circle` on offer). The
//! gate compares the request with each tool's name and description by the
//! cosine similarity of their embeddings; when no tool reaches the floor, the
//! first step is asked for a text answer (`ToolChoice::None`), and the model
//! cannot call. A request that a tool does fit is left alone, so the gate
//! only ever removes calls that were far from the request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::agent::Settings;
use crate::embed::{EmbedError, Embedder, cosine};
use crate::model::{Message, ToolChoice};
use crate::tool::ToolSchema;

/// The floor [`RelevanceGate::new`] callers start from with all-MiniLM-L6-v2
/// (the local embedder): measured on BFCL, it turns away about half of the
/// `irrelevance` questions and about 1% of the questions a tool does fit
/// (`BENCHMARKS.md`).
pub const DEFAULT_RELEVANCE_FLOOR: f32 = 0.25;

/// Decides, from embeddings, whether any offered tool is close enough to a
/// request for a call to make sense ([`AgentBuilder::relevance_gate`](super::AgentBuilder::relevance_gate)).
///
/// ```
/// use std::sync::Arc;
/// use agentry_core::agent::RelevanceGate;
/// use agentry_core::embed::KeywordEmbedder;
/// use agentry_core::tool::ToolSchema;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let gate = RelevanceGate::new(Arc::new(KeywordEmbedder::new(["weather", "circle"])), 0.5);
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
    /// Tool texts already embedded: a run's tools are embedded once.
    known: Mutex<HashMap<String, Vec<f32>>>,
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
    pub fn new(embedder: Arc<dyn Embedder>, floor: f32) -> Self {
        Self {
            embedder,
            floor,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The floor.
    pub fn floor(&self) -> f32 {
        self.floor
    }

    /// The highest similarity between `request` and any of `tools` (each
    /// read as `name: description`); `None` when there are no tools.
    pub async fn best_match(
        &self,
        request: &str,
        tools: &[ToolSchema],
    ) -> Result<Option<f32>, EmbedError> {
        if tools.is_empty() {
            return Ok(None);
        }
        let texts: Vec<String> = tools
            .iter()
            .map(|tool| {
                format!(
                    "{}: {}",
                    tool.name,
                    tool.description.as_deref().unwrap_or("")
                )
            })
            .collect();
        // Each tool text not yet known, once (`dedup` alone would miss
        // duplicates that are not next to each other).
        let missing: Vec<String> = {
            let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = std::collections::HashSet::new();
            texts
                .iter()
                .filter(|text| !known.contains_key(*text) && seen.insert(*text))
                .cloned()
                .collect()
        };
        let mut asked = vec![request.to_owned()];
        asked.extend(missing.iter().cloned());
        let vectors = self.embedder.embed(&asked).await?;
        if vectors.len() != asked.len() {
            return Err(EmbedError(format!(
                "{} vectors for {} texts",
                vectors.len(),
                asked.len()
            )));
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        for (text, vector) in missing.into_iter().zip(vectors[1..].iter()) {
            known.insert(text, vector.clone());
        }
        let best = texts
            .iter()
            .filter_map(|text| known.get(text))
            .map(|vector| cosine(&vectors[0], vector))
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
    use crate::embed::KeywordEmbedder;
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
        let gate = RelevanceGate::new(
            Arc::new(KeywordEmbedder::new(["weather", "circle", "tax"])),
            0.5,
        );
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
        ) -> crate::BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
            Box::pin(async { Ok(vec![vec![1.0]]) })
        }
    }

    #[tokio::test]
    async fn a_miscounting_embedder_is_an_error() {
        let gate = RelevanceGate::new(Arc::new(Short), 0.5);
        let error = gate.allows_calls("x", &[tool("a", "b")]).await.unwrap_err();
        assert_eq!(error, EmbedError("1 vectors for 2 texts".into()));
    }
}
