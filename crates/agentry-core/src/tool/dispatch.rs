//! Validated dispatch: look the tool up, check the
//! input, run the handler under a deadline with panics caught, check the
//! output. Every failure becomes an error [`ToolResult`] that echoes the call id.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use futures_util::FutureExt;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::call::{ToolCall, ToolResult};
use super::capability::{Capabilities, Capability};
use super::context::ToolContext;
use super::error::ToolError;
use super::handler::ToolHandler;
use super::sandbox::{SandboxedCall, no_sandbox_message};
use super::tool::Tool;
use super::toolbox::{Entry, Toolbox};
use super::validate::{report, violation_line};

/// How many close names an unknown-tool message suggests.
const MAX_SUGGESTIONS: usize = 3;
/// How many names an unknown-tool message lists when none is close.
const MAX_LISTED: usize = 20;
/// Similarity (Jaro-Winkler, 0..1) above which a known name counts as close.
const CLOSE_ENOUGH: f64 = 0.8;

impl Toolbox {
    /// Invoke the tool named by `call` with an empty [`ToolContext`].
    ///
    /// Never fails: an unknown name, input that breaks the schema, a handler
    /// error, a panic, a timeout or output that breaks the output schema all
    /// come back as `is_error: true` with a message, and `id` is always echoed.
    /// A result longer than [`max_result_bytes`](Self::max_result_bytes) is
    /// cut, and says so ([`ToolResult::cut_to`]).
    ///
    /// Async handlers and tools with a timeout need a Tokio runtime with its time driver.
    pub async fn dispatch(&self, call: ToolCall) -> ToolResult {
        self.dispatch_with(call, &ToolContext::default()).await
    }

    /// Invoke the tool named by `call`, handing it `ctx`.
    pub async fn dispatch_with(&self, call: ToolCall, ctx: &ToolContext) -> ToolResult {
        let ToolCall { id, name, input } = call;
        let Some(entry) = self.entry_for_call(&name) else {
            return ToolResult::error(id, self.unknown_tool_message(&name))
                .cut_to(self.max_result_bytes);
        };
        let result = match self.run(entry, input, ctx).await {
            Ok(output) => ToolResult::ok(id, output),
            Err(message) => ToolResult::error(id, message),
        };
        result.cut_to(self.max_result_bytes)
    }

    /// Parse a JSON [`ToolCall`] and dispatch it. Malformed JSON, a missing
    /// name or undecodable input (too deep, say) give an error result; the id
    /// is echoed whenever it can be read, and is empty otherwise.
    ///
    /// A `#[tool]` function whose parameters decode straight from JSON text
    /// (see [`ToolHandler::with_json_fast_path`]) gets its arguments that way,
    /// without an intermediate JSON value; anything they do not decode takes
    /// the validated path and gets the same error result as [`dispatch`](Self::dispatch).
    pub async fn dispatch_json(&self, json: &str, ctx: &ToolContext) -> ToolResult {
        if let Some(result) = self.dispatch_json_fast(json, ctx) {
            return result;
        }
        match serde_json::from_str::<ToolCall>(json) {
            Ok(call) => self.dispatch_with(call, ctx).await,
            Err(_) => match parse_loose(json) {
                Ok(call) => self.dispatch_with(call, ctx).await,
                Err((id, message)) => ToolResult::error(id, message),
            },
        }
    }

