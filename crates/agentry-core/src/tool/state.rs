//! [`State<T>`]: typed shared state for tools, as axum's `State` is for
//! handlers. The program attaches a value once (a database pool, a client);
//! every `#[tool]` function that names a `State<T>` parameter receives it.

use std::any::{Any, type_name};
use std::ops::Deref;
use std::sync::Arc;

use super::context::ToolContext;
use super::error::ToolError;

/// Shared state of type `T`, attached with
/// `AgentBuilder::state` (agentry-agent) or
/// [`ToolContext::with_state`] and received by a `#[tool]` parameter of this
/// type. It is never part of the tool's input schema: the model cannot see
/// or set it.
///
/// ```
/// use agentry_core::tool::{State, ToolContext};
///
/// struct Prices { base: f64 }
/// let ctx = ToolContext::new().with_state(Prices { base: 9.5 });
/// let State(prices) = State::<Prices>::from_context(&ctx).unwrap();
/// assert_eq!(prices.base, 9.5);
///
/// let missing = State::<String>::from_context(&ctx).unwrap_err();
/// assert_eq!(
///     missing.to_string(),
///     "this tool needs shared state of type alloc::string::String, which the program did not attach"
/// );
/// ```
#[derive(Debug)]
pub struct State<T>(pub Arc<T>);

impl<T: Any + Send + Sync> State<T> {
    /// The `T` attached to `ctx`, or an error result naming the missing type.
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.state_arc::<T>().map(State).ok_or_else(|| {
            ToolError::failed(format!(
                "this tool needs shared state of type {}, which the program did not attach",
                type_name::<T>()
            ))
        })
    }
}

impl<T> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Deref for State<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
