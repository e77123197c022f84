//! The parser behind [`Signature::parse`]: Ax's grammar and its checks,
//! with Ax's messages (see the grammar in [`signature`](super::signature)).

use super::signature::{Field, FieldType, Signature, SignatureError};

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

pub(super) struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str) -> Self {
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

    pub(super) fn signature(&mut self) -> Result<Signature, SignatureError> {
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