    /// The typed route of [`dispatch_json`](Self::dispatch_json): `None`
    /// when it does not apply (no such tool, no typed entry, arguments it
    /// does not decode) and the general route must run.
    fn dispatch_json_fast(&self, json: &str, ctx: &ToolContext) -> Option<ToolResult> {
        // Borrowed text: a name or id with escapes fails here and takes
        // the general route.
        #[derive(Deserialize)]
        struct Envelope<'a> {
            id: &'a str,
            name: &'a str,
            #[serde(borrow)]
            input: &'a RawValue,
        }
        let envelope: Envelope<'_> = serde_json::from_str(json).ok()?;
        let entry = self.entry_for_call(envelope.name)?;
        if entry.tool.hints.sandbox && !ctx.is_inside_sandbox() {
            return None;
        }
        let fast = entry.fast.as_ref()?;
        let outcome = match catch_unwind(AssertUnwindSafe(|| fast(envelope.input.get(), ctx))) {
            Ok(None) => return None,
            Ok(Some(result)) => Ok(result),
            Err(payload) => Err(Failure::Panic(payload)),
        };
        let id = envelope.id.to_owned();
        let result = match finish(entry, outcome) {
            Ok(output) => ToolResult::ok(id, output),
            Err(message) => ToolResult::error(id, message),
        };
        Some(result.cut_to(self.max_result_bytes))
    }

    async fn run(&self, entry: &Entry, input: Value, ctx: &ToolContext) -> Result<Value, String> {
        let tool = &entry.tool;
        check_input(entry, &input)?;
        let limit = tool.hints.timeout.unwrap_or(self.default_timeout);
        if tool.hints.sandbox && !ctx.is_inside_sandbox() {
            return self.run_sandboxed(entry, input, ctx, limit).await;
        }
        let outcome = match tool.handler.as_sync() {
            Some(f) if runs_inline(tool) => {
                catch_unwind(AssertUnwindSafe(|| f(input, ctx))).map_err(Failure::Panic)
            }
            Some(_) => run_blocking(&tool.handler, input, ctx, limit).await,
            None => run_async(&tool.handler, input, ctx, limit).await,
        };
        finish(entry, outcome)
    }

    /// Hand a sandboxed tool's call to the context's sandbox, under the
    /// tool's deadline; its output is checked like any other.
    async fn run_sandboxed(
        &self,
        entry: &Entry,
        input: Value,
        ctx: &ToolContext,
        limit: Duration,
    ) -> Result<Value, String> {
        let tool = &entry.tool;
        let Some(sandbox) = ctx.sandbox() else {
            return Err(no_sandbox_message(&tool.name));
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Failure::NoRuntime.message(&tool.name));
        }
        // Whoever dispatches (the gate, an MCP server, a program), the tool
        // gets no more than it declares.
        let declared: Capabilities = tool.capabilities.iter().cloned().collect();
        let capabilities = ctx
            .capabilities()
            .intersection(&declared)
            .iter()
            .map(Capability::absolute)
            .collect();
        let call = SandboxedCall {
            tool,
            input,
            context: ctx,
            capabilities,
            timeout: limit,
        };
        let outcome = match tokio::time::timeout(limit, sandbox.run(call)).await {
            Ok(Ok(output)) => Ok(Ok(output)),
            Ok(Err(message)) => return Err(message),
            Err(_) => Err(Failure::Timeout(limit)),
        };
        finish(entry, outcome)
    }

    fn unknown_tool_message(&self, name: &str) -> String {
        if self.is_empty() {
            return format!("unknown tool \"{name}\"; no tools are available");
        }
        let mut scored: Vec<(f64, &str)> = self
            .names()
            .map(|known| (similarity(name, known), known))
            .filter(|(score, _)| *score >= CLOSE_ENOUGH)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        if !scored.is_empty() {
            let close: Vec<&str> = scored
                .iter()
                .take(MAX_SUGGESTIONS)
                .map(|(_, n)| *n)
                .collect();
            return format!(
                "unknown tool \"{name}\"; closest known tools: {}",
                close.join(", ")
            );
        }
        let listed: Vec<&str> = self.names().take(MAX_LISTED).collect();
        let more = self.len().saturating_sub(MAX_LISTED);
        let tail = if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        };
        format!(
            "unknown tool \"{name}\"; known tools: {}{tail}",
            listed.join(", ")
        )
    }
}

