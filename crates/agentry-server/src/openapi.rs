//! The OpenAPI 3.1 document of the API, from the handlers' annotations.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::{ErrorBody, ErrorDetail};
use crate::openai::{ChatCompletion, ChatCompletionRequest, ChatMessage, ModelList};
use crate::sessions::{
    AttachmentBody, MessagesResponse, RecallBody, StoredMessage, ToolCallRecord, TurnRequest,
    TurnResponse,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "agentry", description = "An agentry agent over HTTP: chat sessions with memory, and an OpenAI-compatible API."),
    paths(
        crate::sessions::post_turn,
        crate::sessions::get_messages,
        crate::sessions::delete_session,
        crate::openai::chat_completions,
        crate::openai::list_models,
        crate::metrics::metrics,
        crate::healthz,
        crate::readyz,
    ),
    components(schemas(
        TurnRequest, AttachmentBody, RecallBody, TurnResponse, ToolCallRecord, MessagesResponse,
        StoredMessage, ChatCompletionRequest, ChatMessage, ChatCompletion, ModelList, ErrorBody,
        ErrorDetail,
    )),
    modifiers(&ApiKeyScheme),
)]
struct ApiDoc;

/// `Authorization: Bearer <key>`.
struct ApiKeyScheme;

impl Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document.
///
/// ```
/// let document = agentry_server::openapi();
/// assert!(document.paths.paths.contains_key("/v1/sessions/{id}/turns"));
/// ```
pub fn openapi() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
