//! Tools: the model-facing [`Tool`] record, the [`function`] builder for
//! namespaced tools, and the [`Toolbox`] that dispatches calls to them.
//!
//! A [`Tool`] is a model-facing description (name, description, JSON Schemas)
//! plus a [`ToolHandler`] that runs host code. Tools come from `#[tool]`
//! functions, from the [`function`] builder, or are written by hand; a
//! [`Toolbox`] gathers them for an agent and [`dispatch`]es the model's
//! [`ToolCall`]s, turning every failure into an error [`ToolResult`].
//!
//! A `#[tool]` function `f` gives `f::tool()` (adjust it with struct update or
//! the `with_*` methods) and `f::schema()`, computed once and served from
//! [`registry`]. [`Toolbox::for_agent`], [`Toolbox::find_by_name`] and
//! [`Toolbox::dispatch`] are also free functions. [`Tool::pass_input`] hands a
//! handler the whole input map. [`function`] starts a [`FunctionBuilder`]
//! (namespace, typed arguments, returns, examples), and a [`ToolGroup`] gathers
//! such functions into a module with a title, description, selection criteria
//! and an always-include flag.

mod builder;
mod call;
mod capability;
mod context;
mod dispatch;
pub(crate) mod error;
mod grant;
mod group;
mod guard;
pub(crate) mod handler;
mod into_handler;
mod net_grant;
mod sandbox;
mod schema;
mod search;
mod source;
mod state;
#[allow(clippy::module_inception)]
mod tool;
mod toolbox;
pub(crate) mod validate;
pub mod wire;

pub use builder::{BuildError, DEFAULT_NAMESPACE, FunctionBuilder, RESERVED_NAMES, function};
pub use call::{ToolCall, ToolResult};
pub use capability::{Capabilities, Capability, normalize_path};
pub use context::{Identity, Progress, ProgressSink, Session, ToolContext};
pub use dispatch::{MAX_BLOCKING_TOOLS, dispatch};
pub use error::ToolError;
pub use grant::{CallError, call, call_tool, gated_dispatch};
pub use group::ToolGroup;
pub use guard::{CapabilityError, Fs};
pub use handler::{Arguments, ToolHandler, from_input};
pub use into_handler::IntoHandler;
pub use net_grant::{HostPattern, NetGrant, NetGrantError};
pub use sandbox::{SandboxedCall, ToolSandbox};
pub use schema::{ObjectSchemaBuilder, SchemaConflict, ToolSchema, registry, schema_for_type};
pub use search::ToolSearcher;
pub use source::ToolSource;
pub use state::State;
pub use tool::{Tool, ToolExample, ToolHints};
pub use toolbox::{
    DEFAULT_MAX_RESULT_BYTES, DEFAULT_TIMEOUT, Toolbox, ToolboxError, find_by_name, for_agent,
};
pub use validate::{SchemaCheck, violation_report};
