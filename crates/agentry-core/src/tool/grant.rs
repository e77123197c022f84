//! The gate every model-chosen call passes ([`call`] and [`call_tool`]):
//! least-privilege capabilities, then dispatch.

use serde_json::Value;

use super::{Capabilities, Tool, ToolCall, ToolContext, ToolResult, Toolbox, ToolboxError};

/// Why [`call`] or [`call_tool`] gave no output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The tool cannot be dispatched at all (its name or schemas).
    #[error(transparent)]
    Toolbox(#[from] ToolboxError),
    /// The call was refused (a capability outside the grant, invalid input)
    /// or the tool failed: the error result's message, as a model reads it.
    #[error("{0}")]
    Failed(String),
}

/// The program itself invokes a tool with named arguments from a map. Being
/// the program's own call, not a model's choice, the tool gets exactly the capabilities it declares. `Ok` holds the
/// output, `Err` the error message.
///
/// Builds a one-tool [`Toolbox`] per call; for repeated calls, keep a toolbox.
pub async fn call(tool: &Tool, args: Value) -> Result<Value, CallError> {
    let declared: Capabilities = tool.capabilities.iter().cloned().collect();
    call_tool(tool, args, &declared).await
}

/// Invoke a tool with least privilege, with named arguments from a map.
/// It runs with only the capabilities it declared ∩ `granted`, and not at all
/// when it declares one that `granted` does not cover.
pub async fn call_tool(
    tool: &Tool,
    args: Value,
    granted: &Capabilities,
) -> Result<Value, CallError> {
    let toolbox = Toolbox::for_agent([tool.clone()])?;
    let call = ToolCall::new("call", tool.name.clone(), args);
    let result = gated_dispatch(&toolbox, call, granted, &ToolContext::default()).await;
    if result.is_error {
        Err(CallError::Failed(
            result.error_message().unwrap_or_default().to_owned(),
        ))
    } else {
        Ok(result.output)
    }
}

/// Dispatch `call` from `toolbox` with the tool's declared capabilities ∩
/// `granted` bound into `ctx`. A declared capability outside the grant gives
/// an error result and the tool does not run.
pub async fn gated_dispatch(
    toolbox: &Toolbox,
    call: ToolCall,
    granted: &Capabilities,
    ctx: &ToolContext,
) -> ToolResult {
    let Some(tool) = toolbox.find_for_call(&call.name) else {
        return toolbox.dispatch_with(call, ctx).await;
    };
    match granted.grant_to(&tool.capabilities) {
        Ok(effective) => {
            let ctx = ctx.clone().with_capabilities(effective);
            toolbox.dispatch_with(call, &ctx).await
        }
        Err(missing) => {
            let missing: Vec<String> = missing.iter().map(ToString::to_string).collect();
            let message = format!(
                "tool \"{}\" needs {}, which this agent does not grant",
                tool.name,
                missing.join(", ")
            );
            ToolResult::error(call.id, message)
        }
    }
}
