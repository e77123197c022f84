//! Tool calls written as a Python-style list, `[get_weather(city="Paris"),
//! get_weather(city="Rome")]`: the form the Berkeley Function Calling
//! Leaderboard prompts models with, and the one a small coding model writes
//! several calls in most readily (agentry-local's `CallSyntax::Python`).
//! Here are the system prompt that offers the tools in that form, the
//! llguidance grammar that holds each call to its tool's name, argument names
//! and argument schemas, and the parser that reads the calls back.
//!
//! Argument values are JSON (`true`, `null`, `{"a": 1}`), so every value the
//! tool's schema allows can be written; the parser also reads Python's
//! `True`, `False` and `None` for a model that runs without the grammar.

use serde_json::{Map, Value};

use crate::tool_calls::{GrammarTool, lenient};

/// What the system prompt says about calling, followed by the tools as a
/// JSON list. The wording is the Berkeley Function Calling Leaderboard's
/// prompt for models without native function calling (Apache-2.0,
/// `gorilla/berkeley-function-call-leaderboard`), which is also what it
/// measures small models with.
pub const PYTHON_CALLS_PROMPT: &str = "You are an expert in composing functions. You are given a question and a set of possible functions. Based on the question, you will need to make one or more function/tool calls to achieve the purpose.
If none of the functions can be used, point it out. If the given question lacks the parameters required by the function, also point it out.
You should only return the function calls in your response.

If you decide to invoke any of the function(s), you MUST put it in the format of [func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]
You SHOULD NOT include any other text in the response.

At each turn, you should try your best to complete the tasks requested by the user within the current turn. Continue to output functions to call until you have fulfilled the user's request to the best of your ability. Once you have no more functions to call, the system will consider the current turn complete and proceed to the next turn or task.

Here is a list of functions in JSON format that you can invoke.
";

/// A tool as the system prompt lists it.
pub struct ListedTool<'a> {
    /// Name the model writes.
    pub name: &'a str,
    /// What the tool does.
    pub description: &'a str,
    /// JSON Schema of the arguments object.
    pub schema: &'a Value,
}

