//! One operation of a specification: its tool name, its parameters and body
//! as one input schema, its 2xx JSON response as the output schema, and the
//! HTTP request a call becomes.

use std::collections::HashSet;

use agentry_core::tool::ToolHints;
use serde_json::{Map, Value, json};

use crate::OpenApiError;
use crate::spec::{Defs, Spec, with_defs};

/// The HTTP methods an operation may have, in the order they are read.
pub(crate) const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Longest description kept for a tool.
const MAX_DESCRIPTION: usize = 1000;

/// Where a parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

/// A parameter of the operation, by the name the model gives it.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    pub(crate) name: String,
    pub(crate) location: Location,
}

/// An operation, read.
#[derive(Clone, Debug)]
pub struct Operation {
    /// The function name (`operationId`, made an identifier, or derived).
    pub name: String,
    /// The HTTP method, upper case.
    pub method: String,
    /// The path template (`/pets/{petId}`).
    pub path: String,
    /// What the model reads.
    pub description: String,
    /// Parameters and body as one object schema (JSON Schema 2020-12).
    pub input_schema: Value,
    /// The first 2xx JSON response's schema, when there is one.
    pub output_schema: Option<Value>,
    pub(crate) params: Vec<Param>,
    pub(crate) has_body: bool,
}

impl Operation {
    /// Read the operation `method path` of `spec`; `taken` holds the names
    /// already given, so a repeated one gets a suffix.
    pub(crate) fn read(
        spec: &Spec,
        path: &str,
        method: &str,
        item: &Value,
        taken: &mut HashSet<String>,
    ) -> Result<Self, OpenApiError> {
        let operation = spec.resolve(&item[method])?;
        let mut defs = Defs::default();
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut params = Vec::new();
        // Path-level parameters first; the operation's override by name and place.
        let mut all: Vec<&Value> = Vec::new();
        for list in [&item["parameters"], &operation["parameters"]] {
            for parameter in list.as_array().into_iter().flatten() {
                all.push(spec.resolve(parameter)?);
            }
        }
        let mut by_key: Vec<(String, String, &Value)> = Vec::new();
        for parameter in all {
            let name = parameter["name"].as_str().unwrap_or_default().to_owned();
            let place = parameter["in"].as_str().unwrap_or_default().to_owned();
            by_key.retain(|(n, p, _)| !(n == &name && p == &place));
            by_key.push((name, place, parameter));
        }
        for (name, place, parameter) in by_key {
            let location = match place.as_str() {
                "path" => Location::Path,
                "query" => Location::Query,
                "header" => Location::Header,
                "cookie" => Location::Cookie,
                other => {
                    return Err(OpenApiError::Invalid(format!(
                        "{method} {path}: parameter {name:?} is in {other:?}"
                    )));
                }
            };
            if name.is_empty() || location == Location::Cookie || properties.contains_key(&name) {
                continue;
            }
            let mut schema = match parameter.get("schema") {
                Some(schema) => spec.gather(schema, &mut defs)?,
                None => json!({"type": "string"}),
            };
            if let (Some(description), Value::Object(map)) =
                (parameter["description"].as_str(), &mut schema)
            {
                map.entry("description")
                    .or_insert_with(|| json!(clip(description, 300)));
            }
            if location == Location::Path || parameter["required"] == json!(true) {
                required.push(json!(name));
            }
            properties.insert(name.clone(), schema);
            params.push(Param { name, location });
        }
        let mut has_body = false;
        if let Some(body) = operation.get("requestBody") {
            let body = spec.resolve(body)?;
            if let Some(schema) = json_content(body).and_then(|media| media.get("schema")) {
                let mut schema = spec.gather(schema, &mut defs)?;
                if let (Some(description), Value::Object(map)) =
                    (body["description"].as_str(), &mut schema)
                {
                    map.entry("description")
                        .or_insert_with(|| json!(clip(description, 300)));
                }
                properties.insert("body".into(), schema);
                if body["required"] == json!(true) {
                    required.push(json!("body"));
                }
                has_body = true;
            }
        }
        let mut input_schema = json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        });
        with_defs(&mut input_schema, defs);
        let output_schema = success_schema(spec, operation)?;
        let name = unique(function_name(operation, method, path), taken);
        Ok(Self {
            name,
            method: method.to_uppercase(),
            path: path.to_owned(),
            description: describe(operation, method, path),
            input_schema,
            output_schema,
            params,
            has_body,
        })
    }

    /// What the method says about the call.
    pub(crate) fn hints(&self) -> ToolHints {
        let reads = matches!(self.method.as_str(), "GET" | "HEAD" | "OPTIONS");
        ToolHints {
            read_only: reads,
            idempotent: reads || matches!(self.method.as_str(), "PUT" | "DELETE"),
            destructive: self.method == "DELETE",
            concurrency_safe: reads,
            // A remote API's answer: tool-result guardrails read it.
            open_world: true,
            ..ToolHints::default()
        }
    }
}

/// The JSON media type of a body or response (`application/json`, or any `+json`).
fn json_content(value: &Value) -> Option<&Value> {
    let content = value["content"].as_object()?;
    content
        .iter()
        .find(|(kind, _)| {
            let kind = kind.split(';').next().unwrap_or("").trim();
            kind == "application/json" || kind.ends_with("+json") || kind == "*/*"
        })
        .map(|(_, media)| media)
}

/// The schema of the first 2xx response with JSON content.
fn success_schema(spec: &Spec, operation: &Value) -> Result<Option<Value>, OpenApiError> {
    let Some(responses) = operation["responses"].as_object() else {
        return Ok(None);
    };
    let mut codes: Vec<&String> = responses
        .keys()
        .filter(|code| code.starts_with('2'))
        .collect();
    codes.sort();
    for code in codes {
        let response = spec.resolve(&responses[code])?;
        if let Some(schema) = json_content(response).and_then(|media| media.get("schema")) {
            let mut defs = Defs::default();
            let mut schema = spec.gather(schema, &mut defs)?;
            with_defs(&mut schema, defs);
            return Ok(Some(schema));
        }
    }
    Ok(None)
}

/// Summary, description and the request line, cut to [`MAX_DESCRIPTION`].
fn describe(operation: &Value, method: &str, path: &str) -> String {
    let mut text = String::new();
    for part in [&operation["summary"], &operation["description"]] {
        if let Some(part) = part.as_str().map(str::trim).filter(|p| !p.is_empty())
            && !text.contains(part)
        {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(part);
        }
    }
    let line = format!("{} {path}", method.to_uppercase());
    if text.is_empty() {
        return line;
    }
    format!("{}\n{line}", clip(&text, MAX_DESCRIPTION))
}

/// `text`, at most `most` characters.
pub(crate) fn clip(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// `text` as an identifier: letters, digits and `_`; starting with a letter.
pub(crate) fn identifier(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_owned();
    match out.chars().next() {
        Some(c) if c.is_ascii_alphabetic() => out,
        _ => format!("{prefix}_{out}").trim_end_matches('_').to_owned(),
    }
}

/// `operationId` as an identifier, or `method_path` when there is none.
fn function_name(operation: &Value, method: &str, path: &str) -> String {
    match operation["operationId"]
        .as_str()
        .filter(|id| !id.trim().is_empty())
    {
        Some(id) => identifier(id, "op"),
        None => identifier(&format!("{method} {path}"), "op"),
    }
}

/// `name`, or `name_2`, `name_3`… when taken.
fn unique(name: String, taken: &mut HashSet<String>) -> String {
    if taken.insert(name.clone()) {
        return name;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{name}_{n}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}
