//! Where a Temporal server is and how to reach it ([`Endpoint`]): its
//! address and namespace, and for a server that asks for them (Temporal
//! Cloud, a self-hosted one behind TLS), TLS, a client certificate and an
//! API key.

use std::path::Path;
use std::str::FromStr;

use temporalio_client::{
    Client, ClientOptions, ClientTlsOptions, Connection, ConnectionOptions, TlsOptions, Url,
};

use crate::client::{DEFAULT_NAMESPACE, TemporalError};

/// Where a Temporal server is and how to reach it.
///
/// ```
/// use agentry_temporal::Endpoint;
/// let local = Endpoint::new("127.0.0.1:7233");
/// assert_eq!(local.namespace, "default");
/// assert!(!local.uses_tls());
/// let cloud = Endpoint::new("my-ns.a1b2c.tmprl.cloud:7233")
///     .namespace("my-ns.a1b2c")
///     .api_key("…");
/// assert!(cloud.uses_tls()); // an API key goes over TLS only
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`, or a URL.
    pub address: String,
    /// The namespace runs live in.
    pub namespace: String,
    /// An API key, sent as a bearer token on every call (over TLS).
    pub api_key: Option<String>,
    /// TLS settings; `None` is plaintext (unless an API key is set).
    pub tls: Option<Tls>,
}

/// TLS to a Temporal server: which server to trust, and this side's
/// certificate for mutual TLS. All PEM.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// The CA that signed the server's certificate, when the system's
    /// roots do not (a self-hosted server's own CA).
    pub server_ca: Option<Vec<u8>>,
    /// The name the server's certificate must carry, when it is not the
    /// address's host.
    pub server_name: Option<String>,
    /// This side's certificate and its private key, for mutual TLS.
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("address", &self.address)
            .field("namespace", &self.namespace)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("tls", &self.tls)
            .finish()
    }
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("server_ca", &self.server_ca.as_ref().map(Vec::len))
            .field("server_name", &self.server_name)
            .field("client_cert", &self.client_cert.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Endpoint {
    /// The server at `address`, in the `default` namespace, in plaintext.
    pub fn new(address: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
            api_key: None,
            tls: None,
        }
    }

    /// In `namespace` instead.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Send `key` on every call (Temporal Cloud's API keys); implies TLS.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Over TLS, as `tls` says.
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Whether calls go over TLS.
    pub fn uses_tls(&self) -> bool {
        self.tls.is_some() || self.api_key.is_some()
    }

    /// A client of the server, checked by a first call (the server must
    /// answer, and the namespace exist).
    pub async fn connect(&self) -> Result<Client, TemporalError> {
        let address = &self.address;
        if self.uses_tls() && address.to_ascii_lowercase().starts_with("http://") {
            return Err(TemporalError::new(
                format!("connecting to Temporal at {address}"),
                "TLS or an API key was asked for, but the address says http://: give host:port or an https:// address",
            ));
        }
        let scheme = if self.uses_tls() { "https" } else { "http" };
        let url = if address.contains("://") {
            address.to_owned()
        } else {
            format!("{scheme}://{address}")
        };
        let url = Url::from_str(&url)
            .map_err(|e| TemporalError::new(format!("reading the address \"{address}\""), e))?;
        // An API key alone goes over TLS with the system's roots.
        let system = self.api_key.as_ref().map(|_| Tls::system());
        let tls = self.tls.as_ref().or(system.as_ref()).map(|tls| {
            let client = tls.client_cert.as_ref().map(|(cert, key)| {
                ClientTlsOptions::builder()
                    .client_cert(cert.clone())
                    .client_private_key(key.clone())
                    .build()
            });
            TlsOptions::builder()
                .maybe_server_root_ca_cert(tls.server_ca.clone())
                .maybe_domain(tls.server_name.clone())
                .maybe_client_tls_options(client)
                .build()
        });
        let options = ConnectionOptions::new(url)
            .maybe_api_key(self.api_key.clone())
            .maybe_tls_options(tls)
            .build();
        let connection = Connection::connect(options)
            .await
            .map_err(|e| TemporalError::new(format!("connecting to Temporal at {address}"), e))?;
        Client::new(
            connection,
            ClientOptions::new(self.namespace.clone()).build(),
        )
        .map_err(|e| TemporalError::new(format!("connecting to Temporal at {address}"), e))
    }
}

impl Tls {
    /// TLS with the system's roots and no client certificate.
    pub fn system() -> Self {
        Self::default()
    }

    /// Read what is given from PEM files: the server's CA, this side's
    /// certificate and key (both or neither).
    pub fn from_files(
        server_ca: Option<&Path>,
        client_cert: Option<&Path>,
        client_key: Option<&Path>,
    ) -> Result<Self, TemporalError> {
        let read = |path: &Path| {
            std::fs::read(path)
                .map_err(|e| TemporalError::new(format!("reading {}", path.display()), e))
        };
        let client_cert = match (client_cert, client_key) {
            (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
            (None, None) => None,
            _ => {
                return Err(TemporalError::new(
                    "reading the client certificate",
                    "mutual TLS needs both a certificate and its key",
                ));
            }
        };
        Ok(Self {
            server_ca: server_ca.map(read).transpose()?,
            server_name: None,
            client_cert,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_or_tls_is_never_sent_to_an_http_address() {
        for endpoint in [
            Endpoint::new("http://127.0.0.1:9").api_key("secret"),
            Endpoint::new("HTTP://127.0.0.1:9").tls(Tls::system()),
        ] {
            let error = endpoint.connect().await.unwrap_err().to_string();
            assert!(error.contains("the address says http://"), "{error}");
            assert!(!error.contains("secret"), "{error}");
        }
        // Nor is the key shown in debug output.
        let shown = format!("{:?}", Endpoint::new("h:1").api_key("secret"));
        assert!(!shown.contains("secret"), "{shown}");
    }
}
