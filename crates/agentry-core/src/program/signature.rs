//! Ax signatures: `"task" question:string "what to answer" -> answer:string`.
//! The grammar and the checks (and their messages) follow Ax's parser:
//!
//! ```text
//! signature := [description] fields "->" fields
//! fields    := field ("," field)*
//! field     := name ("?" | "!")* [":" type] [description]
//! type      := base ["[]"] | "class" ["[]"] options
//! base      := string | number | boolean | json | object | date | datetime | code | url
//! ```
//!
//! `?` marks an optional field, `!` an internal output (produced, then
//! dropped from the result); a field with no type is a string; `options` is
//! one quoted list, separated by commas or `|`. `class` is for outputs only.
//! Names are camelCase or snake_case, 2 to 50 characters, and not one of the
//! generic names Ax refuses (`text`, `data`, `result`, ...).

use std::fmt;

use serde_json::{Map, Value, json};

/// The type of a signature field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// Text.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// Any JSON value (`json`, or a bare `object`).
    Json,
    /// A calendar date, `YYYY-MM-DD`.
    Date,
    /// A date and time, RFC 3339.
    DateTime,
    /// Source code, as text.
    Code,
    /// A URL.
    Url,
    /// One of the given labels (outputs only).
    Class(Vec<String>),
}

impl FieldType {
    fn keyword(&self) -> &'static str {
        match self {
            FieldType::String => "string",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Json => "json",
            FieldType::Date => "date",
            FieldType::DateTime => "datetime",
            FieldType::Code => "code",
            FieldType::Url => "url",
            FieldType::Class(_) => "class",
        }
    }

    fn schema(&self) -> Value {
        match self {
            FieldType::String | FieldType::Code => json!({"type": "string"}),
            FieldType::Number => json!({"type": "number"}),
            FieldType::Boolean => json!({"type": "boolean"}),
            FieldType::Json => json!({}),
            FieldType::Date => json!({"type": "string", "format": "date"}),
            FieldType::DateTime => json!({"type": "string", "format": "date-time"}),
            FieldType::Url => json!({"type": "string", "format": "uri"}),
            FieldType::Class(options) => json!({"type": "string", "enum": options}),
        }
    }
}

/// One input or output of a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The name.
    pub name: String,
    /// The type.
    pub kind: FieldType,
    /// A list of values of `kind` (`string[]`).
    pub is_array: bool,
    /// May be left out (`name?`).
    pub optional: bool,
    /// An output the model writes (say, its reasoning) that is dropped from the result (`name!`).
    pub internal: bool,
    /// What the field holds, for the model.
    pub description: Option<String>,
}

impl Field {
    /// The field's JSON Schema.
    pub fn schema(&self) -> Value {
        let mut schema = self.kind.schema();
        if self.is_array {
            schema = json!({"type": "array", "items": schema});
        }
        if let (Some(text), Value::Object(object)) = (&self.description, &mut schema) {
            object.insert("description".into(), json!(text));
        }
        schema
    }
}

/// A parsed signature: what a [`Program`](super::Program) takes and gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The task, from a leading quoted string.
    pub description: Option<String>,
    /// The inputs, in order.
    pub inputs: Vec<Field>,
    /// The outputs, in order.
    pub outputs: Vec<Field>,
}

/// Why a signature does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid signature: {message}")]
pub struct SignatureError {
    /// What is wrong, in Ax's words.
    pub message: String,
    /// Character offset where it was found.
    pub position: usize,
}

