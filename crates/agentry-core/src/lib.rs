//! # agentry-core
//!
//! The dependency-light heart of [agentry](https://docs.rs/agentry): the Tool
//! primitive, validated dispatch, wire names and the per-request tool
//! context; the agent loop with its event stream and child agents; typed
//! programs; skills; memory and chat turns.
//! No network, no heavy dependencies; most users depend on the `agentry`
//! facade, which adds the `#[tool]` macro.
//!
//! ```
//! use agentry_core::tool::{ToolCall, Toolbox, function};
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize)]
//! struct Add { x: i64, y: i64 }
//!
//! let add = function("add")
//!     .namespace("math")
//!     .description("Add two integers.")
//!     .arg::<i64>("x", "First addend")
//!     .arg::<i64>("y", "Second addend")
//!     .returns::<i64>()
//!     .handler(|a: Add| Ok::<_, String>(a.x + a.y))
//!     .build()?;
//! let tools = Toolbox::for_agent([add])?;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let result = tools.dispatch(ToolCall::new("call_1", "math.add", json!({"x": 2, "y": 3}))).await;
//! assert_eq!(serde_json::to_string(&result)?, r#"{"id":"call_1","output":5,"is_error":false}"#);
//!
//! let bad = tools.dispatch(ToolCall::new("call_2", "math.add", json!({"x": "2"}))).await;
//! assert_eq!(bad.output, json!("invalid input for tool \"math.add\":\n- (root): \"y\" is a required property\n- /x: \"2\" is not of type \"integer\""));
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

/// The one boxed-future type of agentry's traits (`ChatModel::step`,
/// `MemoryStore`, `SkillResolver`, `Embedder`, `Approver`) and of async tool
/// handlers: `Pin<Box<dyn Future<Output = T> + Send + 'a>>`.
pub use futures_util::future::BoxFuture;

pub mod embed;
pub mod journal;
pub mod memory;
pub mod model;
pub mod skill;
pub mod tool;

/// Items used by code that `#[tool]` generates. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use std::sync::OnceLock;

    pub use crate::tool::error::{AsToolError, DisplayToToolError, ErrorToToolError, HandlerErr};
    pub use crate::tool::handler::{result_to_output, to_output};
}
