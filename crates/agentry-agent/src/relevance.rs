//! The relevance gate: before the first step, decide whether the model
//! should answer in text, choose for itself, or call a tool.
//!
//! Small models call *something* when offered tools, even when nothing fits
//! ("what is the area of a rectangle?" with only `draw_circle` on offer),
//! and answer in text where a tool was wanted (a file's content invented
//! instead of read). The gate compares the request with each tool's name,
//! description and arguments ([`ToolText`]) by the cosine similarity of
//! their embeddings, and, when it has them, with requests no tool answers
//! ([`small_talk`](RelevanceGate::small_talk)):
//!
//! - no tool reaches the floor, or small talk is nearer than every tool by
//!   its margin: the first step answers in text (`ToolChoice::None`);
//! - the request names what a tool lists (a file among a reader's
//!   `examples`, an identifier among an argument's `enum` values): the first
//!   step calls that tool (`ToolChoice::Tool`);
//! - a tool is clearly nearer than small talk (the [call
//!   floor](RelevanceGate::call_floor), off unless set): the first step must
//!   call a tool (`ToolChoice::Required`);
//! - with a call floor set, a follow-up near a tool only through the turn
//!   before it ("and in Paris?" after the weather in Berlin): the first
//!   step calls that tool (`ToolChoice::Tool`);
//! - otherwise the model chooses (`ToolChoice::Auto`).
//!
//! A request that asks several things at once ("convert 200 EUR to USD and
//! tell me Tesla's share price") is split into its parts; when two or more
//! different tools are each near a part, each is called before the answer
//! ([`Relevance::part_tools`]): a small model calls the first and stops. A
//! part that the tool called serves too but its call left out ("what time
//! is it in Tokyo and in New York?") is asked of that tool again, the part
//! named to the model ([`Relevance::parts`]).
//!
//! A short follow-up ("and in Paris?") is read with the user's turn before
//! it. The price of a floor is paid where a tool does fit but is described
//! in few words; `BENCHMARKS.md` measures both sides. The gate is opt-in
//! ([`AgentBuilder::relevance_gate`](super::AgentBuilder::relevance_gate)).

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::OnceCell;

use super::agent::Settings;
use agentry_core::embed::{EmbedError, Embedder, cosine};
use agentry_core::model::{Message, ToolChoice};
use agentry_core::tool::ToolSchema;

mod named;
pub(crate) mod parts;
pub use parts::RequestPart;
mod small_talk;
mod vectors;

pub use small_talk::SMALL_TALK;
use vectors::{KnownVectors, counted};

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

/// What the first step is told to do with the tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FirstStep {
    /// Answer in text: no tool is near the request.
    Answer,
    /// The model chooses between answering and calling.
    Choose,
    /// Call a tool: one is clearly nearer the request than small talk, or
    /// the request goes on with the one before it.
    Call,
}

impl FirstStep {
    /// The tool choice that carries this out.
    pub fn tool_choice(self) -> ToolChoice {
        match self {
            FirstStep::Answer => ToolChoice::None,
            FirstStep::Choose => ToolChoice::Auto,
            FirstStep::Call => ToolChoice::Required,
        }
    }
}

/// What the relevance gate made of a request before the first step
/// ([`RunOutcome::relevance`](super::RunOutcome::relevance)).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Relevance {
    /// The highest similarity between the request and any tool (for a
    /// follow-up, the request read alone or with the user's turn before it,
    /// whichever is nearer).
    pub tool: f32,
    /// The highest similarity between the request and the gate's small
    /// talk, when it has some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub small_talk: Option<f32>,
    /// What the first step was told.
    pub first_step: FirstStep,
    /// The tool the request names by one of the names its arguments list
    /// (an `enum` or `examples` value such as `notes.txt`): the first step
    /// calls it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named_tool: Option<String>,
    /// The tool nearest the request read with the user's turn before it,
    /// when that reading is nearer a tool than the request alone ("And in
    /// Paris?" after a question about the weather): the request goes on
    /// with the one before, and, with a call floor set, the first step
    /// calls this tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
    /// The tools nearest the parts of a request that asks several things
    /// at once ("Convert 200 EUR to USD and tell me Tesla's share price"),
    /// in the parts' order, when two or more different tools are each near
    /// a part: each is called before the answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub part_tools: Vec<String>,
    /// The parts of a request that asks several things at once, each with
    /// the tool nearest it (a part may be one word if it is a name: "the
    /// weather in Lisbon and Berlin"): when the calls made answered one
    /// and left out another that holds a value of its own ("in New York"
    /// after the time in Tokyo), its tool is called for it before the
    /// answer. Empty for a request in one part, or in more than eight.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<RequestPart>,
}

