//! The connection to one server: spawned or dialled, the handshake, and
//! restarts with backoff after the server dies.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::ProtocolVersion;
use rmcp::service::RunningService;
use rmcp::transport::IntoTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use tokio::io::AsyncBufReadExt;

use super::config::{McpProtocol, McpServerConfig, McpTransport};
use super::handler::Handler;
use super::oauth::SignInFlow;
use crate::McpError;

/// A live session with a server.
pub(crate) type Session = RunningService<RoleClient, Handler>;

/// Longest wait between restart attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The state of the connection.
pub(crate) enum Link {
    /// Connected.
    Up(Session),
    /// Down since `since`, after `failures` failed restarts; `error` says why.
    Down {
        since: Instant,
        failures: u32,
        error: String,
    },
}

impl Link {
    /// How long after going down the next restart may be tried: at once the
    /// first time, then 1 s, 2 s, 4 s … up to 30 s.
    pub(crate) fn retry_at(since: Instant, failures: u32) -> Instant {
        match failures {
            0 => since,
            n => since + Duration::from_secs(1 << (n - 1).min(5)).min(MAX_BACKOFF),
        }
    }
}

/// Connect and shake hands, within the configured connect timeout.
pub(crate) async fn connect(
    config: &McpServerConfig,
    handler: Handler,
) -> Result<Session, McpError> {
    let server = config.name.clone();
    let connecting = async {
        match &config.transport {
            McpTransport::Stdio { program, args, env } => {
                let command = tokio::process::Command::new(program).configure(|command| {
                    command.args(args);
                    command.envs(env.iter().map(|(k, v)| (k, v)));
                });
                let (transport, stderr) = TokioChildProcess::builder(command)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|error| McpError::Spawn {
                        program: program.clone(),
                        message: error.to_string(),
                    })?;
                if let Some(stderr) = stderr {
                    tokio::spawn(forward_stderr(server.clone(), stderr));
                }
                start(handler, transport, config.protocol).await
            }
            McpTransport::Http {
                url,
                bearer,
                headers,
            } => {
                let mut extra = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|_| McpError::Config(format!("invalid header name {name:?}")))?;
                    let value = http::HeaderValue::try_from(value.as_str()).map_err(|_| {
                        McpError::Config(format!("invalid value for header {name}"))
                    })?;
                    extra.insert(name, value);
                }
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .custom_headers(extra);
                let client = reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .pool_max_idle_per_host(0)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|error| McpError::Config(error.to_string()))?;
                if let Some(oauth) = &config.oauth {
                    let client = SignInFlow::start(&server, url, oauth, client)
                        .await
                        .map_err(|error| McpError::SignIn {
                            server: server.clone(),
                            reason: super::escaped(&error.to_string()),
                        })?;
                    let transport =
                        StreamableHttpClientTransport::with_client(client, transport_config);
                    return start(handler, transport, config.protocol).await;
                }
                if let Some(token) = bearer {
                    transport_config = transport_config.auth_header(token.clone());
                }
                let transport =
                    StreamableHttpClientTransport::with_client(client, transport_config);
                start(handler, transport, config.protocol).await
            }
        }
    };
    // A sign-in may wait on a person.
    let limit = match config.oauth {
        Some(_) => config.connect_timeout + super::oauth::SIGN_IN_TIMEOUT,
        None => config.connect_timeout,
    };
    tokio::time::timeout(limit, connecting)
        .await
        .map_err(|_| McpError::Handshake(format!("no answer within {limit:?}")))?
}

/// The handshake of the configured protocol era.
async fn start<T, E, A>(
    handler: Handler,
    transport: T,
    protocol: McpProtocol,
) -> Result<Session, McpError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = match protocol {
        McpProtocol::Initialize => ClientLifecycleMode::Initialize,
        McpProtocol::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        McpProtocol::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
    };
    handler
        .serve_with_lifecycle(transport, lifecycle)
        .await
        // Escaped: the text may hold what a server (or its authorization
        // server) wrote, which must not rewrite a terminal.
        .map_err(|error| McpError::Handshake(super::escaped(&error.to_string())))
}

/// The child's stderr, line by line, to `tracing` (never to the terminal).
async fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "agentry_mcp::stderr", server = %server, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_back_off_up_to_thirty_seconds() {
        let since = Instant::now();
        let wait = |failures| Link::retry_at(since, failures) - since;
        assert_eq!(wait(0), Duration::ZERO, "the first restart is at once");
        assert_eq!(wait(1), Duration::from_secs(1));
        assert_eq!(wait(3), Duration::from_secs(4));
        assert_eq!(wait(6), Duration::from_secs(30));
        assert_eq!(wait(u32::MAX - 1), Duration::from_secs(30));
    }
}
