//! MCP servers from a configuration file (`agentry.toml`):
//!
//! ```toml
//! [mcp.servers.everything]
//! command = "npx -y @modelcontextprotocol/server-everything"
//! allow = ["echo", "get-sum"]          # only these of its tools (all when left out)
//!
//! [mcp.servers.search]
//! url = "https://mcp.example.com/mcp"
//! bearer_env = "SEARCH_TOKEN"          # the token is read from this variable
//! headers = { "X-Team" = "docs" }
//! trusted = true                       # believe its tool annotations
//! prompts = true                       # offer its prompts as tools
//! resources = true                     # its resources (list, read)
//! templates = true                     # and its resource templates
//! protocol = "auto"                    # "initialize" (default), "stateless" or "auto"
//! max_list_pages = 100                 # caps on each listing of its tools (the defaults)
//! max_list_items = 1000
//! max_list_bytes = 8388608
//!
//! [mcp.servers.notes]
//! url = "https://notes.example.com/mcp"
//! # A `url` server without `bearer_env` signs in with OAuth when it asks
//! # (a browser; tokens in ~/.config/agentry/mcp-auth, private to the user).
//! # `oauth = false` never does; a table sets the sign-in up:
//! [mcp.servers.notes.oauth]
//! scopes = ["notes:read"]                # instead of the ones the server suggests
//! client_id = "agentry-notes"            # a client registered beforehand
//! client_secret_env = "NOTES_SECRET"     # its secret, read from this variable
//! authorization_server = "https://auth.example.com"  # sign in only there (pin it with a secret)
//! client_metadata_url = "https://app.example.com/client.json"  # or a metadata document
//! redirect_uri = "http://127.0.0.1:8976/callback"
//! token_file = "/path/to/notes-tokens.json"
//! grant = "client_credentials"           # a machine client: client_id and its secret, no person
//! # grant = "jwt_bearer"                 # a workload: its platform's identity token, no person
//! # assertion_file = "/var/run/secrets/tokens/mcp"   # read again at each trade
//! ```
//!
//! A server's name (the namespace of its tools) is letters, digits, `_` and `-`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ListLimits;
use super::config::{McpProtocol, McpServerConfig};
use super::oauth::{ClientCredentials, McpOAuth, TokenStore};
use crate::McpError;

/// The file; sections other than `[mcp]` belong to other parts of agentry.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    mcp: Option<Section>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    #[serde(default)]
    servers: BTreeMap<String, Server>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Server {
    command: Option<String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer_env: Option<String>,
    #[serde(default)]
    trusted: bool,
    allow: Option<Vec<String>>,
    #[serde(default)]
    prompts: bool,
    #[serde(default)]
    resources: bool,
    #[serde(default)]
    templates: bool,
    #[serde(default)]
    protocol: Protocol,
    max_list_pages: Option<usize>,
    max_list_items: Option<usize>,
    max_list_bytes: Option<usize>,
    oauth: Option<OAuth>,
}

/// `oauth = true | false | { … }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum OAuth {
    On(bool),
    Table(OAuthTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthTable {
    scopes: Option<Vec<String>>,
    client_id: Option<String>,
    client_secret_env: Option<String>,
    client_metadata_url: Option<String>,
    redirect_uri: Option<String>,
    authorization_server: Option<String>,
    token_file: Option<std::path::PathBuf>,
    assertion_file: Option<std::path::PathBuf>,
    #[serde(default)]
    grant: Grant,
}

#[derive(Deserialize, Default, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Grant {
    #[default]
    AuthorizationCode,
    ClientCredentials,
    JwtBearer,
}

/// The sign-in a table sets up.
fn oauth_of(name: &str, table: OAuthTable) -> Result<McpOAuth, McpError> {
    let fail = |message: &str| McpError::Config(format!("mcp.servers.{name}.oauth: {message}"));
    let secret = match &table.client_secret_env {
        Some(variable) => {
            Some(std::env::var(variable).map_err(|_| fail(&format!("${variable} is not set")))?)
        }
        None => None,
    };
    if (table.grant == Grant::JwtBearer) != table.assertion_file.is_some() {
        return Err(fail(
            "the jwt_bearer grant takes `assertion_file` (the workload's identity token), and only it does",
        ));
    }
    let mut oauth = if table.grant == Grant::JwtBearer {
        McpOAuth::client_credentials(ClientCredentials::JwtBearer {
            client_id: table.client_id.clone(),
            assertion: super::oauth::JwtAssertion::File(
                table.assertion_file.clone().unwrap_or_default(),
            ),
        })
    } else if table.grant == Grant::ClientCredentials {
        let (Some(client_id), Some(client_secret)) = (table.client_id.clone(), secret.clone())
        else {
            return Err(fail(
                "the client_credentials grant needs `client_id` and `client_secret_env`",
            ));
        };
        McpOAuth::client_credentials(ClientCredentials::Secret {
            client_id,
            client_secret,
        })
    } else {
        let mut oauth = McpOAuth::new();
        match (table.client_id, secret) {
            (Some(id), secret) => oauth = oauth.client(id, secret),
            (None, Some(_)) => return Err(fail("`client_secret_env` needs `client_id`")),
            (None, None) => {}
        }
        oauth
    };
    if let Some(scopes) = table.scopes {
        oauth = oauth.scopes(scopes);
    }
    if let Some(url) = table.client_metadata_url {
        if !url.starts_with("https://") {
            return Err(fail("`client_metadata_url` must be an https:// address"));
        }
        oauth = oauth.client_metadata_url(url);
    }
    if let Some(uri) = table.redirect_uri {
        oauth = oauth.redirect_uri(uri);
    }
    if let Some(issuer) = table.authorization_server {
        oauth = oauth.authorization_server(issuer);
    }
    if let Some(file) = table.token_file {
        oauth = oauth.store(TokenStore::file(file));
    }
    Ok(oauth)
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "lowercase")]
enum Protocol {
    #[default]
    Initialize,
    Stateless,
    Auto,
}

