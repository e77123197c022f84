//! Answering a server's questions (MCP elicitation): the host program gives
//! an [`Elicitor`] that asks a person, and the client declares the
//! `elicitation` capability only then. Without one, no server can ask.
//!
//! Accepted answers get the schema's defaults for the fields the person left
//! out (SEP-1034), so a server always sees a complete form.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

/// A question a server asks the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The server asking (its name in the agent's configuration).
    pub server: String,
    /// What it wants, for a person to read.
    pub message: String,
    /// The form: an object schema of flat fields (MCP's restricted JSON Schema).
    pub schema: Value,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// They filled in the form (fields left out get the schema's defaults).
    Accept(Map<String, Value>),
    /// They chose not to answer; the server's work goes on without it.
    Decline,
    /// They dismissed the question.
    Cancel,
}

/// Asks a person a server's [`Question`].
///
/// ```
/// use agentry_mcp::{Answer, Elicitor, McpServerConfig};
/// use serde_json::{Map, json};
///
/// let elicitor = Elicitor::new(|question| async move {
///     match question.message.contains("name") {
///         true => Answer::Accept(Map::from_iter([("name".to_owned(), json!("Ada"))])),
///         false => Answer::Decline,
///     }
/// });
/// let config = McpServerConfig::http("forms", "http://127.0.0.1:3001/mcp").elicitor(elicitor);
/// assert!(config.elicitor.is_some());
/// ```
#[derive(Clone)]
pub struct Elicitor(Arc<dyn Fn(Question) -> BoxFuture<'static, Answer> + Send + Sync>);

impl std::fmt::Debug for Elicitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Elicitor(..)")
    }
}

impl Elicitor {
    /// An elicitor running `ask` for each question.
    pub fn new<F, Fut>(ask: F) -> Self
    where
        F: Fn(Question) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        Self(Arc::new(move |question| Box::pin(ask(question))))
    }

    /// Ask `request` of the person, for `server`; URL-mode requests (open a
    /// page) are declined, since agentry opens no browser.
    pub(crate) async fn answer(&self, server: &str, request: ElicitRequestParams) -> ElicitResult {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            tracing::info!(%server, "an MCP server asked to open a URL; declined");
            return ElicitResult::new(ElicitationAction::Decline);
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        let question = Question {
            server: server.to_owned(),
            message,
            schema: schema.clone(),
        };
        match (self.0)(question).await {
            Answer::Accept(fields) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(Value::Object(with_defaults(fields, &schema))),
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}

/// `fields` plus the schema's `default` of every property they leave out.
fn with_defaults(mut fields: Map<String, Value>, schema: &Value) -> Map<String, Value> {
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                fields
                    .entry(name.clone())
                    .or_insert_with(|| default.clone());
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn left_out_fields_get_their_defaults() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "email": {"type": "string"}
        }});
        let given = Map::from_iter([("name".to_owned(), json!("Ada"))]);
        assert_eq!(
            Value::Object(with_defaults(given, &schema)),
            json!({"name": "Ada", "age": 30})
        );
    }

    #[tokio::test]
    async fn answers_become_results_and_urls_are_declined() {
        let elicitor = Elicitor::new(|question: Question| async move {
            assert_eq!(question.server, "forms");
            Answer::Accept(Map::from_iter([("ok".to_owned(), json!(true))]))
        });
        let form: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": "Confirm?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        }))
        .unwrap();
        let result = elicitor.answer("forms", form).await;
        assert_eq!(result.action, ElicitationAction::Accept);
        assert_eq!(result.content, Some(json!({"ok": true})));
        let url: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "url": "https://example.com/login",
            "elicitationId": "e-1"
        }))
        .unwrap();
        assert_eq!(
            elicitor.answer("forms", url).await.action,
            ElicitationAction::Decline
        );
    }
}