impl Relevance {
    /// The tool choice that carries out the first step: the named tool
    /// where there is one, else the tool a follow-up goes on with.
    pub fn tool_choice(&self) -> ToolChoice {
        match self.named_tool.as_ref().or(self.continues.as_ref()) {
            Some(tool) if self.first_step == FirstStep::Call => ToolChoice::Tool(tool.clone()),
            _ => self.first_step.tool_choice(),
        }
    }

    /// How much nearer the request is to a tool than to small talk (the
    /// tool similarity itself when there is no small talk).
    pub fn margin(&self) -> f32 {
        self.tool - self.small_talk.unwrap_or(0.0)
    }
}

/// Requests no tool answers, and how much nearer a tool must be.
struct SmallTalk {
    texts: Vec<String>,
    margin: f32,
    vectors: OnceCell<Vec<Vec<f32>>>,
}

/// Decides, from embeddings, whether the first step answers in text, lets
/// the model choose, or calls a tool ([`AgentBuilder::relevance_gate`](super::AgentBuilder::relevance_gate)).
///
/// ```
/// use agentry_agent::{FirstStep, RelevanceGate};
/// use agentry_core::embed::KeywordEmbedder;
/// use agentry_core::model::Message;
/// use agentry_core::tool::ToolSchema;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let embedder = KeywordEmbedder::new(["weather", "circle", "joke"]);
/// let gate = RelevanceGate::new(embedder, 0.5)
///     .small_talk(["tell me a joke"], 0.0)
///     .call_floor(0.9);
/// let tools = [ToolSchema {
///     name: "weather".into(),
///     description: Some("The weather in a city.".into()),
///     input_schema: serde_json::json!({"type": "object"}),
///     output_schema: None,
/// }];
/// for (request, first_step) in [
///     ("What is the weather in Lima?", FirstStep::Call),
///     ("Draw a circle", FirstStep::Answer),
///     ("A joke about the weather", FirstStep::Answer),
/// ] {
///     let relevance = gate.assess(&[Message::user(request)], &tools).await.unwrap();
///     assert_eq!(relevance.unwrap().first_step, first_step, "{request}");
/// }
/// assert!(gate.allows_calls("What is the weather in Lima?", &tools).await.unwrap());
/// # });
/// ```
pub struct RelevanceGate {
    embedder: Arc<dyn Embedder>,
    floor: f32,
    text: ToolText,
    small_talk: Option<SmallTalk>,
    call_floor: Option<f32>,
    /// Tool texts already embedded: a run's tools are embedded once, and at
    /// most [`TOOL_VECTORS_KEPT`] are kept.
    known: KnownVectors,
}

impl std::fmt::Debug for RelevanceGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelevanceGate")
            .field("embedder", &self.embedder.model_id())
            .field("floor", &self.floor)
            .field(
                "small_talk",
                &self
                    .small_talk
                    .as_ref()
                    .map(|talk| (talk.texts.len(), talk.margin)),
            )
            .field("call_floor", &self.call_floor)
            .finish()
    }
}

impl RelevanceGate {
    /// A gate that lets calls through when some tool's similarity to the
    /// request is at least `floor`, and otherwise lets the model choose.
    pub fn new(embedder: impl Embedder + 'static, floor: f32) -> Self {
        Self::keeping(Arc::new(embedder), floor, TOOL_VECTORS_KEPT)
    }

    /// A gate that keeps at most `kept` tool vectors.
    fn keeping(embedder: Arc<dyn Embedder>, floor: f32, kept: usize) -> Self {
        Self {
            embedder,
            floor,
            text: ToolText::default(),
            small_talk: None,
            call_floor: None,
            known: KnownVectors::keeping(kept),
        }
    }

    /// Compare requests with this much of each tool (by default its name,
    /// description and arguments).
    pub fn tool_text(mut self, text: ToolText) -> Self {
        self.text = text;
        self
    }

    /// Requests no tool answers ([`SMALL_TALK`] is a ready set): a request
    /// whose nearest tool is not at least `margin` nearer than the nearest
    /// of these is answered in text.
    pub fn small_talk<S: Into<String>>(
        mut self,
        requests: impl IntoIterator<Item = S>,
        margin: f32,
    ) -> Self {
        self.small_talk = Some(SmallTalk {
            texts: requests.into_iter().map(Into::into).collect(),
            margin,
            vectors: OnceCell::new(),
        });
        self
    }

