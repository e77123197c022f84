//! The loop's spans as the OpenTelemetry GenAI conventions name them
//! (`chat {model}`, `execute_tool {tool}`), what they record when a step or
//! a call ends, the GenAI client metrics, and the opt-in content
//! attributes (messages, tool arguments and results) as JSON strings.

use std::time::Duration;

use agentry_core::model::{ChatModel, ChatRequest, Message, ModelError, Step};
use agentry_core::skill::{APPLY_SKILL, READ_SKILL};
use agentry_core::tool::{ToolCall, ToolResult};
use agentry_telemetry::metrics::{self, Operation};
use serde_json::{Value, json};
use tracing::{Span, field};

/// The span of one model call, opened before it.
fn chat_span(model: &dyn ChatModel, request: &ChatRequest) -> Span {
    let model_id = model.model_id();
    let span = tracing::info_span!(
        "chat",
        otel.name = format!("chat {model_id}"),
        otel.kind = span_kind(model.provider_name()),
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = model.provider_name(),
        gen_ai.request.model = model_id,
        gen_ai.request.max_tokens = request.max_tokens.map(i64::from),
        gen_ai.request.temperature = request.temperature,
        gen_ai.usage.input_tokens = field::Empty,
        gen_ai.usage.output_tokens = field::Empty,
        gen_ai.usage.cache_read.input_tokens = field::Empty,
        gen_ai.response.finish_reasons = field::Empty,
        gen_ai.output.type = field::Empty,
        gen_ai.system_instructions = field::Empty,
        gen_ai.input.messages = field::Empty,
        gen_ai.output.messages = field::Empty,
        gen_ai.tool.definitions = field::Empty,
        error.type = field::Empty,
        otel.status_code = field::Empty,
    );
    if agentry_telemetry::capture_content() {
        if let Some(system) = &request.system {
            span.record("gen_ai.system_instructions", text_parts(system).as_str());
        }
        span.record("gen_ai.input.messages", input_messages(request).as_str());
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "name": tool.name, "description": tool.description,
                       "parameters": tool.input_schema})
            })
            .collect();
        span.record("gen_ai.tool.definitions", Value::from(tools).to_string());
    }
    span
}

/// A model in this process (the local one, a scripted or offline one) is
/// an internal span; one reached over the network a client span.
fn span_kind(provider: &str) -> &'static str {
    match provider {
        "llama.cpp" | "agentry.scripted" | "agentry.offline" => "internal",
        _ => "client",
    }
}

/// `call`, one model call answering `request`, inside its chat span, with
/// how it ended and its metrics recorded.
pub(crate) async fn traced_chat(
    model: &dyn ChatModel,
    request: &ChatRequest,
    call: impl std::future::Future<Output = Result<Step, ModelError>>,
) -> Result<Step, ModelError> {
    use tracing::Instrument;
    let span = chat_span(model, request);
    let begun = std::time::Instant::now();
    let result = call.instrument(span.clone()).await;
    end_chat(&span, model, &result, begun.elapsed());
    result
}

/// Record how a model call ended on its span, and its metrics.
fn end_chat(
    span: &Span,
    model: &dyn ChatModel,
    result: &Result<Step, ModelError>,
    elapsed: Duration,
) {
    let operation = Operation {
        name: "chat",
        provider: model.provider_name(),
        model: model.model_id(),
    };
    match result {
        Ok(step) => {
            let usage = step.tokens();
            let reason = match step {
                Step::Final { .. } => "stop",
                Step::Tool { .. } => "tool_calls",
            };
            span.record("gen_ai.usage.input_tokens", int(usage.input_tokens))
                .record("gen_ai.usage.output_tokens", int(usage.output_tokens))
                .record(
                    "gen_ai.response.finish_reasons",
                    field::display(format!("[\"{reason}\"]")),
                )
                .record("gen_ai.output.type", "text");
            if usage.cached_input_tokens > 0 {
                span.record(
                    "gen_ai.usage.cache_read.input_tokens",
                    int(usage.cached_input_tokens),
                );
            }
            if agentry_telemetry::capture_content() {
                span.record(
                    "gen_ai.output.messages",
                    output_messages(step, reason).as_str(),
                );
            }
            metrics::record_tokens(operation, usage.input_tokens, usage.output_tokens);
            metrics::record_duration(operation, elapsed.as_secs_f64(), None);
        }
        Err(error) => {
            let kind = model_error_type(error);
            span.record("error.type", kind)
                .record("otel.status_code", "error");
            metrics::record_duration(operation, elapsed.as_secs_f64(), Some(kind));
        }
    }
}

