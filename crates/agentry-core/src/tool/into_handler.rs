//! [`IntoHandler`]: the one way to give a built function its host code.
//! Plain closures become handlers, as plain functions become axum handlers:
//! the closure's shape says whether it reads the request context and
//! whether it is async.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::context::ToolContext;
use super::error::ToolError;
use super::handler::{ToolHandler, from_input, result_to_output};

/// Host code that can run behind a tool. Implemented for:
///
/// - `Fn(A) -> Result<R, E>`: the arguments object as `A`;
/// - `Fn(A, &ToolContext) -> Result<R, E>`: the same, reading the request context;
/// - `Fn(A, ToolContext) -> impl Future<Output = Result<R, E>>`: asynchronous;
/// - a ready [`ToolHandler`].
///
/// `A` is any `Deserialize` type (a struct of the arguments, or
/// `serde_json::Value`), `R` any `Serialize` type, and `E`'s `Display` is
/// the error message the model reads. Annotate the closure's parameter types.
///
/// ```
/// use agentry_core::tool::{ToolContext, function};
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct City { city: String }
///
/// let plain = function("weather").arg::<String>("city", "Where")
///     .handler(|args: City| Ok::<_, String>(format!("sunny in {}", args.city)));
/// let with_context = function("weather").arg::<String>("city", "Where")
///     .handler(|args: City, ctx: &ToolContext| {
///         Ok::<_, String>(format!("{} asked about {}", ctx.sender().map_or("someone", |s| s.id.as_str()), args.city))
///     });
/// let asynchronous = function("weather").arg::<String>("city", "Where")
///     .handler(|args: City, _ctx: ToolContext| async move { Ok::<_, String>(args.city.len()) });
/// for built in [plain, with_context, asynchronous] {
///     assert!(built.build().is_ok());
/// }
/// ```
pub trait IntoHandler<Shape>: Sized {
    /// The handler.
    fn into_handler(self) -> ToolHandler;
}

type Shape<A, R, E> = std::marker::PhantomData<fn(A) -> Result<R, E>>;

/// Marks a closure taking only the arguments.
#[doc(hidden)]
pub struct ArgsOnly<A, R, E>(Shape<A, R, E>);
/// Marks a closure taking the arguments and `&ToolContext`.
#[doc(hidden)]
pub struct WithContext<A, R, E>(Shape<A, R, E>);
/// Marks an async closure taking the arguments and `ToolContext`.
#[doc(hidden)]
pub struct Async<A, R, E, Fut>(Shape<A, R, E>, std::marker::PhantomData<fn() -> Fut>);

impl<F, A, R, E> IntoHandler<ArgsOnly<A, R, E>> for F
where
    F: Fn(A) -> Result<R, E> + Send + Sync + 'static,
    A: DeserializeOwned,
    R: Serialize,
    E: Display,
{
    fn into_handler(self) -> ToolHandler {
        ToolHandler::sync(move |input, _ctx| {
            result_to_output(self(from_input(input)?).map_err(ToolError::failed))
        })
    }
}

impl<F, A, R, E> IntoHandler<WithContext<A, R, E>> for F
where
    F: Fn(A, &ToolContext) -> Result<R, E> + Send + Sync + 'static,
    A: DeserializeOwned,
    R: Serialize,
    E: Display,
{
    fn into_handler(self) -> ToolHandler {
        ToolHandler::sync(move |input, ctx| {
            result_to_output(self(from_input(input)?, ctx).map_err(ToolError::failed))
        })
    }
}

impl<F, A, R, E, Fut> IntoHandler<Async<A, R, E, Fut>> for F
where
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    A: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    E: Display + 'static,
{
    fn into_handler(self) -> ToolHandler {
        let f = Arc::new(self);
        ToolHandler::from_async(move |input, ctx| {
            let f = f.clone();
            async move { result_to_output(f(from_input(input)?, ctx).await.map_err(ToolError::failed)) }
        })
    }
}

impl IntoHandler<()> for ToolHandler {
    fn into_handler(self) -> ToolHandler {
        self
    }
}
