//! The Tool primitive (seed 000) and the function builder (seed 001).
//!
//! A [`Tool`] is a model-facing description (name, description, JSON Schemas)
//! plus a [`ToolHandler`] that runs host code. Tools come from `#[tool]`
//! functions, from the [`function`] builder, or are written by hand; a
//! [`Toolbox`] gathers them for an agent and [`dispatch`]es the model's
//! [`ToolCall`]s, turning every failure into an error [`ToolResult`].
//!
//! | seed 000 / 001 | here |
//! | --- | --- |
//! | `Tool`, `ToolCall`, `ToolResult` | [`Tool`], [`ToolCall`], [`ToolResult`] |
//! | `from-fn(f)`, `from-fn(f, overrides)` | `f::tool()` from `#[tool]`, then struct update or `with_*` |
//! | `schema-from-fn(f)` | `f::schema()`, served from [`registry`] |
//! | `for-agent`, `find-by-name`, `dispatch` | [`Toolbox::for_agent`], [`Toolbox::find_by_name`], [`Toolbox::dispatch`] (also free functions) |
//! | `pass-input` | [`Tool::pass_input`] |
//! | `fn().namespace().arg()…build()` | [`function`] → [`FunctionBuilder`] |
//! | function groups `{namespace, title, description, selectionCriteria, alwaysInclude, functions}` | [`ToolGroup`] |

mod builder;
mod call;
mod capability;
mod context;
mod dispatch;
mod grant;
mod group;
mod guard;
mod handler;
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
pub use grant::{call, call_tool, gated_dispatch};
pub use group::ToolGroup;
pub use guard::{CapabilityError, Fs};
pub use handler::{Arguments, ToolError, ToolHandler, from_input, result_to_output, to_output};
pub use into_handler::IntoHandler;
pub use net_grant::{HostPattern, NetGrant, NetGrantError, is_public};
pub use sandbox::{SandboxedCall, ToolSandbox};
pub use schema::{
    ObjectSchemaBuilder, SchemaConflict, ToolSchema, normalize as normalize_schema, registry,
    schema_for_type,
};
pub use search::ToolSearcher;
pub use source::ToolSource;
pub use state::State;
pub use tool::{Tool, ToolExample, ToolHints};
pub use toolbox::{
    DEFAULT_MAX_RESULT_BYTES, DEFAULT_TIMEOUT, Toolbox, ToolboxError, find_by_name, for_agent,
};
pub use validate::{SchemaCheck, violation_report};
