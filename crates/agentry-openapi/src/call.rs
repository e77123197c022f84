//! A tool call as an HTTP request: path parameters into the path, query and
//! header parameters where the operation says, `body` as JSON, the host
//! program's credentials added, all through the capability-checked client.

use agentry_core::tool::{ToolContext, ToolError};
use agentry_providers::net::HttpClient;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use serde_json::Value;

use crate::operation::{Location, Operation, clip};

/// Characters a path segment keeps as they are (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Most characters of an error response quoted back to the model.
const MAX_ERROR_BODY: usize = 2000;

/// Where calls go and the credentials they carry, from the host program.
#[derive(Clone, Debug, Default)]
pub(crate) struct Target {
    pub(crate) base_url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) query: Vec<(String, String)>,
}

/// A parameter value as text: strings as they are, the rest as JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Call `operation` with the model's `input`.
pub(crate) async fn call(
    target: &Target,
    operation: &Operation,
    input: Value,
    ctx: &ToolContext,
) -> Result<Value, ToolError> {
    let mut path = operation.path.clone();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    for param in &operation.params {
        let Some(value) = input.get(&param.name).filter(|v| !v.is_null()) else {
            continue;
        };
        match param.location {
            Location::Path => {
                let encoded = utf8_percent_encode(&text(value), SEGMENT).to_string();
                path = path.replace(&format!("{{{}}}", param.name), &encoded);
            }
            // Arrays repeat the key (OpenAPI's default `form`, `explode: true`).
            Location::Query => match value {
                Value::Array(items) => {
                    query.extend(items.iter().map(|item| (param.name.clone(), text(item))))
                }
                _ => query.push((param.name.clone(), text(value))),
            },
            Location::Header => headers.push((param.name.clone(), text(value))),
            Location::Cookie => {}
        }
    }
    if target.base_url.is_empty() {
        return Err(ToolError::failed(
            "the specification names no server: the host program sets one (base_url)",
        ));
    }
    let base = target.base_url.trim_end_matches('/');
    let mut url = reqwest::Url::parse(&format!("{base}{path}"))
        .map_err(|e| ToolError::failed(format!("the URL {base}{path} is invalid: {e}")))?;
    {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in query.iter().chain(&target.query) {
            pairs.append_pair(name, value);
        }
    }
    if url.query() == Some("") {
        url.set_query(None);
    }
    let method = Method::from_bytes(operation.method.as_bytes())
        .map_err(|e| ToolError::failed(e.to_string()))?;
    // Tools read JSON: ask for it first.
    let mut request = HttpClient::for_context(ctx)
        .request(method, url.as_str())
        .header("Accept", "application/json, */*;q=0.5");
    for (name, value) in headers.iter().chain(&target.headers) {
        request = request.header(name.as_str(), value.as_str());
    }
    if operation.has_body
        && let Some(body) = input.get("body")
    {
        request = request.json(body);
    }
    let response = request
        .send()
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| ToolError::failed(format!("reading the response: {e}")))?;
    if !status.is_success() {
        return Err(ToolError::failed(format!(
            "{} {} answered {status}: {}",
            operation.method,
            operation.path,
            clip(&body, MAX_ERROR_BODY)
        )));
    }
    Ok(serde_json::from_str(&body).unwrap_or(Value::String(body)))
}
