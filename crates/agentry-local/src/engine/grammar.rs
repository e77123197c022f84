//! The grammar side of a [`LocalModel`]: the llguidance grammar a request's
//! reply is constrained by (tool calls on the allow-list with schema-valid
//! arguments, or a structured answer), compiled once per request, and the
//! sampler chain it runs in.

use agentry_core::model::{ChatRequest, ModelError, ToolChoice};
use agentry_core::tool::wire::WireNames;
use agentry_local_calls::python_calls::python_call_grammar;
use agentry_local_calls::tool_calls::{
    GrammarTool, json_answer_grammar, text_only_grammar, tool_call_grammar,
};
use llama_cpp_2::sampling::LlamaSampler;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};

use super::{CallSyntax, LocalModel, wire_names};

impl LocalModel {
    /// The grammar a request's reply is constrained by, if any.
    pub fn grammar_for(&self, request: &ChatRequest) -> Result<Option<String>, ModelError> {
        let grammar = self.grammar_with(request, &wire_names(request)?)?;
        Ok(grammar.map(|(text, _)| text))
    }

    /// The grammar for `request` (and its matcher, compiled once), if any.
    pub(super) fn grammar_with(
        &self,
        request: &ChatRequest,
        names: &WireNames,
    ) -> Result<Option<(String, Matcher)>, ModelError> {
        if !self.inner.loaded.config.constrained {
            return Ok(None);
        }
        let answer = request
            .response_format
            .as_ref()
            .map(|format| &format.schema);
        if request.tools.is_empty() || request.tool_choice == ToolChoice::None {
            let grammar = match answer {
                Some(schema) => json_answer_grammar(schema),
                None if request.tools.is_empty() => return Ok(None),
                None => text_only_grammar(),
            };
            let matcher = self.matcher(&grammar)?;
            return Ok(Some((grammar, matcher)));
        }
        let offered: Vec<(String, &serde_json::Value)> = request
            .tools
            .iter()
            .filter(|tool| match &request.tool_choice {
                ToolChoice::Tool(only) => &tool.name == only,
                _ => true,
            })
            .map(|tool| (names.wire_of(&tool.name), &tool.input_schema))
            .collect();
        let mut tools: Vec<GrammarTool<'_>> = offered
            .iter()
            .map(|(name, schema)| GrammarTool { name, schema })
            .collect();
        let allow_text = matches!(request.tool_choice, ToolChoice::Auto);
        let tags = self.inner.loaded.tags;
        let config = &self.inner.loaded.config;
        let syntax = config.call_syntax.for_request(request);
        let lists_only = config.call_lists && config.one_tool_lists && tools.len() == 1;
        let build = |tools: &[GrammarTool<'_>], allow_text, answer| match syntax {
            CallSyntax::Python => python_call_grammar(tools, allow_text, answer),
            _ => tool_call_grammar(tools, allow_text, tags, answer, lists_only),
        };
        let grammar = build(&tools, allow_text, answer);
        if let Ok(matcher) = self.matcher(&grammar) {
            return Ok(Some((grammar, matcher)));
        }
        // Some tool's schema is beyond the grammar engine (a pattern with
        // look-around, a schema no value satisfies): that tool's arguments
        // go unconstrained, and dispatch still validates them.
        let any_object = serde_json::json!({"type": "object"});
        for tool in &mut tools {
            let alone = build(&[*tool], false, None);
            if let Err(error) = self.matcher(&alone) {
                tracing::warn!(tool = tool.name, %error, "the grammar leaves this tool's arguments unconstrained");
                tool.schema = &any_object;
            }
        }
        let grammar = build(&tools, allow_text, answer);
        let matcher = self.matcher(&grammar)?;
        Ok(Some((grammar, matcher)))
    }

    /// A matcher for `grammar`, made by the model's grammar engine.
    pub(super) fn matcher(&self, grammar: &str) -> Result<Matcher, ModelError> {
        let factory = self
            .inner
            .loaded
            .factory
            .get_or_init(|| {
                let env = LlamaSampler::llguidance_tok_env(&self.inner.loaded.model);
                ParserFactory::new_simple(&env).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ModelError::Local(format!("grammar engine: {e}")))?;
        let matcher =
            Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(grammar.to_owned())));
        match matcher.get_error() {
            Some(error) => Err(ModelError::Local(format!("tool-call grammar: {error}"))),
            None => Ok(matcher),
        }
    }

    /// The sampler that picks a token from the (grammar-masked) logits:
    /// greedy, or the temperature's distribution.
    pub(super) fn sampler(&self, temperature: Option<f64>) -> LlamaSampler {
        match temperature.filter(|t| *t > 0.0) {
            Some(t) => LlamaSampler::chain_simple([
                LlamaSampler::temp(t as f32),
                LlamaSampler::dist(self.inner.loaded.config.seed),
            ]),
            None => LlamaSampler::greedy(),
        }
    }
}
