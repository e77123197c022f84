//! The sign-in itself, and the HTTP client that runs it when the server
//! asks: [`SigningIn`] sends each request with the current token (rmcp's
//! `AuthClient` refreshes it before it expires, and once more when the
//! server rejects it); a 401 that is left signs in again, a 403
//! `insufficient_scope` signs in for the larger scope, and the request is
//! sent again, at most [`MAX_SIGN_INS`] times.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, CredentialStore, JwtSigningAlgorithm,
    OAuthClientConfig, StoredCredentials,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use tokio::sync::Mutex;
use tracing::instrument::WithSubscriber;

use super::{ClientCredentials, JwtAssertion, MAX_SIGN_INS, McpOAuth, SignIn, TokenStore};

type HttpError = StreamableHttpError<reqwest::Error>;

/// One server's sign-in: its settings, its token store, and the
/// authorization manager the HTTP client takes tokens from.
pub(crate) struct SignInFlow {
    server: String,
    url: String,
    oauth: McpOAuth,
    store: TokenStore,
    manager: Arc<Mutex<AuthorizationManager>>,
    /// How many sign-ins have happened; held while one runs, so requests
    /// that are refused together cause one sign-in, not one each.
    sign_ins: Mutex<u64>,
}

impl SignInFlow {
    /// The flow for the server at `url`, with the tokens a former run
    /// stored (refreshed as they expire), or none yet: the first request
    /// the server refuses signs in.
    pub(crate) async fn start(
        server: &str,
        url: &str,
        oauth: &McpOAuth,
        http: reqwest::Client,
    ) -> Result<SigningIn, AuthError> {
        let store = oauth.store_for(url);
        let mut manager = AuthorizationManager::new(url).await?;
        manager.set_credential_store(store.clone());
        // Tokens an earlier run stored (rmcp reads the store, and discovers
        // the server's metadata only when there are some).
        match manager.initialize_from_store().await {
            Ok(true) => {
                if let (Some(id), Some(secret)) = (&oauth.client_id, &oauth.client_secret) {
                    let redirect = oauth.redirect_uri.clone().unwrap_or_default();
                    manager.configure_client(
                        OAuthClientConfig::new(id.clone(), redirect)
                            .with_client_secret(secret.clone()),
                    )?;
                }
            }
            Ok(false) => {}
            // The stored tokens cannot be used (an unreadable token file,
            // their server unreachable now): the server's refusal will sign in.
            Err(error) => tracing::warn!(
                server,
                %error,
                "the stored MCP sign-in cannot be used; the server's refusal will sign in again"
            ),
        }
        let inner = AuthClient::new(http, manager);
        let manager = inner.auth_manager.clone();
        let flow = Arc::new(Self {
            server: server.to_owned(),
            url: url.to_owned(),
            oauth: oauth.clone(),
            store,
            manager: manager.clone(),
            sign_ins: Mutex::new(0),
        });
        Ok(SigningIn { inner, flow })
    }

    /// Sign in (again), unless another request did since `seen`; `needed`
    /// is the server's challenge (`WWW-Authenticate`), `step_up` whether it
    /// was a 403 asking for more scope.
    async fn answer(&self, seen: u64, needed: &str, step_up: bool) -> Result<(), AuthError> {
        let mut sign_ins = self.sign_ins.lock().await;
        if *sign_ins != seen {
            return Ok(());
        }
        let scopes = if step_up {
            let required = scope_of(needed).ok_or_else(|| {
                AuthError::InvalidScope(
                    "the server refused the token for its scope but named no scope".into(),
                )
            })?;
            let mut scopes = self.manager.lock().await.get_current_scopes().await;
            for scope in required.split_whitespace() {
                if !scopes.iter().any(|s| s == scope) {
                    scopes.push(scope.to_owned());
                }
            }
            Some(scopes)
        } else {
            None
        };
        let manager = match &self.oauth.credentials {
            Some(credentials) => self.client_credentials(needed, credentials).await?,
            None => self.authorize(needed, scopes).await?,
        };
        *self.manager.lock().await = manager;
        *sign_ins += 1;
        Ok(())
    }

