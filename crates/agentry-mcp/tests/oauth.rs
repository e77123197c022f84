//! Signing in to an MCP server that needs OAuth, against a real one on
//! loopback: the official MCP TypeScript SDK's authorization server and
//! protected resource (`npm/web/oauth-mcp-server.mjs`, approving at once,
//! access tokens living 2 s). The client discovers, registers, signs in with
//! PKCE, calls; the token expires mid-session and is refreshed; a second
//! client on the same token file signs in with no new authorization; and no
//! token, refresh token or code reaches `tracing` (every target, every
//! level), the audit log or the run journal. Scripted model: loop logic.

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentry_agent::{Agent, AuditLog};
use agentry_core::journal::{InMemoryJournal, RunJournal};
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::ToolCall;
use agentry_mcp::client::{Authorizer, McpOAuth, SignIn, TokenStore};
use agentry_mcp::{McpClient, McpServerConfig};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// The server, and every event it printed (one JSON object a line).
struct OAuthServer {
    child: Child,
    url: String,
    events: Arc<Mutex<Vec<Value>>>,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl OAuthServer {
    fn start() -> Option<Self> {
        Self::start_as("")
    }

    /// The server, made hostile as `HOSTILE` says (see the script).
    fn start_as(hostile: &str) -> Option<Self> {
        let (node, _) = support::peers()?;
        let script = support::modules().join("../web/oauth-mcp-server.mjs");
        let mut child = Command::new(node)
            .arg(script)
            .env("HOSTILE", hostile)
            .current_dir(support::modules().join(".."))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let url = first["url"].as_str().unwrap().to_owned();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<Value>(&line) {
                    sink.lock().unwrap().push(event);
                }
            }
        });
        Some(Self { child, url, events })
    }

    fn seen(&self, event: &str) -> Vec<Value> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["event"] == event)
            .cloned()
            .collect()
    }

    /// Every secret it handed out: access and refresh tokens.
    fn secrets(&self) -> Vec<String> {
        self.seen("token")
            .iter()
            .flat_map(|e| [e["access_token"].clone(), e["refresh_token"].clone()])
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    }
}

/// Everything `tracing` was told, fields included, at every level.
#[derive(Clone, Default)]
struct Everything(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);
impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
}

impl<S: tracing::Subscriber> Layer<S> for Everything {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut line = event.metadata().target().to_owned();
        event.record(&mut Fields(&mut line));
        let mut all = self.0.lock().unwrap();
        all.push_str(&line);
        all.push('\n');
    }

    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        let mut line = attrs.metadata().name().to_owned();
        attrs.record(&mut Fields(&mut line));
        let mut all = self.0.lock().unwrap();
        all.push_str(&line);
        all.push('\n');
    }
}

/// The headless sign-in, also keeping every redirect it read (which holds
/// the authorization code).
fn recording(seen: Arc<Mutex<Vec<String>>>) -> Authorizer {
    Authorizer::new(move |sign_in: SignIn| {
        let seen = seen.clone();
        async move {
            let answer = Authorizer::headless().authorize(sign_in).await?;
            seen.lock().unwrap().push(answer.clone());
            Ok(answer)
        }
    })
}