impl Signature {
    /// Parse a signature such as `question:string -> answer:string`.
    ///
    /// ```
    /// use agentry_core::program::{FieldType, Signature};
    ///
    /// let sig = Signature::parse(
    ///     r#""Sort the ticket" ticket:string, customerTier?:number -> category:class "billing, bug, other", reasoning!:string"#,
    /// )?;
    /// assert_eq!(sig.description.as_deref(), Some("Sort the ticket"));
    /// assert!(sig.inputs[1].optional);
    /// assert_eq!(sig.outputs[0].kind, FieldType::Class(vec!["billing".into(), "bug".into(), "other".into()]));
    /// assert!(sig.outputs[1].internal);
    ///
    /// let err = Signature::parse("question:int -> answer").unwrap_err();
    /// assert_eq!(err.to_string(), r#"invalid signature: Invalid type "int". Did you mean "number"? Expected one of: string, number, boolean, json, object, date, datetime, code, url, class"#);
    /// # Ok::<_, agentry_core::program::SignatureError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, SignatureError> {
        let signature = Parser::new(text).signature()?;
        signature.check()?;
        Ok(signature)
    }

    /// The JSON Schema of the inputs: an object with one property per field.
    pub fn input_schema(&self) -> Value {
        object_schema(&self.inputs)
    }

    /// The JSON Schema of the outputs (internal ones included: the model writes them).
    pub fn output_schema(&self) -> Value {
        object_schema(&self.outputs)
    }

    fn check(&self) -> Result<(), SignatureError> {
        let error = |message: String| {
            Err(SignatureError {
                message,
                position: 0,
            })
        };
        if self.inputs.is_empty() {
            return error("Signature must have at least one input field".into());
        }
        if self.outputs.is_empty() {
            return error("Signature must have at least one output field".into());
        }
        for (side, fields) in [("input", &self.inputs), ("output", &self.outputs)] {
            for (i, field) in fields.iter().enumerate() {
                if fields[..i].iter().any(|other| other.name == field.name) {
                    return error(format!("Duplicate {side} field name: \"{}\"", field.name));
                }
            }
        }
        if let Some(both) = self
            .inputs
            .iter()
            .find(|input| self.outputs.iter().any(|output| output.name == input.name))
        {
            return error(format!(
                "Field name \"{}\" appears in both inputs and outputs",
                both.name
            ));
        }
        Ok(())
    }
}

