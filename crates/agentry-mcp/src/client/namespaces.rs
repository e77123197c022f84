//! Several servers at once, one namespace each. A server the user did not
//! name takes its own name (`serverInfo.name`), and a hostile one can call
//! itself after a server the user did name: two sources offering the same
//! tool names would make an agent's tool list unusable. Such a server is
//! refused alone; the others are kept.

use super::config::{McpServerConfig, McpTransport};
use super::{McpClient, namespace};
use crate::McpError;

/// The servers a set of configurations gave: the clients connected, an
/// error for each server refused because its namespace was taken, and each
/// server that could not be connected.
#[derive(Debug, Default)]
pub struct Connected {
    /// The connected servers, in the order given, each with a namespace of its own.
    pub clients: Vec<McpClient>,
    /// Why each refused server was refused (it named both servers).
    pub refused: Vec<McpError>,
    /// Each server that could not be connected (its command line or URL,
    /// in backticks) and why.
    pub failed: Vec<(String, McpError)>,
}

/// Connect to each server in turn. The names the configurations give are
/// taken first, whatever their order: a later server named the same as an
/// earlier one is refused without being started, and a server that names
/// itself after a taken namespace is refused (and closed) once connected.
/// Names are compared in the form a server's own name takes as a namespace
/// (lower case, `-` for anything but letters and digits): `GitHub` and
/// `github` are one namespace, as are `my_files` and `my-files`.
pub async fn connect_all(configs: Vec<McpServerConfig>) -> Connected {
    let mut slots: Vec<Option<McpClient>> = configs.iter().map(|_| None).collect();
    let (mut refused, mut failed) = (Vec::new(), Vec::new());
    // Namespaces taken, each with the server that holds it.
    let mut taken: Vec<(String, String)> = Vec::new();
    let (named, unnamed): (Vec<_>, Vec<_>) = configs
        .into_iter()
        .enumerate()
        .partition(|(_, config)| !config.name.is_empty());
    for (place, config) in named {
        let what = describe(&config.transport);
        let normal = namespace(&config.name);
        if let Some((_, holder)) = taken.iter().find(|(name, _)| *name == normal) {
            refused.push(McpError::Config(format!(
                "two MCP servers are named `{}`: {holder} and {what}; the second is left out",
                config.name
            )));
            continue;
        }
        taken.push((normal, what.clone()));
        match McpClient::connect(config).await {
            Ok(client) => slots[place] = Some(client),
            Err(error) => failed.push((what, error)),
        }
    }
    for (place, config) in unnamed {
        let what = describe(&config.transport);
        let client = match McpClient::connect(config).await {
            Ok(client) => client,
            Err(error) => {
                failed.push((what, error));
                continue;
            }
        };
        let own = client.name().to_owned();
        if let Some((_, holder)) = taken.iter().find(|(name, _)| *name == own) {
            client.close().await;
            refused.push(McpError::Config(format!(
                "the MCP server {what} calls itself `{own}`, the namespace of the MCP server \
                 {holder}; it is left out (name it with `--mcp NAME=…` to keep both)"
            )));
            continue;
        }
        taken.push((own, what));
        slots[place] = Some(client);
    }
    Connected {
        clients: slots.into_iter().flatten().collect(),
        refused,
        failed,
    }
}

/// A server as the user wrote it: its command line, or its URL, in backticks.
pub(crate) fn describe(transport: &McpTransport) -> String {
    match transport {
        McpTransport::Stdio { program, args, .. } => {
            let words = std::iter::once(program).chain(args);
            format!("`{}`", shell_words::join(words))
        }
        McpTransport::Http { url, .. } => format!("`{url}`"),
    }
}
