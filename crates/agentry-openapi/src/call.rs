//! A tool call as an HTTP request: path parameters into the path, query and
//! header parameters where the operation says, `body` as JSON, the host
//! program's credentials added, all through the capability-checked client.
//! A path parameter never leaves the operation's path (`.` and `..` are
//! refused, `/` is encoded), a request outside the base URL's path is never
//! sent (nor followed to, through a redirect), and a response is read within
//! the toolset's limit.

use agentry_core::tool::{ToolContext, ToolError};
use agentry_net::{HttpClient, NetError, is_under, read_body, read_prefix};
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

/// Where calls go, the credentials they carry and how much of a response
/// is read, from the host program.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) base_url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) max_response_bytes: usize,
}

impl Default for Target {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            headers: Vec::new(),
            query: Vec::new(),
            max_response_bytes: crate::DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// `value` as one path segment: percent-encoded (`/` included), and refused
/// when it is `.` or `..`. Encoding cannot save those two: URL parsing (the
/// WHATWG rules `reqwest` follows) reads `%2E%2E` as `..` too, and a server
/// decodes it to `..` all the same.
fn segment(name: &str, value: &Value) -> Result<String, ToolError> {
    let text = text(value);
    if text == "." || text == ".." {
        return Err(ToolError::InvalidArgument {
            pointer: format!("/{}", name.replace('~', "~0").replace('/', "~1")),
            message: format!(
                "{text:?} is not allowed in a path parameter: it would move out of the operation's path"
            ),
        });
    }
    Ok(utf8_percent_encode(&text, SEGMENT).to_string())
}

/// A base URL calls can go under: it parses, and has no query or fragment
/// (an operation's path appended to `…/api?x=1` would land in the query).
pub(crate) fn base_url(base: &str) -> Result<reqwest::Url, String> {
    let root = reqwest::Url::parse(base).map_err(|e| format!("the URL {base} is invalid: {e}"))?;
    if root.query().is_some() || root.fragment().is_some() {
        return Err(format!(
            "the server URL {base} has a query or fragment; a base URL is a scheme, host, port and path"
        ));
    }
    Ok(root)
}

/// The URL of `path` under `base`, refused unless it stays under the base
/// URL's origin and path once parsed (dot segments removed); and the base.
fn under_base(base: &str, path: &str) -> Result<(reqwest::Url, reqwest::Url), ToolError> {
    let root = base_url(base).map_err(ToolError::failed)?;
    let url = reqwest::Url::parse(&format!("{base}{path}"))
        .map_err(|e| ToolError::failed(format!("the URL {base}{path} is invalid: {e}")))?;
    if !is_under(&root, &url) {
        let base_path = root.path().trim_end_matches('/');
        let base_path = if base_path.is_empty() { "/" } else { base_path };
        return Err(ToolError::failed(format!(
            "the path {path} resolves to {}, outside the API's base path {base_path}; the request was not sent",
            url.path()
        )));
    }
    Ok((url, root))
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
                let encoded = segment(&param.name, value)?;
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
    let (mut url, root) = under_base(base, &path)?;
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
    // The credentials are for this API: a redirect stays under its base too.
    // Tools read JSON: ask for it first.
    let mut request = HttpClient::for_context(ctx)
        .redirects_under(root)
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
    let response = request.send().await.map_err(ToolError::from_error)?;
    let status = response.status();
    let reading = |e: NetError| ToolError::failed(format!("reading the response: {e}"));
    if !status.is_success() {
        // Enough bytes for the characters quoted, however wide.
        let (body, _more) = read_prefix(response, 4 * MAX_ERROR_BODY)
            .await
            .map_err(reading)?;
        return Err(ToolError::failed(format!(
            "{} {} answered {status}: {}",
            operation.method,
            operation.path,
            clip(&String::from_utf8_lossy(&body), MAX_ERROR_BODY)
        )));
    }
    let body = match read_body(response, target.max_response_bytes).await {
        Ok(body) => body,
        Err(NetError::BodyTooLarge { limit }) => {
            return Err(ToolError::failed(format!(
                "{} {} answered {status} with a response over {limit} bytes, the most this toolset reads; it was not read",
                operation.method, operation.path
            )));
        }
        Err(error) => return Err(reading(error)),
    };
    Ok(serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned())))
}