    /// The first step must call a tool when the request's [margin](Relevance::margin)
    /// over small talk is at least `floor` (a small model then stops
    /// answering in text where a tool was wanted; `BENCHMARKS.md`), and
    /// when it [goes on](Relevance::continues) with the request before it
    /// ("And in Paris?"), which a small model answers from memory.
    pub fn call_floor(mut self, floor: f32) -> Self {
        self.call_floor = Some(floor);
        self
    }

    /// The floor.
    pub fn floor(&self) -> f32 {
        self.floor
    }

    /// How much nearer a tool than small talk a request must be, when the
    /// gate has small talk.
    pub(crate) fn talk_margin(&self) -> Option<f32> {
        self.small_talk.as_ref().map(|talk| talk.margin)
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
        let asked = self.query_vectors(&[request.to_owned()]).await?;
        let tools = self.tool_vectors(tools).await?;
        Ok(Some(nearest(&asked[0], &tools).1))
    }

    /// What the gate makes of a conversation: its user's last message (read
    /// with the user's turn before it too, when there is one) against
    /// `tools` and the small talk. `None` with no user message or no tools.
    pub async fn assess(
        &self,
        messages: &[Message],
        tools: &[ToolSchema],
    ) -> Result<Option<Relevance>, EmbedError> {
        let mut turns = user_texts(messages);
        let Some(request) = turns.next() else {
            return Ok(None);
        };
        if tools.is_empty() {
            return Ok(None);
        }
        // The request alone, then with the turn before it, then its parts.
        let mut queries = vec![request.to_owned()];
        let before = turns.next();
        if let Some(before) = before {
            queries.push(format!("{before}\n{request}"));
        }
        // Parts of one word (names) are compared too, but only those of
        // two words or more can make the gate let a request through.
        let named_parts = parts::named_parts(request);
        let named_parts = if named_parts.len() >= 2 {
            named_parts
        } else {
            Vec::new()
        };
        queries.extend(named_parts.iter().cloned());
        let asked = self.query_vectors(&queries).await?;
        let tool_vectors = self.tool_vectors(tools).await?;
        // Each query's nearest tool and its similarity.
        let near: Vec<(usize, f32)> = asked
            .iter()
            .map(|query| nearest(query, &tool_vectors))
            .collect();
        let alone = near[0].1;
        let with_before = before.map(|_| near[1]);
        let continues = with_before
            .filter(|&(_, with)| with > alone)
            .map(|(at, _)| tools[at].name.clone());
        let near_named = &near[near.len() - named_parts.len()..];
        let near_parts: Vec<(usize, f32)> = named_parts
            .iter()
            .zip(near_named)
            .filter(|(part, _)| part.split_whitespace().count() >= 2)
            .map(|(_, &near)| near)
            .collect();
        let near_parts = if near_parts.len() >= 2 {
            near_parts
        } else {
            Vec::new()
        };
        let part_tools = parts::part_tools(&near_parts, tools, self.floor);
        let talk_vectors = match &self.small_talk {
            Some(talk) => Some(self.small_talk_vectors(talk).await?),
            None => None,
        };
        let talk_near = |query: &[f32]| talk_vectors.map(|vectors| nearest(query, vectors).1);
        let asked_parts = &asked[asked.len() - named_parts.len()..];
        let parts: Vec<RequestPart> = named_parts
            .into_iter()
            .zip(near_named)
            .zip(asked_parts)
            .map(|((text, &(at, similarity)), query)| RequestPart {
                text,
                tool: tools[at].name.clone(),
                similarity,
                small_talk: talk_near(query),
            })
            .collect();
        let mut tool = with_before.map_or(alone, |(_, with)| with.max(alone));
        if !part_tools.is_empty() {
            // Each part is a request of its own: the nearest part counts.
            tool = near_parts.iter().map(|&(_, sim)| sim).fold(tool, f32::max);
        }
        let small_talk = talk_near(&asked[0]);
        let named_tool = named::named_tool(request, tools).map(|(tool, _)| tool.to_owned());
        let mut relevance = Relevance {
            tool,
            small_talk,
            first_step: FirstStep::Choose,
            named_tool,
            continues,
            part_tools,
            parts,
        };
        let margin = relevance.margin();
        let talk_margin = self
            .small_talk
            .as_ref()
            .map_or(f32::NEG_INFINITY, |t| t.margin);
        relevance.first_step = if relevance.named_tool.is_some() {
            FirstStep::Call
        } else if tool < self.floor || margin < talk_margin {
            FirstStep::Answer
        } else if let Some(floor) = self.call_floor
            && (margin >= floor || relevance.continues.is_some())
        {
            FirstStep::Call
        } else {
            FirstStep::Choose
        };
        Ok(Some(relevance))
    }

