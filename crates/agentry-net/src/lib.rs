//! # agentry-net
//!
//! The HTTP client tools use. It connects only where the tool was granted
//! (`Capability::Net`: scheme, host and port), refuses loopback, private and
//! link-local addresses unless a grant names the address (checked after DNS
//! resolution, on the addresses actually dialled), and checks every redirect
//! hop: no grant, no https→http downgrade, and credentials stripped when the
//! redirect leaves the origin. Every request goes through these checks; there
//! is no unchecked path. Bodies are read within a limit ([`read_text`],
//! [`read_body`], [`read_prefix`]): chunk by chunk, never buffering more.
//!
//! ```
//! use agentry_core::tool::{Capabilities, Capability};
//! use agentry_net::{HttpClient, NetError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = HttpClient::new(Capabilities::from([Capability::net("api.weather.com")]));
//! // A host the tool was not granted is refused before anything is sent.
//! let error = client.get("https://files.example.com/secrets").await.unwrap_err();
//! assert!(matches!(error, NetError::NotGranted { .. }));
//! assert_eq!(
//!     error.to_string(),
//!     r#"net("files.example.com") is not granted to this tool (url: https://files.example.com/secrets)"#
//! );
//! // So is plain http to the granted host: a grant names its scheme and port.
//! let error = client.get("http://api.weather.com/").await.unwrap_err();
//! assert!(matches!(error, NetError::NotGranted { .. }));
//! // A wildcard grant never reaches a loopback or private address.
//! let everything = HttpClient::new(Capabilities::from([Capability::net("http://*:*")]));
//! let error = everything.get("http://127.0.0.1:8080/admin").await.unwrap_err();
//! assert!(matches!(error, NetError::NotGranted { .. }));
//! # }
//! ```
//!
//! In a tool, the client for the call is the one its context grants
//! ([`HttpClient::for_context`]):
//!
//! ```no_run
//! use agentry_core::tool::ToolContext;
//! use agentry_net::{DEFAULT_MAX_BODY_BYTES, HttpClient, read_text};
//!
//! /// Weather for a city.
//! #[agentry::tool(net = "api.weather.com")]
//! async fn get_weather(ctx: &ToolContext, city: String) -> Result<String, String> {
//!     let url = format!("https://api.weather.com/v1/now?city={city}");
//!     let response = HttpClient::for_context(ctx).get(&url).await.map_err(|e| e.to_string())?;
//!     read_text(response, DEFAULT_MAX_BODY_BYTES).await.map_err(|e| e.to_string())
//! }
//! # fn main() {}
//! ```
//!
//! The grants themselves ([`NetGrant`]: scheme, host pattern, port) are
//! `agentry-core`'s, with the rest of a tool's capabilities.
#![warn(missing_docs)]

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use agentry_core::tool::{Capabilities, Capability, NetGrant, ToolContext};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Method, Request, Response, StatusCode, Url, header};

mod body;
mod request;
pub use body::{DEFAULT_MAX_BODY_BYTES, read_body, read_prefix, read_text};
pub use request::RequestBuilder;

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 10;

/// Most distinct grant sets whose clients are kept for connection reuse.
const CACHED_CLIENTS: usize = 64;

/// Headers removed when a redirect leaves the origin (scheme, host and port),
/// besides any header marked sensitive ([`header::HeaderValue::set_sensitive`]).
const CREDENTIAL_HEADERS: [header::HeaderName; 4] = [
    header::AUTHORIZATION,
    header::PROXY_AUTHORIZATION,
    header::COOKIE,
    header::WWW_AUTHENTICATE,
];

