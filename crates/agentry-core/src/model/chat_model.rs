//! The `ChatModel` trait: one streaming call over a [`ChatRequest`], and a
//! `step` that folds the stream into a [`Step`].

use crate::BoxFuture;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;

use super::error::ModelError;
use super::message::ChatRequest;
use super::step::{FinishReason, Step, StepAssembler, StreamEvent};

/// A stream of reply events.
pub type EventStream<'a> = BoxStream<'a, Result<StreamEvent, ModelError>>;

/// A chat model: OpenAI-compatible servers, Anthropic, the local llama.cpp
/// model, the [`OfflineModel`](super::OfflineModel) and the
/// [`ScriptedModel`](super::ScriptedModel) all implement it.
///
/// Implementing one means streaming a reply for a request; `step` folds the
/// stream by default. A model that echoes the user word by word:
///
/// ```
/// use agentry_core::model::{ChatModel, ChatRequest, EventStream, FinishReason, Message, Step, StreamEvent, Usage};
/// use futures_util::{StreamExt, stream};
///
/// struct Echo;
///
/// impl ChatModel for Echo {
///     fn model_id(&self) -> &str {
///         "echo"
///     }
///     fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a> {
///         let text = match request.messages.last() {
///             Some(Message::User { text }) => text.clone(),
///             _ => String::new(),
///         };
///         let words: Vec<String> = text.split_inclusive(' ').map(str::to_owned).collect();
///         let usage = Usage::new(text.len() as u64, words.len() as u64);
///         let events = words.into_iter()
///             .map(|text| StreamEvent::TextDelta { text })
///             .chain([StreamEvent::Usage { usage }, StreamEvent::Finish { reason: FinishReason::Stop }]);
///         Box::pin(stream::iter(events.map(Ok)))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let request = ChatRequest::new(None, "hello there");
/// let pieces: Vec<String> = Echo.stream(&request)
///     .filter_map(|event| async move { match event {
///         Ok(StreamEvent::TextDelta { text }) => Some(text),
///         _ => None,
///     }})
///     .collect()
///     .await;
/// assert_eq!(pieces, ["hello ", "there"]);
/// // `step` folds the stream into one reply (an agent runs on steps).
/// let Step::Final { text, tokens } = Echo.step(&request).await? else { panic!() };
/// assert_eq!((text.as_str(), tokens), ("hello there", Usage::new(11, 2)));
/// # Ok::<_, agentry_core::model::ModelError>(())
/// # }).unwrap();
/// ```
pub trait ChatModel: Send + Sync {
    /// The model id, as reported in traces (`gen_ai.request.model`).
    fn model_id(&self) -> &str;

    /// Who serves the model, as traces name it (`gen_ai.provider.name`):
    /// `openai`, `anthropic`, `llama.cpp`, …; `_OTHER` unless a model says.
    fn provider_name(&self) -> &str {
        "_OTHER"
    }

    /// Stream one reply: text deltas, tool-call deltas, usage, then a finish event.
    fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a>;

    /// One reply as a [`Step`] (the model's decision for one step), with exact usage.
    fn step<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Step, ModelError>> {
        Box::pin(collect_step(self.stream(request)))
    }
}

impl<M: ChatModel + ?Sized> ChatModel for std::sync::Arc<M> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }
    fn provider_name(&self) -> &str {
        (**self).provider_name()
    }
    fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a> {
        (**self).stream(request)
    }
    fn step<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<Step, ModelError>> {
        (**self).step(request)
    }
}

/// Drain a reply stream into a [`Step`]; the first error wins.
pub async fn collect_step(mut stream: EventStream<'_>) -> Result<Step, ModelError> {
    let mut assembler = StepAssembler::new();
    while let Some(event) = stream.next().await {
        assembler.push(&event?);
    }
    assembler.finish()
}

/// The events that stream a finished [`Step`]: how models that decide in one
/// go (scripted, offline) implement [`ChatModel::stream`].
pub fn events_of(step: &Step) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    let (text, tokens, reason) = match step {
        Step::Final { text, tokens } => (text, *tokens, FinishReason::Stop),
        Step::Tool {
            calls,
            text,
            tokens,
        } => {
            for (index, call) in calls.iter().enumerate() {
                events.push(StreamEvent::ToolCallStart {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                events.push(StreamEvent::ToolCallDelta {
                    index,
                    arguments: call.input.to_string(),
                });
            }
            (text, *tokens, FinishReason::ToolCalls)
        }
    };
    if !text.is_empty() {
        events.insert(0, StreamEvent::TextDelta { text: text.clone() });
    }
    events.push(StreamEvent::Usage { usage: tokens });
    events.push(StreamEvent::Finish { reason });
    events
}
