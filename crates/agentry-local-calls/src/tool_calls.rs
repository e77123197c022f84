//! Tool calls in local-model output: the Lark grammar (llguidance) that lets
//! the model either answer in text or emit `<tool_call>` blocks whose name is
//! on the allow-list and whose arguments match the tool's JSON Schema, and the
//! parser that reads calls back out of the generated text.

use serde_json::{Value, json};

/// A tool the grammar allows: its wire name and argument schema.
#[derive(Clone, Copy)]
pub struct GrammarTool<'a> {
    /// Name the model writes.
    pub name: &'a str,
    /// JSON Schema of the arguments object.
    pub schema: &'a Value,
}

/// How the `<tool_call>` tags are written in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagStyle {
    /// The vocabulary has `<tool_call>` and `</tool_call>` as single tokens (Qwen 2.5): their ids.
    Tokens {
        /// Id of `<tool_call>`.
        open: u32,
        /// Id of `</tool_call>`.
        close: u32,
    },
    /// The tags are spelled out as ordinary text.
    Text,
}

/// A Lark grammar (llguidance dialect) for one reply. With `allow_text`, the
/// reply is either an answer or one or more tool calls; without it, tool
/// calls only. The answer is free text (not starting with `<`), or, given
/// `answer`, one JSON value that satisfies that schema. A call block holds
/// one call or a JSON list of calls; with `lists_only`, always a list
/// (agentry-local's `LocalConfig::one_tool_lists`).
pub fn tool_call_grammar(
    tools: &[GrammarTool<'_>],
    allow_text: bool,
    tags: TagStyle,
    answer: Option<&Value>,
    lists_only: bool,
) -> String {
    let (open, close) = match tags {
        TagStyle::Tokens { open, close } => (format!("<[{open}]>"), format!("<[{close}]>")),
        TagStyle::Text => ("\"<tool_call>\"".to_owned(), "\"</tool_call>\"".to_owned()),
    };
    let mut grammar = String::new();
    grammar.push_str(if allow_text {
        "start: text | calls\n"
    } else {
        "start: calls\n"
    });
    match answer {
        // A structured answer is a JSON object; calls open with a tag or a fence.
        Some(schema) => grammar.push_str(&format!("text: %json {}\n", lenient(schema.clone()))),
        // Text may not open like a call (`<`, `{`, `[`, a code fence) or with blank space,
        // so a call can only be written as a well-formed `<tool_call>` block.
        None => grammar.push_str("text: TEXT\nTEXT: /[^<{\\[`\\s](.|\\n)*/\n"),
    }
    // Calls in the model's own format, or in the Markdown fence small models
    // fall back to; either way the body is checked against the tool's schema.
    let content = if lists_only { "list" } else { "(body | list)" };
    grammar.push_str(&format!(
        "calls: tagged (\"\\n\" tagged)* | fenced (\"\\n\" fenced)*\n\
         tagged: {open} \"\\n\" {content} \"\\n\" {close}\n\
         fenced: \"```json\\n\" {content} \"\\n```\"\n\
         list: \"[\" ws body (\",\" ws body)* ws \"]\"\n\
         ws: | WS\n\
         WS: /[ \\t\\n]+/\n"
    ));
    let alternatives: Vec<String> = (0..tools.len()).map(|i| format!("body_{i}")).collect();
    grammar.push_str(&format!("body: {}\n", alternatives.join(" | ")));
    for (i, tool) in tools.iter().enumerate() {
        grammar.push_str(&format!("body_{i}: %json {}\n", call_schema(tool)));
    }
    grammar
}

/// The schema of one call to `tool`: `{"name": …, "arguments": …}`. The
/// arguments' definitions (`$defs`, `definitions`) move to the top, where
/// their `#/$defs/…` references point once the arguments are nested.
fn call_schema(tool: &GrammarTool<'_>) -> Value {
    let mut arguments = closed(tool.schema);
    let mut definitions = Vec::new();
    if let Value::Object(arguments) = &mut arguments {
        for key in ["$defs", "definitions"] {
            if let Some(defined) = arguments.remove(key) {
                definitions.push((key, defined));
            }
        }
    }
    let mut schema = json!({
        "type": "object",
        "properties": {"name": {"const": tool.name}, "arguments": arguments},
        "required": ["name", "arguments"],
        "additionalProperties": false
    });
    for (key, defined) in definitions {
        schema[key] = defined;
    }
    lenient(schema)
}

/// `schema` marked for llguidance to skip what it cannot enforce
/// (`uniqueItems`, unknown `format`s, …) instead of failing the request:
/// the grammar then allows a little more than the schema, and dispatch
/// still validates every call against the whole schema.
pub(crate) fn lenient(mut schema: Value) -> Value {
    if let Value::Object(object) = &mut schema {
        object.insert("x-guidance".into(), json!({"lenient": true}));
    }
    schema
}

/// The argument schema with `additionalProperties: false` added at the top
/// when it declares properties and says nothing about others: the grammar
/// should produce exactly the declared arguments.
fn closed(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(object) = &mut schema
        && object.contains_key("properties")
        && !object.contains_key("additionalProperties")
    {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
    schema
}

/// A grammar for a reply in text only (tools offered, but none may be called):
/// the text may not open like a call.
pub fn text_only_grammar() -> String {
    "start: TEXT\nTEXT: /[^<{\\[`\\s](.|\\n)*/\n".to_owned()
}

/// A grammar for an answer that is one JSON value satisfying `schema`, and nothing else.
pub fn json_answer_grammar(schema: &Value) -> String {
    format!("start: %json {}\n", lenient(schema.clone()))
}

/// What a reply said: text, and tool calls as `(name, arguments)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedReply {
    /// Text outside tool-call blocks.
    pub text: String,
    /// The calls, in order.
    pub calls: Vec<(String, Value)>,
}

/// Read tool calls out of generated text: `<tool_call>{json}</tool_call>`
/// blocks (the closing tag may be missing at the very end), or, failing
/// those, a reply that is only a JSON call, possibly in a Markdown fence, as
/// small models write when unconstrained.
pub fn parse_reply(output: &str) -> ParsedReply {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut rest = output;
    while let Some(start) = rest.find("<tool_call>") {
        text.push_str(&rest[..start]);
        let after = &rest[start + "<tool_call>".len()..];
        let (body, next) = match after.find("</tool_call>") {
            Some(end) => (&after[..end], &after[end + "</tool_call>".len()..]),
            None => (after, ""),
        };
        match calls_from_json(body.trim()) {
            Some(found) => calls.extend(found),
            None => text.push_str(&rest[start..rest.len() - next.len()]),
        }
        rest = next;
    }
    text.push_str(rest);
    if calls.is_empty()
        && let Some(found) = bare_calls(output)
    {
        return ParsedReply {
            text: String::new(),
            calls: found,
        };
    }
    ParsedReply {
        text: text.trim().to_owned(),
        calls,
    }
}

/// `calls` with every call that repeats an earlier one exactly (same name,
/// same arguments) left out, in their order
/// (agentry-local's `LocalConfig::repeated_calls` turns this off).
pub fn distinct_calls(calls: impl IntoIterator<Item = (String, Value)>) -> Vec<(String, Value)> {
    let mut distinct: Vec<(String, Value)> = Vec::new();
    for call in calls {
        if !distinct.contains(&call) {
            distinct.push(call);
        }
    }
    distinct
}

fn call_from_value(value: &Value) -> Option<(String, Value)> {
    let name = value.get("name")?.as_str()?.to_owned();
    let arguments = value
        .get("arguments")
        .or_else(|| value.get("parameters"))
        .cloned()
        .unwrap_or(json!({}));
    let arguments = match arguments {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        other => other,
    };
    Some((name, arguments))
}

/// The call, or list of calls, in one JSON text.
fn calls_from_json(text: &str) -> Option<Vec<(String, Value)>> {
    match serde_json::from_str(text).ok()? {
        Value::Array(items) if !items.is_empty() => items.iter().map(call_from_value).collect(),
        value => Some(vec![call_from_value(&value)?]),
    }
}

/// Calls the model wrote inside its text, as small models do when they
/// answer "Here is the call:" and a fenced or bare JSON object: each JSON
/// object in `text` whose `name` is one of `offered` (wire names), in order.
/// An object naming anything else is not a call. Empty when there is none.
pub fn embedded_calls(text: &str, offered: &[&str]) -> Vec<(String, Value)> {
    let mut calls = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find('{') {
        let start = at + offset;
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        let call = match values.next() {
            Some(Ok(value)) => {
                call_from_value(&value).filter(|(name, _)| offered.contains(&name.as_str()))
            }
            _ => None,
        };
        match call {
            Some(call) => {
                calls.push(call);
                at = start + values.byte_offset();
            }
            None => at = start + 1,
        }
    }
    calls
}

/// Calls written as bare JSON values, each possibly in its own Markdown
/// fence. Fences are skipped only between values, never inside one: an
/// argument may itself contain a fence.
fn bare_calls(output: &str) -> Option<Vec<(String, Value)>> {
    let mut calls = Vec::new();
    let mut rest = output;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest
            .strip_prefix("```json")
            .or_else(|| rest.strip_prefix("```"))
        {
            rest = after;
            continue;
        }
        if rest.is_empty() {
            break;
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        rest = &rest[values.byte_offset()..];
        match value {
            Value::Array(items) => calls.extend(
                items
                    .iter()
                    .map(call_from_value)
                    .collect::<Option<Vec<_>>>()?,
            ),
            value => calls.push(call_from_value(&value)?),
        }
    }
    (!calls.is_empty()).then_some(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tagged_calls_and_text() {
        let output = "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Lima\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"time\", \"arguments\": \"{}\"}\n</tool_call>";
        let parsed = parse_reply(output);
        assert_eq!(parsed.text, "Let me check.");
        assert_eq!(
            parsed.calls,
            vec![
                ("weather".into(), json!({"city": "Lima"})),
                ("time".into(), json!({}))
            ]
        );
    }

    #[test]
    fn a_list_of_calls_is_several_calls() {
        let tagged = "<tool_call>\n[{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"a\", \"arguments\": {\"x\": 2}}]\n</tool_call>";
        assert_eq!(
            parse_reply(tagged).calls,
            vec![("a".into(), json!({"x": 1})), ("a".into(), json!({"x": 2}))]
        );
        let fenced = "```json\n[\n  {\"name\": \"b\", \"arguments\": {}}\n]\n```";
        assert_eq!(parse_reply(fenced).calls, vec![("b".into(), json!({}))]);
        // A list with anything but calls in it is text.
        let mixed = "<tool_call>\n[{\"name\": \"a\"}, 3]\n</tool_call>";
        assert!(parse_reply(mixed).calls.is_empty());
        assert!(
            parse_reply("<tool_call>\n[]\n</tool_call>")
                .calls
                .is_empty()
        );
    }

    #[test]
    fn parses_fenced_and_unterminated_calls() {
        let fenced = "```json\n{\"name\": \"add\", \"arguments\": {\"x\": 1}}\n```";
        assert_eq!(
            parse_reply(fenced).calls,
            vec![("add".into(), json!({"x": 1}))]
        );
        let two = "```json\n{\"name\": \"a\", \"arguments\": {}}\n```\n```json\n{\"name\": \"b\", \"arguments\": {}}\n```";
        assert_eq!(
            parse_reply(two).calls,
            vec![("a".into(), json!({})), ("b".into(), json!({}))]
        );
        let open = "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"x\": 2}}";
        assert_eq!(
            parse_reply(open).calls,
            vec![("add".into(), json!({"x": 2}))]
        );
        let plain = parse_reply("The answer is 5.");
        assert_eq!(
            (plain.text.as_str(), plain.calls.len()),
            ("The answer is 5.", 0)
        );
        // A fence inside an argument is part of the argument (found by the fuzzer).
        let code = "```json\n{\"name\": \"save\", \"arguments\": {\"text\": \"```py\\nx = 1\\n```\"}}\n```";
        assert_eq!(
            parse_reply(code).calls,
            vec![("save".into(), json!({"text": "```py\nx = 1\n```"}))]
        );
        let broken = parse_reply("<tool_call>\n{not json}\n</tool_call>");
        assert_eq!(broken.calls.len(), 0);
        assert_eq!(broken.text, "<tool_call>\n{not json}\n</tool_call>");
    }

    #[test]
    fn calls_inside_text_are_found_only_when_they_name_an_offered_tool() {
        let text = "Sure! Here is the call:\n```json\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Lima\"}}\n```\nand {\"name\": \"Ada\"} is a person; \
                    then {\"name\": \"time\", \"parameters\": {\"zone\": \"UTC\"}} {broken";
        assert_eq!(
            embedded_calls(text, &["weather", "time"]),
            vec![
                ("weather".into(), json!({"city": "Lima"})),
                ("time".into(), json!({"zone": "UTC"}))
            ]
        );
        assert!(embedded_calls(text, &["search"]).is_empty());
        assert!(embedded_calls("no JSON here {", &["weather"]).is_empty());
        // Arguments given as a JSON string are read like tagged calls' are.
        assert_eq!(
            embedded_calls(
                r#"x {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}"#,
                &["weather"]
            ),
            vec![("weather".into(), json!({"city": "Oslo"}))]
        );
    }

    #[test]
    fn a_call_repeated_word_for_word_is_kept_once() {
        let call = |name: &str, city: &str| (name.to_owned(), json!({"city": city}));
        assert_eq!(
            distinct_calls([
                call("weather", "Lima"),
                call("weather", "Oslo"),
                call("weather", "Lima"),
                call("time", "Lima"),
                call("weather", "Oslo"),
            ]),
            vec![
                call("weather", "Lima"),
                call("weather", "Oslo"),
                call("time", "Lima")
            ]
        );
        // Arguments that differ only in key order are the same JSON value.
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": 2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b": 2, "a": 1}"#).unwrap();
        assert_eq!(distinct_calls([("f".into(), a), ("f".into(), b)]).len(), 1);
    }

    #[test]
    fn grammar_lists_each_tool_with_its_schema() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        let grammar = tool_call_grammar(
            &[GrammarTool {
                name: "calc__add",
                schema: &schema,
            }],
            true,
            TagStyle::Tokens { open: 7, close: 8 },
            None,
            false,
        );
        assert!(grammar.starts_with("start: text | calls\n"));
        assert!(
            grammar.contains("tagged: <[7]> \"\\n\" (body | list) \"\\n\" <[8]>"),
            "{grammar}"
        );
        assert!(
            grammar.contains("fenced: \"```json\\n\" (body | list) \"\\n```\""),
            "{grammar}"
        );
        assert!(grammar.contains(r#"body_0: %json {"type":"object","properties":{"name":{"const":"calc__add"},"arguments":{"type":"object","properties":{"x":{"type":"integer"}},"additionalProperties":false}}"#), "{grammar}");
        assert!(
            grammar.contains("TEXT: /[^<{\\[`\\s](.|\\n)*/"),
            "{grammar}"
        );
        let forced = tool_call_grammar(
            &[GrammarTool {
                name: "a",
                schema: &schema,
            }],
            false,
            TagStyle::Text,
            None,
            true,
        );
        assert!(
            forced.contains("tagged: \"<tool_call>\" \"\\n\" list \"\\n\""),
            "{forced}"
        );
        assert!(forced.starts_with("start: calls\n") && forced.contains("\"<tool_call>\""));
        let answer = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
        let structured = tool_call_grammar(
            &[GrammarTool {
                name: "a",
                schema: &schema,
            }],
            true,
            TagStyle::Text,
            Some(&answer),
            false,
        );
        assert!(
            structured.starts_with(&format!(
                "start: text | calls\ntext: %json {}\ncalls:",
                lenient(answer.clone())
            )),
            "{structured}"
        );
        assert_eq!(
            json_answer_grammar(&answer),
            format!("start: %json {}\n", lenient(answer.clone()))
        );
        assert!(
            lenient(answer)
                .to_string()
                .ends_with(r#","x-guidance":{"lenient":true}}"#)
        );
        // Definitions move up to where `#/$defs/…` points once the arguments are nested.
        let nested = json!({
            "type": "object",
            "properties": {"owner": {"$ref": "#/$defs/User"}},
            "$defs": {"User": {"type": "object"}}
        });
        let call = call_schema(&GrammarTool {
            name: "a",
            schema: &nested,
        });
        assert_eq!(call["$defs"], json!({"User": {"type": "object"}}));
        assert_eq!(call["properties"]["arguments"].get("$defs"), None);
    }
}