/// Why a guarded request did not happen.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The scheme, host and port are not granted to this tool.
    #[error("{capability} is not granted to this tool (url: {url})")]
    NotGranted {
        /// The capability that would be needed.
        capability: Capability,
        /// The URL refused.
        url: String,
    },
    /// A granted host name resolved only to addresses that are not public and
    /// not granted by address.
    #[error(
        "{host} resolves to {}, which is not a public address; grant the address itself to reach it",
        addresses.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    AddressRefused {
        /// The host name.
        host: String,
        /// What it resolved to.
        addresses: Vec<IpAddr>,
    },
    /// A redirect pointed somewhere that is not granted.
    #[error("redirect from {from} to {to} refused: {capability} is not granted to this tool")]
    RedirectRefused {
        /// Where the redirect came from.
        from: String,
        /// Where it pointed.
        to: String,
        /// The capability that would be needed.
        capability: Capability,
    },
    /// A redirect from https to plain http.
    #[error("redirect from {from} to {to} refused: it leaves https for http")]
    Downgrade {
        /// Where the redirect came from.
        from: String,
        /// Where it pointed.
        to: String,
    },
    /// A redirect out of the origin and path the client was kept under
    /// ([`HttpClient::redirects_under`]).
    #[error("redirect from {from} to {to} refused: it leaves {under}")]
    RedirectOutside {
        /// Where the redirect came from.
        from: String,
        /// Where it pointed.
        to: String,
        /// The origin and path redirects must stay under.
        under: String,
    },
    /// The URL could not be used.
    #[error("invalid URL {0:?}")]
    InvalidUrl(String),
    /// A response body over the limit it was read with; the rest was not read.
    #[error("response over {limit} bytes")]
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// More than [`MAX_REDIRECTS`] redirects.
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    /// The request failed.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
}

/// An HTTP client limited to a tool's network grants.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    capabilities: Capabilities,
    /// Redirects must stay at this origin, under this path.
    under: Option<Url>,
}

impl HttpClient {
    /// The client for the current call: the grants in `ctx`'s capabilities.
    pub fn for_context(ctx: &ToolContext) -> Self {
        Self::new(ctx.capabilities().clone())
    }

    /// A client limited to `capabilities`' `Net` grants. Clients for the same
    /// grants share connections.
    pub fn new(capabilities: Capabilities) -> Self {
        static CLIENTS: LazyLock<Mutex<HashMap<Capabilities, reqwest::Client>>> =
            LazyLock::new(Mutex::default);
        let mut clients = CLIENTS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if clients.len() >= CACHED_CLIENTS && !clients.contains_key(&capabilities) {
            clients.clear();
        }
        let client = clients
            .entry(capabilities.clone())
            .or_insert_with(|| guarded_client(capabilities.clone()))
            .clone();
        Self {
            client,
            capabilities,
            under: None,
        }
    }

    /// Follow a redirect only to `base`'s origin, at `base`'s path or below
    /// it (segment by segment: `/api` covers `/api/x`, not `/apix`), on top
    /// of the grants. For a client whose calls carry credentials meant for
    /// one API under a path of a shared host.
    pub fn redirects_under(mut self, base: Url) -> Self {
        self.under = Some(base);
        self
    }

    /// The capability a request to `url` needs, when it is not granted.
    fn check(&self, url: &Url) -> Result<(), Capability> {
        let host = url.host_str().unwrap_or("");
        let port = url.port_or_known_default().unwrap_or(0);
        if self.capabilities.allows_net(url.scheme(), host, port) {
            return Ok(());
        }
        Err(match NetGrant::target(url.scheme(), host, port) {
            Some(target) => Capability::net(target.to_string()),
            None => Capability::net(url.as_str()),
        })
    }

    /// `GET url`.
    pub async fn get(&self, url: &str) -> Result<Response, NetError> {
        self.request(Method::GET, url).send().await
    }

    /// A request to build (headers, body, …) and [`send`](RequestBuilder::send)
    /// through the same checks as every other request.
    pub fn request(&self, method: Method, url: &str) -> RequestBuilder {
        let url = Url::parse(url).map_err(|_| NetError::InvalidUrl(url.to_owned()));
        RequestBuilder::new(self.clone(), method, url)
    }

    /// `POST url`, to build and send.
    pub fn post(&self, url: &str) -> RequestBuilder {
        self.request(Method::POST, url)
    }

