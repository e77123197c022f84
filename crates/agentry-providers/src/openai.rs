//! OpenAI Chat Completions, and every server that speaks it: OpenAI, Ollama,
//! vLLM and the llama.cpp server. Streams over SSE with parallel tool calls and usage.

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

/// Where requests go when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// `OPENAI_BASE_URL` (default [`DEFAULT_OPENAI_BASE_URL`]) and
/// `OPENAI_API_KEY`; an error when neither is set (local servers usually
/// need no key, but then need a base URL).
pub(crate) fn openai_env() -> Result<(String, Option<String>), String> {
    let key = std::env::var("OPENAI_API_KEY")
        .ok()
        .filter(|k| !k.is_empty());
    let base = std::env::var("OPENAI_BASE_URL")
        .ok()
        .filter(|b| !b.is_empty());
    if key.is_none() && base.is_none() {
        return Err("set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)".into());
    }
    Ok((
        base.unwrap_or_else(|| DEFAULT_OPENAI_BASE_URL.to_owned()),
        key,
    ))
}

/// A Chat Completions-compatible model.
///
/// ```
/// use agentry_core::model::{ChatModel, ChatRequest, ResponseFormat, Step, Usage};
/// use agentry_providers::OpenAiCompatible;
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
///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{\\\"answer\\\": \\\"Yes\\\"}\"}}]}\n\n",
///     "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":21,\"completion_tokens\":5}}\n\n",
///     "data: [DONE]\n\n",
/// ));
/// // Ollama, vLLM and the llama.cpp server take the same shape at their own base URL.
/// let model = OpenAiCompatible::new(format!("{base_url}/v1"), None, "gpt-4o-mini");
/// let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}},
///                     "required": ["answer"], "additionalProperties": false});
/// let request = ChatRequest {
///     response_format: Some(ResponseFormat::new("output", schema.clone())),
///     ..ChatRequest::new(Some("Answer in JSON.".into()), "Can I get a refund?")
/// };
/// let body = model.request_body(&request)?;
/// assert_eq!(body["response_format"]["json_schema"], json!({"name": "output", "schema": schema, "strict": true}));
/// let step = model.step(&request).await?;
/// assert_eq!(step, Step::Final { text: r#"{"answer": "Yes"}"#.into(), tokens: Usage::new(21, 5) });
/// # Ok::<_, agentry_core::model::ModelError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<Secret>,
    model: String,
    retry: RetryPolicy,
    limits: StreamLimits,
}