    /// Step 1's tool choice for a conversation ([`assess`](Self::assess)'s
    /// first step); `Auto` with no user message or no tools.
    pub async fn first_choice(
        &self,
        messages: &[Message],
        tools: &[ToolSchema],
    ) -> Result<ToolChoice, EmbedError> {
        Ok(self
            .assess(messages, tools)
            .await?
            .map_or(ToolChoice::Auto, |r| r.tool_choice()))
    }

    /// Whether a call may be made for `request` asked alone (with no
    /// tools, there is nothing to gate: `true`).
    pub async fn allows_calls(
        &self,
        request: &str,
        tools: &[ToolSchema],
    ) -> Result<bool, EmbedError> {
        Ok(self
            .assess(&[Message::user(request)], tools)
            .await?
            .is_none_or(|r| r.first_step != FirstStep::Answer))
    }

    async fn query_vectors(&self, queries: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        counted(self.embedder.embed_queries(queries).await?, queries.len())
    }

    async fn tool_vectors(&self, tools: &[ToolSchema]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let texts: Vec<String> = tools.iter().map(|tool| self.text.of(tool)).collect();
        self.known.vectors(&*self.embedder, &texts).await
    }

    async fn small_talk_vectors<'a>(
        &self,
        talk: &'a SmallTalk,
    ) -> Result<&'a Vec<Vec<f32>>, EmbedError> {
        talk.vectors
            .get_or_try_init(|| async {
                counted(self.embedder.embed(&talk.texts).await?, talk.texts.len())
            })
            .await
    }
}

/// Whether the gate stands aside: tools are found by discovery or skills
/// are on offer, so the advertised tools are not all there is.
fn stands_aside(settings: &Settings) -> bool {
    let has_skills = settings
        .skills
        .as_ref()
        .is_some_and(|skills| !skills.is_empty())
        || settings.skill_resolver.is_some();
    settings.discovery || has_skills
}

/// Which of `vectors` is nearest `query` (the first of equals) and its
/// similarity; `(0, -∞)` when there are none.
fn nearest(query: &[f32], vectors: &[Vec<f32>]) -> (usize, f32) {
    vectors
        .iter()
        .map(|vector| cosine(query, vector))
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (at, sim)| {
            if sim > best.1 { (at, sim) } else { best }
        })
}

/// Step 1's tool choice with the agent's gate applied (see
/// [`AgentBuilder::relevance_gate`](super::AgentBuilder::relevance_gate)
/// for when the gate stands aside), and what the gate made of the request.
pub(super) async fn first_step_choice(
    settings: &Settings,
    tools: &[ToolSchema],
    messages: &[Message],
) -> (ToolChoice, Option<Relevance>) {
    let Some(gate) = &settings.relevance_gate else {
        return (ToolChoice::Auto, None);
    };
    if stands_aside(settings) {
        return (ToolChoice::Auto, None);
    }
    match gate.assess(messages, tools).await {
        Ok(Some(relevance)) => {
            match relevance.first_step {
                FirstStep::Answer => tracing::info!(
                    tool = relevance.tool,
                    small_talk = relevance.small_talk,
                    "no tool is near the request: step 1 answers in text"
                ),
                FirstStep::Call => tracing::info!(
                    tool = relevance.tool,
                    small_talk = relevance.small_talk,
                    "a tool is near the request: step 1 calls"
                ),
                FirstStep::Choose => {}
            }
            (relevance.tool_choice(), Some(relevance))
        }
        Ok(None) => (ToolChoice::Auto, None),
        Err(error) => {
            tracing::warn!(%error, "the relevance gate could not embed: calls stay allowed");
            (ToolChoice::Auto, None)
        }
    }
}

/// The user's non-empty messages, the last first.
fn user_texts(messages: &[Message]) -> impl Iterator<Item = &str> {
    messages.iter().rev().filter_map(|message| match message {
        Message::User { text } if !text.trim().is_empty() => Some(text.as_str()),
        _ => None,
    })
}

/// The user's last non-empty message in a conversation.
pub(super) fn last_user_text(messages: &[Message]) -> Option<&str> {
    user_texts(messages).next()
}

#[cfg(test)]
mod tests;
