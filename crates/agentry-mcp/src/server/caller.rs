//! [`Caller`]: the MCP client on the other end of a served tool call, for
//! tools that need more than their arguments: what the client can do, input
//! from it (elicitation, sampling, roots) and log messages to it.
//!
//! One API for both protocol eras. On a 2025-11-25 session, [`Caller::ask`]
//! sends the request to the client and waits for its answer. On the
//! stateless 2026-07-28 revision a server may not send requests (SEP-2322):
//! `ask` records what it needs, the tool returns (the `?` on `ask`'s error
//! does that), and the server answers `input_required`; the client retries
//! with the answers, and the tool runs again and finds them. State to carry
//! between rounds goes in [`Caller::set_state`]: it travels in
//! `requestState`, signed by the server, and a tampered value is refused.

// MCP logging and roots are deprecated by SEP-2577, yet part of the 2025-11-25
// protocol this server speaks; they stay until the protocol drops them.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use agentry_core::tool::ToolContext;
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, CreateMessageResult, ElicitResult, InputRequest, InputRequests,
    InputResponses, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, ServerRequest,
};
use rmcp::service::Peer;
use serde_json::{Value, json};

/// The error text of [`Caller::ask`] on the stateless revision, when the
/// answer is not here yet: the server replaces the tool's result with an
/// `input_required` result, so no model or person ever reads it.
pub const INPUT_PENDING: &str = "waiting for the client's input";

/// The MCP client that made the current tool call. A served tool finds it
/// with [`Caller::of`]; outside an MCP server there is none.
///
/// ```
/// use agentry_core::tool::ToolContext;
/// use agentry_mcp::server::Caller;
///
/// // Called directly, not through MCP: no client to ask.
/// assert!(Caller::of(&ToolContext::new()).is_none());
/// ```
#[derive(Clone)]
pub struct Caller {
    inner: Arc<Inner>,
}

struct Inner {
    peer: Peer<RoleServer>,
    stateless: bool,
    capabilities: ClientCapabilities,
    log_level: Option<LoggingLevel>,
    responses: InputResponses,
    state: Option<Value>,
    outcome: Mutex<Outcome>,
}

