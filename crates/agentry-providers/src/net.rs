//! The HTTP client tools use: it connects only to hosts the tool was granted
//! (`Capability::Net`), and checks every redirect hop before following it.
//!
//! ```no_run
//! use agentry_core::tool::ToolContext;
//! use agentry_providers::net::HttpClient;
//!
//! /// Weather for a city.
//! #[agentry::tool(net = "api.weather.com")]
//! async fn get_weather(ctx: &ToolContext, city: String) -> Result<String, String> {
//!     let url = format!("https://api.weather.com/v1/now?city={city}");
//!     let response = HttpClient::for_context(ctx).get(&url).await.map_err(|e| e.to_string())?;
//!     response.text().await.map_err(|e| e.to_string())
//! }
//! # fn main() {}
//! ```

use std::sync::LazyLock;

use agentry_core::tool::{Capabilities, Capability, ToolContext};
use reqwest::{Method, Request, Response, StatusCode, Url, header};

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 10;

static SHARED: LazyLock<reqwest::Client> = LazyLock::new(|| {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("an HTTP client with default settings")
});

/// Why a guarded request did not happen.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The host is not granted to this tool.
    #[error("{capability} is not granted to this tool (url: {url})")]
    NotGranted {
        /// The capability that would be needed.
        capability: Capability,
        /// The URL refused.
        url: String,
    },
    /// A redirect pointed at a host that is not granted.
    #[error("redirect from {from} to {to} refused: {capability} is not granted to this tool")]
    RedirectRefused {
        /// Where the redirect came from.
        from: String,
        /// Where it pointed.
        to: String,
        /// The capability that would be needed.
        capability: Capability,
    },
    /// The URL could not be used.
    #[error("invalid URL {0:?}")]
    InvalidUrl(String),
    /// More than [`MAX_REDIRECTS`] redirects.
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    /// The request failed.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
}

/// An HTTP client limited to a tool's granted hosts.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    capabilities: Capabilities,
}

impl HttpClient {
    /// The client for the current call: hosts granted in `ctx`'s capabilities.
    pub fn for_context(ctx: &ToolContext) -> Self {
        Self::new(ctx.capabilities().clone())
    }

    /// A client limited to `capabilities`' `Net` hosts.
    pub fn new(capabilities: Capabilities) -> Self {
        Self {
            client: SHARED.clone(),
            capabilities,
        }
    }

    fn check(&self, url: &Url) -> Result<(), Capability> {
        match url.host_str() {
            Some(host) if self.capabilities.allows_host(host.trim_matches(['[', ']'])) => Ok(()),
            host => Err(Capability::net(host.unwrap_or(""))),
        }
    }

    /// `GET url`.
    pub async fn get(&self, url: &str) -> Result<Response, NetError> {
        let url = Url::parse(url).map_err(|_| NetError::InvalidUrl(url.to_owned()))?;
        self.execute(Request::new(Method::GET, url)).await
    }

    /// A request builder on the underlying client; send it with [`execute`](Self::execute).
    pub fn request(&self, method: Method, url: &str) -> Result<reqwest::RequestBuilder, NetError> {
        let url = Url::parse(url).map_err(|_| NetError::InvalidUrl(url.to_owned()))?;
        Ok(self.client.request(method, url))
    }

    /// Send a request, following redirects only to granted hosts.
    pub async fn execute(&self, mut request: Request) -> Result<Response, NetError> {
        self.check(request.url())
            .map_err(|capability| NetError::NotGranted {
                capability,
                url: request.url().to_string(),
            })?;
        for _ in 0..=MAX_REDIRECTS {
            let retry = request.try_clone();
            let from = request.url().clone();
            let response = self.client.execute(request).await?;
            let status = response.status();
            let location = response
                .headers()
                .get(header::LOCATION)
                .and_then(|l| l.to_str().ok());
            let (true, Some(location)) = (status.is_redirection(), location) else {
                return Ok(response);
            };
            let to = from
                .join(location)
                .map_err(|_| NetError::InvalidUrl(location.to_owned()))?;
            self.check(&to)
                .map_err(|capability| NetError::RedirectRefused {
                    from: from.to_string(),
                    to: to.to_string(),
                    capability,
                })?;
            request = match (status, retry) {
                (
                    StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT,
                    Some(mut same),
                ) => {
                    *same.url_mut() = to;
                    same
                }
                _ => Request::new(Method::GET, to),
            };
        }
        Err(NetError::TooManyRedirects)
    }
}
