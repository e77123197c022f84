//! `agentry mcp login` and `agentry mcp logout`: sign in to an MCP server
//! that needs OAuth now, rather than at the first run that uses it, or
//! forget its tokens.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentry_mcp::client::{McpOAuth, escaped};
use agentry_mcp::{McpClient, McpServerConfig, McpTransport};

/// The server `server` names: a `[mcp.servers.NAME]` of the `--config`
/// file, else an http(s) URL (which signs in as `--mcp URL` does).
fn chosen(server: &str, config: Option<&Path>) -> Result<McpServerConfig, String> {
    if server.starts_with("http://") || server.starts_with("https://") {
        return Ok(McpServerConfig::parse(server).oauth(McpOAuth::new()));
    }
    let loaded = match config {
        Some(path) => crate::config::Loaded::read(path)?,
        None => crate::config::Loaded::default(),
    };
    let servers = match &loaded.path {
        Some(path) => agentry_mcp::client::servers_from_toml(&loaded.text)
            .map_err(|e| format!("{}: {e}", path.display()))?,
        None => Vec::new(),
    };
    servers
        .into_iter()
        .find(|candidate| candidate.name == server)
        .ok_or_else(|| {
            format!(
                "no MCP server {}: give an http(s) URL, or a name of the --config file's [mcp.servers.NAME] tables",
                escaped(server)
            )
        })
}

/// Its URL and sign-in, or why it has none.
fn signing_in(config: &McpServerConfig) -> Result<(&str, &McpOAuth), String> {
    let McpTransport::Http { url, .. } = &config.transport else {
        return Err(format!(
            "the MCP server {} is a command, which needs no sign-in",
            escaped(&config.name)
        ));
    };
    let oauth = config.oauth.as_ref().ok_or_else(|| {
        format!(
            "the MCP server {} does not sign in with OAuth (it has `bearer_env` or `oauth = false`)",
            escaped(&config.name)
        )
    })?;
    Ok((url, oauth))
}

/// Where `store` keeps tokens, for a message.
fn kept(oauth: &McpOAuth, url: &str) -> String {
    oauth.store_for(url).path().map_or_else(
        || "memory".to_owned(),
        |path| escaped(&path.display().to_string()),
    )
}

/// `agentry mcp login SERVER`.
pub async fn login(server: String, config: Option<PathBuf>) -> Result<ExitCode, String> {
    let config = chosen(&server, config.as_deref())?;
    let (url, oauth) = signing_in(&config)?;
    let (url, oauth) = (url.to_owned(), oauth.clone());
    let client = McpClient::connect(config)
        .await
        .map_err(|e| escaped(&e.to_string()))?;
    let listed = client.tools().await;
    let name = client.name().to_owned();
    client.close().await;
    listed.map_err(|e| escaped(&e.to_string()))?;
    if oauth.store_for(&url).is_signed_in().await {
        println!(
            "signed in to {}; tokens kept in {}",
            escaped(&name),
            kept(&oauth, &url)
        );
    } else {
        println!("{} did not ask to sign in", escaped(&name));
    }
    Ok(ExitCode::SUCCESS)
}

/// `agentry mcp logout SERVER`.
pub async fn logout(server: String, config: Option<PathBuf>) -> Result<ExitCode, String> {
    let config = chosen(&server, config.as_deref())?;
    let (url, oauth) = signing_in(&config)?;
    let store = oauth.store_for(url);
    let was = store.is_signed_in().await;
    store
        .sign_out()
        .await
        .map_err(|e| format!("{}: {e}", kept(oauth, url)))?;
    if was {
        println!("signed out of {}", escaped(&server));
    } else {
        println!("{} was not signed in", escaped(&server));
    }
    Ok(ExitCode::SUCCESS)
}
