//! `agentry serve`: the demo agent over HTTP (`agentry-server`): chat
//! sessions with memory (SQLite file by default, or PostgreSQL), streamed as
//! server-sent events, and an OpenAI-compatible API. API keys come from
//! `--api-keys` or `AGENTRY_API_KEYS`; without any, only loopback may listen.
//! The server answers to the loopback names and its own address only
//! (`--allow-host` widens), admits browsers' requests from its own pages only
//! (`--allow-origin` widens), and bounds slow and idle connections.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use agentry_server::{AgentServer, ApiKeys, HostPattern, OriginPattern};

use crate::args::ModelArgs;
use crate::definition::{AgentArgs, MemoryArgs};

/// Arguments of `agentry serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Listen on this address [default: 127.0.0.1:8080].
    #[arg(long)]
    listen: Option<SocketAddr>,
    #[command(flatten)]
    model: ModelArgs,
    /// The agent's name: its model name on `/v1/models`, and the source of what it stores [default: agentry].
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    memory: MemoryArgs,
    /// API keys, comma-separated (added to the file's `server.api_keys`).
    /// Without any, every caller is one local user and the server listens
    /// on loopback only.
    #[arg(long = "api-keys", env = "AGENTRY_API_KEYS", hide_env_values = true)]
    api_keys: Option<String>,
    #[command(flatten)]
    agent: AgentArgs,
    /// Largest request body, in bytes [default: 1048576].
    #[arg(long)]
    max_body_bytes: Option<usize>,
    /// Requests one key may have running at once [default: 8].
    #[arg(long)]
    max_running_per_key: Option<usize>,
    /// Requests one key may start per minute [default: no limit].
    #[arg(long)]
    requests_per_minute: Option<u32>,
    /// Also answer to this `Host`: `name` or an address (any port),
    /// `name:port`, or `*` for any (with API keys only). Repeatable; added to
    /// the file's `server.allow_hosts`. Loopback names and the address
    /// listened on are always answered.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<HostPattern>,
    /// Also admit browsers' requests from pages of this origin
    /// (`https://name`, `http://name:port`, `http://name:*`). Repeatable;
    /// added to the file's `server.allow_origins`.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origins: Vec<OriginPattern>,
    #[command(flatten)]
    connections: Box<ConnectionArgs>,
    /// Hand every agent loop to `agentry worker --temporal` processes
    /// (their agent is the one they load) instead of running it here: this
    /// process answers HTTP and keeps memory, and loads no model.
    #[command(flatten)]
    temporal: crate::temporal::TemporalArgs,
    /// Do not serve the agent over A2A (by default its card is at
    /// `/.well-known/agent-card.json` and JSON-RPC at `/a2a`, behind the API keys).
    #[arg(long)]
    no_a2a: bool,
    /// Do not serve the agent over AG-UI (by default `POST /agui` streams a
    /// run as AG-UI events, behind the API keys).
    #[arg(long)]
    no_agui: bool,
    /// The address clients reach this server at, for the A2A card
    /// [default: http:// and the address listened on].
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
}

/// How long connections may take and how many may be open: `agentry
/// serve`'s flags (boxed, as there are many).
#[derive(clap::Args)]
struct ConnectionArgs {
    /// Seconds a request's head may take from its first byte [default: 10].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout_secs: Option<u64>,
    /// Seconds a connection may wait for a request's first byte, or for the
    /// next piece of its body [default: 60].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout_secs: Option<u64>,
    /// Seconds a request's whole body may take from the end of its head,
    /// however steadily it comes [default: 30].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    body_read_timeout_secs: Option<u64>,
    /// Connections open at once [default: 512].
    #[arg(long)]
    max_connections: Option<usize>,
    /// Connections open at once from one address [default: 128].
    #[arg(long)]
    max_connections_per_peer: Option<usize>,
    /// Wrong API keys one address may send a minute before it is answered
    /// 429 for the rest of the minute [default: 10].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    failed_keys_per_minute: Option<u32>,
}