/// The system prompt for a request offering `tools`: the request's own
/// system prompt (if any), then [`PYTHON_CALLS_PROMPT`] and the tools as a
/// JSON list of `{name, description, parameters}`.
pub fn python_calls_system(system: Option<&str>, tools: &[ListedTool<'_>]) -> String {
    let listed: Vec<Value> = tools
        .iter()
        .map(|tool| {
            serde_json::json!({
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.schema,
            })
        })
        .collect();
    let listed = serde_json::to_string_pretty(&listed).unwrap_or_default();
    match system {
        Some(system) if !system.trim().is_empty() => {
            format!("{system}\n\n{PYTHON_CALLS_PROMPT}{listed}\n")
        }
        _ => format!("{PYTHON_CALLS_PROMPT}{listed}\n"),
    }
}

/// A Lark grammar (llguidance dialect) for one reply: a list of calls, each
/// naming one of `tools` with its arguments in schema order (required ones
/// present, unknown ones impossible, each value valid for its property's
/// schema) or, with `allow_text`, an answer instead: free text that does not
/// open like a call (`[`, a code fence, blank space), or, given `answer`,
/// one JSON value satisfying that schema.
pub fn python_call_grammar(
    tools: &[GrammarTool<'_>],
    allow_text: bool,
    answer: Option<&Value>,
) -> String {
    let mut grammar = String::from(if allow_text {
        "start: text | calls\n"
    } else {
        "start: calls\n"
    });
    match answer {
        Some(schema) => grammar.push_str(&format!("text: %json {}\n", lenient(schema.clone()))),
        None => grammar.push_str("text: TEXT\nTEXT: /[^\\[`\\s](.|\\n)*/\n"),
    }
    grammar.push_str("calls: \"[\" call (\", \" call)* \"]\"\n");
    let alternatives: Vec<String> = (0..tools.len()).map(|i| format!("call_{i}")).collect();
    grammar.push_str(&format!("call: {}\n", alternatives.join(" | ")));
    for (i, tool) in tools.iter().enumerate() {
        grammar.push_str(&tool_rules(i, tool));
    }
    grammar
}

/// The rules for calls to tool number `i`: `call_{i}` and its arguments.
fn tool_rules(i: usize, tool: &GrammarTool<'_>) -> String {
    let opening = serde_json::to_string(&format!("{}(", tool.name)).unwrap_or_default();
    let Some(properties) = tool.schema.get("properties").and_then(Value::as_object) else {
        // No declared arguments: any names, any JSON values.
        return format!(
            "call_{i}: {opening} (args_{i})? \")\"\n\
             args_{i}: arg_{i} (\", \" arg_{i})*\n\
             arg_{i}: /[A-Za-z_][A-Za-z0-9_]*/ \"=\" %json {{}}\n"
        );
    };
    let required: Vec<&str> = tool
        .schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let definitions: Vec<(&str, &Value)> = ["$defs", "definitions"]
        .into_iter()
        .filter_map(|key| tool.schema.get(key).map(|defined| (key, defined)))
        .collect();
    let mut rules = String::new();
    let mut arguments = Vec::new();
    for (j, (name, schema)) in properties.iter().enumerate() {
        let mut schema = schema.clone();
        // References into the tool's definitions resolve from each argument.
        if let Value::Object(object) = &mut schema {
            for (key, defined) in &definitions {
                object.insert((*key).to_owned(), (*defined).clone());
            }
        }
        let label = serde_json::to_string(&format!("{name}=")).unwrap_or_default();
        rules.push_str(&format!("a_{i}_{j}: {label} %json {}\n", lenient(schema)));
        arguments.push((format!("a_{i}_{j}"), required.contains(&name.as_str())));
    }
    // `first_{i}_{k}`: the arguments from the k-th on, none written before them;
    // `then_{i}_{k}`: the same after one has been written (each after a comma).
    let count = arguments.len();
    for (k, (argument, is_required)) in arguments.iter().enumerate() {
        let then = if k + 1 < count {
            format!(" then_{i}_{}", k + 1)
        } else {
            String::new()
        };
        let first = if *is_required {
            format!("{argument}{then}")
        } else if k + 1 < count {
            format!("{argument}{then} | first_{i}_{}", k + 1)
        } else {
            format!("({argument})?")
        };
        rules.push_str(&format!("first_{i}_{k}: {first}\n"));
        if k == 0 {
            continue;
        }
        let after = if *is_required {
            format!("\", \" {argument}{then}")
        } else {
            format!("(\", \" {argument})?{then}")
        };
        rules.push_str(&format!("then_{i}_{k}: {after}\n"));
    }
    let body = if count == 0 {
        String::new()
    } else {
        format!(" first_{i}_0")
    };
    format!("call_{i}: {opening}{body} \")\"\n{rules}")
}

/// The calls in `text` when the reply is a list of calls (or a single call),
/// possibly in a Markdown fence, and nothing else; `None` otherwise.
pub fn parse_python_calls(text: &str) -> Option<Vec<(String, Value)>> {
    let mut rest = text.trim();
    if let Some(fenced) = rest.strip_prefix("```") {
        let body = fenced.trim_end().strip_suffix("```")?;
        rest = body
            .strip_prefix("python")
            .or_else(|| body.strip_prefix("json"))
            .unwrap_or(body)
            .trim();
    }
    let (listed, closing) = match rest.strip_prefix('[') {
        Some(inside) => (inside, Some(']')),
        None => (rest, None),
    };
    let mut reader = Reader { rest: listed };
    let mut calls = Vec::new();
    loop {
        reader.skip_space();
        calls.push(reader.call()?);
        reader.skip_space();
        if reader.eat(',') {
            continue;
        }
        if let Some(closing) = closing
            && !reader.eat(closing)
        {
            return None;
        }
        reader.skip_space();
        return reader.rest.is_empty().then_some(calls);
    }
}

/// A cursor over a reply being read as calls.
struct Reader<'a> {
    rest: &'a str,
}

impl<'a> Reader<'a> {
    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, expected: char) -> bool {
        match self.rest.strip_prefix(expected) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// Characters while `keep` holds, at least one.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> Option<&'a str> {
        let end = self.rest.find(|c| !keep(c)).unwrap_or(self.rest.len());
        let (taken, rest) = self.rest.split_at(end);
        self.rest = rest;
        (!taken.is_empty()).then_some(taken)
    }

    /// `name(arg=value, …)`.
    fn call(&mut self) -> Option<(String, Value)> {
        let name = self.take_while(|c| c.is_alphanumeric() || "_-.:".contains(c))?;
        self.skip_space();
        if !self.eat('(') {
            return None;
        }
        let mut arguments = Map::new();
        self.skip_space();
        if self.eat(')') {
            return Some((name.to_owned(), Value::Object(arguments)));
        }
        loop {
            self.skip_space();
            // Argument names are the schema's own: OpenAPI's `X-Request-Id`
            // or `page[size]` are written as they are.
            let key = self.take_while(|c| !c.is_whitespace() && !"=(),\"'{}".contains(c))?;
            self.skip_space();
            if !self.eat('=') {
                return None;
            }
            self.skip_space();
            let value = self.value()?;
            arguments.insert(key.to_owned(), value);
            self.skip_space();
            if self.eat(')') {
                return Some((name.to_owned(), Value::Object(arguments)));
            }
            if !self.eat(',') {
                return None;
            }
        }
    }

    /// One JSON value (Python's `True`, `False` and `None` read as JSON's).
    fn value(&mut self) -> Option<Value> {
        if self.rest.starts_with(['"', '[', '{']) {
            // Strings, lists and objects end themselves.
            let mut values = serde_json::Deserializer::from_str(self.rest).into_iter::<Value>();
            let value = values.next()?.ok()?;
            self.rest = &self.rest[values.byte_offset()..];
            return Some(value);
        }
        let word = self.take_while(|c| c.is_alphanumeric() || "+-.".contains(c))?;
        match word {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "None" => Some(Value::Null),
            word => serde_json::from_str(word).ok(),
        }
    }
}

