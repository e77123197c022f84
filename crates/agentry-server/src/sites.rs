//! Which names and pages may call. A page whose DNS name was rebound to
//! 127.0.0.1 reaches a loopback server under its own name, so the `Host` a
//! request names must be one this server answers to (the loopback names
//! unless widened). An `Origin`, when a browser sends one, must be the
//! server's own or an allowed one. And a request that changes something must
//! be one a browser would only send from another site after a CORS
//! preflight, which this server never grants: not one the browser marks
//! `Sec-Fetch-Site: cross-site`, and, without API keys (with them, every
//! request that gets through carries `Authorization`), not a `POST` of a
//! form's content type or of none.
//! The health probes answer any caller: they say nothing but "ok".

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, Method, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// A `Host` this server answers to: `name` or an address (any port),
/// `name:port` or `address:port` (that port only; IPv6 in brackets), or `*`
/// (any host at all, which gives up the protection against DNS rebinding:
/// only behind API keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern(HostRule);

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostRule {
    Any,
    Named { host: String, port: Option<u16> },
}

/// An `Origin` (a page's scheme, host and port) that may call besides the
/// server's own pages: `https://name`, `http://name:port`, `http://name:*`
/// (any port), or `*` (any page at all). The server sends no CORS headers,
/// so this is for pages served under another name by a proxy in front, not
/// for reading answers from foreign pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginPattern(OriginRule);

#[derive(Debug, Clone, PartialEq, Eq)]
enum OriginRule {
    Any,
    Site {
        scheme: String,
        host: String,
        port: PortRule,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortRule {
    Exact(u16),
    Any,
}

/// A host or origin pattern that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}` is not {expected}")]
pub struct PatternError {
    given: String,
    expected: &'static str,
}

const HOST_FORM: &str = "a host (`name`, `name:port`, an IP address, `[v6]:port` or `*`)";
const ORIGIN_FORM: &str = "an origin (`http://name`, `https://name:port`, `http://name:*` or `*`)";

/// `name`, `[v6]` or `v6` lower-cased and without brackets, and the port.
fn split_authority(text: &str) -> Option<(String, Option<u16>)> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some((ip.to_string(), None));
    }
    // Only `host[:port]`: no user, path, query or fragment.
    if text.contains(['@', '/', '?', '#']) {
        return None;
    }
    let authority = Authority::from_str(text).ok()?;
    let port_unreadable = !text.ends_with(']')
        && text
            .rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>().is_err());
    if authority.host().is_empty() || port_unreadable {
        return None;
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    Some((host.to_ascii_lowercase(), authority.port_u16()))
}

impl HostPattern {
    /// The loopback names, any port: what every server answers to.
    pub fn loopback() -> Vec<Self> {
        ["localhost", "127.0.0.1", "::1"]
            .map(|host| {
                Self(HostRule::Named {
                    host: host.into(),
                    port: None,
                })
            })
            .into()
    }

    /// Exactly `address` (its IP and port).
    pub fn address(address: std::net::SocketAddr) -> Self {
        Self(HostRule::Named {
            host: address.ip().to_string(),
            port: Some(address.port()),
        })
    }

    /// True for `*`.
    pub fn is_any(&self) -> bool {
        self.0 == HostRule::Any
    }

    fn admits(&self, host: &str, port: Option<u16>) -> bool {
        match &self.0 {
            HostRule::Any => true,
            HostRule::Named { host: h, port: p } => h == host && (p.is_none() || *p == port),
        }
    }
}

impl FromStr for HostPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text == "*" {
            return Ok(Self(HostRule::Any));
        }
        let (host, port) = split_authority(text).ok_or_else(|| PatternError {
            given: text.to_owned(),
            expected: HOST_FORM,
        })?;
        Ok(Self(HostRule::Named { host, port }))
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            HostRule::Any => f.write_str("*"),
            HostRule::Named { host, port } => {
                match host.contains(':') {
                    true => write!(f, "[{host}]")?,
                    false => f.write_str(host)?,
                }
                match port {
                    Some(port) => write!(f, ":{port}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// An origin a browser sent: scheme, host and port (the scheme's default when not given).
struct SeenOrigin {
    scheme: String,
    host: String,
    port: u16,
}

fn default_port(scheme: &str) -> u16 {
    if scheme == "https" { 443 } else { 80 }
}

impl SeenOrigin {
    fn parse(text: &str) -> Option<Self> {
        let (scheme, rest) = text.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https") {
            return None;
        }
        let (host, port) = split_authority(rest)?;
        let port = port.unwrap_or(default_port(&scheme));
        Some(Self { scheme, host, port })
    }
}

impl OriginPattern {
    fn admits(&self, seen: &SeenOrigin) -> bool {
        match &self.0 {
            OriginRule::Any => true,
            OriginRule::Site { scheme, host, port } => {
                *scheme == seen.scheme
                    && *host == seen.host
                    && match port {
                        PortRule::Any => true,
                        PortRule::Exact(port) => *port == seen.port,
                    }
            }
        }
    }
}

impl FromStr for OriginPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text == "*" {
            return Ok(Self(OriginRule::Any));
        }
        let wrong = || PatternError {
            given: text.to_owned(),
            expected: ORIGIN_FORM,
        };
        let (site, any_port) = match text.strip_suffix(":*") {
            Some(site) => (site, true),
            None => (text, false),
        };
        let seen = SeenOrigin::parse(site).ok_or_else(wrong)?;
        if any_port
            && site
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            return Err(wrong());
        }
        let port = match any_port {
            true => PortRule::Any,
            false => PortRule::Exact(seen.port),
        };
        Ok(Self(OriginRule::Site {
            scheme: seen.scheme,
            host: seen.host,
            port,
        }))
    }
}

