//! Request bodies checked against the OpenAPI document before they are read.
//! The published schema is the contract: a body it refuses is refused here
//! (422, naming the place and the rule), whatever serde would have let
//! through (a list where an object belongs, a number out of range).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::App;
use crate::error::ApiError;

/// Most violations named in one answer.
const MOST_NAMED: usize = 5;

/// Validators of the request bodies, by schema name.
#[derive(Clone)]
pub(crate) struct Schemas {
    by_name: Arc<HashMap<&'static str, jsonschema::Validator>>,
}

impl Schemas {
    /// Validators for the bodies the API reads, compiled from [`crate::openapi`].
    pub(crate) fn new() -> Self {
        let document = serde_json::to_value(crate::openapi()).unwrap_or_default();
        let mut by_name = HashMap::new();
        for name in ["TurnRequest", "ChatCompletionRequest", "ApprovalRequest"] {
            // The whole document as the root, so `#/components/...` references resolve.
            let mut root = document.clone();
            root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
            root["$ref"] = json!(format!("#/components/schemas/{name}"));
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&root)
                .expect("the OpenAPI document's schemas compile");
            by_name.insert(name, validator);
        }
        Self {
            by_name: Arc::new(by_name),
        }
    }

    /// `Err` naming the violations when `body` does not fit schema `name`.
    fn check(&self, name: &str, body: &Value) -> Result<(), ApiError> {
        let Some(validator) = self.by_name.get(name) else {
            return Ok(());
        };
        if validator.is_valid(body) {
            return Ok(());
        }
        let mut lines = Vec::new();
        for error in validator.iter_errors(body) {
            explain(&error, &mut lines);
        }
        lines.truncate(MOST_NAMED);
        Err(ApiError::unprocessable(format!(
            "the body does not fit the {name} schema: {}",
            lines.join("; ")
        )))
    }
}

/// `path: message` lines for `error`. An optional field's schema is a
/// `oneOf` of `null` and the real one: when the value is not null, the real
/// schema's own complaints say what is wrong, so those are named instead.
fn explain(error: &jsonschema::ValidationError<'_>, lines: &mut Vec<String>) {
    use jsonschema::error::{TypeKind, ValidationErrorKind};
    if let ValidationErrorKind::OneOfNotValid { context } = error.kind() {
        let not_null = |branch: &&Vec<jsonschema::ValidationError<'static>>| {
            !matches!(
                branch.as_slice(),
                [only] if matches!(
                    only.kind(),
                    ValidationErrorKind::Type { kind: TypeKind::Single(jsonschema::JsonType::Null) }
                )
            )
        };
        let branches: Vec<_> = context.iter().filter(not_null).collect();
        if let [branch] = branches.as_slice() {
            for inner in branch.iter() {
                explain(inner, lines);
            }
            return;
        }
    }
    let at = error.instance_path().as_str();
    let at = if at.is_empty() { "(root)" } else { at };
    lines.push(format!("{at}: {error}"));
}

/// A JSON body of type `T`, checked against `T`'s schema and then read.
pub(crate) struct Checked<T>(pub T);

impl<T> FromRequest<App> for Checked<T>
where
    T: DeserializeOwned + utoipa::ToSchema,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, app: &App) -> Result<Self, ApiError> {
        let body: Result<Json<Value>, JsonRejection> = Json::from_request(request, app).await;
        let Json(body) = body?;
        app.schemas.check(&T::name(), &body)?;
        serde_json::from_value(body)
            .map(Checked)
            .map_err(|error| ApiError::unprocessable(error.to_string()))
    }
}