/// What a call asked for that it could not have yet.
#[derive(Default)]
pub(crate) struct Outcome {
    /// Requests for the client, by key (stateless revision).
    pub(crate) pending: InputRequests,
    /// State for the next round.
    pub(crate) next_state: Option<Value>,
    /// Capabilities the call needed and the client did not declare.
    pub(crate) missing: Option<ClientCapabilities>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("stateless", &self.inner.stateless)
            .field("capabilities", &self.inner.capabilities)
            .field("log_level", &self.inner.log_level)
            .field(
                "responses",
                &self.inner.responses.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// What kind of client capability an input request needs.
fn needs(request: &InputRequest) -> ClientCapabilities {
    let kind = match request {
        InputRequest::CreateMessage(_) => "sampling",
        InputRequest::Elicitation(_) => "elicitation",
        _ => "roots",
    };
    serde_json::from_value(json!({ kind: {} })).unwrap_or_default()
}

fn declared(capabilities: &ClientCapabilities, request: &InputRequest) -> bool {
    match request {
        InputRequest::CreateMessage(_) => capabilities.sampling.is_some(),
        InputRequest::Elicitation(_) => capabilities.elicitation.is_some(),
        _ => capabilities.roots.is_some(),
    }
}

/// True when `answer` is the result `request` asks for (a malformed answer
/// is asked for again rather than handed to the tool).
fn answers_request(request: &InputRequest, answer: &Value) -> bool {
    let answer = answer.clone();
    match request {
        InputRequest::CreateMessage(_) => {
            serde_json::from_value::<CreateMessageResult>(answer).is_ok()
        }
        InputRequest::Elicitation(_) => serde_json::from_value::<ElicitResult>(answer).is_ok(),
        _ => serde_json::from_value::<ListRootsResult>(answer).is_ok(),
    }
}

fn capability_names(capabilities: &ClientCapabilities) -> String {
    serde_json::to_value(capabilities)
        .ok()
        .and_then(|value| {
            value
                .as_object()
                .map(|map| map.keys().cloned().collect::<Vec<_>>())
        })
        .unwrap_or_default()
        .join(", ")
}

fn union(a: Option<ClientCapabilities>, b: ClientCapabilities) -> ClientCapabilities {
    let mut merged = a
        .and_then(|a| serde_json::to_value(a).ok())
        .unwrap_or_else(|| json!({}));
    if let (Some(merged), Ok(Value::Object(b))) = (merged.as_object_mut(), serde_json::to_value(b))
    {
        merged.extend(b);
    }
    serde_json::from_value(merged).unwrap_or_default()
}

impl Caller {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        stateless: bool,
        capabilities: ClientCapabilities,
        log_level: Option<LoggingLevel>,
        responses: InputResponses,
        state: Option<Value>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                peer,
                stateless,
                capabilities,
                log_level,
                responses,
                state,
                outcome: Mutex::new(Outcome::default()),
            }),
        }
    }

    /// The client of the MCP call this context belongs to, if an MCP server
    /// made the call.
    pub fn of(ctx: &ToolContext) -> Option<Caller> {
        ctx.state::<Caller>().cloned()
    }

    /// True on the stateless 2026-07-28 revision, where input comes in rounds.
    pub fn is_stateless(&self) -> bool {
        self.inner.stateless
    }

    /// The capabilities the client declared (in the handshake, or on this
    /// request on the stateless revision).
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.inner.capabilities
    }

    /// True when the client can answer `request` (it declared the
    /// capability: `sampling`, `elicitation` or `roots`).
    pub fn can_answer(&self, request: &InputRequest) -> bool {
        declared(&self.inner.capabilities, request)
    }

    /// Ask the client: the answer (its result as JSON: an `ElicitResult`,
    /// `CreateMessageResult` or `ListRootsResult`) or an error for the tool to
    /// return with `?`.
    ///
    /// `key` names the request across rounds. On a session the request is
    /// sent now. On the stateless revision an answer from the client's retry
    /// is returned; without one the request is recorded and the error is
    /// [`INPUT_PENDING`]: the server answers `input_required` with every
    /// recorded request. A client without the capability makes the call fail
    /// with MCP's missing-capability error on the stateless revision (as the
    /// spec asks) and gives an error result on a session.
    pub async fn ask(&self, key: &str, request: InputRequest) -> Result<Value, String> {
        let mut answers = self.ask_all([(key.to_owned(), request)]).await?;
        Ok(answers.pop().unwrap_or(Value::Null))
    }

    /// [`ask`](Self::ask) several things at once: on the stateless revision
    /// they all go to the client in one `input_required` round. The answers
    /// are in the order asked.
    pub async fn ask_all(
        &self,
        requests: impl IntoIterator<Item = (String, InputRequest)>,
    ) -> Result<Vec<Value>, String> {
        let requests: Vec<(String, InputRequest)> = requests.into_iter().collect();
        for (_, request) in &requests {
            if !self.can_answer(request) {
                let missing = needs(request);
                let names = capability_names(&missing);
                if self.inner.stateless {
                    let mut outcome = self.outcome();
                    outcome.missing = Some(union(outcome.missing.take(), missing));
                }
                return Err(format!(
                    "the MCP client does not support {names}, which this tool needs"
                ));
            }
        }
        if self.inner.stateless {
            let mut answers = Vec::with_capacity(requests.len());
            let mut outcome = self.outcome();
            for (key, request) in requests {
                match self.inner.responses.get(&key) {
                    Some(answer) if answers_request(&request, answer) => {
                        answers.push(answer.clone())
                    }
                    answer => {
                        if answer.is_some() {
                            tracing::debug!(%key, "an MCP input response of the wrong shape; asked again");
                        }
                        outcome.pending.insert(key, request);
                    }
                }
            }
            return if outcome.pending.is_empty() {
                Ok(answers)
            } else {
                Err(INPUT_PENDING.to_owned())
            };
        }
        let mut answers = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let request = match request {
                InputRequest::CreateMessage(request) => {
                    ServerRequest::CreateMessageRequest(request)
                }
                InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
                InputRequest::ListRoots(request) => ServerRequest::ListRootsRequest(request),
                _ => return Err(format!("{key}: an input request MCP does not define")),
            };
            let answer = self
                .inner
                .peer
                .send_request(request)
                .await
                .map_err(|error| format!("{key}: the MCP client did not answer: {error}"))?;
            answers.push(serde_json::to_value(answer).unwrap_or(Value::Null));
        }
        Ok(answers)
    }

    /// The state set by the previous round's [`set_state`](Self::set_state),
    /// verified as the server's own.
    pub fn state(&self) -> Option<&Value> {
        self.inner.state.as_ref()
    }

    /// State for the next round (stateless revision): sent as `requestState`,
    /// signed, bound to this tool and arguments, and valid for ten minutes.
    /// It is readable by the client: keep secrets out.
    pub fn set_state(&self, state: Value) {
        self.outcome().next_state = Some(state);
    }

    /// Send a log message (`notifications/message`) to the client, if it
    /// listens at `level`: on a session unless `logging/setLevel` asked for
    /// less; on the stateless revision only when the request named a
    /// `logLevel`.
    pub async fn log(&self, level: LoggingLevel, data: impl Into<Value>) {
        let Some(minimum) = self.inner.log_level else {
            return;
        };
        if severity(level) < severity(minimum) {
            return;
        }
        let params = LoggingMessageNotificationParam::new(level, data.into());
        #[allow(deprecated)]
        let sent = self.inner.peer.notify_logging_message(params).await;
        if let Err(error) = sent {
            tracing::debug!(%error, "an MCP log message was not delivered");
        }
    }

    fn outcome(&self) -> std::sync::MutexGuard<'_, Outcome> {
        self.inner
            .outcome
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What the call left to do, once it has returned.
    pub(crate) fn take_outcome(&self) -> Outcome {
        std::mem::take(&mut *self.outcome())
    }
}

