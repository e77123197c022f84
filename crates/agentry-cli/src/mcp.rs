//! MCP in the CLI. `agentry mcp serve`: agentry's tools for any MCP host,
//! over stdio (the default) or Streamable HTTP (`--http PORT`, on 127.0.0.1): the
//! demo tools, an Agent Skills folder's skills (`--skills DIR`), and an agent
//! as one tool, `ask` (`--agent`), so another host can delegate to it.
//! `agentry mcp tools SERVER` lists what a server gives an agent, and
//! `agentry run --mcp SERVER` gives it to one.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use std::io::IsTerminal;

use agentry::BoxFuture;
use agentry::agent::{Approval, Approver};
use agentry::skill::{InMemoryResolver, SkillResolver, list_skills_tool, read_skill_tool};
use agentry::tool::{Capabilities, Capability, Tool, ToolCall, ToolContext, Toolbox};
use agentry_mcp::client::escaped;
use agentry_mcp::{HttpOptions, McpClient, McpServer, McpServerConfig};

use crate::args::ModelArgs;

/// `agentry mcp …`.
#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// Serve agentry's tools over MCP.
    Serve(ServeArgs),
    /// List the tools MCP servers give an agent, as the agent sees them.
    Tools {
        /// `[NAME=]COMMAND_OR_URL`: a command line (run over stdio) or an http(s) URL.
        server: Option<String>,
        /// The servers of this file's `[mcp.servers.NAME]` tables too.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Believe the server's tool annotations.
        #[arg(long)]
        trusted: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Sign in to an MCP server that needs OAuth (a browser opens), now
    /// rather than at the first run that uses it.
    Login {
        /// An http(s) URL, or the name of a `[mcp.servers.NAME]` of `--config`.
        server: String,
        /// The file with the server's `[mcp.servers.NAME]` table.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Forget the tokens of an MCP server's sign-in.
    Logout {
        /// An http(s) URL, or the name of a `[mcp.servers.NAME]` of `--config`.
        server: String,
        /// The file with the server's `[mcp.servers.NAME]` table.
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// The servers to connect: each `--mcp` spec (`[NAME=]COMMAND_OR_URL`, named
/// after the server's own name by default), then the `[mcp.servers.NAME]`
/// tables of the `--config` file. On a terminal they may ask the user
/// questions (elicitation).
pub fn server_configs(
    specs: &[String],
    trusted: bool,
    config: &crate::config::Loaded,
) -> Result<Vec<McpServerConfig>, String> {
    // A server at a URL signs in with OAuth when it asks (a browser).
    let mut servers: Vec<McpServerConfig> = specs
        .iter()
        .map(|spec| {
            let server = McpServerConfig::parse(spec).trusted(trusted);
            match server.transport {
                agentry_mcp::McpTransport::Http { .. } => {
                    server.oauth(agentry_mcp::client::McpOAuth::new())
                }
                _ => server,
            }
        })
        .collect();
    if let Some(path) = &config.path {
        let from_file = agentry_mcp::client::servers_from_toml(&config.text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        servers.extend(from_file);
    }
    // On a terminal, servers may ask the user questions.
    if let Some(elicitor) = crate::elicit::terminal() {
        servers = servers
            .into_iter()
            .map(|server| server.elicitor(elicitor.clone()))
            .collect();
    }
    Ok(servers)
}

/// Connect to every server for an agent: as [`connect`], and a server whose
/// tools cannot be listed (past a listing cap, say) is named in a warning
/// now, since the agent leaves its tools out without a word. It stays a
/// source: the agent lists it again when it says its tools changed.
pub async fn connect_all(servers: Vec<McpServerConfig>) -> Result<Vec<McpClient>, String> {
    let clients = connect(servers).await?;
    for client in &clients {
        match client.tools().await {
            Ok(_) => left_out(client),
            Err(error) => eprintln!("warning: {}", escaped(&error.to_string())),
        }
    }
    Ok(clients)
}

/// Warn of each tool `client`'s last listing left out for its name.
fn left_out(client: &McpClient) {
    for message in client.left_out() {
        eprintln!("warning: {message}");
    }
}

/// Connect to every server. A server that names itself after another's
/// namespace is left out, with a warning naming both; one that cannot be
/// connected is an error (the others are closed).
async fn connect(servers: Vec<McpServerConfig>) -> Result<Vec<McpClient>, String> {
    let connected = agentry_mcp::client::connect_all(servers).await;
    for refused in &connected.refused {
        eprintln!("warning: {}", escaped(&refused.to_string()));
    }
    if let Some((what, error)) = connected.failed.first() {
        for client in &connected.clients {
            client.close().await;
        }
        return Err(format!(
            "MCP server {}: {}",
            escaped(&what.to_string()),
            escaped(&error.to_string())
        ));
    }
    Ok(connected.clients)
}

/// Approves destructive calls: all of them with `--yes`; otherwise asks on
/// a terminal, and refuses when there is none to ask on.
pub struct CliApprover {
    /// `--yes`.
    pub yes: bool,
    /// A durable run: a person decides later (`agentry runs approve|deny`).
    pub durable: bool,
}

impl Approver for CliApprover {
    fn review<'a>(&'a self, tool: &'a Tool, call: &'a ToolCall) -> BoxFuture<'a, Approval> {
        let (yes, durable) = (self.yes, self.durable);
        let question = question(tool, call);
        Box::pin(async move {
            if yes {
                return Approval::Approve;
            }
            if durable {
                return Approval::Defer;
            }
            if !std::io::stdin().is_terminal() {
                return Approval::Deny(
                    "destructive calls need approval: the user did not run with --yes".into(),
                );
            }
            let answer = tokio::task::spawn_blocking(move || {
                eprint!("{question}");
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await;
            match answer {
                Ok(Ok(line)) if matches!(line.trim(), "y" | "Y" | "yes") => Approval::Approve,
                _ => Approval::Deny("the user declined".into()),
            }
        })
    }
}

/// The question asked before a destructive call. The tool's name and the
/// model's arguments are escaped: either could hold a terminal's escape
/// sequences that rewrite the question.
fn question(tool: &Tool, call: &ToolCall) -> String {
    format!(
        "approve the destructive call {}({})? [y/N] ",
        escaped(&tool.name),
        escaped(&call.input.to_string())
    )
}

/// A user message of `text`, as a prompt gives it.
fn rmcp_text(text: String) -> agentry_mcp::server::PromptMessage {
    agentry_mcp::server::PromptMessage::new_text(agentry_mcp::server::Role::User, text)
}

/// Arguments of `agentry mcp serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP instead of stdio, on this port of 127.0.0.1
    /// (`--http 8808`) or on an address (`--http 0.0.0.0:8808`, with
    /// `--allow-host` and a `--token`).
    #[arg(long, value_name = "[ADDRESS:]PORT", value_parser = http_address)]
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

/// `--http`'s value: a bare port is on loopback, so nothing is reachable
/// from elsewhere unless an address says so.
fn http_address(value: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = value.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    value
        .parse()
        .map_err(|_| format!("{value:?} is neither a port nor an address such as 127.0.0.1:8808"))
}

/// Run an `mcp` command.
pub async fn run(command: McpCommand) -> Result<ExitCode, String> {
    match command {
        McpCommand::Serve(args) => serve(args).await,
        McpCommand::Login { server, config } => crate::mcp_sign_in::login(server, config).await,
        McpCommand::Logout { server, config } => crate::mcp_sign_in::logout(server, config).await,
        McpCommand::Tools {
            server,
            config,
            trusted,
            json,
        } => {
            let specs: Vec<String> = server.into_iter().collect();
            let loaded = match &config {
                Some(path) => crate::config::Loaded::read(path)?,
                None => crate::config::Loaded::default(),
            };
            let configs = server_configs(&specs, trusted, &loaded)?;
            if configs.is_empty() {
                return Err(
                    "name a server, or a --config file with [mcp.servers.NAME] tables".into(),
                );
            }
            let clients = connect(configs).await?;
            let mut tools = Vec::new();
            let mut unlisted = Vec::new();
            for client in &clients {
                match client.tools().await {
                    Ok(listed) => {
                        left_out(client);
                        tools.extend(listed);
                    }
                    Err(error) => unlisted.push(error.to_string()),
                }
            }
            if json {
                let listed = serde_json::to_string_pretty(&tools).map_err(|e| e.to_string())?;
                println!("{listed}");
            } else {
                for tool in &tools {
                    let description = tool.description.as_deref().unwrap_or("");
                    let first = description.lines().next().unwrap_or("");
                    let mark = if tool.hints.destructive {
                        " (destructive)"
                    } else {
                        ""
                    };
                    println!("{}{mark}: {}", escaped(&tool.name), escaped(first));
                }
            }
            for client in &clients {
                client.close().await;
            }
            // The other servers' tools are listed; the failures are said last.
            for error in &unlisted {
                eprintln!("error: {}", escaped(error));
            }
            Ok(if unlisted.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

async fn serve(args: ServeArgs) -> Result<ExitCode, String> {
    // No `agentry.toml` here: export only as the OTEL_* environment says.
    crate::telemetry::start(&crate::config::Loaded::default())?;
    let dir = args
        .dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let mut tools = crate::demo_tools::all(&dir);
    let mut offered_skills = Vec::new();
    if let Some(skills_dir) = &args.skills {
        let skills = crate::skills::load_and_warn(skills_dir)?.to_skills();
        offered_skills = skills.clone();
        let skills: std::sync::Arc<dyn SkillResolver> =
            std::sync::Arc::new(InMemoryResolver::new(skills));
        tools.push(list_skills_tool(skills.clone()));
        tools.push(read_skill_tool(skills));
    }
    if args.agent {
        // The same agent `agentry run` builds (limits, one tool round on the
        // local model, the relevance gate), without `agentry.toml`: what is
        // served is what the flags say.
        let loaded = crate::config::Loaded::default();
        let choice = args.model.choose(&loaded);
        let model = crate::providers::chat_model(&choice).await?;
        let agent = crate::definition::AgentArgs::in_dir(dir.clone())
            .builder(&loaded, model, &choice)
            .await?
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
    let mut server = McpServer::new(toolbox)
        .named("agentry", env!("CARGO_PKG_VERSION"))
        .context(context);
    // Each skill is a prompt (its instructions) and a resource too, for
    // hosts that offer those to the person rather than to the model.
    for skill in offered_skills {
        let skill = std::sync::Arc::new(skill);
        let body = |skill: &agentry::skill::Skill| {
            agentry::skill::load_body(skill, &agentry::skill::SkillContext::default())
                .map_err(|e| e.to_string())
        };
        let (for_prompt, for_resource) = (skill.clone(), skill.clone());
        let uri = format!("skill://{}/SKILL.md", skill.name);
        server = server
            .prompt(agentry_mcp::server::Prompt::new(
                skill.name.clone(),
                skill.description.clone(),
                move |_, _| {
                    let text = body(&for_prompt);
                    async move { Ok(vec![rmcp_text(text?)]) }
                },
            ))
            .resource(agentry_mcp::server::Resource::new(
                uri.clone(),
                skill.name.clone(),
                skill.description.clone(),
                "text/markdown",
                move || {
                    let (text, uri) = (body(&for_resource), uri.clone());
                    async move {
                        Ok(vec![
                            agentry_mcp::server::ResourceContents::text(text?, uri)
                                .with_mime_type("text/markdown"),
                        ])
                    }
                },
            ));
    }
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

#[cfg(test)]
mod tests {
    use super::http_address;

    #[test]
    fn the_approval_question_shows_names_and_arguments_escaped() {
        use agentry::tool::{Tool, ToolCall, ToolHandler};
        let handler = ToolHandler::from_async(|_input, _ctx| async { Ok(serde_json::json!({})) });
        let tool = Tool::new(
            "files.zap\u{1b}[2K\rapprove the destructive call files.read_file",
            serde_json::json!({"type": "object"}),
            handler,
        );
        let call = ToolCall::new(
            "c1",
            tool.name.clone(),
            serde_json::json!({"path": "\u{9b}2K\u{202e}x"}),
        );
        assert_eq!(
            super::question(&tool, &call),
            r#"approve the destructive call files.zap\u{1b}[2K\rapprove the destructive call files.read_file({"path":"\u{9b}2K\u{202e}x"})? [y/N] "#
        );
    }

    #[test]
    fn a_bare_port_is_served_on_loopback() {
        assert_eq!(http_address("8808").unwrap().to_string(), "127.0.0.1:8808");
        assert_eq!(
            http_address("0.0.0.0:8808").unwrap().to_string(),
            "0.0.0.0:8808"
        );
        assert_eq!(http_address("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert_eq!(
            http_address("localhost").unwrap_err(),
            "\"localhost\" is neither a port nor an address such as 127.0.0.1:8808"
        );
    }
}
