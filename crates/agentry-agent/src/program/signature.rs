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

use super::parser::Parser;

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
    pub(super) fn keyword(&self) -> &'static str {
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
    /// Byte offset in the signature where it was found; 0 for checks of
    /// the whole signature (duplicate names, an empty side).
    pub position: usize,
}

impl Signature {
    /// Parse a signature such as `question:string -> answer:string`.
    ///
    /// ```
    /// use agentry_agent::program::{FieldType, Signature};
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
    /// # Ok::<_, agentry_agent::program::SignatureError>(())
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
