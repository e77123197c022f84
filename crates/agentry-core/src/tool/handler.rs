//! `ToolHandler`: the host code behind a tool, sync or async, plus the
//! helpers generated code uses to unpack arguments and pack results.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::context::ToolContext;
use super::error::ToolError;
use crate::BoxFuture;

type SyncFn = dyn Fn(Value, &ToolContext) -> Result<Value, ToolError> + Send + Sync;
type AsyncFn =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;
/// Runs a sync handler on raw JSON arguments; `None` means "not this way":
/// the text did not deserialise, and dispatch takes the validated path.
pub(crate) type RawFn =
    dyn Fn(&str, &ToolContext) -> Option<Result<Value, ToolError>> + Send + Sync;

/// A typed entry that reads arguments straight from JSON text, and the input
/// schema it agrees with.
#[derive(Clone)]
pub(crate) struct JsonFastPath {
    pub(crate) schema: Arc<Value>,
    pub(crate) run: Arc<RawFn>,
}

#[derive(Clone)]
enum HandlerKind {
    Sync(Arc<SyncFn>),
    Async(Arc<AsyncFn>),
}

/// The host-side function a [`Tool`](crate::tool::Tool) runs.
///
/// It receives the validated input (normally a JSON object) and the request's
/// [`ToolContext`]. Build one with [`ToolHandler::sync`] or
/// [`ToolHandler::from_async`], or let `#[tool]` and the
/// [`FunctionBuilder`](crate::tool::FunctionBuilder) do it.
#[derive(Clone)]
pub struct ToolHandler {
    kind: HandlerKind,
    fast: Option<JsonFastPath>,
}

impl fmt::Debug for ToolHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            HandlerKind::Sync(_) => "ToolHandler::Sync",
            HandlerKind::Async(_) => "ToolHandler::Async",
        })
    }
}

impl ToolHandler {
    /// A synchronous handler. It runs on the bounded tool pool under a
    /// deadline, or inline when its tool is marked
    /// [`inline`](crate::tool::ToolHints::inline).
    pub fn sync<F>(f: F) -> Self
    where
        F: Fn(Value, &ToolContext) -> Result<Value, ToolError> + Send + Sync + 'static,
    {
        Self {
            kind: HandlerKind::Sync(Arc::new(f)),
            fast: None,
        }
    }

    /// An asynchronous handler.
    pub fn from_async<F, Fut>(f: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        Self {
            kind: HandlerKind::Async(Arc::new(move |input, ctx| Box::pin(f(input, ctx)))),
            fast: None,
        }
    }

    /// Give a sync handler a second entry that takes the arguments as JSON
    /// text and deserialises them straight into typed parameters, skipping
    /// the JSON value and the schema check on the way. `#[tool]` adds one
    /// when every parameter has a type whose serde decoding accepts only
    /// what its schema accepts (numbers, text, booleans, and `Option`s and
    /// `Vec`s of them), so nothing reaches the function that the schema
    /// would refuse.
    ///
    /// `run` returns `None` to decline (the text does not decode), and
    /// dispatch then takes the validated path, with its precise messages.
    /// Dispatch uses the entry only while the tool's input schema is still
    /// `schema` (an overridden schema turns it off), the tool runs inline
    /// (hint `inline`, no timeout) and has no `pass_input`.
    pub fn with_json_fast_path<F>(mut self, schema: Value, run: F) -> Self
    where
        F: Fn(&str, &ToolContext) -> Option<Result<Value, ToolError>> + Send + Sync + 'static,
    {
        if matches!(self.kind, HandlerKind::Sync(_)) {
            self.fast = Some(JsonFastPath {
                schema: Arc::new(schema),
                run: Arc::new(run),
            });
        }
        self
    }

    pub(crate) fn json_fast_path(&self) -> Option<&JsonFastPath> {
        self.fast.as_ref()
    }