fn object_schema(fields: &[Field]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in fields {
        properties.insert(field.name.clone(), field.schema());
        if !field.optional {
            required.push(json!(field.name));
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

impl fmt::Display for Signature {
    /// The signature in canonical form; it parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = &self.description {
            write!(f, "{} ", quote(text))?;
        }
        let list = |fields: &[Field]| fields.iter().map(ToString::to_string).collect::<Vec<_>>();
        write!(
            f,
            "{} -> {}",
            list(&self.inputs).join(", "),
            list(&self.outputs).join(", ")
        )
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let optional = if self.optional { "?" } else { "" };
        let internal = if self.internal { "!" } else { "" };
        let array = if self.is_array { "[]" } else { "" };
        write!(
            f,
            "{}{optional}{internal}:{}{array}",
            self.name,
            self.kind.keyword()
        )?;
        if let FieldType::Class(options) = &self.kind {
            write!(f, " {}", quote(&options.join(" | ")))?;
        }
        if let Some(text) = &self.description {
            write!(f, " {}", quote(text))?;
        }
        Ok(())
    }
}

fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Names Ax refuses as too generic to tell a model anything.
const GENERIC_NAMES: &[&str] = &[
    "text",
    "object",
    "image",
    "string",
    "number",
    "boolean",
    "json",
    "array",
    "daterange",
    "datetimerange",
    "datetime",
    "date",
    "time",
    "type",
    "class",
    "input",
    "output",
    "data",
    "value",
    "result",
    "response",
    "request",
    "item",
    "element",
];

/// Types a field may have, in the order error messages list them.
const TYPES: &[&str] = &[
    "string", "number", "boolean", "json", "object", "date", "datetime", "code", "url", "class",
];

/// Ax types agentry programs do not take (text models only).
const UNSUPPORTED_TYPES: &[&str] = &["image", "audio", "file", "dateRange", "datetimeRange"];

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, SignatureError> {
        Err(SignatureError {
            message: message.into(),
            position: self.at,
        })
    }

    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn skip_space(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn at_quote(&mut self) -> bool {
        self.skip_space();
        self.rest().starts_with(['"', '\''])
    }

    /// A quoted string; `\` escapes the next character.
    fn quoted(&mut self) -> Result<String, SignatureError> {
        self.skip_space();
        let start = self.at;
        let mut chars = self.rest().char_indices();
        let Some((_, quote)) = chars.next() else {
            return self.fail("Expected a quoted string");
        };
        let mut out = String::new();
        let mut escaped = false;
        for (offset, c) in chars {
            if escaped {
                out.push(c);
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == quote {
                self.at += offset + c.len_utf8();
                return Ok(out.trim().to_owned());
            } else {
                out.push(c);
            }
        }
        self.at = start;
        self.fail(format!("Unterminated string starting at position {start}"))
    }

    fn signature(&mut self) -> Result<Signature, SignatureError> {
        if self.text.trim().is_empty() {
            return self.fail("Empty signature provided");
        }
        let description = if self.at_quote() {
            Some(self.quoted()?)
        } else {
            None
        };
        let inputs = self.fields("input")?;
        self.skip_space();
        if self.rest().is_empty() {
            return self.fail("Incomplete signature: Missing output section");
        }
        if !self.eat("->") {
            let found: String = self.rest().chars().take(10).collect();
            return self.fail(format!("Expected \"->\" but found \"{found}...\""));
        }
        self.skip_space();
        if self.rest().is_empty() {
            return self.fail("Incomplete signature: No output fields specified after \"->\"");
        }
        let outputs = self.fields("output")?;
        self.skip_space();
        if !self.rest().is_empty() {
            return self.fail(format!(
                "Unexpected content after signature: \"{}\"",
                self.rest()
            ));
        }
        Ok(Signature {
            description,
            inputs,
            outputs,
        })
    }

    fn fields(&mut self, side: &'static str) -> Result<Vec<Field>, SignatureError> {
        let mut fields = vec![self.field(side)?];
        while self.eat(",") {
            self.skip_space();
            if self.rest().is_empty() {
                return self.fail(format!(
                    "Unexpected end of input after comma in {side} section"
                ));
            }
            fields.push(self.field(side)?);
        }
        Ok(fields)
    }

    fn field(&mut self, side: &'static str) -> Result<Field, SignatureError> {
        let name = self.name()?;
        let (mut optional, mut internal) = (false, false);
        loop {
            if self.eat("?") {
                optional = true;
            } else if self.eat("!") {
                internal = true;
            } else {
                break;
            }
        }
        if internal && side == "input" {
            return self.fail(format!(
                "Input field \"{name}\" cannot use the internal marker \"!\""
            ));
        }
        let (kind, is_array) = if self.eat(":") {
            self.field_type(side, &name)?
        } else {
            (FieldType::String, false)
        };
        let description = if self.at_quote() {
            Some(self.quoted()?)
        } else {
            None
        };
        Ok(Field {
            name,
            kind,
            is_array,
            optional,
            internal,
            description,
        })
    }

    fn name(&mut self) -> Result<String, SignatureError> {
        self.skip_space();
        let rest = self.rest();
        let word: &str = &rest[..rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len())];
        if word.is_empty() {
            let found: String = rest.chars().take(10).collect();
            return self.fail(format!("Expected a field name but found \"{found}\""));
        }
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            return self.fail(format!(
                "Invalid field name \"{word}\" - cannot start with a number"
            ));
        }
        if GENERIC_NAMES.contains(&word.to_lowercase().as_str()) {
            return self.fail(format!(
                "Field name \"{word}\" is too generic; use a name that says what it holds"
            ));
        }
        if !(is_camel_case(word) || is_snake_case(word)) {
            return self.fail(format!(
                "Invalid field name \"{word}\": use camelCase (userInput) or snake_case (user_input)"
            ));
        }
        let len = word.chars().count();
        if len < 2 {
            return self.fail(format!("Field name \"{word}\" is too short"));
        }
        if len > 50 {
            return self.fail(format!(
                "Field name \"{word}\" is too long ({len} characters)"
            ));
        }
        self.at += word.len();
        Ok(word.to_owned())
    }

    fn field_type(
        &mut self,
        side: &'static str,
        name: &str,
    ) -> Result<(FieldType, bool), SignatureError> {
        self.skip_space();
        let rest = self.rest();
        let word = &rest[..rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len())];
        let kind = match word {
            "string" => FieldType::String,
            "number" => FieldType::Number,
            "boolean" => FieldType::Boolean,
            "json" | "object" => FieldType::Json,
            "date" => FieldType::Date,
            "datetime" => FieldType::DateTime,
            "code" => FieldType::Code,
            "url" => FieldType::Url,
            "class" => FieldType::Class(Vec::new()),
            other if UNSUPPORTED_TYPES.contains(&other) => {
                return self.fail(format!(
                    "Field \"{name}\": type \"{other}\" is not supported by agentry programs (they take and give text)"
                ));
            }
            other => {
                let hint = suggest(other)
                    .map(|best| format!(" Did you mean \"{best}\"?"))
                    .unwrap_or_default();
                return self.fail(format!(
                    "Invalid type \"{other}\".{hint} Expected one of: {}",
                    TYPES.join(", ")
                ));
            }
        };
        self.at += word.len();
        if self.rest().starts_with('(') || self.rest().starts_with('{') {
            return self.fail(format!(
                "Field \"{name}\": type modifiers and nested objects are not supported; use json"
            ));
        }
        let is_array = self.eat("[]");
        if let FieldType::Class(_) = kind {
            if side == "input" {
                return self.fail(format!(
                    "Input field \"{name}\" cannot use the \"class\" type"
                ));
            }
            if !self.at_quote() {
                return self.fail(format!(
                    "Output field \"{name}\": Missing class options after \"class\" type"
                ));
            }
            let options: Vec<String> = self
                .quoted()?
                .split([',', '|'])
                .map(|option| option.trim().to_owned())
                .filter(|option| !option.is_empty())
                .collect();
            if options.is_empty() {
                return self.fail(format!(
                    "Output field \"{name}\": Empty class list provided"
                ));
            }
            let mut seen: Vec<String> = Vec::new();
            for option in &options {
                let folded = option.to_lowercase();
                if seen.contains(&folded) {
                    return self.fail(format!(
                        "Output field \"{name}\": Duplicate class options found"
                    ));
                }
                seen.push(folded);
            }
            return Ok((FieldType::Class(options), is_array));
        }
        if matches!(kind, FieldType::Code) && is_array {
            return self.fail(format!(
                "Field \"{name}\": Arrays of code are not commonly supported"
            ));
        }
        Ok((kind, is_array))
    }
}

