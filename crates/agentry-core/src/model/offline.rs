//! `OfflineModel`: what answers when no provider is configured. Offline,
//! every step is `{kind: "final", text: "[no llm provider]", tokens: 0}`.

use futures_util::stream;

use super::chat_model::{ChatModel, EventStream, events_of};
use super::message::ChatRequest;
use super::step::{Step, Usage};

/// The text the offline model answers with.
pub const OFFLINE_TEXT: &str = "[no llm provider]";

/// A model that always answers [`OFFLINE_TEXT`] with zero tokens.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineModel;

impl ChatModel for OfflineModel {
    fn model_id(&self) -> &str {
        "offline"
    }

    fn provider_name(&self) -> &str {
        "agentry.offline"
    }

    fn stream<'a>(&'a self, _request: &'a ChatRequest) -> EventStream<'a> {
        let step = Step::Final {
            text: OFFLINE_TEXT.into(),
            tokens: Usage::default(),
        };
        Box::pin(stream::iter(events_of(&step).into_iter().map(Ok)))
    }
}
