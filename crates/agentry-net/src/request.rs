//! A request to build before sending it through [`HttpClient`]'s checks: the
//! builder never reaches the network by itself.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Response, Url};
use serde::Serialize;

use super::{HttpClient, NetError};

/// A request under construction, made by [`HttpClient::request`]. Only
/// [`send`](Self::send) sends it, through [`HttpClient::execute`].
#[must_use = "a RequestBuilder does nothing until `send` is called"]
pub struct RequestBuilder {
    client: HttpClient,
    inner: Result<reqwest::RequestBuilder, NetError>,
}

impl RequestBuilder {
    pub(super) fn new(client: HttpClient, method: Method, url: Result<Url, NetError>) -> Self {
        let inner = url.map(|url| client.client.request(method, url));
        Self { client, inner }
    }

    fn map(
        mut self,
        change: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
    ) -> Self {
        self.inner = self.inner.map(change);
        self
    }

    /// Add a header.
    pub fn header<K, V>(self, key: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        self.map(|inner| inner.header(key, value))
    }

    /// Add headers. Mark a value sensitive ([`HeaderValue::set_sensitive`]) to
    /// have it dropped when a redirect leaves the origin, as `Authorization` is.
    pub fn headers(self, headers: HeaderMap) -> Self {
        self.map(|inner| inner.headers(headers))
    }

    /// `Authorization: Bearer token`, marked sensitive.
    pub fn bearer_auth(self, token: impl std::fmt::Display) -> Self {
        self.map(|inner| inner.bearer_auth(token))
    }

    /// `Authorization: Basic …`, marked sensitive.
    pub fn basic_auth(
        self,
        user: impl std::fmt::Display,
        password: Option<impl std::fmt::Display>,
    ) -> Self {
        self.map(|inner| inner.basic_auth(user, password))
    }

    /// The body.
    pub fn body(self, body: impl Into<reqwest::Body>) -> Self {
        self.map(|inner| inner.body(body))
    }

    /// A JSON body, with `Content-Type: application/json`.
    pub fn json<T: Serialize + ?Sized>(self, json: &T) -> Self {
        self.map(|inner| inner.json(json))
    }

    /// A timeout for the whole request, from sending to the end of the body.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.map(|inner| inner.timeout(timeout))
    }

    /// Send it: refused unless granted, redirects checked hop by hop.
    pub async fn send(self) -> Result<Response, NetError> {
        let request = self.inner?.build()?;
        self.client.execute(request).await
    }
}