/// `level`'s rank, least severe first.
pub(crate) fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// An `elicitation/create` request: `message` for the person, and the
/// flat object schema of what to ask (MCP's restricted JSON Schema).
///
/// ```
/// use agentry_mcp::server::elicitation;
/// use serde_json::json;
///
/// let request = elicitation("Your name?", json!({"type": "object", "properties": {"name": {"type": "string"}}}))?;
/// assert_eq!(serde_json::to_value(&request)?["method"], "elicitation/create");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn elicitation(message: &str, schema: Value) -> Result<InputRequest, serde_json::Error> {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"message": message, "requestedSchema": schema}
    }))
}

/// A `sampling/createMessage` request: one user message of text, at most
/// `max_tokens` in the answer.
///
/// ```
/// use agentry_mcp::server::sampling;
///
/// let request = sampling("What is the capital of France?", 100)?;
/// assert_eq!(serde_json::to_value(&request)?["params"]["maxTokens"], 100);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn sampling(text: &str, max_tokens: u32) -> Result<InputRequest, serde_json::Error> {
    serde_json::from_value(json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens
        }
    }))
}

/// A `roots/list` request: the directories the client shares.
///
/// ```
/// let request = agentry_mcp::server::roots();
/// assert_eq!(serde_json::to_value(&request).unwrap()["method"], "roots/list");
/// ```
pub fn roots() -> InputRequest {
    serde_json::from_value(json!({"method": "roots/list"}))
        .expect("roots/list has no parameters to get wrong")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_needed_by_each_request_kind() {
        let sampling = sampling("hi", 10).unwrap();
        let elicit = elicitation("name?", json!({"type": "object", "properties": {}})).unwrap();
        assert_eq!(capability_names(&needs(&sampling)), "sampling");
        assert_eq!(capability_names(&needs(&elicit)), "elicitation");
        assert_eq!(capability_names(&needs(&roots())), "roots");
        let declared_sampling: ClientCapabilities =
            serde_json::from_value(json!({"sampling": {}})).unwrap();
        assert!(declared(&declared_sampling, &sampling));
        assert!(!declared(&declared_sampling, &elicit));
        assert!(answers_request(
            &elicit,
            &json!({"action": "accept", "content": {"name": "Ada"}})
        ));
        assert!(!answers_request(&elicit, &json!(12345)));
        assert!(answers_request(
            &roots(),
            &json!({"roots": [{"uri": "file:///tmp"}]})
        ));
        assert!(!answers_request(&sampling, &json!({"roots": []})));
        let both = union(Some(needs(&sampling)), needs(&elicit));
        assert_eq!(capability_names(&both), "sampling, elicitation");
    }

    #[test]
    fn levels_rank_by_severity() {
        assert!(severity(LoggingLevel::Debug) < severity(LoggingLevel::Info));
        assert!(severity(LoggingLevel::Error) > severity(LoggingLevel::Warning));
        assert_eq!(severity(LoggingLevel::Emergency), 7);
    }
}