    /// A new manager for this server, its metadata discovered from the
    /// server's challenge.
    async fn discovered(
        &self,
        challenge: &str,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthError> {
        let mut manager = AuthorizationManager::new(&self.url).await?;
        manager.set_credential_store(self.store.clone());
        let resolution = manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await?;
        if let Some(pinned) = &self.oauth.authorization_server
            && resolution.metadata.issuer.as_deref() != Some(pinned.as_str())
        {
            return Err(AuthError::AuthorizationServerMismatch {
                expected_issuer: pinned.clone(),
                received_issuer: resolution
                    .metadata
                    .issuer
                    .as_deref()
                    .map(crate::client::escaped)
                    .unwrap_or_default(),
            });
        }
        let metadata = resolution.metadata.clone();
        manager.set_metadata(resolution.metadata);
        Ok((manager, metadata))
    }

    /// The authorization-code flow: register as configured, send the person
    /// to sign in, check the answer and trade its code for tokens.
    async fn authorize(
        &self,
        challenge: &str,
        scopes: Option<Vec<String>>,
    ) -> Result<AuthorizationManager, AuthError> {
        let (manager, _) = self.discovered(challenge).await?;
        let redirect_uri = self.oauth.redirect_uri.clone().unwrap_or_else(|| {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .map(|address| address.port())
                .unwrap_or(8976);
            format!("http://127.0.0.1:{port}/callback")
        });
        let mut request = AuthorizationRequest::new(&redirect_uri)
            .with_client_name(&self.oauth.client_name)
            .with_application_type("native")
            .with_initial_scope_selection();
        match scopes {
            Some(scopes) => request = request.with_scopes(scopes),
            None if !self.oauth.scopes.is_empty() => {
                request = request.with_scopes(self.oauth.scopes.clone())
            }
            None => {}
        }
        if let Some(id) = &self.oauth.client_id {
            request = request.with_preregistered_client(id);
            if let Some(secret) = &self.oauth.client_secret {
                request = request.with_client_secret(secret);
            }
        }
        if let Some(url) = &self.oauth.client_metadata_url {
            request = request.with_client_metadata_url(url);
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, error)| error)?;
        // The address is the authorization server's to choose; only a web
        // page is opened (a `file:` or an app's own scheme could run what
        // the server wants on this machine).
        if !is_web_address(&session.auth_url) {
            return Err(AuthError::AuthorizationFailed(format!(
                "the authorization server's sign-in address is not an https (or loopback http) one: {}",
                crate::client::escaped(&session.auth_url)
            )));
        }
        tracing::info!(server = %self.server, "signing in to the MCP server");
        let answer = self
            .oauth
            .authorizer
            .authorize(SignIn {
                server: self.server.clone(),
                url: session.auth_url.clone(),
                redirect_uri,
            })
            .await
            .map_err(AuthError::AuthorizationFailed)?;
        // rmcp logs the authorization code at debug level as it trades it;
        // no subscriber hears this one future, so the code is never logged
        // (its errors come back as the result).
        session
            .handle_callback_url(&answer)
            .with_subscriber(tracing::subscriber::NoSubscriber::default())
            .await?;
        tracing::info!(server = %self.server, "signed in to the MCP server");
        Ok(session.auth_manager)
    }

    /// The client-credentials grant (no person): a secret or a signed JWT
    /// for a token, fetched again whenever the server refuses the last one.
    async fn client_credentials(
        &self,
        challenge: &str,
        credentials: &ClientCredentials,
    ) -> Result<AuthorizationManager, AuthError> {
        let (mut manager, metadata) = self.discovered(challenge).await?;
        let resource = Some(self.url.clone());
        let scopes = self.oauth.scopes.clone();
        let config = match credentials {
            ClientCredentials::JwtBearer {
                client_id,
                assertion,
            } => {
                self.jwt_bearer(&metadata, client_id.as_deref(), assertion)
                    .await?;
                return Ok(manager);
            }
            ClientCredentials::Secret {
                client_id,
                client_secret,
            } => ClientCredentialsConfig::ClientSecret {
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
                scopes,
                resource,
            },
            ClientCredentials::PrivateKeyJwt {
                client_id,
                private_key_pem,
                algorithm,
            } => ClientCredentialsConfig::PrivateKeyJwt {
                client_id: client_id.clone(),
                signing_key: private_key_pem.as_bytes().to_vec(),
                signing_algorithm: algorithm_of(algorithm)?,
                token_endpoint_audience: None,
                scopes,
                resource,
            },
        };
        manager.validate_client_credentials_metadata(&config)?;
        manager.configure_client_credentials(&config)?;
        // rmcp's JWT exchange holds a non-`Send` value across an await, so
        // it runs on a thread of its own.
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            runtime.block_on(async move {
                manager.exchange_client_credentials(&config).await?;
                Ok(manager)
            })
        })
        .await
        .map_err(|error| AuthError::InternalError(error.to_string()))?
    }
}

/// An https address, or an http one on loopback.
fn is_web_address(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => url.host_str().and_then(super::loopback_ip).is_some(),
        _ => false,
    }
}

/// The grant type of RFC 7523's JWT-bearer grant.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