/// Serve until SIGTERM or Ctrl-C; running turns finish first.
pub async fn run(args: ServeArgs) -> Result<ExitCode, String> {
    let loaded = args.agent.load()?;
    crate::telemetry::start(&loaded)?;
    let section = &loaded.file.server;
    let mut keys = loaded.api_keys()?;
    keys.extend(
        args.api_keys
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|key| !key.is_empty())
            .map(str::to_owned),
    );
    let keys = ApiKeys::from_list(&keys.join(","));
    let listen = args
        .listen
        .or(section.listen)
        .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8080)));
    if keys.is_empty() && !listen.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {listen} without API keys: set AGENTRY_API_KEYS (or --api-keys, or server.api_keys), or listen on 127.0.0.1"
        ));
    }
    let (mut hosts, mut origins) = loaded.server_sites()?;
    hosts.extend(args.allow_hosts);
    origins.extend(args.allow_origins);
    if keys.is_empty() && hosts.iter().any(HostPattern::is_any) {
        return Err(
            "refusing to answer to any Host (`*`) without API keys: a web page could then call \
             this server through a DNS name of its own; name the hosts, or set AGENTRY_API_KEYS"
                .into(),
        );
    }
    for (flag, value) in [
        ("--max-connections", args.connections.max_connections),
        (
            "--max-connections-per-peer",
            args.connections.max_connections_per_peer,
        ),
    ] {
        if value == Some(0) {
            return Err(format!("{flag} must be at least 1"));
        }
    }
    let choice = args.model.choose(&loaded);
    let model = match &args.temporal.temporal {
        // The workers run the model; this process never calls one.
        Some(_) => std::sync::Arc::new(agentry::model::OfflineModel),
        None => crate::providers::chat_model(&choice).await?,
    };
    let agent = args.agent.builder(&loaded, model, &choice).await?;
    // Nobody is at a terminal: a destructive call waits for an approval
    // (`POST /v1/runs/{id}/approvals`, the chat page's buttons).
    let agent = agent
        .approver(crate::mcp::CliApprover {
            yes: false,
            durable: true,
        })
        .build()
        .map_err(|e| e.to_string())?;
    let memory = args.memory.open(&loaded).await?;
    // Turns run durably in the memory store: any server on it can resume them.
    let location = args.memory.location(&loaded);
    let journal = crate::memory::Store::open(&location, &loaded, true)
        .await?
        .journal();
    let name = args
        .name
        .or_else(|| loaded.file.name.clone())
        .unwrap_or_else(|| "agentry".into());
    // A2A runs the agent here; with Temporal the runs are the workers'.
    let a2a = (!args.no_a2a && args.temporal.temporal.is_none()).then(|| {
        agentry_a2a::A2aServer::new(name.clone(), agent.clone())
            .description(format!("{name}: an agentry agent."))
    });
    // AG-UI, too, runs the agent here.
    let agui = (!args.no_agui && args.temporal.temporal.is_none())
        .then(|| agentry_agui::AguiServer::new(agent.clone()).router());
    let mut server = AgentServer::new(name, agent, memory);
    if let Some(agui) = agui {
        server = server.keyed_routes(agui);
    }
    server = match &args.temporal.temporal {
        Some(address) => {
            let runs = crate::temporal::runs(&args.temporal).await?;
            eprintln!(
                "agentry serve: agent runs go to task queue \"{}\" on {address}",
                args.temporal.task_queue
            );
            server.remote_runs(std::sync::Arc::new(agentry_temporal::TemporalTurns::new(
                runs,
            )))
        }
        None => server.durable_runs(journal),
    };
    let mut server = server
        .api_keys(keys.clone())
        .max_body_bytes(
            args.max_body_bytes
                .or(section.max_body_bytes)
                .unwrap_or(agentry_server::DEFAULT_MAX_BODY_BYTES),
        )
        .max_running_per_key(
            args.max_running_per_key
                .or(section.max_running_per_key)
                .unwrap_or(agentry_server::DEFAULT_MAX_RUNNING_PER_KEY),
        );
    if let Some(rate) = args.requests_per_minute.or(section.requests_per_minute) {
        server = server.requests_per_minute(rate);
    }
    let seconds = |flag: Option<u64>, key: Option<u64>, default: Duration| {
        flag.or(key).map_or(default, Duration::from_secs)
    };
    server = server
        .allow_hosts(hosts.clone())
        .allow_origins(origins)
        .header_read_timeout(seconds(
            args.connections.header_read_timeout_secs,
            section.header_read_timeout_secs,
            agentry_server::DEFAULT_HEADER_READ_TIMEOUT,
        ))
        .idle_timeout(seconds(
            args.connections.idle_timeout_secs,
            section.idle_timeout_secs,
            agentry_server::DEFAULT_IDLE_TIMEOUT,
        ))
        .body_read_timeout(seconds(
            args.connections.body_read_timeout_secs,
            section.body_read_timeout_secs,
            agentry_server::DEFAULT_BODY_READ_TIMEOUT,
        ))
        .max_connections(
            args.connections
                .max_connections
                .or(section.max_connections)
                .unwrap_or(agentry_server::DEFAULT_MAX_CONNECTIONS),
        )
        .max_connections_per_peer(
            args.connections
                .max_connections_per_peer
                .or(section.max_connections_per_peer)
                .unwrap_or(agentry_server::DEFAULT_MAX_CONNECTIONS_PER_PEER),
        )
        .failed_keys_per_minute(
            args.connections
                .failed_keys_per_minute
                .or(section.failed_keys_per_minute)
                .unwrap_or(agentry_server::DEFAULT_FAILED_KEYS_PER_MINUTE),
        );
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("{listen}: {e}"))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let auth = if keys.is_empty() {
        "no API keys: loopback only".to_owned()
    } else {
        "API keys required".to_owned()
    };
    eprintln!("agentry serve: http://{address} ({auth})");
    if let Some(a2a) = a2a {
        let reached = match address.ip().is_unspecified() {
            true => format!("http://127.0.0.1:{}", address.port()),
            false => format!("http://{address}"),
        };
        if address.ip().is_unspecified() && args.public_url.is_none() {
            eprintln!(
                "agentry serve: the A2A card names {reached}; add --public-url URL for clients \
                 on other machines"
            );
        }
        let public = args.public_url.unwrap_or(reached);
        let routes = a2a.routes(&public, !keys.is_empty()).await;
        server = server.public_routes(routes.card).keyed_routes(routes.rpc);
        eprintln!(
            "agentry serve: A2A at {public}{} (card at {public}/.well-known/agent-card.json)",
            agentry_a2a::A2A_PATH
        );
    }
    if !address.ip().is_loopback() && hosts.is_empty() {
        let answered = match address.ip().is_unspecified() {
            true => "loopback names".to_owned(),
            false => format!("{address} and loopback names"),
        };
        eprintln!(
            "agentry serve: answering to the Host {answered} only; \
             add --allow-host NAME for each name clients use"
        );
    }
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
