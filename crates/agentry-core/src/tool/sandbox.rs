//! [`ToolSandbox`]: where a tool marked [`sandbox`](super::ToolHints::sandbox)
//! runs. Dispatch hands such a call to the sandbox on the call's
//! [`ToolContext`] instead of running the handler in this process; the
//! `agentry-sandbox` crate's implementation runs it in a child process
//! confined by Landlock, seccomp and resource limits.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::capability::Capabilities;
use super::context::ToolContext;
use super::tool::Tool;
use crate::BoxFuture;

/// One call for a sandbox to run: the input has passed the tool's input
/// schema; the output is checked against its output schema afterwards.
#[derive(Debug)]
pub struct SandboxedCall<'a> {
    /// The tool (its name, handler, hints and declared capabilities).
    pub tool: &'a Tool,
    /// The validated input.
    pub input: Value,
    /// The call's context (session, sender, extras).
    pub context: &'a ToolContext,
    /// All the sandbox may allow: the context's capabilities ∩ what the
    /// tool declares, directories as absolute paths.
    pub capabilities: Capabilities,
    /// How long the call may take, the sandbox's start-up included.
    pub timeout: Duration,
}

/// Runs sandboxed tools' calls somewhere confined.
///
/// `Ok` is the tool's output; `Err` the message of the error result the
/// model gets (the tool's own error, or why the sandbox could not run it or
/// stopped it).
pub trait ToolSandbox: Send + Sync + fmt::Debug {
    /// Run `call` confined to `call.context`'s capabilities.
    fn run<'a>(&'a self, call: SandboxedCall<'a>) -> BoxFuture<'a, Result<Value, String>>;
}

/// A shared sandbox is a sandbox.
impl<S: ToolSandbox + ?Sized> ToolSandbox for std::sync::Arc<S> {
    fn run<'a>(&'a self, call: SandboxedCall<'a>) -> BoxFuture<'a, Result<Value, String>> {
        (**self).run(call)
    }
}

/// The message for a sandboxed tool called where no sandbox is configured.
pub(crate) fn no_sandbox_message(tool: &str) -> String {
    format!(
        "tool \"{tool}\" runs only in a sandbox, and none is configured \
         (give the agent or context one: agentry::sandbox::Sandbox)"
    )
}
