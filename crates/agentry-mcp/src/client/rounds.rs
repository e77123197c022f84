//! Tool calls that take several rounds (SEP-2322, the stateless revision):
//! a server that needs input answers `input_required`; the client answers
//! its requests and retries with the answers and the exact `requestState`,
//! under a new request id, until the result is complete.

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitResult, ElicitationAction,
    InputRequest, InputRequiredResult, InputResponses,
};
use rmcp::service::{Peer, ServiceError};
use serde_json::{Value, json};

use super::elicit::Elicitor;

/// Rounds before the client gives up on a server that keeps asking.
pub(crate) const MAX_ROUNDS: usize = 10;

/// Call the tool in `params`, answering the server's input requests with
/// `elicitor` (questions) and no roots. The outer error is the transport's
/// or the server's; the inner one the client's own (a request for sampling,
/// too many rounds).
pub(crate) async fn call_tool(
    peer: &Peer<RoleClient>,
    server: &str,
    elicitor: Option<&Elicitor>,
    mut params: CallToolRequestParams,
) -> Result<Result<CallToolResult, String>, ServiceError> {
    for _ in 0..MAX_ROUNDS {
        match peer.call_tool_once(params.clone()).await? {
            CallToolResponse::Complete(result) => return Ok(Ok(result)),
            CallToolResponse::InputRequired(asked) => {
                let InputRequiredResult {
                    input_requests,
                    request_state,
                    ..
                } = asked;
                let mut answers = InputResponses::new();
                for (key, request) in input_requests.unwrap_or_default() {
                    match answer(server, elicitor, request).await {
                        Ok(value) => answers.insert(key, value),
                        Err(error) => return Ok(Err(error)),
                    };
                }
                params.input_responses = Some(answers);
                // Echoed exactly, and only when the server sent one.
                params.request_state = request_state;
            }
            _ => {
                return Ok(Err(
                    "the MCP server answered with a task, which agentry does not poll".into(),
                ));
            }
        }
    }
    Ok(Err(format!(
        "the MCP server still asked for input after {MAX_ROUNDS} rounds"
    )))
}

/// The answer to one input request.
async fn answer(
    server: &str,
    elicitor: Option<&Elicitor>,
    request: InputRequest,
) -> Result<Value, String> {
    match request {
        InputRequest::Elicitation(request) => {
            let result = match elicitor {
                Some(elicitor) => elicitor.answer(server, request.params).await,
                None => ElicitResult::new(ElicitationAction::Decline),
            };
            serde_json::to_value(result).map_err(|error| error.to_string())
        }
        InputRequest::ListRoots(_) => Ok(json!({"roots": []})),
        InputRequest::CreateMessage(_) => Err(
            "the MCP server asked for sampling, which agentry's MCP client does not offer".into(),
        ),
        _ => Err("the MCP server asked for input of a kind MCP does not define".into()),
    }
}