impl fmt::Display for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            OriginRule::Any => f.write_str("*"),
            OriginRule::Site { scheme, host, port } => {
                let host = match host.contains(':') {
                    true => format!("[{host}]"),
                    false => host.clone(),
                };
                match port {
                    PortRule::Any => write!(f, "{scheme}://{host}:*"),
                    PortRule::Exact(port) if *port == default_port(scheme) => {
                        write!(f, "{scheme}://{host}")
                    }
                    PortRule::Exact(port) => write!(f, "{scheme}://{host}:{port}"),
                }
            }
        }
    }
}

/// The hosts and origins a server admits.
#[derive(Debug, Clone)]
pub(crate) struct Sites {
    hosts: Vec<HostPattern>,
    origins: Vec<OriginPattern>,
    /// API keys are required: every request that reaches a handler carries
    /// `Authorization`, which no page may send to another site unasked.
    pub(crate) keyed: bool,
}

impl Default for Sites {
    fn default() -> Self {
        Self {
            hosts: HostPattern::loopback(),
            origins: Vec::new(),
            keyed: false,
        }
    }
}

/// Content types a page on any site may POST without a preflight.
const FORM_TYPES: [&str; 3] = [
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
];

impl Sites {
    /// Also answer to `hosts`.
    pub(crate) fn add_hosts(&mut self, hosts: impl IntoIterator<Item = HostPattern>) {
        for host in hosts {
            if !self.hosts.contains(&host) {
                self.hosts.push(host);
            }
        }
    }

    /// Also admit pages of `origins`.
    pub(crate) fn add_origins(&mut self, origins: impl IntoIterator<Item = OriginPattern>) {
        for origin in origins {
            if !self.origins.contains(&origin) {
                self.origins.push(origin);
            }
        }
    }

    fn host_list(&self) -> String {
        let names: Vec<String> = self.hosts.iter().map(|h| format!("`{h}`")).collect();
        names.join(", ")
    }

    /// Whether a request of `method` to `uri` with `headers` may go on.
    pub(crate) fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<(), ApiError> {
        if matches!(uri.path(), "/healthz" | "/readyz") {
            return Ok(());
        }
        if headers.get_all(header::HOST).iter().nth(1).is_some() {
            return Err(ApiError::bad_request(
                "the request names more than one `Host`",
            ));
        }
        let named = headers
            .get(header::HOST)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
            .or_else(|| uri.authority().map(|a| a.as_str().to_owned()))
            .ok_or_else(|| ApiError::bad_request("the request names no `Host`"))?;
        let mut names = vec![named];
        // An absolute-form target names a host of its own.
        if let Some(authority) = uri.authority() {
            names.push(authority.as_str().to_owned());
        }
        let mut own = None;
        for name in &names {
            let parsed = split_authority(name)
                .filter(|(host, port)| self.hosts.iter().any(|rule| rule.admits(host, *port)));
            let Some(parsed) = parsed else {
                return Err(ApiError::forbidden(format!(
                    "this server does not answer to the Host `{name}` (it answers to {}): \
                     a server reached by another name must be told it (`--allow-host`)",
                    self.host_list()
                )));
            };
            own.get_or_insert(parsed);
        }
        let (own_host, own_port) = own.unwrap_or_default();
        let mut origin_listed = false;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let text = String::from_utf8_lossy(origin.as_bytes());
            let seen = SeenOrigin::parse(&text);
            origin_listed = seen
                .as_ref()
                .is_some_and(|seen| self.origins.iter().any(|rule| rule.admits(seen)));
            let same = seen.as_ref().is_some_and(|seen| {
                seen.host == own_host && seen.port == own_port.unwrap_or(default_port(&seen.scheme))
            });
            if !same && !origin_listed {
                return Err(ApiError::forbidden(format!(
                    "a page of the origin `{text}` may not call this server: only its own \
                     pages and the allowed origins (`--allow-origin`) may"
                )));
            }
        }
        if method.is_safe() {
            return Ok(());
        }
        let fetch_site = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if matches!(fetch_site, "cross-site" | "same-site") && !origin_listed {
            return Err(ApiError::forbidden(format!(
                "a page of another site may not change anything here (`Sec-Fetch-Site: {fetch_site}`)"
            )));
        }
        if !self.keyed && method == Method::POST && !headers.contains_key(header::AUTHORIZATION) {
            let essence = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(|v| {
                    v.split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase()
                });
            let simple = essence
                .as_deref()
                .is_none_or(|essence| FORM_TYPES.contains(&essence));
            if simple {
                return Err(ApiError::unsupported_media_type(
                    "send `Content-Type: application/json` with every POST, even one without a \
                     body: a page of any site may send a POST of another type without asking first",
                ));
            }
        }
        Ok(())
    }
}