    /// Send a request, following redirects only where they are granted, never
    /// from https to http, and without credentials once they leave the origin.
    pub async fn execute(&self, mut request: Request) -> Result<Response, NetError> {
        self.check(request.url())
            .map_err(|capability| NetError::NotGranted {
                capability,
                url: request.url().to_string(),
            })?;
        // The calling span's trace context goes with the request (W3C
        // `traceparent`), unless the caller set its own.
        for (name, value) in agentry_telemetry::context::current_fields() {
            if let (Ok(name), Ok(value)) = (
                header::HeaderName::try_from(name),
                header::HeaderValue::try_from(value),
            ) {
                request.headers_mut().entry(name).or_insert(value);
            }
        }
        for _ in 0..=MAX_REDIRECTS {
            let retry = request.try_clone();
            let from = request.url().clone();
            let (method, headers) = (request.method().clone(), request.headers().clone());
            let response = self
                .client
                .execute(request)
                .await
                .map_err(refused_address)?;
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
            self.check_redirect(&from, &to)?;
            request = match next_request(status, method, retry, to.clone()) {
                Some(next) => next,
                // A body that cannot be sent again: the redirect is the answer.
                None => return Ok(response),
            };
            *request.headers_mut() = redirected_headers(headers, &from, &to, request.body());
        }
        Err(NetError::TooManyRedirects)
    }

    /// A redirect may go on when it keeps https and its target is granted.
    fn check_redirect(&self, from: &Url, to: &Url) -> Result<(), NetError> {
        if from.scheme() == "https" && to.scheme() != "https" {
            return Err(NetError::Downgrade {
                from: from.to_string(),
                to: to.to_string(),
            });
        }
        if let Some(base) = &self.under
            && !is_under(base, to)
        {
            return Err(NetError::RedirectOutside {
                from: from.to_string(),
                to: to.to_string(),
                under: base.to_string(),
            });
        }
        self.check(to)
            .map_err(|capability| NetError::RedirectRefused {
                from: from.to_string(),
                to: to.to_string(),
                capability,
            })
    }
}

/// Whether `url` is at `base`'s origin and at its path or below it.
pub fn is_under(base: &Url, url: &Url) -> bool {
    let base_path = base.path().trim_end_matches('/');
    let inside = url.path() == base_path
        || url
            .path()
            .strip_prefix(base_path)
            .is_some_and(|rest| rest.starts_with('/'));
    url.origin() == base.origin() && inside
}

/// The request a redirect asks for: 307 and 308 repeat it (when its body can
/// be sent again); 303, and 301 or 302 after a POST, become a GET without a body.
fn next_request(
    status: StatusCode,
    method: Method,
    retry: Option<Request>,
    to: Url,
) -> Option<Request> {
    let to_get = status == StatusCode::SEE_OTHER && method != Method::HEAD
        || matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
            && method == Method::POST;
    if to_get {
        return Some(Request::new(Method::GET, to));
    }
    let mut same = retry?;
    *same.url_mut() = to;
    Some(same)
}

/// The headers that go on to the next hop: the body's own only with a body,
/// and no credentials once the origin changes.
fn redirected_headers(
    mut headers: header::HeaderMap,
    from: &Url,
    to: &Url,
    body: Option<&reqwest::Body>,
) -> header::HeaderMap {
    if body.is_none() {
        for name in [
            header::CONTENT_TYPE,
            header::CONTENT_LENGTH,
            header::CONTENT_ENCODING,
            header::TRANSFER_ENCODING,
        ] {
            headers.remove(name);
        }
    }
    if from.origin() != to.origin() {
        for name in CREDENTIAL_HEADERS {
            headers.remove(name);
        }
        let sensitive: Vec<_> = headers
            .iter()
            .filter(|(_, value)| value.is_sensitive())
            .map(|(name, _)| name.clone())
            .collect();
        for name in sensitive {
            headers.remove(name);
        }
    }
    headers
}

/// A reqwest client that dials only addresses the grants allow, through no proxy
/// (a proxy would resolve names where they cannot be checked).
fn guarded_client(capabilities: Capabilities) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .dns_resolver(Arc::new(GuardedResolver { capabilities }))
        .build()
        .expect("an HTTP client with default settings")
}

