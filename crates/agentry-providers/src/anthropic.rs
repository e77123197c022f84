//! Anthropic Messages, streamed over SSE: text and `tool_use` blocks in,
//! `tool_result` blocks (with `is_error`) out.

use agentry_core::model::{
    ChatModel, ChatRequest, EventStream, FinishReason, Message, ModelError, StreamEvent,
    ToolChoice, Usage,
};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::secret::Secret;
use crate::transport::{RetryPolicy, StreamLimits, default_client, malformed, send_by, sse_events};
use crate::wire_names::{WireNames, result_text, wire_names};

/// Where requests go when `ANTHROPIC_BASE_URL` is not set.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// An Anthropic Messages model.
///
/// ```
/// use agentry_core::model::{ChatModel, ChatRequest, ResponseFormat, Step, Usage};
/// use agentry_providers::Anthropic;
/// use serde_json::json;
/// # // A one-shot loopback server standing in for the provider.
/// # fn serve(sse: &'static str) -> String {
/// #     use std::io::{Read, Write};
/// #     let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
/// #     let url = format!("http://{}", listener.local_addr().unwrap());
/// #     std::thread::spawn(move || {
/// #         let (mut conn, _) = listener.accept().unwrap();
/// #         let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
/// #         loop {
/// #             let n = conn.read(&mut buf).unwrap();
/// #             seen.extend_from_slice(&buf[..n]);
/// #             let text = String::from_utf8_lossy(&seen).to_ascii_lowercase();
/// #             if let Some(end) = text.find("\r\n\r\n") {
/// #                 let len = text.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
/// #                 if n == 0 || seen.len() >= end + 4 + len { break; }
/// #             }
/// #         }
/// #         write!(conn, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sse}", sse.len()).unwrap();
/// #     });
/// #     url
/// # }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let base_url = serve(concat!(
///     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
///     "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
///     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"{\\\"answer\\\": \\\"Yes\\\"}\"}}\n\n",
///     "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
///     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n",
///     "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
/// ));
/// let model = Anthropic::new("sk-ant-test", "claude-sonnet-4-5").with_base_url(base_url);
/// let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
/// let request = ChatRequest {
///     response_format: Some(ResponseFormat::new("output", schema)),
///     ..ChatRequest::new(Some("Answer in JSON.".into()), "Can I get a refund?")
/// };
/// // Anthropic wants every object closed; the provider closes the schema.
/// let body = model.request_body(&request)?;
/// assert_eq!(body["output_config"]["format"]["schema"]["additionalProperties"], json!(false));
/// let step = model.step(&request).await?;
/// assert_eq!(step, Step::Final { text: r#"{"answer": "Yes"}"#.into(), tokens: Usage::new(25, 7) });
/// # Ok::<_, agentry_core::model::ModelError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    client: reqwest::Client,
    base_url: String,
    api_key: Secret,
    model: String,
    retry: RetryPolicy,
    limits: StreamLimits,
}