impl SignInFlow {
    /// Trade a workload's identity token for an access token (the
    /// JWT-bearer grant), once: a refused trade is an error, never retried
    /// or traded for another grant.
    async fn jwt_bearer(
        &self,
        metadata: &AuthorizationMetadata,
        client_id: Option<&str>,
        assertion: &JwtAssertion,
    ) -> Result<(), AuthError> {
        let endpoint = &metadata.token_endpoint;
        if !is_web_address(endpoint) {
            return Err(AuthError::ClientCredentialsError(format!(
                "the token endpoint is not an https (or loopback http) address: {}",
                crate::client::escaped(endpoint)
            )));
        }
        let assertion = assertion
            .read()
            .map_err(AuthError::ClientCredentialsError)?;
        let mut form = vec![
            ("grant_type", JWT_BEARER.to_owned()),
            ("assertion", assertion),
            ("resource", self.url.clone()),
        ];
        if let Some(id) = client_id {
            form.push(("client_id", id.to_owned()));
        }
        if !self.oauth.scopes.is_empty() {
            form.push(("scope", self.oauth.scopes.join(" ")));
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|error| AuthError::InternalError(error.to_string()))?;
        let response = http
            .post(endpoint)
            .form(&form)
            .send()
            .await
            .map_err(|error| AuthError::ClientCredentialsError(error.to_string()))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|error| AuthError::ClientCredentialsError(error.to_string()))?;
        if !status.is_success() {
            let said = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            return Err(AuthError::ClientCredentialsError(format!(
                "the authorization server refused the identity token ({status}): {}",
                crate::client::escaped(&said)
            )));
        }
        let token: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_slice(&body)
            .map_err(|error| {
                AuthError::ClientCredentialsError(format!("an unreadable token answer: {error}"))
            })?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let mut stored = StoredCredentials::new(
            client_id.unwrap_or("workload").to_owned(),
            Some(token),
            self.oauth.scopes.clone(),
            Some(now),
        );
        stored.issuer = metadata.issuer.clone();
        self.store.save(stored).await
    }
}

/// The `scope` a `WWW-Authenticate` challenge names.
fn scope_of(challenge: &str) -> Option<String> {
    let base = reqwest::Url::parse("http://localhost/").ok()?;
    rmcp::transport::auth::WWWAuthenticateParams::parse(challenge, &base).scope
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_pages_are_opened_for_sign_in() {
        assert!(is_web_address("https://auth.example.com/authorize?x=1"));
        assert!(is_web_address("http://127.0.0.1:9/authorize"));
        assert!(is_web_address("http://localhost:9/authorize"));
        for refused in [
            "file:///etc/passwd?response_type=code",
            "vscode://extension/run",
            "http://auth.example.com/authorize",
            "javascript:alert(1)",
            "not a url",
        ] {
            assert!(!is_web_address(refused), "{refused}");
        }
    }
}

fn algorithm_of(name: &str) -> Result<JwtSigningAlgorithm, AuthError> {
    Ok(match name {
        "ES256" => JwtSigningAlgorithm::ES256,
        "ES384" => JwtSigningAlgorithm::ES384,
        "RS256" => JwtSigningAlgorithm::RS256,
        "RS384" => JwtSigningAlgorithm::RS384,
        "RS512" => JwtSigningAlgorithm::RS512,
        other => {
            return Err(AuthError::ClientCredentialsError(format!(
                "unknown signing algorithm {other:?} (ES256, ES384, RS256, RS384 or RS512)"
            )));
        }
    })
}

/// rmcp's `AuthClient` (tokens attached, refreshed before they expire) with
/// the sign-in run whenever the server still refuses.
#[derive(Clone)]
pub(crate) struct SigningIn {
    inner: AuthClient<reqwest::Client>,
    flow: Arc<SignInFlow>,
}

impl SigningIn {
    /// Send (`send` makes the request), signing in and sending again on a
    /// refusal, at most [`MAX_SIGN_INS`] times.
    async fn react<T, F, Fut>(&self, send: F) -> Result<T, HttpError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        let mut tries = 0;
        loop {
            let seen = *self.flow.sign_ins.lock().await;
            let (challenge, step_up) = match send().await {
                Err(HttpError::AuthRequired(refused)) => (refused.www_authenticate_header, false),
                Err(HttpError::InsufficientScope(refused)) => {
                    (refused.www_authenticate_header, true)
                }
                other => return other,
            };
            tries += 1;
            if tries > MAX_SIGN_INS {
                return Err(HttpError::Auth(AuthError::AuthorizationFailed(format!(
                    "the MCP server {} still refuses after {MAX_SIGN_INS} sign-ins",
                    self.flow.server
                ))));
            }
            self.flow.answer(seen, &challenge, step_up).await?;
        }
    }
}

impl StreamableHttpClient for SigningIn {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.react(|| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                None,
                headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.react(|| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                None,
                headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.react(|| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                None,
                headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        // Leaving needs no new sign-in.
        self.inner
            .delete_session(uri, session_id, None, headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>, HttpError> {
        self.react(|| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                None,
                headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>, HttpError> {
        self.react(|| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                None,
                headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