/// The system resolver, keeping only the addresses the grants allow.
struct GuardedResolver {
    capabilities: Capabilities,
}

/// Every address a name resolved to was refused.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves only to refused addresses")]
struct Refused {
    host: String,
    addresses: Vec<IpAddr>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let capabilities = self.capabilities.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = resolved
                .iter()
                .copied()
                .filter(|address| capabilities.allows_address_for(&host, address.ip()))
                .collect();
            if allowed.is_empty() {
                let addresses = resolved.iter().map(SocketAddr::ip).collect();
                return Err(Box::new(Refused { host, addresses }) as _);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// A refusal by the resolver as [`NetError::AddressRefused`]; other errors as they are.
fn refused_address(error: reqwest::Error) -> NetError {
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<Refused>() {
            return NetError::AddressRefused {
                host: refused.host.clone(),
                addresses: refused.addresses.clone(),
            };
        }
        source = cause.source();
    }
    NetError::Http(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn credentials_stay_within_the_origin() {
        let mut headers = header::HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer secret".parse().unwrap());
        headers.insert(header::COOKIE, "session=1".parse().unwrap());
        let mut key: header::HeaderValue = "k-123".parse().unwrap();
        key.set_sensitive(true);
        headers.insert("x-api-key", key);
        headers.insert("x-trace", "t-1".parse().unwrap());
        let same = redirected_headers(
            headers.clone(),
            &url("https://a.example/1"),
            &url("https://a.example/2"),
            None,
        );
        assert_eq!(same.len(), 4, "same origin keeps everything");
        for (to, why) in [
            ("https://b.example/", "another host"),
            ("https://a.example:8443/", "another port"),
            ("http://a.example/", "another scheme"),
        ] {
            let next =
                redirected_headers(headers.clone(), &url("https://a.example/"), &url(to), None);
            let names: Vec<_> = next.keys().map(|n| n.as_str()).collect();
            assert_eq!(names, ["x-trace"], "{why}");
        }
    }

    #[test]
    fn a_redirect_never_leaves_https_for_http() {
        let client = HttpClient::new(Capabilities::from([
            Capability::net("*.example.com"),
            Capability::net("http://*.example.com:*"),
        ]));
        let from = url("https://a.example.com/login");
        let error = client
            .check_redirect(&from, &url("http://a.example.com/login"))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "redirect from https://a.example.com/login to http://a.example.com/login refused: it leaves https for http"
        );
        assert!(
            client
                .check_redirect(&from, &url("https://b.example.com/"))
                .is_ok()
        );
        let plain = url("http://a.example.com/");
        assert!(
            client
                .check_redirect(&plain, &url("https://a.example.com/"))
                .is_ok(),
            "an upgrade is fine"
        );
        assert!(matches!(
            client.check_redirect(&from, &url("https://evil.org/")),
            Err(NetError::RedirectRefused { .. })
        ));
    }

    #[test]
    fn a_redirect_after_post_becomes_a_bodiless_get() {
        let to = url("https://a.example/next");
        let post = || {
            let mut request = Request::new(Method::POST, url("https://a.example/"));
            *request.body_mut() = Some("x=1".into());
            request
        };
        for status in [
            StatusCode::SEE_OTHER,
            StatusCode::FOUND,
            StatusCode::MOVED_PERMANENTLY,
        ] {
            let next = next_request(status, Method::POST, Some(post()), to.clone()).unwrap();
            assert_eq!((next.method(), next.body().is_none()), (&Method::GET, true));
        }
        for status in [
            StatusCode::TEMPORARY_REDIRECT,
            StatusCode::PERMANENT_REDIRECT,
        ] {
            let next = next_request(status, Method::POST, Some(post()), to.clone()).unwrap();
            assert_eq!((next.method(), next.url()), (&Method::POST, &to));
            assert!(next.body().is_some());
        }
        assert!(
            next_request(StatusCode::TEMPORARY_REDIRECT, Method::POST, None, to).is_none(),
            "a body that cannot be repeated is not dropped silently"
        );
    }
}