    /// Call the handler directly, without validation, timeout or panic capture.
    /// Prefer [`Toolbox::dispatch`](crate::tool::Toolbox::dispatch).
    pub async fn call(&self, input: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        match &self.kind {
            HandlerKind::Sync(f) => f(input, ctx),
            HandlerKind::Async(f) => f(input, ctx.clone()).await,
        }
    }

    pub(crate) fn as_sync(&self) -> Option<&Arc<SyncFn>> {
        match &self.kind {
            HandlerKind::Sync(f) => Some(f),
            HandlerKind::Async(_) => None,
        }
    }

    pub(crate) fn as_async(&self) -> Option<&Arc<AsyncFn>> {
        match &self.kind {
            HandlerKind::Async(f) => Some(f),
            HandlerKind::Sync(_) => None,
        }
    }
}

/// Named arguments taken out of a tool's input map, one parameter at a time.
///
/// This is how dispatch maps `call.input` onto a function's positional
/// parameters: generated code asks for each parameter by name, in order.
#[derive(Debug)]
pub struct Arguments {
    map: Map<String, Value>,
}

impl Arguments {
    /// Wrap a tool input. Anything other than an object (or `null`, read as `{}`) is rejected.
    pub fn new(input: Value) -> Result<Self, ToolError> {
        match input {
            Value::Object(map) => Ok(Self { map }),
            Value::Null => Ok(Self { map: Map::new() }),
            other => Err(ToolError::InvalidArgument {
                pointer: String::new(),
                message: format!(
                    "expected an object of named arguments, got {}",
                    kind_of(&other)
                ),
            }),
        }
    }

    /// Remove the argument `name` and deserialise it. A missing argument is read as `null`,
    /// which is what an `Option` parameter expects.
    pub fn take<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, ToolError> {
        let value = self.map.remove(name).unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|error| ToolError::InvalidArgument {
            pointer: format!("/{}", escape_pointer(name)),
            message: error.to_string(),
        })
    }
}

/// Deserialise a whole input into `T` (a `pass_input` handler's single
/// parameter, or a hand-written handler's input), as an invalid-argument
/// error the model can act on when it does not fit.
pub fn from_input<T: DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|error| ToolError::InvalidArgument {
        pointer: String::new(),
        message: error.to_string(),
    })
}

/// Serialise a handler's return value (for code `#[tool]` generates).
pub fn to_output<T: Serialize>(value: T) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|error| ToolError::Output(error.to_string()))
}

/// Serialise the `Ok` of a handler's `Result`; its `Err` was already made a
/// [`ToolError`] by [`HandlerErr`](super::error::HandlerErr) (for code
/// `#[tool]` generates).
pub fn result_to_output<T: Serialize>(result: Result<T, ToolError>) -> Result<Value, ToolError> {
    result.and_then(to_output)
}

/// Escape one JSON pointer segment (RFC 6901).
pub(crate) fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// The JSON type name of a value, for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_unpack_by_name() {
        let mut args = Arguments::new(json!({"x": 2, "y": "a/b"})).unwrap();
        assert_eq!(args.take::<i64>("x").unwrap(), 2);
        assert_eq!(args.take::<Option<i64>>("missing").unwrap(), None);
        let err = args.take::<i64>("y").unwrap_err();
        assert_eq!(
            err,
            ToolError::InvalidArgument {
                pointer: "/y".into(),
                message: "invalid type: string \"a/b\", expected i64".into()
            }
        );
        assert!(Arguments::new(json!([1])).is_err());
        assert!(Arguments::new(Value::Null).is_ok());
    }

    #[test]
    fn results_serialise_the_ok_and_keep_the_err() {
        assert_eq!(result_to_output::<i32>(Ok(1)).unwrap(), json!(1));
        assert_eq!(
            result_to_output::<i32>(Err(ToolError::failed("nope"))).unwrap_err(),
            ToolError::Failed("nope".into())
        );
    }
}