/// A model failure's `error.type`: low cardinality, by kind.
pub(crate) fn model_error_type(error: &ModelError) -> &'static str {
    match error {
        ModelError::Config(_) => "config",
        ModelError::Auth { .. } => "auth",
        ModelError::RateLimited { .. } => "rate_limited",
        ModelError::Http { .. } => "http",
        ModelError::Transport(_) => "transport",
        ModelError::Timeout(_) => "timeout",
        ModelError::StreamCut(_) => "stream_cut",
        ModelError::Protocol(_) => "protocol",
        ModelError::Provider(_) => "provider",
        ModelError::Local(_) => "local",
        #[allow(unreachable_patterns)]
        _ => "_OTHER",
    }
}

/// The span of one tool call. Skill tools carry the skill (and the file
/// read) in their name and attributes, as the conventions' skill spans do.
pub(crate) fn tool_span(call: &ToolCall) -> Span {
    let skill = match call.name.as_str() {
        READ_SKILL | APPLY_SKILL => call.input.get("name").and_then(Value::as_str),
        _ => None,
    };
    let resource = skill
        .and(call.input.get("path").and_then(Value::as_str))
        .filter(|path| !path.trim().is_empty());
    let name = match (skill, resource) {
        (Some(skill), Some(resource)) => format!("execute_tool {} {skill} {resource}", call.name),
        (Some(skill), None) => format!("execute_tool {} {skill}", call.name),
        _ => format!("execute_tool {}", call.name),
    };
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = name,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        gen_ai.skill.name = skill,
        gen_ai.skill.resource.name = resource,
        gen_ai.tool.call.arguments = field::Empty,
        gen_ai.tool.call.result = field::Empty,
        error.type = field::Empty,
        otel.status_code = field::Empty,
    );
    if agentry_telemetry::capture_content() {
        span.record("gen_ai.tool.call.arguments", call.input.to_string());
    }
    span
}

/// Record a tool call's result on its span: an error result is the span's
/// error (`error.type` `tool_error`).
pub(crate) fn end_tool(span: &Span, result: &ToolResult) {
    if result.is_error {
        span.record("error.type", "tool_error")
            .record("otel.status_code", "error");
    }
    if agentry_telemetry::capture_content() {
        span.record("gen_ai.tool.call.result", result.output.to_string());
    }
}

/// A count as an integer attribute: the OpenTelemetry bridge exports
/// `u64` and `usize` fields as strings.
pub(crate) fn int(count: impl TryInto<i64>) -> i64 {
    count.try_into().unwrap_or(i64::MAX)
}

fn text_parts(text: &str) -> String {
    json!([{"type": "text", "content": text}]).to_string()
}

/// The request's conversation as `gen_ai.input.messages`.
fn input_messages(request: &ChatRequest) -> String {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    Value::from(messages).to_string()
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::User { text } => {
            json!({"role": "user", "parts": [{"type": "text", "content": text}]})
        }
        Message::Assistant { text, tool_calls } => {
            json!({"role": "assistant", "parts": assistant_parts(text, tool_calls)})
        }
        Message::Tool { result } => json!({"role": "tool", "parts": [{
            "type": "tool_call_response", "id": result.id, "result": result.output}]}),
    }
}

fn assistant_parts(text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(json!({"type": "text", "content": text}));
    }
    for call in calls {
        parts.push(
            json!({"type": "tool_call", "id": call.id, "name": call.name,
                          "arguments": call.input}),
        );
    }
    parts
}

/// The model's reply as `gen_ai.output.messages`.
fn output_messages(step: &Step, reason: &str) -> String {
    let parts = match step {
        Step::Final { text, .. } => assistant_parts(text, &[]),
        Step::Tool { calls, text, .. } => assistant_parts(text, calls),
    };
    json!([{"role": "assistant", "parts": parts, "finish_reason": reason}]).to_string()
}