fn token_file() -> PathBuf {
    std::env::temp_dir()
        .join(format!("agentry-oauth-test-{}", std::process::id()))
        .join("notes.json")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_needs_sign_in_is_signed_in_to_refreshed_and_never_logged() {
    let Some(server) = OAuthServer::start() else {
        return;
    };
    let everything = Everything::default();
    let subscriber = tracing_subscriber::registry().with(everything.clone());
    // Global: the sign-in runs on the runtime's other threads too.
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let redirects = Arc::new(Mutex::new(Vec::new()));
    let file = token_file();
    let oauth = || {
        McpOAuth::new()
            .client_name("agentry test")
            .store(TokenStore::file(&file))
            .authorizer(recording(redirects.clone()))
    };

    // First connection: 401, discovery, registration, sign-in, the call.
    let config = McpServerConfig::http("notes", &server.url).oauth(oauth());
    let client = McpClient::connect(config).await.expect("signed in");
    let tools = client.tools().await.unwrap();
    assert_eq!(tools[0].name, "notes.whoami");
    let first = client.call("whoami", json!({})).await.unwrap();
    assert!(format!("{first:?}").contains("client "), "{first:?}");
    assert_eq!(server.seen("register").len(), 1);
    assert_eq!(server.seen("authorize").len(), 1);
    let authorized = &server.seen("authorize")[0];
    assert_eq!(
        authorized["scopes"],
        json!(["notes:read"]),
        "scope from the resource metadata"
    );
    assert_eq!(
        authorized["resource"],
        json!(server.url),
        "RFC 8707 resource"
    );

    // The token lives 2 s: past it, the next call refreshes first.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    client.call("whoami", json!({})).await.expect("refreshed");
    let grants: Vec<String> = server
        .seen("token")
        .iter()
        .map(|e| e["grant"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    assert!(
        server
            .seen("verified")
            .iter()
            .all(|e| e["expired"] == false),
        "an expired token was never sent"
    );

    // An agent run over the signed-in server, with an audit log and a journal.
    let audit = Arc::new(AuditLog::new());
    let journal = Arc::new(InMemoryJournal::new());
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new("c1", "notes.whoami", json!({}))],
            text: String::new(),
            tokens: Usage::new(1, 1),
        })
        .reply(Step::Final {
            text: "done".into(),
            tokens: Usage::new(1, 1),
        });
    let agent = Agent::builder(model)
        .tool_source(Arc::new(client.clone()))
        .audit(audit.clone())
        .build()
        .unwrap();
    let run = agent
        .durable(journal.clone())
        .start("who am I?")
        .await
        .unwrap();
    let entries = journal.entries(&run.id).await.unwrap();
    client.close().await;

    // A second client on the same token file: no new registration or sign-in.
    let again = McpClient::connect(McpServerConfig::http("notes", &server.url).oauth(oauth()))
        .await
        .unwrap();
    again
        .call("whoami", json!({}))
        .await
        .expect("stored tokens");
    again.close().await;
    assert_eq!(server.seen("authorize").len(), 1, "no second sign-in");
    assert_eq!(server.seen("register").len(), 1);

    // The token file is private.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // No secret anywhere it could leak.
    let logged = everything.0.lock().unwrap().clone();
    assert!(
        logged.contains("signed in to the MCP server"),
        "the sign-in is logged, without secrets"
    );
    let audited = format!("{:?}", audit.records());
    let journaled = format!("{entries:?}");
    let codes: Vec<String> = redirects
        .lock()
        .unwrap()
        .iter()
        .filter_map(|url| reqwest::Url::parse(url).ok())
        .filter_map(|url| {
            url.query_pairs()
                .find(|(k, _)| k == "code")
                .map(|(_, v)| v.into_owned())
        })
        .collect();
    assert!(!codes.is_empty());
    let secrets: Vec<String> = server.secrets().into_iter().chain(codes).collect();
    assert!(secrets.len() >= 5, "{secrets:?}");
    for secret in &secrets {
        let leaks: Vec<&str> = logged
            .lines()
            .filter(|l| l.contains(secret.as_str()))
            .collect();
        assert!(leaks.is_empty(), "a secret reached tracing: {leaks:#?}");
        assert!(
            !audited.contains(secret.as_str()),
            "a secret reached the audit log"
        );
        assert!(
            !journaled.contains(secret.as_str()),
            "a secret reached the journal"
        );
    }
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_nobody_completes_is_a_clear_error() {
    let Some(server) = OAuthServer::start() else {
        return;
    };
    let refuse = Authorizer::new(|_| async { Err("the person closed the browser tab".to_owned()) });
    let config = McpServerConfig::http("notes", &server.url).oauth(
        McpOAuth::new()
            .store(TokenStore::memory())
            .authorizer(refuse),
    );
    let error = McpClient::connect(config).await.unwrap_err().to_string();
    assert!(
        error.contains("the person closed the browser tab"),
        "{error}"
    );
    assert!(server.seen("token").is_empty(), "no token was issued");
}

fn headless(server: &OAuthServer) -> McpServerConfig {
    McpServerConfig::http("notes", &server.url).oauth(
        McpOAuth::new()
            .store(TokenStore::memory())
            .authorizer(Authorizer::headless()),
    )
}

/// A server made hostile as `hostile` says, and the error connecting to it
/// with a headless sign-in gives.
async fn refused_by(hostile: &str) -> Option<(OAuthServer, String)> {
    let server = OAuthServer::start_as(hostile)?;
    let error = McpClient::connect(headless(&server))
        .await
        .unwrap_err()
        .to_string();
    Some((server, error))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_page_that_is_not_a_web_page_is_never_opened() {
    let Some((server, error)) = refused_by("file-authorize").await else {
        return;
    };
    assert!(
        error.contains("the authorization server's sign-in address is not an https (or loopback http) one: file:///etc/passwd"),
        "{error}"
    );
    assert!(server.seen("authorize").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn what_an_authorization_server_writes_cannot_rewrite_the_terminal() {
    let Some((_server, error)) = refused_by("escapes").await else {
        return;
    };
    assert!(
        error.contains("nope \\u{1b}]0;PWNED\\u{7}\\u{1b}[2J"),
        "{error}"
    );
    assert!(!error.contains('\u{1b}'), "{error:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pinned_authorization_server_is_the_only_one_signed_in_with() {
    let Some(server) = OAuthServer::start() else {
        return;
    };
    let config = McpServerConfig::http("notes", &server.url).oauth(
        McpOAuth::new()
            .client("agentry", Some("a-secret".into()))
            .authorization_server("https://auth.example.com")
            .store(TokenStore::memory())
            .authorizer(Authorizer::headless()),
    );
    let error = McpClient::connect(config).await.unwrap_err().to_string();
    assert!(error.contains("https://auth.example.com"), "{error}");
    assert!(server.seen("authorize").is_empty() && server.seen("token").is_empty());
}