/// The servers of the `[mcp.servers.NAME]` tables of a TOML text, in name order.
/// A bearer token is read from the environment variable `bearer_env` names.
pub fn servers_from_toml(text: &str) -> Result<Vec<McpServerConfig>, McpError> {
    let file: File = toml::from_str(text).map_err(|error| McpError::Config(error.to_string()))?;
    let servers = file.mcp.map(|section| section.servers).unwrap_or_default();
    servers
        .into_iter()
        .map(|(name, server)| {
            let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
            if name.is_empty() || !name.bytes().all(valid) {
                return Err(McpError::Config(format!(
                    "mcp.servers.{name:?}: a server's name is letters, digits, `_` and `-`"
                )));
            }
            let mut config = match (&server.command, &server.url) {
                (Some(command), None) => McpServerConfig::stdio(name.clone(), command),
                (None, Some(url)) => McpServerConfig::http(name.clone(), url.clone()),
                _ => {
                    return Err(McpError::Config(format!(
                        "mcp.servers.{name}: give either `command` or `url`"
                    )));
                }
            };
            if server.command.is_some()
                && (!server.headers.is_empty()
                    || server.bearer_env.is_some()
                    || matches!(server.oauth, Some(OAuth::Table(_)) | Some(OAuth::On(true))))
            {
                return Err(McpError::Config(format!(
                    "mcp.servers.{name}: `headers`, `bearer_env` and `oauth` are for `url` servers"
                )));
            }
            if server.bearer_env.is_some()
                && matches!(server.oauth, Some(OAuth::Table(_)) | Some(OAuth::On(true)))
            {
                return Err(McpError::Config(format!(
                    "mcp.servers.{name}: give `bearer_env` or `oauth`, not both"
                )));
            }
            if server.url.is_some() && server.bearer_env.is_none() {
                match server.oauth {
                    None | Some(OAuth::On(true)) => config = config.oauth(McpOAuth::new()),
                    Some(OAuth::On(false)) => {}
                    Some(OAuth::Table(table)) => config = config.oauth(oauth_of(&name, table)?),
                }
            }
            for (header, value) in server.headers {
                config = config.header(header, value);
            }
            if let Some(variable) = server.bearer_env {
                let token = std::env::var(&variable).map_err(|_| {
                    McpError::Config(format!("mcp.servers.{name}: ${variable} is not set"))
                })?;
                config = config.bearer(token);
            }
            config.trusted = server.trusted;
            config.allow = server.allow;
            config.prompts = server.prompts;
            config.resources = server.resources;
            config.templates = server.templates;
            config.protocol = match server.protocol {
                Protocol::Initialize => McpProtocol::Initialize,
                Protocol::Stateless => McpProtocol::Stateless,
                Protocol::Auto => McpProtocol::Auto,
            };
            for (key, cap) in [
                ("max_list_pages", server.max_list_pages),
                ("max_list_items", server.max_list_items),
                ("max_list_bytes", server.max_list_bytes),
            ] {
                if cap == Some(0) {
                    return Err(McpError::Config(format!(
                        "mcp.servers.{name}: `{key}` must be at least 1"
                    )));
                }
            }
            let defaults = ListLimits::default();
            config.list_limits = ListLimits {
                pages: server.max_list_pages.unwrap_or(defaults.pages),
                items: server.max_list_items.unwrap_or(defaults.items),
                bytes: server.max_list_bytes.unwrap_or(defaults.bytes),
            };
            Ok(config)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::McpTransport;

    #[test]
    fn servers_read_from_toml() {
        let servers = servers_from_toml(
            r#"
            [agent]
            max_steps = 4

            [mcp.servers.everything]
            command = "npx -y '@modelcontextprotocol/server-everything'"
            allow = ["echo"]
            prompts = true
            templates = true

            [mcp.servers.remote]
            url = "http://127.0.0.1:3001/mcp"
            headers = { "X-Team" = "docs" }
            trusted = true
            protocol = "auto"
            max_list_pages = 3
            max_list_bytes = 4096
            "#,
        )
        .unwrap();
        assert_eq!(servers[0].name, "everything");
        assert!(
            matches!(&servers[0].transport, McpTransport::Stdio { program, args, .. }
            if program == "npx" && args == &["-y", "@modelcontextprotocol/server-everything"])
        );
        assert_eq!(servers[0].allow.as_deref(), Some(&["echo".to_owned()][..]));
        // Prompts, resources and templates are each opted in.
        let everything = &servers[0];
        assert!(everything.prompts && !everything.resources && everything.templates);
        assert!(!servers[1].prompts && !servers[1].resources && !servers[1].templates);
        assert!(servers[1].trusted && servers[1].protocol == McpProtocol::Auto);
        assert_eq!(servers[0].list_limits, ListLimits::default());
        assert_eq!(
            servers[1].list_limits,
            ListLimits {
                pages: 3,
                items: 1_000,
                bytes: 4096
            }
        );
        assert!(
            matches!(&servers[1].transport, McpTransport::Http { headers, .. }
            if headers == &[("X-Team".to_owned(), "docs".to_owned())])
        );
        assert!(
            servers[1].oauth.is_some(),
            "a url server signs in when asked"
        );
        assert!(servers[0].oauth.is_none());
    }

    #[test]
    fn oauth_is_set_up_from_its_table() {
        let servers = servers_from_toml(
            r#"
            [mcp.servers.off]
            url = "https://a.example/mcp"
            oauth = false

            [mcp.servers.notes]
            url = "https://notes.example/mcp"
            [mcp.servers.notes.oauth]
            scopes = ["notes:read", "notes:write"]
            client_id = "agentry-notes"
            redirect_uri = "http://127.0.0.1:8976/callback"
            authorization_server = "https://auth.notes.example"
            token_file = "/tmp/notes.json"
            "#,
        )
        .unwrap();
        let notes = servers[0].oauth.as_ref().unwrap();
        let shown = format!("{notes:?}");
        assert!(
            shown.contains("notes:write") && shown.contains("agentry-notes"),
            "{shown}"
        );
        assert!(shown.contains("/tmp/notes.json"), "{shown}");
        assert!(shown.contains("https://auth.notes.example"), "{shown}");
        assert!(servers[1].oauth.is_none(), "oauth = false");
    }

    #[test]
    fn mistakes_are_named() {
        for (text, message) in [
            (
                "[mcp.servers.x]\n",
                "invalid MCP configuration: mcp.servers.x: give either `command` or `url`",
            ),
            (
                "[mcp.servers.x]\ncommand = \"a\"\nurl = \"http://b\"\n",
                "invalid MCP configuration: mcp.servers.x: give either `command` or `url`",
            ),
            (
                "[mcp.servers.x]\nurl = \"http://b\"\nbearer_env = \"AGENTRY_TEST_SURELY_UNSET\"\n",
                "invalid MCP configuration: mcp.servers.x: $AGENTRY_TEST_SURELY_UNSET is not set",
            ),
            (
                "[mcp.servers.\"a.b\"]\ncommand = \"a\"\n",
                "invalid MCP configuration: mcp.servers.\"a.b\": a server's name is letters, digits, `_` and `-`",
            ),
            (
                "[mcp.servers.x]\ncommand = \"a\"\nmax_list_pages = 0\n",
                "invalid MCP configuration: mcp.servers.x: `max_list_pages` must be at least 1",
            ),
            (
                "[mcp.servers.x]\ncommand = \"a\"\nheaders = { A = \"b\" }\n",
                "invalid MCP configuration: mcp.servers.x: `headers`, `bearer_env` and `oauth` are for `url` servers",
            ),
            (
                "[mcp.servers.x]\nurl = \"http://b\"\nbearer_env = \"B\"\noauth = true\n",
                "invalid MCP configuration: mcp.servers.x: give `bearer_env` or `oauth`, not both",
            ),
            (
                "[mcp.servers.x]\nurl = \"http://b\"\n[mcp.servers.x.oauth]\ngrant = \"client_credentials\"\n",
                "invalid MCP configuration: mcp.servers.x.oauth: the client_credentials grant needs `client_id` and `client_secret_env`",
            ),
            (
                "[mcp.servers.x]\nurl = \"http://b\"\n[mcp.servers.x.oauth]\ngrant = \"jwt_bearer\"\n",
                "invalid MCP configuration: mcp.servers.x.oauth: the jwt_bearer grant takes `assertion_file` (the workload's identity token), and only it does",
            ),
            (
                "[mcp.servers.x]\nurl = \"http://b\"\n[mcp.servers.x.oauth]\nclient_metadata_url = \"http://a/c.json\"\n",
                "invalid MCP configuration: mcp.servers.x.oauth: `client_metadata_url` must be an https:// address",
            ),
        ] {
            assert_eq!(
                servers_from_toml(text).unwrap_err().to_string(),
                message,
                "{text}"
            );
        }
        let typo = servers_from_toml("[mcp.servers.x]\ncomand = \"a\"\n").unwrap_err();
        assert!(
            typo.to_string().contains("unknown field `comand`"),
            "{typo}"
        );
    }
}