impl OpenAiCompatible {
    /// A provider at `base_url` (e.g. `http://localhost:11434/v1` for Ollama) serving `model`.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            client: default_client(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: api_key.map(Secret::new),
            model: model.into(),
            retry: RetryPolicy::default(),
            limits: StreamLimits::default(),
        }
    }

    /// Configure from `OPENAI_API_KEY` and `OPENAI_BASE_URL`. A key is required
    /// unless a base URL is set (local servers usually need none).
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        let (base, key) = openai_env().map_err(ModelError::Config)?;
        Ok(Self::new(base, key, model))
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

    /// Use a preconfigured HTTP client (proxies, timeouts, TLS).
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    /// The request body for `request`.
    pub(crate) fn body(&self, request: &ChatRequest, names: &WireNames) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for message in &request.messages {
            messages.push(match message {
                Message::User { text } => json!({"role": "user", "content": text}),
                Message::Assistant { text, tool_calls } => {
                    let mut value = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                    if !tool_calls.is_empty() {
                        value["tool_calls"] = tool_calls
                            .iter()
                            .map(|call| {
                                json!({"id": call.id, "type": "function",
                                       "function": {"name": names.wire_of(&call.name), "arguments": call.input.to_string()}})
                            })
                            .collect();
                    }
                    value
                }
                Message::Tool { result } => {
                    json!({"role": "tool", "tool_call_id": result.id, "content": result_text(result)})
                }
            });
        }
        let mut body = json!({
            "model": request.model.as_deref().unwrap_or(&self.model),
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|tool| {
                    let mut function =
                        json!({"name": names.wire_of(&tool.name), "parameters": tool.input_schema});
                    if let Some(description) = &tool.description {
                        function["description"] = json!(description);
                    }
                    json!({"type": "function", "function": function})
                })
                .collect();
            body["tool_choice"] = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => {
                    json!({"type": "function", "function": {"name": names.wire_of(name)}})
                }
            };
        }
        if let Some(max_tokens) = request.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if !request.stop.is_empty() {
            body["stop"] = json!(request.stop);
        }
        if let Some(format) = &request.response_format {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {
                "name": format.name,
                "schema": format.schema,
                "strict": crate::structured::strict_ready(&format.schema),
            }});
        }
        body
    }

    /// The JSON body sent to `/chat/completions` for `request`: tools under
    /// their wire names, the tool choice, and `response_format` (strict
    /// where the schema allows) when the request asks for a structured answer.
    pub fn request_body(&self, request: &ChatRequest) -> Result<Value, ModelError> {
        Ok(self.body(request, &wire_names(request)?))
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: usize,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

/// `usage.prompt_tokens_details`: how many prompt tokens the server's cache served.
#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl ChunkUsage {
    fn usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .map_or(0, |details| details.cached_tokens);
        Usage::new(self.prompt_tokens, self.completion_tokens).with_cached_input(cached)
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

impl ChatModel for OpenAiCompatible {
    fn model_id(&self) -> &str {
        &self.model
    }

    fn provider_name(&self) -> &str {
        "openai"
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a> {
        Box::pin(async_stream::try_stream! {
            let names = wire_names(request)?;
            let body = self.body(request, &names);
            let url = format!("{}/chat/completions", self.base_url);
            let deadline = tokio::time::Instant::now() + self.limits.total;
            let response = send_by(deadline, &self.retry, || {
                let builder = self.client.post(&url).json(&body);
                match &self.api_key {
                    Some(key) => builder.bearer_auth(key.expose()),
                    None => builder,
                }
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
            let mut reason: Option<FinishReason> = None;
            let mut done = false;
            while let Some(event) = events.next().await {
                let event = event?;
                let data = event.data.trim();
                if data.is_empty() {
                    continue;
                }
                if data == "[DONE]" {
                    done = true;
                    break;
                }
                let chunk: Chunk = serde_json::from_str(data).map_err(|e| malformed("chunk", data, &e))?;
                if let Some(error) = chunk.error {
                    Err(ModelError::Provider(crate::transport::error_message(&json!({"error": error}).to_string())))?;
                }
                for choice in chunk.choices {
                    if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                        yield StreamEvent::TextDelta { text };
                    }
                    for call in choice.delta.tool_calls {
                        let function = call.function.unwrap_or(FunctionDelta { name: None, arguments: None });
                        if call.id.is_some() || function.name.is_some() {
                            yield StreamEvent::ToolCallStart {
                                index: call.index,
                                id: call.id.unwrap_or_default(),
                                name: function.name.map(|n| names.name_of(&n)).unwrap_or_default(),
                            };
                        }
                        if let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) {
                            yield StreamEvent::ToolCallDelta { index: call.index, arguments };
                        }
                    }
                    if let Some(finish) = choice.finish_reason {
                        reason = Some(finish_reason(&finish));
                    }
                }
                if let Some(usage) = chunk.usage {
                    yield StreamEvent::Usage { usage: usage.usage() };
                }
            }
            // Only `[DONE]` says the stream is whole: a finish reason comes
            // before the usage chunk, and a stream that ends between them
            // would be a step with its tokens missing.
            match (done, reason) {
                (true, Some(reason)) => yield StreamEvent::Finish { reason },
                (true, None) => yield StreamEvent::Finish { reason: FinishReason::Stop },
                (false, _) => Err(ModelError::StreamCut("the stream ended before [DONE]".into()))?,
            }
    })
}