impl Anthropic {
    /// A provider for `model` with an API key.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            client: default_client(),
            base_url: DEFAULT_ANTHROPIC_BASE_URL.into(),
            api_key: Secret::new(api_key),
            model: model.into(),
            retry: RetryPolicy::default(),
            limits: StreamLimits::default(),
        }
    }

    /// Configure from `ANTHROPIC_API_KEY` (required) and `ANTHROPIC_BASE_URL` (optional).
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        let key = std::env::var("ANTHROPIC_API_KEY")
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| ModelError::Config("set ANTHROPIC_API_KEY".into()))?;
        let provider = Self::new(key, model);
        Ok(
            match std::env::var("ANTHROPIC_BASE_URL")
                .ok()
                .filter(|b| !b.is_empty())
            {
                Some(base) => provider.with_base_url(base),
                None => provider,
            },
        )
    }

    /// Send requests to another base URL (a proxy, a test server).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Use other time and size limits for streamed replies (see [`StreamLimits`]).
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Use another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Use a preconfigured HTTP client.
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    pub(crate) fn body(&self, request: &ChatRequest, names: &WireNames) -> Value {
        // Consecutive messages of one role merge into one message of content blocks.
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        for message in &request.messages {
            let (role, blocks) = match message {
                Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
                Message::Assistant { text, tool_calls } => {
                    let mut blocks = Vec::new();
                    if !text.is_empty() {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    blocks.extend(tool_calls.iter().map(|call| {
                        let input = if call.input.is_object() { call.input.clone() } else { json!({}) };
                        json!({"type": "tool_use", "id": call.id, "name": names.wire_of(&call.name), "input": input})
                    }));
                    ("assistant", blocks)
                }
                Message::Tool { result } => {
                    let text = if result.is_error {
                        result.output_text()
                    } else {
                        result_text(result)
                    };
                    (
                        "user",
                        vec![
                            json!({"type": "tool_result", "tool_use_id": result.id, "content": text, "is_error": result.is_error}),
                        ],
                    )
                }
            };
            match messages.last_mut() {
                Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
                _ => messages.push((role, blocks)),
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut body = json!({
            "model": request.model.as_deref().unwrap_or(&self.model),
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
            "stream": true,
        });
        if let Some(system) = &request.system {
            body["system"] = json!(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|tool| {
                    let mut value = json!({"name": names.wire_of(&tool.name), "input_schema": tool.input_schema});
                    if let Some(description) = &tool.description {
                        value["description"] = json!(description);
                    }
                    value
                })
                .collect();
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": names.wire_of(name)}),
            };
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if !request.stop.is_empty() {
            body["stop_sequences"] = json!(request.stop);
        }
        if let Some(format) = &request.response_format {
            body["output_config"] = json!({"format": {
                "type": "json_schema",
                "schema": crate::structured::closed(&format.schema),
            }});
        }
        body
    }

    /// The JSON body sent to `/v1/messages` for `request`: tools under their
    /// wire names, the tool choice, and `output_config.format` (the schema
    /// closed, as the API requires) when the request asks for a structured answer.
    pub fn request_body(&self, request: &ChatRequest) -> Result<Value, ModelError> {
        Ok(self.body(request, &wire_names(request)?))
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<AnthropicUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<AnthropicUsage>,
}

#[derive(Deserialize, Default)]
struct AnthropicUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
}

impl AnthropicUsage {
    /// Anthropic counts cache reads and writes apart from `input_tokens`;
    /// agentry's input counts every prompt token, cached ones included.
    fn usage(&self) -> Usage {
        let input = self
            .input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens);
        Usage::new(input, self.output_tokens).with_cached_input(self.cache_read_input_tokens)
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        "stop_sequence" => FinishReason::StopSequence,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

impl ChatModel for Anthropic {
    fn model_id(&self) -> &str {
        &self.model
    }

    fn provider_name(&self) -> &str {
        "anthropic"
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a> {
        Box::pin(async_stream::try_stream! {
            let names = wire_names(request)?;
            let body = self.body(request, &names);
            let url = format!("{}/v1/messages", self.base_url);
            let deadline = tokio::time::Instant::now() + self.limits.total;
            let response = send_by(deadline, &self.retry, || {
                self.client
                    .post(&url)
                    .header("x-api-key", self.api_key.expose())
                    .header("anthropic-version", ANTHROPIC_VERSION)
                    .json(&body)
            })
            .await?;
            let replies = reply_events(sse_events(response, &self.limits, deadline), names);
            for await event in replies {
                yield event?;
            }
        })
    }
}

/// The reply a provider streams, read from its server-sent `events`.
pub(crate) fn reply_events<'a>(
    events: impl futures_util::Stream<Item = Result<eventsource_stream::Event, ModelError>> + Send + 'a,
    names: WireNames,
) -> EventStream<'a> {
    Box::pin(async_stream::try_stream! {
            let mut events = Box::pin(events);
            let mut reason = FinishReason::Stop;
            let mut stopped = false;
            while let Some(event) = events.next().await {
                let event = event?;
                let data = event.data.trim();
                if data.is_empty() {
                    continue;
                }
                let parsed: Event = serde_json::from_str(data).map_err(|e| malformed("event", data, &e))?;
                match parsed {
                    Event::MessageStart { message } => {
                        if let Some(usage) = message.usage {
                            yield StreamEvent::Usage { usage: usage.usage() };
                        }
                    }
                    Event::ContentBlockStart { index, content_block } => match content_block {
                        Block::ToolUse { id, name } => {
                            yield StreamEvent::ToolCallStart { index, id, name: names.name_of(&name) };
                        }
                        Block::Text { text } if !text.is_empty() => yield StreamEvent::TextDelta { text },
                        _ => {}
                    },
                    Event::ContentBlockDelta { index, delta } => match delta {
                        BlockDelta::TextDelta { text } => yield StreamEvent::TextDelta { text },
                        BlockDelta::InputJsonDelta { partial_json } => {
                            yield StreamEvent::ToolCallDelta { index, arguments: partial_json };
                        }
                        BlockDelta::Other => {}
                    },
                    Event::MessageDelta { delta, usage } => {
                        if let Some(stop) = delta.stop_reason {
                            reason = stop_reason(&stop);
                        }
                        if let Some(usage) = usage {
                            yield StreamEvent::Usage { usage: usage.usage() };
                        }
                    }
                    Event::MessageStop {} => {
                        stopped = true;
                        break;
                    }
                    Event::Error { error } => {
                        let message = crate::transport::error_message(&json!({"error": error}).to_string());
                        Err(ModelError::Provider(message))?;
                    }
                    Event::ContentBlockStop {} | Event::Ping {} | Event::Unknown => {}
                }
            }
            if !stopped {
                Err(ModelError::StreamCut("the stream ended before message_stop".into()))?;
            }
            yield StreamEvent::Finish { reason };
    })
}
