//! Signing in to an MCP server that needs OAuth, as the MCP authorization
//! specification describes it, on rmcp's OAuth client (the `oauth2` crate
//! underneath): the server's 401 names its protected-resource metadata
//! (RFC 9728), which names the authorization server, whose metadata (RFC
//! 8414 or OpenID discovery) gives the endpoints; the client registers
//! (a pre-registered client, a client ID metadata document, or dynamic
//! registration, RFC 7591), sends the person to sign in with PKCE (S256)
//! and the `resource` parameter (RFC 8707), checks the answer's `iss` (RFC
//! 9207), and trades the code for tokens. Tokens are refreshed before they
//! expire, a 403 `insufficient_scope` asks for the larger scope (step-up),
//! and a 401 mid-session (a revoked token, an authorization server that
//! changed) signs in again. Machine clients use the client-credentials grant
//! instead (a secret or a private-key JWT).
//!
//! Tokens are kept in a [`TokenStore`]: by default a file readable by its
//! owner only (0600) under the user's configuration folder. No token,
//! secret or code is ever written to a log: the types here print them as
//! `<redacted>`.

mod callback;
mod flow;
mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

pub(crate) use flow::SignInFlow;
pub use store::TokenStore;

/// How long [`Authorizer::browser`] waits for the person to sign in.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

/// Most sign-ins (a new one, or a step-up to a larger scope) one request
/// may cause before its error is returned: a server that keeps refusing
/// every token is not asked forever.
pub const MAX_SIGN_INS: u32 = 3;

/// What an [`Authorizer`] is asked to do: have the person approve at `url`,
/// and return the address the authorization server sent the browser back
/// to (`redirect_uri` with `code`, `state` and `iss`).
#[derive(Debug, Clone)]
pub struct SignIn {
    /// The MCP server's name in the configuration.
    pub server: String,
    /// The authorization address to open.
    pub url: String,
    /// Where the authorization server sends the browser back.
    pub redirect_uri: String,
}

type AuthorizeFn = dyn Fn(SignIn) -> BoxFuture<'static, Result<String, String>> + Send + Sync;

/// Who takes the person through the authorization server's sign-in page.
#[derive(Clone)]
pub struct Authorizer(Arc<AuthorizeFn>);

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authorizer")
    }
}

impl Authorizer {
    /// An authorizer of your own: given the sign-in, it returns the full
    /// redirect address (or why it could not).
    pub fn new<F, Fut>(authorize: F) -> Self
    where
        F: Fn(SignIn) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<String, String>> + Send + 'static,
    {
        Self(Arc::new(move |sign_in| Box::pin(authorize(sign_in))))
    }

    /// The person signs in with a web browser (the default): the address is
    /// printed on standard error and opened in the system's browser where
    /// there is one (`xdg-open`, `open`), and a listener on the loopback
    /// redirect address (RFC 8252) takes the answer, for up to
    /// [`SIGN_IN_TIMEOUT`].
    pub fn browser() -> Self {
        Self::new(|sign_in: SignIn| callback::through_browser(sign_in, SIGN_IN_TIMEOUT))
    }

    /// For authorization servers that approve without a person (a test
    /// server, a pre-approved machine client): the authorization address is
    /// fetched without following its redirect, and the redirect is the
    /// answer.
    pub fn headless() -> Self {
        Self::new(callback::headless)
    }

    /// Take the person through `sign_in`: the redirect address, or why not
    /// (authorizers compose: one may wrap another).
    pub async fn authorize(&self, sign_in: SignIn) -> Result<String, String> {
        (self.0)(sign_in).await
    }
}

/// A machine client's own credentials, for the client-credentials grant
/// (no person signs in).
#[derive(Clone, PartialEq, Eq)]
pub enum ClientCredentials {
    /// A client secret, sent as the authorization server prefers
    /// (`client_secret_basic` or `client_secret_post`).
    Secret {
        /// The client's ID.
        client_id: String,
        /// Its secret.
        client_secret: String,
    },
    /// A private key that signs a JWT assertion (`private_key_jwt`, RFC 7523).
    PrivateKeyJwt {
        /// The client's ID.
        client_id: String,
        /// The private key, PEM (PKCS#8 EC or RSA).
        private_key_pem: String,
        /// `ES256`, `ES384`, `RS256`, `RS384` or `RS512`.
        algorithm: String,
    },
    /// A workload's identity token from its platform (a Kubernetes service
    /// account, a cloud's workload identity), traded for an access token
    /// with the JWT-bearer grant (RFC 7523, MCP's workload identity
    /// federation). A file is read again at each trade, as platforms rotate it.
    JwtBearer {
        /// The client's ID, where the authorization server wants one.
        client_id: Option<String>,
        /// The identity token.
        assertion: JwtAssertion,
    },
}

/// Where a workload's identity token comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum JwtAssertion {
    /// This token.
    Token(String),
    /// The token in this file, read at each use.
    File(PathBuf),
}

impl JwtAssertion {
    pub(crate) fn read(&self) -> Result<String, String> {
        match self {
            Self::Token(token) => Ok(token.clone()),
            Self::File(path) => std::fs::read_to_string(path)
                .map(|text| text.trim().to_owned())
                .map_err(|error| format!("reading the identity token {}: {error}", path.display())),
        }
    }
}