/// `calls` written the way [`parse_python_calls`] reads them, for a
/// conversation's earlier calls: `[name(arg=value, …), …]`.
pub fn write_python_calls<'a>(calls: impl IntoIterator<Item = (String, &'a Value)>) -> String {
    let written: Vec<String> = calls
        .into_iter()
        .map(|(name, arguments)| {
            let arguments: Vec<String> = match arguments {
                Value::Object(arguments) => arguments
                    .iter()
                    .map(|(key, value)| format!("{key}={value}"))
                    .collect(),
                _ => Vec::new(),
            };
            format!("{name}({})", arguments.join(", "))
        })
        .collect();
    format!("[{}]", written.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_list_of_calls() {
        let text = r#"[get_weather(city="Paris", days=3), get_weather(city="Rome, IT", units=null, detailed=True, tags=["a", "b)"], at={"x": 1.5})]"#;
        assert_eq!(
            parse_python_calls(text),
            Some(vec![
                ("get_weather".into(), json!({"city": "Paris", "days": 3})),
                (
                    "get_weather".into(),
                    json!({"city": "Rome, IT", "units": null, "detailed": true, "tags": ["a", "b)"], "at": {"x": 1.5}})
                ),
            ])
        );
        assert_eq!(
            parse_python_calls("```python\n[now()]\n```"),
            Some(vec![("now".into(), json!({}))])
        );
        assert_eq!(
            parse_python_calls(r#"[list_items(X-Request-Id="r1", page[size]=20)]"#),
            Some(vec![(
                "list_items".into(),
                json!({"X-Request-Id": "r1", "page[size]": 20})
            )])
        );
        assert_eq!(
            parse_python_calls("math.factorial(number=-5e0)"),
            Some(vec![("math.factorial".into(), json!({"number": -5.0}))])
        );
    }

    #[test]
    fn anything_else_is_not_a_call() {
        for text in [
            "The weather is fine.",
            "[1, 2, 3]",
            "[get_weather(city=\"Paris\")] and more",
            "[get_weather(city=Paris)]",
            "[get_weather(\"Paris\")]",
            "[get_weather(city=\"Paris\"",
            "[]",
            "",
        ] {
            assert_eq!(parse_python_calls(text), None, "{text}");
        }
    }

    #[test]
    fn written_calls_read_back() {
        let first = json!({"city": "Oslo", "days": [1, 2]});
        let second = json!({});
        let text = write_python_calls([("a".to_owned(), &first), ("b".to_owned(), &second)]);
        assert_eq!(text, r#"[a(city="Oslo", days=[1,2]), b()]"#);
        assert_eq!(
            parse_python_calls(&text),
            Some(vec![("a".into(), first), ("b".into(), second)])
        );
    }

    #[test]
    fn the_prompt_lists_the_tools_after_the_request_s_own_system_prompt() {
        let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let tools = [ListedTool {
            name: "get_weather",
            description: "Weather now.",
            schema: &schema,
        }];
        let system = python_calls_system(Some("Be brief."), &tools);
        assert!(system.starts_with("Be brief.\n\nYou are an expert in composing functions."));
        assert!(system.contains("[func_name1(params_name1=params_value1"));
        assert!(system.ends_with(
            "[\n  {\n    \"name\": \"get_weather\",\n    \"description\": \"Weather now.\",\n    \"parameters\": {\n      \"type\": \"object\",\n      \"properties\": {\n        \"city\": {\n          \"type\": \"string\"\n        }\n      }\n    }\n  }\n]\n"
        ), "{system}");
        assert!(python_calls_system(None, &tools).starts_with("You are an expert"));
    }

    #[test]
    fn the_grammar_keeps_schema_order_and_lets_optional_arguments_out() {
        let schema = json!({
            "type": "object",
            "properties": {"unit": {"enum": ["c", "f"]}, "city": {"$ref": "#/$defs/city"}},
            "required": ["city"],
            "$defs": {"city": {"type": "string"}}
        });
        let grammar = python_call_grammar(
            &[GrammarTool {
                name: "get_weather",
                schema: &schema,
            }],
            true,
            None,
        );
        assert!(grammar.starts_with("start: text | calls\n"), "{grammar}");
        assert!(grammar.contains("call: call_0\n"), "{grammar}");
        assert!(
            grammar.contains("call_0: \"get_weather(\" first_0_0 \")\"\n"),
            "{grammar}"
        );
        assert!(grammar.contains("a_0_0: \"unit=\" %json {"), "{grammar}");
        // `unit` may be left out; `city` may not, and follows a comma only after `unit`.
        assert!(
            grammar.contains("first_0_0: a_0_0 then_0_1 | first_0_1\n"),
            "{grammar}"
        );
        assert!(grammar.contains("first_0_1: a_0_1\n"), "{grammar}");
        assert!(grammar.contains("then_0_1: \", \" a_0_1\n"), "{grammar}");
        // The argument's reference resolves: the definitions travel with it.
        assert!(
            grammar.contains(r#""$defs":{"city":{"type":"string"}}"#),
            "{grammar}"
        );
        let forced = python_call_grammar(
            &[GrammarTool {
                name: "now",
                schema: &json!({"type": "object"}),
            }],
            false,
            None,
        );
        assert!(forced.starts_with("start: calls\n"), "{forced}");
        assert!(
            forced.contains("call_0: \"now(\" (args_0)? \")\""),
            "{forced}"
        );
    }
}
