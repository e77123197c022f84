//! Input and output checking against a tool's JSON Schemas, with messages a
//! model can act on: one line per violation, a JSON pointer and what was expected.

use std::fmt::Write as _;

use jsonschema::Validator;
use serde_json::Value;

/// At most this many violations are listed; the rest are counted.
const MAX_LINES: usize = 20;
/// Values quoted in messages are cut to this many characters.
const MAX_PREVIEW: usize = 60;

/// A schema compiled once, used for every call.
pub(crate) struct CompiledSchema {
    validator: Validator,
}

impl CompiledSchema {
    /// Compile `schema` (JSON Schema 2020-12 unless it says otherwise).
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)
            .map_err(|error| error.to_string())?;
        Ok(Self { validator })
    }

    /// Compile `schema`, also checking `format`s (`date`, `date-time`, `uri`, ...),
    /// which JSON Schema 2020-12 otherwise treats as annotations.
    pub(crate) fn compile_checking_formats(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(schema)
            .map_err(|error| error.to_string())?;
        Ok(Self { validator })
    }

    /// `None` when `instance` is valid, else one `pointer: message` line per violation.
    pub(crate) fn violations(&self, instance: &Value) -> Option<Vec<String>> {
        self.violations_except(instance, false)
    }

    /// [`violations`](Self::violations), leaving out "additional properties"
    /// at the top level when `skip_extra_arguments` (the caller names them itself).
    pub(crate) fn violations_except(
        &self,
        instance: &Value,
        skip_extra_arguments: bool,
    ) -> Option<Vec<String>> {
        if self.validator.is_valid(instance) {
            return None;
        }
        let lines = self
            .validator
            .iter_errors(instance)
            .filter(|error| {
                !(skip_extra_arguments
                    && error.instance_path().as_str().is_empty()
                    && matches!(
                        error.kind(),
                        jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
                    ))
            })
            .map(|error| {
                let preview = preview(error.instance());
                violation_line(
                    error.instance_path().as_str(),
                    &error.masked_with(preview).to_string(),
                )
            })
            .collect();
        Some(lines)
    }
}

/// A JSON Schema compiled once that checks `format`s too (`date`,
/// `date-time`, `uri`, ...), and says what is wrong the way dispatch does:
/// one `- /pointer: message` line per violation. Typed programs check their
/// inputs and the model's answers with it.
///
/// ```
/// use agentry_core::tool::{SchemaCheck, violation_report};
/// use serde_json::json;
///
/// let check = SchemaCheck::new(&json!({"type": "object", "properties": {"on": {"type": "string", "format": "date"}}}))?;
/// assert_eq!(check.violations(&json!({"on": "2026-11-27"})), None);
/// let lines = check.violations(&json!({"on": "tomorrow"})).unwrap();
/// assert_eq!(violation_report("invalid:", &lines), "invalid:\n- /on: \"tomorrow\" is not a \"date\"");
/// # Ok::<_, String>(())
/// ```
pub struct SchemaCheck(CompiledSchema);

impl std::fmt::Debug for SchemaCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SchemaCheck")
    }
}

impl SchemaCheck {
    /// Compile `schema` (JSON Schema 2020-12 unless it says otherwise); the
    /// error is the compiler's message.
    pub fn new(schema: &Value) -> Result<Self, String> {
        CompiledSchema::compile_checking_formats(schema).map(Self)
    }

    /// `None` when `value` is valid, else one `- pointer: message` line per violation.
    pub fn violations(&self, value: &Value) -> Option<Vec<String>> {
        self.0.violations(value)
    }
}

/// Violation lines under a header, as dispatch reports them: at most 20
/// lines, the rest counted.
pub fn violation_report(header: &str, lines: &[String]) -> String {
    report(header, lines)
}

/// One message line: `- /path: message`, with `(root)` for the empty pointer.
pub(crate) fn violation_line(pointer: &str, message: &str) -> String {
    let at = if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    };
    format!("- {at}: {message}")
}

/// Join violation lines under a header, listing at most [`MAX_LINES`].
pub(crate) fn report(header: &str, lines: &[String]) -> String {
    let mut out = String::from(header);
    for line in lines.iter().take(MAX_LINES) {
        out.push('\n');
        out.push_str(line);
    }
    if lines.len() > MAX_LINES {
        let _ = write!(out, "\n- … and {} more", lines.len() - MAX_LINES);
    }
    out
}

/// A short JSON rendering of a value: strings, arrays and objects are cut so a
/// 10 MB argument never becomes a 10 MB message.
pub(crate) fn preview(value: &Value) -> String {
    match value {
        Value::String(text) => {
            let count = text.chars().count();
            if count <= MAX_PREVIEW {
                Value::String(text.clone()).to_string()
            } else {
                let head: String = text.chars().take(MAX_PREVIEW).collect();
                format!("{}… ({count} characters)", Value::String(head))
            }
        }
        Value::Array(items) if items.len() > 8 => format!("an array of {} items", items.len()),
        Value::Object(map) if map.len() > 8 => format!("an object with {} keys", map.len()),
        other => {
            let text = other.to_string();
            if text.chars().count() <= MAX_PREVIEW {
                text
            } else {
                let head: String = text.chars().take(MAX_PREVIEW).collect();
                format!("{head}…")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_every_violation_with_its_pointer() {
        let schema = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x", "y"]
        }))
        .unwrap();
        assert!(schema.violations(&json!({"x": 1, "y": 2})).is_none());
        let lines = schema.violations(&json!({"x": "two"})).unwrap();
        assert_eq!(
            lines,
            vec![
                r#"- (root): "y" is a required property"#,
                r#"- /x: "two" is not of type "integer""#
            ]
        );
    }

    #[test]
    fn previews_are_bounded() {
        let big = Value::String("a".repeat(10_000_000));
        let text = preview(&big);
        assert!(text.len() < 100, "{text}");
        assert!(text.ends_with("(10000000 characters)"));
        assert_eq!(preview(&json!([1, 2])), "[1,2]");
        assert_eq!(
            preview(&json!((0..20).collect::<Vec<_>>())),
            "an array of 20 items"
        );
    }

    #[test]
    fn reports_cap_the_line_count() {
        let lines: Vec<String> = (0..25).map(|i| format!("- /{i}: bad")).collect();
        let text = report("header:", &lines);
        assert_eq!(text.lines().count(), 1 + MAX_LINES + 1);
        assert!(text.ends_with("- … and 5 more"));
    }

    #[test]
    fn bad_schemas_do_not_compile() {
        assert!(CompiledSchema::compile(&json!({"type": 12})).is_err());
    }
}
