//! Workspace trust, as direnv and VS Code have it. An `agentry.toml` found
//! in the current directory (not named with `--config`) may come with a
//! cloned repository; if it would start processes or widen what tools may
//! do, it is used only once the user trusted it with `agentry trust`, which
//! records the file's canonical path and the SHA-256 of its content. Editing
//! the file revokes the trust. A file named with `--config` is trusted: the
//! user chose it.
//!
//! What needs trust (everything else, the model, the prompt, limits, a
//! SQLite memory file, runs without):
//! - an MCP server (`[mcp.servers.NAME]`): a `command` is a process started,
//!   a `url` a server the agent's tools come from (and `bearer_env` a secret
//!   sent to it);
//! - `[grants]`: directories tools may read or write, hosts they may reach,
//!   variables they may read;
//! - `agent.dir` or `agent.skills` outside the file's directory (the file
//!   reader and `read_skill` read there);
//! - `agent.mcp_trusted = true` (MCP servers' read-only tools, `--mcp` ones
//!   too, would run without approval);
//! - `server.listen` on an address other than loopback, and any
//!   `server.allow_hosts` or `server.allow_origins` (other names and web
//!   pages could reach the server from a browser);
//! - `memory.store` in a PostgreSQL database (the conversations go there).
//!
//! The records are kept in `$AGENTRY_TRUST_FILE`, else
//! `trusted.json` in agentry's folder of the user's data directory
//! (`~/.local/share/agentry/` on Linux), written with mode 0600.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{DEFAULT_FILE, Loaded};

/// The variable that names the trust store instead of the default one.
pub const TRUST_FILE_VAR: &str = "AGENTRY_TRUST_FILE";

/// `agentry trust`.
#[derive(clap::Args)]
pub struct TrustArgs {
    /// The definition file.
    #[arg(default_value = DEFAULT_FILE)]
    path: PathBuf,
    /// Take back the trust given to the file.
    #[arg(long, conflicts_with = "list")]
    revoke: bool,
    /// List the trusted files.
    #[arg(long)]
    list: bool,
}

/// What `loaded` would start or grant, one line each; empty when it needs
/// no trust.
pub fn powers(loaded: &Loaded) -> Vec<String> {
    let mut powers = mcp_servers(loaded);
    let file = &loaded.file;
    let grants = &file.grants;
    for dir in &grants.fs_read {
        let dir = loaded.resolve(dir.get_ref());
        powers.push(format!("let tools read {}", dir.display()));
    }
    for dir in &grants.fs_write {
        let dir = loaded.resolve(dir.get_ref());
        powers.push(format!("let tools write {}", dir.display()));
    }
    for host in &grants.net {
        powers.push(format!("let tools reach {}", host.get_ref()));
    }
    for variable in &grants.env {
        powers.push(format!("let tools read ${variable}"));
    }
    let outside = |value: &toml::Spanned<PathBuf>| {
        let path = loaded.resolve(value.get_ref());
        let home = loaded.path.as_deref().and_then(Path::parent);
        let inside = match (path.canonicalize(), home.map(canonical_dir)) {
            (Ok(path), Some(Ok(home))) => path.starts_with(home),
            _ => false,
        };
        (!inside).then_some(path)
    };
    if let Some(dir) = file.agent.dir.as_ref().and_then(outside) {
        powers.push(format!("let the file reader read {}", dir.display()));
    }
    if let Some(dir) = file.agent.skills.as_ref().and_then(outside) {
        powers.push(format!("load Agent Skills from {}", dir.display()));
    }
    if file.agent.mcp_trusted == Some(true) {
        powers.push(
            "believe every MCP server's tool annotations (their read-only tools run without approval)"
                .into(),
        );
    }
    if let Some(listen) = file.server.listen
        && !listen.ip().is_loopback()
    {
        powers.push(format!("listen on {listen}, beyond this machine"));
    }
    for host in &file.server.allow_hosts {
        powers.push(format!("answer requests for the host {}", host.get_ref()));
    }
    for origin in &file.server.allow_origins {
        powers.push(format!(
            "let pages from {} use the server",
            origin.get_ref()
        ));
    }
    if let Some(store) = &file.memory.store
        && crate::definition::is_postgres(store.get_ref())
    {
        // The address without the credentials.
        let host = store.get_ref().rsplit('@').next().unwrap_or_default();
        let host = host.split("://").last().unwrap_or_default();
        powers.push(format!(
            "keep chat sessions in the PostgreSQL database at {host}"
        ));
    }
    powers
}

