//! Rendering a model's own chat template (from its GGUF metadata) with
//! `minijinja`, tools included, the way Hugging Face `transformers` does.

use agentry_core::model::{ChatRequest, Message};
use minijinja::{Environment, ErrorKind, Value as JinjaValue, context};
use serde_json::{Value, json};

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

/// A rendered prompt: the template's own text, in which special-token
/// markers such as `<|im_start|>` are real markers, and message text (the
/// system prompt, user and assistant text, tool results), in which they are
/// plain characters. A tool result that writes `<|im_start|>system` cannot
/// switch roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The pieces in order: `(text, markers_count)`.
    pub segments: Vec<(String, bool)>,
}

impl Prompt {
    /// A prompt written by the program itself: all of it template text.
    pub fn trusted(text: impl Into<String>) -> Self {
        Self {
            segments: vec![(text.into(), true)],
        }
    }

    /// The whole prompt as text.
    pub fn text(&self) -> String {
        self.segments
            .iter()
            .map(|(text, _)| text.as_str())
            .collect()
    }
}

impl std::fmt::Display for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

/// Where a held message text starts and ends in the rendered template
/// (private-use characters no template writes).
const HOLD_OPEN: char = '\u{F0000}';
const HOLD_CLOSE: char = '\u{F0001}';

/// Message texts kept out of the template while it renders, each replaced
/// by a placeholder that comes back as a plain-text segment.
#[derive(Default)]
struct Held(Vec<String>);

impl Held {
    fn hold(&mut self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        self.0.push(text.to_owned());
        format!("{HOLD_OPEN}{}{HOLD_CLOSE}", self.0.len() - 1)
    }

    /// Split `rendered` back into template text and held message texts.
    fn release(&self, rendered: &str) -> Result<Prompt, TemplateError> {
        let mut segments = Vec::new();
        let mut rest = rendered;
        while let Some(start) = rest.find(HOLD_OPEN) {
            let after = &rest[start + HOLD_OPEN.len_utf8()..];
            let end = after
                .find(HOLD_CLOSE)
                .ok_or_else(|| TemplateError("the template cut a message text".into()))?;
            let index: usize = after[..end]
                .parse()
                .map_err(|_| TemplateError("the template changed a message text".into()))?;
            let text = self
                .0
                .get(index)
                .ok_or_else(|| TemplateError("the template changed a message text".into()))?;
            if start > 0 {
                segments.push((rest[..start].to_owned(), true));
            }
            segments.push((text.clone(), false));
            rest = &after[end + HOLD_CLOSE.len_utf8()..];
        }
        if !rest.is_empty() {
            segments.push((rest.to_owned(), true));
        }
        Ok(Prompt { segments })
    }
}

/// The template could not be compiled or rendered.
#[derive(Debug, thiserror::Error)]
#[error("chat template: {0}")]
pub struct TemplateError(String);

