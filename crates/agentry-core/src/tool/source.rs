//! Tool sources: tools that come from outside the program (an MCP server's,
//! for one) and may change while an agent runs. An agent asks each source
//! for its tools when a run starts, and again between steps once the source
//! says they changed; the allow-list, capabilities and approval apply to
//! them as to any other tool.

use crate::BoxFuture;

use super::Tool;

/// A set of tools kept somewhere else.
pub trait ToolSource: Send + Sync {
    /// A short name for logs (an MCP server's name).
    fn name(&self) -> &str;

    /// The tools now. An error leaves the source's tools out of the run (or
    /// keeps the previous ones between steps) and is logged.
    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>, String>>;

    /// True when the tools changed since [`tools`](Self::tools) last answered.
    fn changed(&self) -> bool;
}

/// A shared source is a source.
impl<S: ToolSource + ?Sized> ToolSource for std::sync::Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>, String>> {
        (**self).tools()
    }

    fn changed(&self) -> bool {
        (**self).changed()
    }
}
