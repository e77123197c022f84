//! What [`LocalConfig`] decides about a reply's calls, on top of
//! `agentry-local-calls`' pure reading of them: which calls run
//! ([`kept_calls`]: repeats and calls the conversation does not ground left
//! out) and when a call block's first choice is held to the list floor
//! ([`floor_for`]).

use agentry_core::model::{ChatRequest, ToolChoice};
use agentry_local_calls::grounding::{conversation_text, grounded_calls};
use agentry_local_calls::tool_calls::distinct_calls;
use serde_json::Value;

use crate::LocalConfig;
use crate::engine::CallSyntax;

/// The calls of a reply to `request` that run, in order: calls repeated word
/// for word read once (unless [`LocalConfig::repeated_calls`]), then the
/// later calls the conversation does not ground left out (unless
/// [`LocalConfig::ungrounded_calls`]).
pub(crate) fn kept_calls(
    config: &LocalConfig,
    request: &ChatRequest,
    calls: Vec<(String, Value)>,
) -> Vec<(String, Value)> {
    let calls = if config.repeated_calls {
        calls
    } else {
        distinct_calls(calls)
    };
    // With one call there is nothing to leave out, and no conversation to read.
    if config.ungrounded_calls || calls.len() < 2 {
        calls
    } else {
        grounded_calls(calls, &conversation_text(request))
    }
}

/// The text a reply has at the moment a call block's first choice is made:
/// the template's tag or a JSON fence, each followed by a line break (the
/// grammar's calls start the reply).
pub(crate) const OPENINGS: [&str; 2] = ["<tool_call>\n", "```json\n"];

/// The floor for `request`'s reply, when its first call-block choice is
/// made this way: the template's JSON with call lists, a grammar, one tool
/// offered and calls allowed, and a floor that can change a greedy choice.
pub(crate) fn floor_for(config: &LocalConfig, request: &ChatRequest) -> Option<f32> {
    let offered = match &request.tool_choice {
        ToolChoice::None => 0,
        ToolChoice::Tool(_) => 1,
        _ => request.tools.len(),
    };
    let applies = config.call_syntax.for_request(request) == CallSyntax::Template
        && config.call_lists
        && config.constrained
        && !config.one_tool_lists
        && offered == 1
        && request.response_format.is_none()
        && config.list_floor < 1.0;
    applies.then_some(config.list_floor.max(0.0))
}

/// The call floor for `request`'s reply, when its first choice between text
/// and a call is made this way: the template's syntax, a grammar, tools
/// offered with the choice left to the model, no structured answer, and a
/// floor that can change a greedy choice.
pub(crate) fn call_floor_for(config: &LocalConfig, request: &ChatRequest) -> Option<f32> {
    let applies = config.call_syntax.for_request(request) == CallSyntax::Template
        && config.constrained
        && request.tool_choice == ToolChoice::Auto
        && !request.tools.is_empty()
        && request.response_format.is_none()
        && config.call_floor < 1.0;
    applies.then_some(config.call_floor.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> agentry_core::tool::ToolSchema {
        agentry_core::tool::ToolSchema {
            name: name.into(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            description: None,
        }
    }

    #[test]
    fn the_call_floor_applies_where_the_model_chooses_between_text_and_a_call() {
        let config = LocalConfig {
            call_floor: 0.2,
            ..LocalConfig::default()
        };
        let mut request = ChatRequest::new(None, "What does notes.txt say?");
        assert_eq!(call_floor_for(&config, &request), None, "no tools");
        request.tools = vec![tool("read_file"), tool("calculator")];
        assert_eq!(call_floor_for(&config, &request), Some(0.2));
        for choice in [
            ToolChoice::None,
            ToolChoice::Required,
            ToolChoice::Tool("read_file".into()),
        ] {
            request.tool_choice = choice;
            assert_eq!(call_floor_for(&config, &request), None);
        }
        request.tool_choice = ToolChoice::Auto;
        assert_eq!(
            call_floor_for(&LocalConfig::default(), &request),
            None,
            "off by default"
        );
        let free = LocalConfig {
            constrained: false,
            ..config.clone()
        };
        assert_eq!(call_floor_for(&free, &request), None);
        let python = LocalConfig {
            call_syntax: CallSyntax::Python,
            ..config
        };
        assert_eq!(call_floor_for(&python, &request), None);
    }

    #[test]
    fn the_floor_applies_to_one_offered_tool_in_the_template_json() {
        let config = LocalConfig::default();
        let mut request = ChatRequest::new(None, "Weather in Paris and Rome?");
        request.tools = vec![tool("get_weather")];
        assert_eq!(
            floor_for(&config, &request),
            Some(crate::DEFAULT_LIST_FLOOR)
        );
        request.tools.push(tool("get_time"));
        assert_eq!(floor_for(&config, &request), None);
        request.tool_choice = ToolChoice::Tool("get_time".into());
        assert_eq!(
            floor_for(&config, &request),
            Some(crate::DEFAULT_LIST_FLOOR)
        );
        request.tool_choice = ToolChoice::None;
        assert_eq!(floor_for(&config, &request), None);
        request.tool_choice = ToolChoice::Auto;
        request.tools.pop();
        for off in [
            LocalConfig {
                list_floor: 1.0,
                ..LocalConfig::default()
            },
            LocalConfig {
                one_tool_lists: true,
                ..LocalConfig::default()
            },
            LocalConfig {
                call_lists: false,
                ..LocalConfig::default()
            },
            LocalConfig {
                constrained: false,
                ..LocalConfig::default()
            },
            LocalConfig {
                call_syntax: CallSyntax::Auto,
                ..LocalConfig::default()
            },
        ] {
            assert_eq!(floor_for(&off, &request), None, "{off:?}");
        }
    }
}