fn is_camel_case(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase()) && chars.all(|c| c.is_ascii_alphanumeric())
}

fn is_snake_case(word: &str) -> bool {
    let mut parts = word.split('_');
    let first = parts.next().unwrap_or_default();
    !first.is_empty()
        && first.chars().all(|c| c.is_ascii_lowercase())
        && parts.all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// The known type a mistyped one most likely meant.
fn suggest(word: &str) -> Option<&'static str> {
    let aliases = [
        ("int", "number"),
        ("integer", "number"),
        ("float", "number"),
        ("double", "number"),
        ("bool", "boolean"),
        ("str", "string"),
        ("enum", "class"),
        ("array", "json"),
        ("map", "json"),
        ("timestamp", "datetime"),
    ];
    if let Some((_, known)) = aliases.iter().find(|(alias, _)| *alias == word) {
        return Some(known);
    }
    TYPES
        .iter()
        .map(|known| (strsim::jaro_winkler(word, known), *known))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| known)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        Signature::parse(text).unwrap_err().message
    }

    #[test]
    fn parses_every_part_of_the_grammar() {
        let sig = Signature::parse(
            r#""Answer from the docs" question:string "what was asked", context?:string[] -> answer:string "one sentence", confidence:number, tags:class[] "a | b", due?:date, at:datetime, ok:boolean, extra:json, snippet:code, link:url, notes"#,
        )
        .unwrap();
        assert_eq!(sig.description.as_deref(), Some("Answer from the docs"));
        assert_eq!(sig.inputs.len(), 2);
        assert_eq!(sig.inputs[0].description.as_deref(), Some("what was asked"));
        assert!(sig.inputs[1].optional && sig.inputs[1].is_array);
        let kinds: Vec<&FieldType> = sig.outputs.iter().map(|f| &f.kind).collect();
        assert_eq!(
            kinds,
            [
                &FieldType::String,
                &FieldType::Number,
                &FieldType::Class(vec!["a".into(), "b".into()]),
                &FieldType::Date,
                &FieldType::DateTime,
                &FieldType::Boolean,
                &FieldType::Json,
                &FieldType::Code,
                &FieldType::Url,
                &FieldType::String,
            ]
        );
        assert!(sig.outputs[2].is_array);
        // Canonical text parses back to the same signature.
        assert_eq!(Signature::parse(&sig.to_string()).unwrap(), sig);
    }

    #[test]
    fn schemas_follow_the_fields() {
        let sig = Signature::parse(
            r#"question:string -> answer:string "the answer", sources?:url[], mood:class "calm, angry""#,
        )
        .unwrap();
        assert_eq!(
            sig.output_schema(),
            json!({"type": "object", "properties": {
                "answer": {"type": "string", "description": "the answer"},
                "sources": {"type": "array", "items": {"type": "string", "format": "uri"}},
                "mood": {"type": "string", "enum": ["calm", "angry"]}
            }, "required": ["answer", "mood"], "additionalProperties": false})
        );
        assert_eq!(sig.input_schema()["required"], json!(["question"]));
    }

    #[test]
    fn mistakes_get_ax_messages() {
        assert_eq!(error(""), "Empty signature provided");
        assert_eq!(
            error("question"),
            "Incomplete signature: Missing output section"
        );
        assert_eq!(
            error("question => answer"),
            "Expected \"->\" but found \"=> answer...\""
        );
        assert_eq!(
            error("question ->"),
            "Incomplete signature: No output fields specified after \"->\""
        );
        assert_eq!(
            error("question, -> answer"),
            "Expected a field name but found \"-> answer\""
        );
        assert_eq!(
            error("question, "),
            "Unexpected end of input after comma in input section"
        );
        assert_eq!(
            error("text -> answer"),
            "Field name \"text\" is too generic; use a name that says what it holds"
        );
        assert_eq!(
            error("UserInput -> answer"),
            "Invalid field name \"UserInput\": use camelCase (userInput) or snake_case (user_input)"
        );
        assert_eq!(error("q -> answer"), "Field name \"q\" is too short");
        assert_eq!(
            error("1st -> answer"),
            "Invalid field name \"1st\" - cannot start with a number"
        );
        assert_eq!(
            error("question!:string -> answer"),
            "Input field \"question\" cannot use the internal marker \"!\""
        );
        assert_eq!(
            error("question:class \"a\" -> answer"),
            "Input field \"question\" cannot use the \"class\" type"
        );
        assert_eq!(
            error("question -> mood:class"),
            "Output field \"mood\": Missing class options after \"class\" type"
        );
        assert_eq!(
            error("question -> mood:class \" , \""),
            "Output field \"mood\": Empty class list provided"
        );
        assert_eq!(
            error("question -> mood:class \"Calm, calm\""),
            "Output field \"mood\": Duplicate class options found"
        );
        assert_eq!(
            error("question -> answer \"open"),
            "Unterminated string starting at position 19"
        );
        assert_eq!(
            error("question, question -> answer"),
            "Duplicate input field name: \"question\""
        );
        assert_eq!(
            error("question -> answer, answer"),
            "Duplicate output field name: \"answer\""
        );
        assert_eq!(
            error("question -> question"),
            "Field name \"question\" appears in both inputs and outputs"
        );
        assert_eq!(
            error("photo:image -> caption"),
            "Field \"photo\": type \"image\" is not supported by agentry programs (they take and give text)"
        );
        assert_eq!(
            error("question -> answer:bool"),
            "Invalid type \"bool\". Did you mean \"boolean\"? Expected one of: string, number, boolean, json, object, date, datetime, code, url, class"
        );
        assert_eq!(
            error("question -> answer x"),
            "Unexpected content after signature: \"x\""
        );
        assert_eq!(
            Signature::parse("question -> answer \"open")
                .unwrap_err()
                .position,
            19
        );
    }
}