/// The result of a handler that ran (or failed to): its output, checked
/// against the output schema, or the message for the model.
fn finish(entry: &Entry, outcome: Outcome) -> Result<Value, String> {
    let tool = &entry.tool;
    let output = match outcome {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => return Err(handler_error_message(&tool.name, error)),
        Err(failure) => return Err(failure.message(&tool.name)),
    };
    if let Some(schema) = &entry.output
        && let Some(lines) = schema.violations(&output)
    {
        let header = format!(
            "tool \"{}\" returned output that does not match its output schema:",
            tool.name
        );
        return Err(report(&header, &lines));
    }
    Ok(output)
}

/// Invoke the tool `call` names in `tools` (the free form of [`Toolbox::dispatch`]).
pub async fn dispatch(tools: &Toolbox, call: ToolCall) -> ToolResult {
    tools.dispatch(call).await
}

/// Schema violations plus argument names the tool does not declare.
fn check_input(entry: &Entry, input: &Value) -> Result<(), String> {
    // The compiled schema is closed when names are checked, so one validation
    // decides the common, valid case; unknown names get our own lines below.
    let Some(mut lines) = entry
        .input
        .violations_except(input, entry.declared.is_some())
    else {
        return Ok(());
    };
    if let (Some(declared), Value::Object(map)) = (&entry.declared, input) {
        for key in map.keys().filter(|key| !declared.contains(*key)) {
            let pointer = format!("/{}", super::handler::escape_pointer(key));
            lines.push(violation_line(
                &pointer,
                &unknown_argument(&entry.tool.input_schema),
            ));
        }
    }
    if lines.is_empty() {
        Ok(())
    } else {
        Err(report(
            &format!("invalid input for tool \"{}\":", entry.tool.name),
            &lines,
        ))
    }
}

fn unknown_argument(schema: &Value) -> String {
    let names: Vec<&str> = schema["properties"]
        .as_object()
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "unknown argument; this tool takes no arguments".to_owned()
    } else {
        format!("unknown argument; this tool takes: {}", names.join(", "))
    }
}

/// How a call can end without the handler returning.
enum Failure {
    Panic(Box<dyn Any + Send>),
    Timeout(Duration),
    NoRuntime,
}

impl Failure {
    fn message(self, tool: &str) -> String {
        match self {
            Failure::Panic(payload) => {
                format!("tool \"{tool}\" panicked: {}", panic_text(payload.as_ref()))
            }
            Failure::Timeout(limit) => format!("tool \"{tool}\" timed out after {limit:?}"),
            Failure::NoRuntime => {
                format!(
                    "tool \"{tool}\" needs a Tokio runtime (with its time driver) to run under a deadline"
                )
            }
        }
    }
}

type Outcome = Result<Result<Value, ToolError>, Failure>;

async fn run_async(
    handler: &ToolHandler,
    input: Value,
    ctx: &ToolContext,
    limit: Duration,
) -> Outcome {
    let f = handler.as_async().expect("async handler");
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Failure::NoRuntime);
    }
    let future = AssertUnwindSafe(f(input, ctx.clone())).catch_unwind();
    match tokio::time::timeout(limit, future).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(payload)) => Err(Failure::Panic(payload)),
        Err(_) => Err(Failure::Timeout(limit)),
    }
}

/// True when a tool's sync handler runs inline: marked `inline`, no timeout.
pub(crate) fn runs_inline(tool: &Tool) -> bool {
    tool.hints.inline && tool.hints.timeout.is_none() && tool.handler.as_sync().is_some()
}

/// Most sync tool calls running on threads at once, process-wide. Tokio's
/// blocking pool is shared with SQLite, llama.cpp and DNS; tool work takes
/// at most this many of its threads.
pub const MAX_BLOCKING_TOOLS: usize = 16;

static TOOL_POOL: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_BLOCKING_TOOLS);