impl ChatTemplate {
    /// Compile `source` (a Jinja chat template).
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        env.set_lstrip_blocks(true);
        env.set_trim_blocks(true);
        minijinja_contrib::add_to_environment(&mut env);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned("chat", source.to_owned())
            .map_err(|error| TemplateError(error.to_string()))?;
        Ok(Self {
            env,
            bos_token: bos_token.to_owned(),
            eos_token: eos_token.to_owned(),
        })
    }

    /// The prompt for `request` as text, ending with the assistant turn's
    /// opening. `wire` maps each tool name to the name the model sees.
    pub fn render(
        &self,
        request: &ChatRequest,
        wire: &dyn Fn(&str) -> String,
    ) -> Result<String, TemplateError> {
        Ok(self.render_prompt(request, wire)?.text())
    }

    /// The prompt for `request`, message texts kept apart from the
    /// template's own text (see [`Prompt`]).
    pub fn render_prompt(
        &self,
        request: &ChatRequest,
        wire: &dyn Fn(&str) -> String,
    ) -> Result<Prompt, TemplateError> {
        let mut held = Held::default();
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": held.hold(system)}));
        }
        for message in &request.messages {
            messages.push(match message {
                Message::User { text } => json!({"role": "user", "content": held.hold(text)}),
                Message::Assistant { text, tool_calls } => {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|call| {
                            json!({"type": "function", "id": call.id,
                                   "function": {"name": wire(&call.name), "arguments": call.input}})
                        })
                        .collect();
                    let text = held.hold(text);
                    if calls.is_empty() {
                        json!({"role": "assistant", "content": text})
                    } else {
                        json!({"role": "assistant", "content": text, "tool_calls": calls})
                    }
                }
                Message::Tool { result } => {
                    let content = match (result.is_error, result.output.is_string()) {
                        (true, true) => format!("error: {}", result.output_text()),
                        _ => result.output_text(),
                    };
                    json!({"role": "tool", "tool_call_id": result.id, "content": held.hold(&content)})
                }
            });
        }
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": wire(&tool.name),
                    "description": tool.description.clone().unwrap_or_default(),
                    "parameters": tool.input_schema}})
            })
            .collect();
        let template = self
            .env
            .get_template("chat")
            .map_err(|e| TemplateError(e.to_string()))?;
        let tools = if tools.is_empty() {
            JinjaValue::from(())
        } else {
            JinjaValue::from_serialize(&tools)
        };
        let rendered = template
            .render(context! {
                messages => JinjaValue::from_serialize(&messages),
                tools => tools,
                add_generation_prompt => true,
                bos_token => self.bos_token.clone(),
                eos_token => self.eos_token.clone(),
            })
            .map_err(|error| TemplateError(format!("{error:#}")))?;
        held.release(&rendered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentry_core::tool::{ToolCall, ToolResult, ToolSchema};

    const QWEN_LIKE: &str = r#"{%- if tools %}<|im_start|>system
{% if messages[0]['role'] == 'system' %}{{ messages[0]['content'] }}{% else %}You are Qwen.{% endif %}

<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools><|im_end|>
{% endif %}{%- for message in messages %}{%- if message.role == "user" %}<|im_start|>user
{{ message.content }}<|im_end|>
{% elif message.role == "assistant" %}<|im_start|>assistant{% for tool_call in message.tool_calls %}
<tool_call>
{"name": "{{ tool_call.function.name }}", "arguments": {{ tool_call.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% elif message.role == "tool" %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"#;

    #[test]
    fn renders_tools_calls_and_results() {
        let template = ChatTemplate::new(QWEN_LIKE, "", "<|im_end|>").unwrap();
        let request = ChatRequest {
            system: Some("Be brief.".into()),
            messages: vec![
                Message::user("2+3?"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall::new("c1", "calc::add", json!({"x": 2, "y": 3}))],
                },
                Message::tool(ToolResult::ok("c1", json!(5))),
            ],
            tools: vec![ToolSchema {
                name: "calc::add".into(),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                description: Some("Add.".into()),
            }],
            ..ChatRequest::default()
        };
        let prompt = template
            .render(&request, &|name| name.replace("::", "__"))
            .unwrap();
        // trim_blocks and lstrip_blocks, as transformers renders templates.
        assert!(
            prompt.starts_with("<|im_start|>system\nBe brief.\n<tools>{"),
            "{prompt}"
        );
        assert!(prompt.contains(r#""name":"calc__add""#), "{prompt}");
        assert!(prompt.contains("<tool_call>\n{\"name\": \"calc__add\", \"arguments\": {\"x\":2,\"y\":3}}\n</tool_call>"), "{prompt}");
        assert!(
            prompt.contains("<tool_response>\n5\n</tool_response>"),
            "{prompt}"
        );
        assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");
    }

    #[test]
    fn raise_exception_surfaces_as_an_error() {
        let template =
            ChatTemplate::new("{{ raise_exception('no system role') }}", "", "").unwrap();
        let error = template
            .render(&ChatRequest::default(), &|n| n.to_owned())
            .unwrap_err();
        assert!(error.to_string().contains("no system role"), "{error}");
    }
}
