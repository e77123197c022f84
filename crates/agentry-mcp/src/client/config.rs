//! How to reach one MCP server, and how far to trust it.

use std::time::Duration;

/// How long connecting (spawning and the handshake) may take unless told otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout. Its stderr goes to `tracing`.
    Stdio {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP at a URL.
    Http {
        /// The endpoint, such as `http://127.0.0.1:3001/mcp`.
        url: String,
        /// A bearer token, sent as `Authorization: Bearer …`.
        bearer: Option<String>,
        /// Extra headers on every request.
        headers: Vec<(String, String)>,
    },
}

impl std::fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Stdio { program, args, .. } => f
                .debug_struct("Stdio")
                .field("program", program)
                .field("args", args)
                .finish_non_exhaustive(),
            // Tokens and header values stay out of logs.
            Self::Http {
                url,
                bearer,
                headers,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("bearer", &bearer.as_ref().map(|_| "<redacted>"))
                .field(
                    "headers",
                    &headers.iter().map(|(name, _)| name).collect::<Vec<_>>(),
                )
                .finish(),
        }
    }
}

/// Which protocol era the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpProtocol {
    /// 2025-11-25 and earlier: the `initialize` handshake, then a session (the default:
    /// what every server speaks today).
    #[default]
    Initialize,
    /// 2026-07-28, stateless: `server/discover`, then every request carries its own metadata.
    Stateless,
    /// Try 2026-07-28 with `server/discover`; fall back to `initialize` when the
    /// server does not know it.
    Auto,
}

/// One MCP server: its name (the namespace of its tools), how to reach it,
/// whether its tool annotations are believed, and what besides tools it offers.
#[derive(Debug, Clone)]
pub struct McpServerConfig {
    /// The namespace of its tools: `everything` gives `everything.echo`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Believe its tool annotations. Untrusted (the default), every tool is
    /// taken as destructive and not read-only whatever it claims, so each call
    /// goes through the agent's approver.
    pub trusted: bool,
    /// Offer its prompts as tools (`NAME.prompt_…`).
    pub prompts: bool,
    /// Offer its resources as tools (`NAME.list_resources`, `NAME.read_resource`).
    pub resources: bool,
    /// Offer its resource templates as tools, one `NAME.template_…` each,
    /// the template's variables as arguments.
    pub templates: bool,
    /// Longest a request (a tool call, a listing) may take before it is
    /// cancelled (`notifications/cancelled`).
    pub call_timeout: Duration,
    /// Longest starting the server and the handshake may take.
    pub connect_timeout: Duration,
    /// The protocol era to speak.
    pub protocol: McpProtocol,
    /// Only these of the server's tools, by the server's own names (all when `None`).
    pub allow: Option<Vec<String>>,
    /// Who answers the server's questions (elicitation). Without one the
    /// client does not declare the capability, and no server can ask.
    pub elicitor: Option<super::Elicitor>,
    /// Caps on each listing of its tools, prompts, resources and templates.
    pub list_limits: super::ListLimits,
    /// Sign in with OAuth when the server asks (Streamable HTTP only).
    pub oauth: Option<super::McpOAuth>,
}

impl McpServerConfig {
    /// A server run as a child process: `command_line` is split into words
    /// as a POSIX shell would (quotes and backslashes included), without running
    /// a shell: `npx -y @modelcontextprotocol/server-everything`.
    pub fn stdio(name: impl Into<String>, command_line: &str) -> Self {
        let words = shell_words::split(command_line)
            .unwrap_or_else(|_| command_line.split_whitespace().map(str::to_owned).collect());
        let mut words = words.into_iter();
        let program = words.next().unwrap_or_default();
        Self::command(name, program, words)
    }

    /// A server run as a child process: `program` with exactly these arguments.
    pub fn command<I, S>(name: impl Into<String>, program: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(
            name,
            McpTransport::Stdio {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: Vec::new(),
            },
        )
    }

    /// A server at a Streamable HTTP endpoint.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                bearer: None,
                headers: Vec::new(),
            },
        )
    }

    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            trusted: false,
            prompts: false,
            resources: false,
            templates: false,
            call_timeout: Duration::from_secs(120),
            connect_timeout: CONNECT_TIMEOUT,
            protocol: McpProtocol::default(),
            allow: None,
            elicitor: None,
            list_limits: super::ListLimits::default(),
            oauth: None,
        }
    }

    /// Let the server ask the user questions, answered by `elicitor`.
    pub fn elicitor(mut self, elicitor: super::Elicitor) -> Self {
        self.elicitor = Some(elicitor);
        self
    }

    /// A server as written on a command line: `[NAME=]COMMAND_OR_URL`. An
    /// `http://` or `https://` URL is a Streamable HTTP server, anything else a
    /// command line. Without `NAME=` (letters, digits, `_`, `-`), the name is
    /// the server's own, set once connected.
    ///
    /// ```
    /// use agentry_mcp::{McpServerConfig, McpTransport};
    ///
    /// let named = McpServerConfig::parse("fs=npx -y @modelcontextprotocol/server-filesystem /tmp");
    /// assert_eq!(named.name, "fs");
    /// let remote = McpServerConfig::parse("https://mcp.example.com/mcp");
    /// assert!(matches!(remote.transport, McpTransport::Http { .. }) && remote.name.is_empty());
    /// ```
    pub fn parse(spec: &str) -> Self {
        let (name, rest) = match spec.split_once('=') {
            Some((name, rest))
                if !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
            {
                (name, rest)
            }
            _ => ("", spec),
        };
        if rest.starts_with("http://") || rest.starts_with("https://") {
            Self::http(name, rest)
        } else {
            Self::stdio(name, rest)
        }
    }

    /// Send `Authorization: Bearer token` (HTTP only).
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        if let McpTransport::Http { bearer, .. } = &mut self.transport {
            *bearer = Some(token.into());
        }
        self
    }

    /// Sign in with OAuth when the server asks for it (HTTP only): its
    /// 401 starts discovery and the sign-in, tokens are kept in
    /// `oauth`'s [`TokenStore`](super::TokenStore) and refreshed, and a
    /// 403 for a larger scope signs in for it. A configured
    /// [`bearer`](Self::bearer) token is not sent then.
    pub fn oauth(mut self, oauth: super::McpOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Send a header on every request (HTTP only).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Set an environment variable for the child (stdio only).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.push((name.into(), value.into()));
        }
        self
    }

    /// Believe the server's tool annotations (read-only, destructive, idempotent).
    pub fn trusted(mut self, trusted: bool) -> Self {
        self.trusted = trusted;
        self
    }

    /// Offer the server's prompts as tools.
    pub fn with_prompts(mut self) -> Self {
        self.prompts = true;
        self
    }

    /// Offer the server's resources as tools (list and read).
    pub fn with_resources(mut self) -> Self {
        self.resources = true;
        self
    }

    /// Offer the server's resource templates as tools, one per template.
    pub fn with_templates(mut self) -> Self {
        self.templates = true;
        self
    }

    /// How long a request may take before it is cancelled.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Offer only these of the server's tools (by the server's own names).
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Speak this protocol era.
    pub fn protocol(mut self, protocol: McpProtocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Cap each listing (pages, items, bytes) at `limits`.
    pub fn list_limits(mut self, limits: super::ListLimits) -> Self {
        self.list_limits = limits;
        self
    }

    /// How long starting the server and the handshake may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
}
