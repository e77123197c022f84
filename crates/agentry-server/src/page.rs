//! The web chat page at `GET /`: plain HTML, CSS and JavaScript embedded in
//! the binary (no build step, nothing fetched from elsewhere). The page
//! talks to the same server's session API; its Content-Security-Policy lets
//! only these files run, so text from a model can never become a script.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The policy every page file is served with.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn file(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /`: the chat page.
pub(crate) async fn index() -> Response {
    file("text/html; charset=utf-8", include_str!("page/index.html"))
}

/// `GET /page/chat.js`: the page's script.
pub(crate) async fn script() -> Response {
    file(
        "text/javascript; charset=utf-8",
        include_str!("page/chat.js"),
    )
}

/// `GET /page/chat.css`: the page's style.
pub(crate) async fn style() -> Response {
    file("text/css; charset=utf-8", include_str!("page/chat.css"))
}