/// Middleware around every route: refuse what [`Sites::check`] refuses.
pub(crate) async fn check(
    State(sites): State<Arc<Sites>>,
    request: Request,
    next: Next,
) -> Response {
    match sites.check(request.method(), request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_print_in_their_forms() {
        for (given, shown) in [
            ("LocalHost", "localhost"),
            ("agent.example:8443", "agent.example:8443"),
            ("::1", "[::1]"),
            ("[::1]:8080", "[::1]:8080"),
            ("10.0.0.5", "10.0.0.5"),
            ("*", "*"),
        ] {
            assert_eq!(given.parse::<HostPattern>().unwrap().to_string(), shown);
        }
        for bad in ["", "user@host", "http://host", "host:port", "a b"] {
            let error = bad.parse::<HostPattern>().unwrap_err();
            assert_eq!(error.to_string(), format!("`{bad}` is not {HOST_FORM}"));
        }
        for (given, shown) in [
            ("https://Agent.example", "https://agent.example"),
            ("http://localhost:*", "http://localhost:*"),
            ("http://127.0.0.1:80", "http://127.0.0.1"),
            ("https://[::1]:8443", "https://[::1]:8443"),
        ] {
            assert_eq!(given.parse::<OriginPattern>().unwrap().to_string(), shown);
        }
        for bad in [
            "null",
            "agent.example",
            "ftp://x",
            "http://x:8:*",
            "http://",
        ] {
            let error = bad.parse::<OriginPattern>().unwrap_err();
            assert_eq!(error.to_string(), format!("`{bad}` is not {ORIGIN_FORM}"));
        }
    }

    fn request(method: &str, uri: &str, headers: &[(&str, &str)]) -> Result<(), ApiError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        Sites::default().check(&method.parse().unwrap(), &uri.parse().unwrap(), &map)
    }

    #[test]
    fn hosts_origins_and_simple_posts_are_sorted() {
        fn ok(m: &str, u: &str, h: &[(&str, &str)]) {
            assert_eq!(request(m, u, h), Ok(()), "{m} {u} {h:?}");
        }
        fn refused(m: &str, u: &str, h: &[(&str, &str)], code: &str) {
            let error = request(m, u, h).unwrap_err();
            assert_eq!(error.code, code, "{m} {u} {h:?}: {error}");
        }
        ok("GET", "/v1/models", &[("host", "localhost:8080")]);
        ok("GET", "/v1/models", &[("host", "[::1]:1")]);
        ok("GET", "/healthz", &[("host", "evil.example")]);
        refused("GET", "/", &[("host", "evil.example:8080")], "forbidden");
        refused("GET", "/", &[], "bad_request");
        refused(
            "GET",
            "/",
            &[("host", "localhost"), ("host", "evil.example")],
            "bad_request",
        );
        refused(
            "GET",
            "http://evil.example/",
            &[("host", "localhost")],
            "forbidden",
        );
        let own = [
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
            ("content-type", "application/json"),
        ];
        ok("POST", "/v1/sessions/a/turns", &own);
        refused(
            "POST",
            "/v1/sessions/a/turns",
            &[
                ("host", "127.0.0.1:8080"),
                ("origin", "http://localhost:8080"),
            ],
            "forbidden",
        );
        refused(
            "GET",
            "/",
            &[("host", "localhost"), ("origin", "null")],
            "forbidden",
        );
        let plain = [
            ("host", "localhost"),
            ("content-type", "text/plain;charset=UTF-8"),
        ];
        refused(
            "POST",
            "/v1/runs/r/resume",
            &plain,
            "unsupported_media_type",
        );
        refused(
            "POST",
            "/v1/runs/r/resume",
            &plain[..1],
            "unsupported_media_type",
        );
        ok(
            "POST",
            "/v1/runs/r/resume",
            &[plain[0], ("authorization", "Bearer k")],
        );
        ok("DELETE", "/v1/sessions/a", &plain[..1]);
        refused(
            "DELETE",
            "/v1/sessions/a",
            &[plain[0], ("sec-fetch-site", "cross-site")],
            "forbidden",
        );
        ok("GET", "/", &[plain[0], ("sec-fetch-site", "cross-site")]);
    }
}
