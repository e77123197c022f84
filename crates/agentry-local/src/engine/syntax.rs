//! How a [`LocalModel`] asks the model to write tool calls
//! ([`CallSyntax`]): the prompt each way renders, and how a reply's calls
//! are read back.

use agentry_core::model::{ChatRequest, Message, ModelError, ToolChoice};
use agentry_core::tool::wire::WireNames;
use agentry_local_calls::python_calls::{
    ListedTool, parse_python_calls, python_calls_system, write_python_calls,
};
use agentry_local_calls::template::Prompt;
use agentry_local_calls::tool_calls::{ParsedReply, parse_reply};

use super::{CALL_LIST_NOTE, LocalModel};

/// How a [`LocalModel`] asks the model to write tool calls
/// ([`LocalConfig::call_syntax`](crate::LocalConfig::call_syntax)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallSyntax {
    /// The `<tool_call>` JSON blocks the model's own chat template describes,
    /// with the tools rendered by that template (and, with
    /// [`LocalConfig::call_lists`](crate::LocalConfig::call_lists), a note that
    /// several calls go in one JSON list, and with
    /// [`LocalConfig::one_tool_lists`](crate::LocalConfig::one_tool_lists) a
    /// grammar that holds the calls to a list when one tool is offered). The
    /// default.
    #[default]
    Template,
    /// A Python-style list, `[get_weather(city="Paris"), get_weather(city="Rome")]`
    /// ([`python_calls`](agentry_local_calls::python_calls)). The tools are listed in the system prompt
    /// with the Berkeley Function Calling Leaderboard's wording, and earlier
    /// calls in the conversation are shown the same way. On BFCL the 0.5B
    /// model writes the several calls a request asks for far more often this
    /// way (`parallel`), but it also calls every offered function where one
    /// was asked for (`multiple`): see `BENCHMARKS.md`. Best where one tool
    /// is called for many values.
    Python,
    /// Per request: [`Python`](Self::Python) when exactly one tool is
    /// offered (the model cannot pick a wrong function, and a list makes
    /// several calls of it easy), [`Template`](Self::Template) otherwise.
    /// On BFCL it matches the default's `parallel` (with
    /// [`LocalConfig::list_floor`](crate::LocalConfig::list_floor)) and
    /// does a little better on `simple_python` and `irrelevance`
    /// (`BENCHMARKS.md`, "Python-style calls"); it is not the default because tools described
    /// as agents describe them, with example values, fare worse (18 of 40
    /// single-call agent tasks against 23: the model copies an example into
    /// a call, or fills an optional argument nobody gave).
    Auto,
}

impl CallSyntax {
    /// The syntax `request` is asked in: [`Auto`](Self::Auto) settled by
    /// how many tools it offers, the others as they are.
    ///
    /// ```
    /// use agentry_core::model::ChatRequest;
    /// use agentry_core::tool::ToolSchema;
    /// use agentry_local::CallSyntax;
    ///
    /// let tool = |name: &str| ToolSchema {
    ///     name: name.into(),
    ///     input_schema: serde_json::json!({"type": "object"}),
    ///     output_schema: None,
    ///     description: None,
    /// };
    /// let mut request = ChatRequest::new(None, "What is the weather in Paris and Rome?");
    /// request.tools = vec![tool("get_weather")];
    /// assert_eq!(CallSyntax::Auto.for_request(&request), CallSyntax::Python);
    /// request.tools.push(tool("get_time"));
    /// assert_eq!(CallSyntax::Auto.for_request(&request), CallSyntax::Template);
    /// assert_eq!(CallSyntax::Python.for_request(&request), CallSyntax::Python);
    /// ```
    pub fn for_request(self, request: &ChatRequest) -> CallSyntax {
        match self {
            Self::Auto if request.tools.len() == 1 => Self::Python,
            Self::Auto => Self::Template,
            other => other,
        }
    }
}

impl LocalModel {
    /// The prompt for `request`, tools offered the way the configured
    /// [`CallSyntax`] asks for calls.
    pub(super) fn render_with(
        &self,
        request: &ChatRequest,
        names: &WireNames,
    ) -> Result<Prompt, ModelError> {
        let config = &self.inner.loaded.config;
        if config.call_syntax.for_request(request) == CallSyntax::Python {
            return self.render_template(&python_request(request, names), names);
        }
        if request.tool_choice == ToolChoice::None && !request.tools.is_empty() {
            let without_tools = ChatRequest {
                tools: Vec::new(),
                ..request.clone()
            };
            return self.render_with(&without_tools, names);
        }
        if config.call_lists && !request.tools.is_empty() {
            let system = match &request.system {
                Some(system) => format!("{system}\n\n{CALL_LIST_NOTE}"),
                None => CALL_LIST_NOTE.to_owned(),
            };
            let noted = ChatRequest {
                system: Some(system),
                ..request.clone()
            };
            return self.render_template(&noted, names);
        }
        self.render_template(request, names)
    }

    /// The text and calls of the reply to `request`.
    pub(super) fn read_reply(&self, request: &ChatRequest, output: &str) -> ParsedReply {
        if self.inner.loaded.config.call_syntax.for_request(request) == CallSyntax::Python
            && let Some(calls) = parse_python_calls(output)
        {
            return ParsedReply {
                text: String::new(),
                calls,
            };
        }
        parse_reply(output)
    }
}

/// `request` as the chat template sees it with Python-style calls: the tools
/// listed in the system prompt (none with `ToolChoice::None`, so a small
/// model is not invited to call one), and earlier calls written as the
/// assistant's text.
fn python_request(request: &ChatRequest, names: &WireNames) -> ChatRequest {
    let messages = request
        .messages
        .iter()
        .map(|message| match message {
            Message::Assistant { text, tool_calls } if !tool_calls.is_empty() => {
                let calls = write_python_calls(
                    tool_calls
                        .iter()
                        .map(|call| (names.wire_of(&call.name), &call.input)),
                );
                let text = if text.trim().is_empty() {
                    calls
                } else {
                    format!("{text}\n{calls}")
                };
                Message::assistant(text)
            }
            other => other.clone(),
        })
        .collect();
    let system = if request.tools.is_empty() || request.tool_choice == ToolChoice::None {
        request.system.clone()
    } else {
        let wire: Vec<String> = request
            .tools
            .iter()
            .map(|tool| names.wire_of(&tool.name))
            .collect();
        let listed: Vec<ListedTool<'_>> = request
            .tools
            .iter()
            .zip(&wire)
            .map(|(tool, name)| ListedTool {
                name,
                description: tool.description.as_deref().unwrap_or_default(),
                schema: &tool.input_schema,
            })
            .collect();
        Some(python_calls_system(request.system.as_deref(), &listed))
    };
    ChatRequest {
        system,
        messages,
        tools: Vec::new(),
        ..request.clone()
    }
}
