//! `tools/call` round trips through agentry's MCP server and through rmcp's
//! own `#[tool]` server doing the same work (adding two integers), over
//! stdio (a child process) and Streamable HTTP (loopback), with the same
//! rmcp client, in one run. Prints the median and the 99th percentile.
//!
//! `cargo bench -p agentry-benches --bench mcp_roundtrip` (CALLS=N to change
//! the number of timed calls per case; 2,000 by default).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentry::tool::Toolbox;
use agentry_mcp::{HttpOptions, McpServer};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RunningService};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

mod peer {
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct AddArgs {
        pub x: i64,
        pub y: i64,
    }

    /// rmcp's own server: one `#[tool]`.
    #[derive(Clone)]
    pub struct Calc;

    #[tool_router]
    impl Calc {
        pub fn new() -> Self {
            Self
        }

        #[tool(description = "Add two integers.")]
        fn add(&self, Parameters(AddArgs { x, y }): Parameters<AddArgs>) -> String {
            (x + y).to_string()
        }
    }

    #[tool_handler]
    impl ServerHandler for Calc {
        fn get_info(&self) -> rmcp::model::ServerConfig {
            rmcp::model::ServerConfig::new(
                rmcp::model::ServerCapabilities::builder()
                    .enable_tools()
                    .build(),
            )
        }
    }
}

/// agentry's server: the same tool as a `#[tool]` function.
mod ours {
    /// Add two integers.
    #[agentry::tool(name = "add", inline)]
    pub fn add(x: i64, y: i64) -> i64 {
        x + y
    }
}

fn agentry_server() -> McpServer {
    McpServer::new(Toolbox::for_agent([ours::add::tool()]).unwrap())
}

async fn time_calls(peer: &Peer<RoleClient>, calls: usize) -> Vec<Duration> {
    let arguments = json!({"x": 2, "y": 3}).as_object().unwrap().clone();
    let call = || CallToolRequestParams::new("add").with_arguments(arguments.clone());
    let first = peer.call_tool(call()).await.unwrap();
    assert_eq!(first.content[0].as_text().unwrap().text, "5");
    for _ in 0..calls / 10 {
        peer.call_tool(call()).await.unwrap();
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        peer.call_tool(call()).await.unwrap();
        times.push(start.elapsed());
    }
    times.sort();
    times
}

fn report(case: &str, times: &[Duration]) -> (f64, f64) {
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
    let (median, p99) = (at(0.5), at(0.99));
    println!("| {case} | {median:.0} µs | {p99:.0} µs |");
    (median, p99)
}

async fn stdio(which: &str) -> RunningService<RoleClient, ()> {
    let exe = std::env::current_exe().unwrap();
    let mut command = tokio::process::Command::new(exe);
    command.args(["--serve-stdio", which]);
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

async fn http(which: &str) -> (RunningService<RoleClient, ()>, tokio_util_shim::Stop) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let stop = tokio_util_shim::Stop::new();
    let token = stop.token();
    match which {
        "agentry" => {
            tokio::spawn(agentry_server().serve_http(
                listener,
                HttpOptions::default(),
                async move { token.cancelled().await },
            ));
        }
        _ => {
            let service: StreamableHttpService<peer::Calc, LocalSessionManager> =
                StreamableHttpService::new(
                    || Ok(peer::Calc::new()),
                    Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default().with_cancellation_token(token.clone()),
                );
            let router = axum::Router::new().nest_service("/mcp", service);
            tokio::spawn(async move {
                axum::serve(listener, router)
                    .with_graceful_shutdown(async move { token.cancelled().await })
                    .await
            });
        }
    }
    let client = ().serve(StreamableHttpClientTransport::from_uri(url.as_str())).await.unwrap();
    (client, stop)
}

/// A cancellation token without a direct tokio-util dependency here.
mod tokio_util_shim {
    pub use agentry_mcp::CancellationToken;
    pub struct Stop(CancellationToken);
    impl Stop {
        pub fn new() -> Self {
            Self(CancellationToken::new())
        }
        pub fn token(&self) -> CancellationToken {
            self.0.clone()
        }
    }
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.cancel();
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Some(position) = args.iter().position(|a| a == "--serve-stdio") {
        let which = args[position + 1].clone();
        runtime.block_on(async move {
            match which.as_str() {
                "agentry" => agentry_server().serve_stdio().await.unwrap(),
                _ => {
                    let running = peer::Calc::new()
                        .serve(rmcp::transport::stdio())
                        .await
                        .unwrap();
                    running.waiting().await.unwrap();
                }
            }
        });
        return;
    }
    // `cargo bench` passes `--bench`; nothing else is taken.
    let calls: usize = std::env::var("CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    runtime.block_on(async move {
        println!("tools/call round trip, {calls} calls per case (median, p99)\n");
        println!("| case | median | p99 |");
        println!("| --- | --- | --- |");
        let mut rows = Vec::new();
        for which in ["agentry", "rmcp"] {
            let client = stdio(which).await;
            let times = time_calls(client.peer(), calls).await;
            rows.push((
                format!("stdio/{which}"),
                report(&format!("stdio/{which}"), &times),
            ));
            client.cancel().await.unwrap();
        }
        for which in ["agentry", "rmcp"] {
            let (client, _stop) = http(which).await;
            let times = time_calls(client.peer(), calls).await;
            rows.push((
                format!("http/{which}"),
                report(&format!("http/{which}"), &times),
            ));
            client.cancel().await.unwrap();
        }
        println!();
        for transport in ["stdio", "http"] {
            let ours = rows
                .iter()
                .find(|(case, _)| *case == format!("{transport}/agentry"))
                .unwrap()
                .1;
            let theirs = rows
                .iter()
                .find(|(case, _)| *case == format!("{transport}/rmcp"))
                .unwrap()
                .1;
            println!(
                "{transport}: agentry / rmcp = {:.2}× (median), {:.2}× (p99)",
                ours.0 / theirs.0,
                ours.1 / theirs.1
            );
        }
    });
}