/// The `[mcp.servers.NAME]` tables, one line each.
fn mcp_servers(loaded: &Loaded) -> Vec<String> {
    let Some(servers) = loaded
        .file
        .mcp
        .as_ref()
        .and_then(|mcp| mcp.get("servers"))
        .and_then(toml::Value::as_table)
    else {
        return Vec::new();
    };
    servers
        .iter()
        .map(|(name, server)| {
            let text = |key: &str| server.get(key).and_then(toml::Value::as_str);
            let mut line = match (text("command"), text("url")) {
                (Some(command), _) => format!("start the MCP server `{name}`: `{command}`"),
                (None, Some(url)) => format!("use the MCP server `{name}` at {url}"),
                (None, None) => format!("use the MCP server `{name}`"),
            };
            if let Some(variable) = text("bearer_env") {
                line.push_str(&format!(", sending it ${variable}"));
            }
            if server.get("trusted").and_then(toml::Value::as_bool) == Some(true) {
                line.push_str(" (its read-only tools run without approval)");
            }
            line
        })
        .collect()
}

/// Use the implicitly found `loaded` only if it needs no trust or is trusted
/// as it is now; otherwise say what it would do and how to trust it.
pub fn check(loaded: &Loaded) -> Result<(), String> {
    let powers = powers(loaded);
    if powers.is_empty() {
        return Ok(());
    }
    let path = canonical(loaded.path.as_deref().unwrap_or(Path::new(DEFAULT_FILE)))?;
    let store = Store::load()?;
    let listed = list(&powers);
    let name = DEFAULT_FILE;
    match store.files.get(&key(&path)) {
        Some(hash) if *hash == sha256(&loaded.text) => Ok(()),
        Some(_) => Err(format!(
            "{} changed since you trusted it; it would:\n{listed}Nothing was started. If you \
             trust it as it is now, run `agentry trust` again (or name it: `--config {name}`).",
            path.display()
        )),
        None => Err(format!(
            "{} was found in the current directory and is not trusted; it would:\n{listed}\
             Nothing was started. If you trust it, run `agentry trust` (or name it: \
             `--config {name}`).",
            path.display()
        )),
    }
}

