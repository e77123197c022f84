//! `ScriptedModel`: replies from a script, for testing loop logic (never as
//! proof that a feature works with a real model). It records every request.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures_util::stream;

use super::chat_model::{ChatModel, EventStream, events_of};
use super::error::ModelError;
use super::message::ChatRequest;
use super::step::Step;

type Responder = Box<dyn Fn(&ChatRequest) -> Result<Step, ModelError> + Send + Sync>;

enum Scripted {
    Reply(Result<Step, ModelError>),
    Respond(Responder),
}

/// A model that plays back scripted steps in order.
///
/// ```
/// use agentry_core::model::{ChatModel, ChatRequest, ScriptedModel, Step, Usage};
/// # futures_executor_block_on(async {
/// let model = ScriptedModel::new().reply(Step::Final { text: "hi".into(), tokens: Usage::new(3, 1) });
/// let step = model.step(&ChatRequest::new(None, "hello")).await.unwrap();
/// assert_eq!(step.tokens().total(), 4);
/// assert_eq!(model.requests().len(), 1);
/// # });
/// # fn futures_executor_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Scripted>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedModel {
    /// A model with an empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append a step to the script.
    pub fn reply(self, step: Step) -> Self {
        self.push(Scripted::Reply(Ok(step)))
    }

    /// Append a failure to the script.
    pub fn fail(self, error: ModelError) -> Self {
        self.push(Scripted::Reply(Err(error)))
    }

    /// Append a step computed from the request it answers.
    pub fn respond<F>(self, responder: F) -> Self
    where
        F: Fn(&ChatRequest) -> Result<Step, ModelError> + Send + Sync + 'static,
    {
        self.push(Scripted::Respond(Box::new(responder)))
    }

    fn push(self, item: Scripted) -> Self {
        self.script.lock().expect("script lock").push_back(item);
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().expect("requests lock").clone()
    }

    fn next(&self, request: &ChatRequest) -> Result<Step, ModelError> {
        self.requests
            .lock()
            .expect("requests lock")
            .push(request.clone());
        match self.script.lock().expect("script lock").pop_front() {
            Some(Scripted::Reply(reply)) => reply,
            Some(Scripted::Respond(responder)) => responder(request),
            None => Err(ModelError::Config(
                "the scripted model has no more steps".into(),
            )),
        }
    }
}

impl ChatModel for ScriptedModel {
    fn model_id(&self) -> &str {
        "scripted"
    }

    fn provider_name(&self) -> &str {
        "agentry.scripted"
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a> {
        match self.next(request) {
            Ok(step) => Box::pin(stream::iter(events_of(&step).into_iter().map(Ok))),
            Err(error) => Box::pin(stream::iter([Err(error)])),
        }
    }
}