impl std::fmt::Debug for JwtAssertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Token(_) => f.write_str("Token(<redacted>)"),
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Secret { client_id, .. } => f
                .debug_struct("Secret")
                .field("client_id", client_id)
                .field("client_secret", &"<redacted>")
                .finish(),
            Self::PrivateKeyJwt {
                client_id,
                algorithm,
                ..
            } => f
                .debug_struct("PrivateKeyJwt")
                .field("client_id", client_id)
                .field("private_key_pem", &"<redacted>")
                .field("algorithm", algorithm)
                .finish(),
            Self::JwtBearer {
                client_id,
                assertion,
            } => f
                .debug_struct("JwtBearer")
                .field("client_id", client_id)
                .field("assertion", assertion)
                .finish(),
        }
    }
}

/// How a client signs in to one MCP server with OAuth.
///
/// ```
/// use agentry_mcp::McpServerConfig;
/// use agentry_mcp::client::{Authorizer, McpOAuth, TokenStore};
///
/// let config = McpServerConfig::http("notes", "https://mcp.example.com/mcp").oauth(
///     McpOAuth::new()
///         .client_name("my agent")
///         .scopes(["notes:read"])
///         .store(TokenStore::memory())
///         .authorizer(Authorizer::browser()),
/// );
/// assert!(config.oauth.is_some());
/// ```
#[derive(Clone)]
pub struct McpOAuth {
    pub(crate) client_name: String,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) credentials: Option<ClientCredentials>,
    pub(crate) scopes: Vec<String>,
    pub(crate) redirect_uri: Option<String>,
    pub(crate) authorization_server: Option<String>,
    pub(crate) store: Option<TokenStore>,
    pub(crate) authorizer: Authorizer,
}

impl std::fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuth")
            .field("client_name", &self.client_name)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("credentials", &self.credentials)
            .field("scopes", &self.scopes)
            .field("redirect_uri", &self.redirect_uri)
            .field("authorization_server", &self.authorization_server)
            .field("store", &self.store)
            .finish()
    }
}

impl Default for McpOAuth {
    fn default() -> Self {
        Self::new()
    }
}

impl McpOAuth {
    /// Sign in with a browser, registering dynamically as `agentry`, the
    /// scope chosen as the specification says (the server's challenge, else
    /// its metadata's `scopes_supported`, else none), tokens in the default
    /// [`TokenStore`].
    pub fn new() -> Self {
        Self {
            client_name: "agentry".into(),
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            credentials: None,
            scopes: Vec::new(),
            redirect_uri: None,
            authorization_server: None,
            store: None,
            authorizer: Authorizer::browser(),
        }
    }

    /// A machine client: the client-credentials grant, no person signs in.
    pub fn client_credentials(credentials: ClientCredentials) -> Self {
        Self {
            credentials: Some(credentials),
            ..Self::new()
        }
    }

    /// The name a dynamic registration gives.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// A client registered with the authorization server beforehand
    /// (`secret` for a confidential client); no registration is made.
    pub fn client(mut self, id: impl Into<String>, secret: Option<String>) -> Self {
        self.client_id = Some(id.into());
        self.client_secret = secret;
        self
    }

    /// The HTTPS address of this client's metadata document, used as its
    /// client ID where the authorization server accepts such IDs
    /// (`client_id_metadata_document_supported`), instead of registering.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Ask for these scopes instead of the ones the server suggests.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The redirect address (a loopback one on a free port by default:
    /// `http://127.0.0.1:PORT/callback`).
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = Some(uri.into());
        self
    }

    /// Sign in only with the authorization server whose issuer is exactly
    /// this (`https://auth.example.com`): the MCP server's metadata names
    /// its authorization server, so without a pin a server that was taken
    /// over could send a configured client secret elsewhere. Pin it when you
    /// give a secret.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_server = Some(issuer.into());
        self
    }

    /// Where tokens are kept.
    pub fn store(mut self, store: TokenStore) -> Self {
        self.store = Some(store);
        self
    }

    /// Who takes the person through the sign-in.
    pub fn authorizer(mut self, authorizer: Authorizer) -> Self {
        self.authorizer = authorizer;
        self
    }

    /// The token store for the server at `url`: the configured one, else a
    /// file under [`default_store_dir`] named for the address.
    pub fn store_for(&self, url: &str) -> TokenStore {
        self.store
            .clone()
            .unwrap_or_else(|| TokenStore::file(default_store_dir().join(store::file_name(url))))
    }
}

/// The loopback address a URL's host names: `localhost`, or a loopback
/// IPv4 or IPv6 address (brackets and all).
pub(crate) fn loopback_ip(host: &str) -> Option<std::net::IpAddr> {
    let ip: std::net::IpAddr = match host {
        "localhost" => std::net::Ipv4Addr::LOCALHOST.into(),
        host => host.trim_matches(['[', ']']).parse().ok()?,
    };
    ip.is_loopback().then_some(ip)
}

/// `$XDG_CONFIG_HOME/agentry/mcp-auth`, else `~/.config/agentry/mcp-auth`.
pub fn default_store_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("agentry").join("mcp-auth")
}