/// `agentry trust [PATH]`, `--revoke`, `--list`.
pub fn run(args: TrustArgs) -> Result<ExitCode, String> {
    let mut store = Store::load()?;
    if args.list {
        for (path, hash) in &store.files {
            let now = std::fs::read(path).map(|bytes| hex(&Sha256::digest(bytes)));
            let state = match now {
                Ok(now) if now == *hash => "",
                Ok(_) => " (changed since: not trusted)",
                Err(_) => " (missing)",
            };
            println!("{path}{state}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.revoke {
        let path = canonical(&args.path).or_else(|_| {
            std::path::absolute(&args.path).map_err(|e| format!("{}: {e}", args.path.display()))
        })?;
        if store.files.remove(&key(&path)).is_some() {
            store.save()?;
            println!("{} is no longer trusted", path.display());
        } else {
            println!("{} was not trusted", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let loaded = Loaded::read(&args.path)?;
    let path = canonical(&args.path)?;
    let powers = powers(&loaded);
    if powers.is_empty() {
        println!(
            "{} starts nothing and grants nothing: it runs without trust",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    print!("{} would:\n{}", path.display(), list(&powers));
    store.files.insert(key(&path), sha256(&loaded.text));
    store.save()?;
    println!(
        "trusted as it is now; after an edit, run `agentry trust` again ({})",
        Store::location()?.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `  - power` lines.
fn list(powers: &[String]) -> String {
    powers
        .iter()
        .map(|power| format!("  - {power}\n"))
        .collect()
}

fn canonical(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A file's directory, canonical (`""`, the parent of a bare name, is `.`).
fn canonical_dir(dir: &Path) -> std::io::Result<PathBuf> {
    if dir.as_os_str().is_empty() {
        Path::new(".").canonicalize()
    } else {
        dir.canonicalize()
    }
}

fn key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn sha256(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The trust records: each trusted file's canonical path and the SHA-256
/// of the content trusted.
#[derive(Default, Serialize, Deserialize)]
struct Store {
    files: BTreeMap<String, String>,
}

impl Store {
    /// `$AGENTRY_TRUST_FILE`, else `agentry/trusted.json` in the user's data directory.
    fn location() -> Result<PathBuf, String> {
        if let Some(file) = std::env::var_os(TRUST_FILE_VAR).filter(|file| !file.is_empty()) {
            return Ok(PathBuf::from(file));
        }
        dirs::data_dir()
            .map(|dir| dir.join("agentry").join("trusted.json"))
            .ok_or_else(|| {
                format!("there is no data directory to keep trusted files in: set {TRUST_FILE_VAR}")
            })
    }

    /// The records (none when the file does not exist yet).
    fn load() -> Result<Self, String> {
        let location = Self::location()?;
        match std::fs::read_to_string(&location) {
            Ok(text) => {
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", location.display()))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(error) => Err(format!("{}: {error}", location.display())),
        }
    }

    /// Write the records: to a file of mode 0600 beside the store, then
    /// renamed over it, so that a reader never sees half a file.
    fn save(&self) -> Result<(), String> {
        let location = Self::location()?;
        let failed = |e: std::io::Error| format!("{}: {e}", location.display());
        if let Some(dir) = location.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(failed)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        let mut partial = location.clone().into_os_string();
        partial.push(format!(".{}", std::process::id()));
        let partial = PathBuf::from(partial);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&partial).and_then(|mut file| {
            use std::io::Write;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        });
        if let Err(error) = written.and_then(|()| std::fs::rename(&partial, &location)) {
            let _ = std::fs::remove_file(&partial);
            return Err(failed(error));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn powers_of(text: &str) -> Vec<String> {
        let loaded = Loaded::parse(Path::new("agentry.toml"), text.to_owned()).unwrap();
        powers(&loaded)
    }

    #[test]
    fn the_starter_file_and_plain_settings_need_no_trust() {
        assert_eq!(powers_of(crate::config::STARTER), Vec::<String>::new());
        let plain = "[model]\nprovider = \"openai\"\nname = \"gpt\"\n[agent]\nsystem = \"hi\"\n\
                     dir = \".\"\nmax_steps = 3\n[memory]\nstore = \"sessions.db\"\n\
                     [server]\nlisten = \"127.0.0.1:9\"\napi_keys = [\"k\"]\n";
        assert_eq!(powers_of(plain), Vec::<String>::new());
    }

    #[test]
    fn what_starts_processes_or_widens_grants_is_named() {
        let text = "[agent]\ndir = \"/\"\nmcp_trusted = true\n\
             [grants]\nfs_read = [\"/etc\"]\nfs_write = [\"out\"]\nnet = [\"example.com\"]\n\
             env = [\"HOME\"]\n[server]\nlisten = \"0.0.0.0:8080\"\n\
             allow_hosts = [\"agent.example\"]\nallow_origins = [\"https://app.example\"]\n\
             [memory]\nstore = \"postgres://me:secret@db.example:5432/agentry\"\n\
             [mcp.servers.files]\ncommand = \"sh -c 'touch x'\"\n\
             [mcp.servers.remote]\nurl = \"https://mcp.example/mcp\"\nbearer_env = \"TOKEN\"\n\
             trusted = true\n";
        assert_eq!(
            powers_of(text),
            [
                "start the MCP server `files`: `sh -c 'touch x'`",
                "use the MCP server `remote` at https://mcp.example/mcp, sending it $TOKEN \
                 (its read-only tools run without approval)",
                "let tools read /etc",
                "let tools write out",
                "let tools reach example.com",
                "let tools read $HOME",
                "let the file reader read /",
                "believe every MCP server's tool annotations (their read-only tools run without approval)",
                "listen on 0.0.0.0:8080, beyond this machine",
                "answer requests for the host agent.example",
                "let pages from https://app.example use the server",
                "keep chat sessions in the PostgreSQL database at db.example:5432/agentry",
            ]
        );
    }
}
