//! The model layer: the normalised [`ChatRequest`], the [`ChatModel`] trait
//! with its streaming [`StreamEvent`]s and folded [`Step`]s (one decision
//! per step), typed [`ModelError`]s, and two models that need no provider:
//! [`OfflineModel`] and [`ScriptedModel`].

mod chat_model;
mod error;
mod message;
mod offline;
mod scripted;
mod step;

pub use chat_model::{ChatModel, EventStream, collect_step};
pub use error::ModelError;
pub use message::{ChatRequest, Message, ResponseFormat, ToolChoice};
pub use offline::{OFFLINE_TEXT, OfflineModel};
pub use scripted::ScriptedModel;
pub use step::{FinishReason, Step, StepAssembler, StreamEvent, Usage};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolCall;
    use serde_json::json;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn offline_answers_no_llm_provider_with_zero_tokens() {
        let step = block_on(OfflineModel.step(&ChatRequest::new(None, "hi"))).unwrap();
        assert_eq!(
            step,
            Step::Final {
                text: "[no llm provider]".into(),
                tokens: Usage::default()
            }
        );
    }

    #[test]
    fn scripted_plays_back_and_streams_the_same_step() {
        let call = Step::Tool {
            calls: vec![ToolCall::new("c1", "get_weather", json!({"city": "Lima"}))],
            text: "checking".into(),
            tokens: Usage::new(5, 2),
        };
        let model = ScriptedModel::new()
            .reply(call.clone())
            .fail(ModelError::Provider("down".into()));
        let request = ChatRequest::new(Some("sys".into()), "weather?");
        assert_eq!(block_on(model.step(&request)).unwrap(), call);
        assert_eq!(
            block_on(model.step(&request)).unwrap_err(),
            ModelError::Provider("down".into())
        );
        assert!(matches!(
            block_on(model.step(&request)),
            Err(ModelError::Config(_))
        ));
        assert_eq!(model.requests().len(), 3);
    }
}
