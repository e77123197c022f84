//! `agentry mcp serve`: agentry's tools for any MCP host, over stdio (the
//! default) or Streamable HTTP (`--http 127.0.0.1:PORT`): the demo tools,
//! an Agent Skills folder's skills (`--skills DIR`), and an agent as one
//! tool, `ask` (`--agent`), so another host can delegate to it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use agentry::agent::AgentBuilder;
use agentry::skill::{builtin_list_skills, builtin_read_skill};
use agentry::tool::{Capabilities, Capability, ToolContext, Toolbox};
use agentry_mcp::{HttpOptions, McpServer};

use crate::ModelArgs;

/// `agentry mcp …`.
#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// Serve agentry's tools over MCP.
    Serve(ServeArgs),
}

/// Arguments of `agentry mcp serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP on this address (such as 127.0.0.1:8808) instead of stdio.
    #[arg(long)]
    http: Option<SocketAddr>,
    /// Require `Authorization: Bearer TOKEN` on HTTP.
    #[arg(long, env = "AGENTRY_MCP_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Accept this `Host` header as well as loopback ones (for a non-loopback bind). Repeatable.
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// Accept this browser `Origin` as well as loopback ones (`https://app.example:*`). Repeatable.
    #[arg(long = "allow-origin")]
    allow_origins: Vec<String>,
    /// Directory the `read_file` tool may read (and nothing outside it).
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Serve the Agent Skills folders in this directory (`list_skills`, `read_skill`).
    #[arg(long)]
    skills: Option<PathBuf>,
    /// Serve an agent with the demo tools as one tool, `ask`.
    #[arg(long)]
    agent: bool,
    #[command(flatten)]
    model: ModelArgs,
}

/// Run an `mcp` command.
pub async fn run(command: McpCommand) -> Result<ExitCode, String> {
    match command {
        McpCommand::Serve(args) => serve(args).await,
    }
}

async fn serve(args: ServeArgs) -> Result<ExitCode, String> {
    let dir = args
        .dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let mut tools = crate::demo_tools::all(&dir);
    if let Some(skills_dir) = &args.skills {
        let skills = crate::skills::load_and_warn(skills_dir)?.to_skills();
        tools.push(builtin_list_skills(skills.clone()));
        tools.push(builtin_read_skill(skills));
    }
    if args.agent {
        let model = crate::providers::chat_model(&args.model).await?;
        let agent = AgentBuilder::new(model)
            .tools(crate::demo_tools::all(&dir))
            .system(crate::run::SYSTEM)
            .grant(Capability::fs_read(&dir))
            .max_steps(6)
            .max_tokens(512)
            .build()
            .map_err(|e| e.to_string())?;
        tools.push(agent.as_tool(
            "ask",
            "Ask an agentry agent a question; it may use a calculator, the time, unit conversion and a file reader.",
        ));
    }
    let toolbox = Toolbox::for_agent(tools).map_err(|e| e.to_string())?;
    let context =
        ToolContext::new().with_capabilities(Capabilities::from([Capability::fs_read(&dir)]));
    let server = McpServer::new(toolbox)
        .named("agentry", env!("CARGO_PKG_VERSION"))
        .context(context);
    match args.http {
        None => server.serve_stdio().await.map_err(|e| e.to_string())?,
        Some(address) => {
            let mut options = HttpOptions {
                bearer: args.token,
                ..HttpOptions::default()
            };
            options.allowed_hosts.extend(args.allow_hosts);
            options.allowed_origins.extend(args.allow_origins);
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|e| format!("cannot listen on {address}: {e}"))?;
            let bound = listener.local_addr().map_err(|e| e.to_string())?;
            eprintln!("serving MCP on http://{bound}{}", agentry_mcp::MCP_PATH);
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            server
                .serve_http(listener, options, shutdown)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
