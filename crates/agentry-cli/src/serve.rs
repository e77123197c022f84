//! `agentry serve`: the demo agent over HTTP (`agentry-server`): chat
//! sessions with memory (SQLite file by default, or PostgreSQL), streamed as
//! server-sent events, and an OpenAI-compatible API. API keys come from
//! `--api-keys` or `AGENTRY_API_KEYS`; without any, only loopback may listen.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use agentry::embed::Embedder;
use agentry::memory::{Memory, MemoryStore};
use agentry_server::{AgentServer, ApiKeys};

use crate::ModelArgs;

/// Arguments of `agentry serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Listen on this address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    #[command(flatten)]
    model: ModelArgs,
    /// The agent's name: its model name on `/v1/models`, and the source of what it stores.
    #[arg(long, default_value = "agentry")]
    name: String,
    /// Where session memory lives: a SQLite file, or a `postgres://` URL (pgvector).
    #[arg(long, default_value = "agentry.db")]
    memory: String,
    /// API keys, comma-separated. Without any, every caller is one local
    /// user and the server listens on loopback only.
    #[arg(long = "api-keys", env = "AGENTRY_API_KEYS", hide_env_values = true)]
    api_keys: Option<String>,
    #[command(flatten)]
    agent: crate::run::AgentArgs,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = agentry_server::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Requests one key may have running at once.
    #[arg(long, default_value_t = agentry_server::DEFAULT_MAX_RUNNING_PER_KEY)]
    max_running_per_key: usize,
}

/// Serve until SIGTERM or Ctrl-C; running turns finish first.
pub async fn run(args: ServeArgs) -> Result<ExitCode, String> {
    let keys = ApiKeys::from_list(args.api_keys.as_deref().unwrap_or_default());
    if keys.is_empty() && !args.listen.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {} without API keys: set AGENTRY_API_KEYS (or --api-keys), or listen on 127.0.0.1",
            args.listen
        ));
    }
    let model = crate::providers::chat_model(&args.model).await?;
    let agent = args.agent.builder(model, args.model.provider).await?;
    // Nobody is at a terminal to approve a destructive call: it is refused.
    let agent = agent
        .approver(crate::mcp::CliApprover { yes: false })
        .build()
        .map_err(|e| e.to_string())?;
    let embedder: Arc<dyn Embedder> = Arc::new(
        agentry_local::LocalEmbedder::minilm()
            .await
            .map_err(|e| format!("the embedding model: {e}"))?,
    );
    let store: Arc<dyn MemoryStore> =
        if args.memory.starts_with("postgres://") || args.memory.starts_with("postgresql://") {
            Arc::new(
                agentry_store::PgStore::connect(&args.memory, embedder.dimensions())
                    .await
                    .map_err(|e| e.to_string())?,
            )
        } else {
            Arc::new(agentry_store::SqliteStore::open(&args.memory).map_err(|e| e.to_string())?)
        };
    let server = AgentServer::new(args.name, agent, Memory::new(store, embedder))
        .api_keys(keys.clone())
        .max_body_bytes(args.max_body_bytes)
        .max_running_per_key(args.max_running_per_key);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("{}: {e}", args.listen))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let auth = if keys.is_empty() {
        "no API keys: loopback only".to_owned()
    } else {
        "API keys required".to_owned()
    };
    eprintln!("agentry serve: http://{address} ({auth})");
    server
        .serve(listener, shutdown_signal())
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("agentry serve: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => return interrupt.await.unwrap_or_default(),
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    interrupt.await.unwrap_or_default();
}