/// A sync handler runs on the blocking pool, at most [`MAX_BLOCKING_TOOLS`]
/// at once, under its deadline (waiting for a thread counts). On timeout the
/// caller gets its answer at once; the thread finishes in the background and
/// keeps its place in the pool until it does, so runaway tools cannot pile up.
async fn run_blocking(
    handler: &ToolHandler,
    input: Value,
    ctx: &ToolContext,
    limit: Duration,
) -> Outcome {
    let f = handler.as_sync().expect("sync handler").clone();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Err(Failure::NoRuntime);
    };
    let deadline = tokio::time::Instant::now() + limit;
    let permit = match tokio::time::timeout_at(deadline, TOOL_POOL.acquire()).await {
        Ok(Ok(permit)) => permit,
        Ok(Err(_closed)) => return Err(Failure::NoRuntime),
        Err(_) => return Err(Failure::Timeout(limit)),
    };
    let ctx = ctx.clone();
    // The handler runs inside the caller's span (its `execute_tool`), so
    // what it logs and the trace context it sends on stay in the call.
    let span = tracing::Span::current();
    let task = runtime.spawn_blocking(move || {
        let _place = permit;
        span.in_scope(|| catch_unwind(AssertUnwindSafe(|| f(input, &ctx))))
    });
    match tokio::time::timeout_at(deadline, task).await {
        Ok(Ok(Ok(result))) => Ok(result),
        Ok(Ok(Err(payload))) => Err(Failure::Panic(payload)),
        Ok(Err(join_error)) => Err(Failure::Panic(Box::new(join_error.to_string()))),
        Err(_) => Err(Failure::Timeout(limit)),
    }
}

fn handler_error_message(tool: &str, error: ToolError) -> String {
    match error {
        ToolError::InvalidArgument { pointer, message } => report(
            &format!("invalid input for tool \"{tool}\":"),
            &[violation_line(&pointer, &message)],
        ),
        ToolError::Failed(message) => format!("tool \"{tool}\" failed: {message}"),
        ToolError::Source(error) => format!("tool \"{tool}\" failed: {error}"),
        ToolError::Output(message) => {
            format!("tool \"{tool}\" returned output that could not be serialised: {message}")
        }
    }
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "(no message)"
    }
}

/// Similarity of a called name to a known one, also comparing the last path segment.
fn similarity(called: &str, known: &str) -> f64 {
    let called = called.to_lowercase();
    let known = known.to_lowercase();
    let tail = known.rsplit([':', '.', '/']).next().unwrap_or(&known);
    strsim::jaro_winkler(&called, &known).max(strsim::jaro_winkler(&called, tail))
}

/// A second, forgiving read of a call whose strict parse failed: recovers the
/// id (a string or a number) so the error result can still echo it.
fn parse_loose(json: &str) -> Result<ToolCall, (String, String)> {
    #[derive(Deserialize)]
    struct Loose<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        name: Option<&'a RawValue>,
        #[serde(borrow, default)]
        input: Option<&'a RawValue>,
    }
    let loose: Loose<'_> = serde_json::from_str(json)
        .map_err(|error| (String::new(), format!("malformed tool call: {error}")))?;
    let id = match loose.id.map(|raw| serde_json::from_str::<Value>(raw.get())) {
        Some(Ok(Value::String(id))) => id,
        Some(Ok(Value::Number(number))) => number.to_string(),
        _ => String::new(),
    };
    let name = match loose
        .name
        .map(|raw| serde_json::from_str::<Value>(raw.get()))
    {
        Some(Ok(Value::String(name))) => name,
        _ => {
            return Err((
                id,
                "malformed tool call: \"name\" must be a string".to_owned(),
            ));
        }
    };
    let input = match loose.input {
        None => Value::Object(Default::default()),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|error| {
            (
                id.clone(),
                format!("malformed tool call: \"input\" could not be decoded: {error}"),
            )
        })?,
    };
    Ok(ToolCall { id, name, input })
}
