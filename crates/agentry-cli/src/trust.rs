//! Workspace trust, as direnv and VS Code have it. An `agentry.toml` found
//! in the current directory (not named with `--config`) may come with a
//! cloned repository; if it would start processes or widen what tools may
//! do, it is used only once the user trusted it with `agentry trust`, which
//! records the file's canonical path and the SHA-256 of its content. Editing
//! the file revokes the trust. A file named with `--config` is trusted: the
//! user chose it.
//!
//! Trust is for the file where it was found: the record's key is the
//! canonical directory it was found in and the file's name, the name itself
//! not followed, so that a symlink to a trusted file elsewhere is a file of
//! its own (its MCP servers would start in the link's directory), trusted
//! only once trusted as such. A path that is not UTF-8 cannot be recorded.
//! Every string of the file that is shown (commands, URLs, paths, names) is
//! shown with its control and format characters escaped, so that the file
//! cannot rewrite the listing on a terminal.
//!
//! What needs trust (everything else, the local model, the prompt, limits,
//! a SQLite memory file in the file's folder, runs without):
//! - an MCP server (`[mcp.servers.NAME]`): a `command` is a process started,
//!   a `url` a server the agent's tools come from (and `bearer_env` or an
//!   OAuth `client_secret_env` a secret sent to it, an OAuth `token_file`
//!   where the user's sign-in tokens are written);
//! - `[grants]`: directories tools may read or write, hosts they may reach,
//!   variables they may read;
//! - `agent.dir` or `agent.skills` outside the file's directory (the file
//!   reader and `read_skill` read there);
//! - `agent.mcp_trusted = true` (MCP servers' read-only tools, `--mcp` ones
//!   too, would run without approval);
//! - `server.listen` on an address other than loopback, and any
//!   `server.allow_hosts` or `server.allow_origins` (other names and web
//!   pages could reach the server from a browser);
//! - `memory.store` in a PostgreSQL database (the conversations go there),
//!   or a SQLite file outside the file's folder (it would be created or
//!   written there, wherever that is); the default `agentry.db` too where a
//!   symlink takes it outside;
//! - `model.provider` or `memory.embedder` of a remote service (OpenAI,
//!   Anthropic): the conversations would leave the machine, sent with the
//!   user's key.
//!
//! The records are kept in `$AGENTRY_TRUST_FILE`, else
//! `trusted.json` in agentry's folder of the user's data directory
//! (`~/.local/share/agentry/` on Linux), written with mode 0600; a store
//! that others may write (group or world) is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use agentry_mcp::client::escaped;

use crate::args::ProviderKind;
use crate::config::{DEFAULT_FILE, EmbedderKind, Loaded};
use crate::definition::DEFAULT_STORE;

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

/// What `loaded` would start or grant, one line each, its strings escaped
/// ([`escaped`]); empty when it needs no trust.
pub fn powers(loaded: &Loaded) -> Vec<String> {
    let mut powers = mcp_servers(loaded);
    let file = &loaded.file;
    let grants = &file.grants;
    for dir in &grants.fs_read {
        let dir = loaded.resolve(dir.get_ref());
        powers.push(format!("let tools read {}", shown(&dir)));
    }
    for dir in &grants.fs_write {
        let dir = loaded.resolve(dir.get_ref());
        powers.push(format!("let tools write {}", shown(&dir)));
    }
    for host in &grants.net {
        powers.push(format!("let tools reach {}", escaped(host.get_ref())));
    }
    for variable in &grants.env {
        powers.push(format!("let tools read ${}", escaped(variable)));
    }
    let home = loaded
        .path
        .as_deref()
        .and_then(Path::parent)
        .map(canonical_dir);
    let outside = |value: &toml::Spanned<PathBuf>| {
        let path = loaded.resolve(value.get_ref());
        let inside = match (path.canonicalize(), &home) {
            (Ok(path), Some(Ok(home))) => path.starts_with(home),
            _ => false,
        };
        (!inside).then_some(path)
    };
    if let Some(dir) = file.agent.dir.as_ref().and_then(outside) {
        powers.push(format!("let the file reader read {}", shown(&dir)));
    }
    if let Some(dir) = file.agent.skills.as_ref().and_then(outside) {
        powers.push(format!("load Agent Skills from {}", shown(&dir)));
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
        powers.push(format!(
            "answer requests for the host {}",
            escaped(host.get_ref())
        ));
    }
    for origin in &file.server.allow_origins {
        powers.push(format!(
            "let pages from {} use the server",
            escaped(origin.get_ref())
        ));
    }
    let store = file
        .memory
        .store
        .as_ref()
        .map(|store| store.get_ref().as_str());
    if let Some(store) = store
        && crate::definition::is_postgres(store)
    {
        // The address without the credentials.
        let host = store.rsplit('@').next().unwrap_or_default();
        let host = host.split("://").last().unwrap_or_default();
        powers.push(format!(
            "keep chat sessions in the PostgreSQL database at {}",
            escaped(host)
        ));
    } else {
        let path = loaded.resolve(Path::new(store.unwrap_or(DEFAULT_STORE)));
        if let Some(place) = sqlite_outside(&path, &home) {
            powers.push(format!(
                "keep chat sessions in the SQLite file {}, outside its folder",
                shown(&place)
            ));
        }
    }
    for (name, agent) in &file.a2a.agents {
        let mut line = format!(
            "use the A2A agent `{}` at {}",
            escaped(name),
            escaped(&agent.url)
        );
        if let Some(variable) = &agent.bearer_env {
            line.push_str(&format!(", sending it ${}", escaped(variable)));
        }
        if agent.trusted == Some(true) {
            line.push_str(" (its calls run without approval)");
        }
        powers.push(line);
    }
    let telemetry = &file.telemetry;
    if telemetry.enabled != Some(false)
        && let Some(endpoint) = &telemetry.endpoint
    {
        let content = match telemetry.capture_content {
            Some(true) => ", with the conversations and tool arguments and results",
            _ => "",
        };
        powers.push(format!(
            "send traces of every run to {}{content}",
            escaped(endpoint)
        ));
    } else if telemetry.enabled == Some(true) {
        powers.push(format!(
            "send traces of every run to $OTEL_EXPORTER_OTLP_ENDPOINT (else a collector on this \
             machine){}",
            match telemetry.capture_content {
                Some(true) => ", with the conversations and tool arguments and results",
                _ => "",
            }
        ));
    } else if telemetry.capture_content == Some(true) {
        powers.push(
            "put the conversations and tool arguments and results in the traces sent to $OTEL_EXPORTER_OTLP_ENDPOINT"
                .into(),
        );
    }
    if let Some(filter) = &telemetry.filter {
        powers.push(format!(
            "choose which spans are sent to a collector: {}",
            escaped(filter)
        ));
    }
    match file.model.provider {
        Some(ProviderKind::Openai) => powers.push(
            "send the conversations to an OpenAI-compatible service ($OPENAI_BASE_URL, else \
             OpenAI), with your $OPENAI_API_KEY"
                .into(),
        ),
        Some(ProviderKind::Anthropic) => {
            powers.push("send the conversations to Anthropic, with your $ANTHROPIC_API_KEY".into())
        }
        Some(ProviderKind::Local | ProviderKind::Offline) | None => {}
    }
    if file.memory.embedder == Some(EmbedderKind::Openai) {
        powers.push(
            "send what is remembered to an OpenAI-compatible embeddings service \
             ($OPENAI_BASE_URL, else OpenAI), with your $OPENAI_API_KEY"
                .into(),
        );
    }
    powers
}

/// Where the SQLite file at `path` (resolved against the file's folder)
/// would be created or written, if that is not inside `home`, the file's
/// folder, canonical: a file or symlink there is followed to where it leads
/// (a dangling symlink counts as outside: SQLite would create its target);
/// a file not there yet is placed in its folder, canonical.
fn sqlite_outside(path: &Path, home: &Option<std::io::Result<PathBuf>>) -> Option<PathBuf> {
    let Some(Ok(home)) = home else {
        return Some(path.to_owned());
    };
    let place = match path.canonicalize() {
        Ok(place) => place,
        Err(_) if path.symlink_metadata().is_ok() => {
            // A dangling symlink: where it leads.
            let target = std::fs::read_link(path).unwrap_or_default();
            return Some(path.parent().unwrap_or(Path::new("")).join(target));
        }
        Err(_) => {
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                return Some(path.to_owned());
            };
            match canonical_dir(dir) {
                Ok(dir) => dir.join(name),
                Err(_) => return Some(path.to_owned()),
            }
        }
    };
    (!place.starts_with(home)).then_some(place)
}

/// A path as shown to the user: its control and format characters escaped.
fn shown(path: &Path) -> String {
    escaped(&path.display().to_string())
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
            let text = |key: &str| server.get(key).and_then(toml::Value::as_str).map(escaped);
            let name = escaped(name);
            let mut line = match (text("command"), text("url")) {
                (Some(command), _) => format!("start the MCP server `{name}`: `{command}`"),
                (None, Some(url)) => format!("use the MCP server `{name}` at {url}"),
                (None, None) => format!("use the MCP server `{name}`"),
            };
            if let Some(variable) = text("bearer_env") {
                line.push_str(&format!(", sending it ${variable}"));
            }
            let oauth = server.get("oauth").and_then(toml::Value::as_table);
            let oauth_text = |key: &str| {
                oauth
                    .and_then(|table| table.get(key))
                    .and_then(toml::Value::as_str)
                    .map(escaped)
            };
            if let Some(variable) = oauth_text("client_secret_env") {
                line.push_str(&format!(", signing in with ${variable}"));
            }
            if let Some(file) = oauth_text("token_file") {
                line.push_str(&format!(", keeping its sign-in tokens in {file}"));
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
    let path = where_found(loaded.path.as_deref().unwrap_or(Path::new(DEFAULT_FILE)))?;
    let listed = list(&powers);
    let name = DEFAULT_FILE;
    let Some(key) = path.to_str() else {
        return Err(format!(
            "{} was found in the current directory and is not trusted; it would:\n{listed}\
             Nothing was started. Its path is not UTF-8, so it cannot be trusted with \
             `agentry trust`; if you trust it, name it: `--config {name}`.",
            shown(&path)
        ));
    };
    let store = Store::load()?;
    match store.files.get(key) {
        Some(hash) if *hash == sha256(&loaded.text) => Ok(()),
        Some(_) => Err(format!(
            "{} changed since you trusted it; it would:\n{listed}Nothing was started. If you \
             trust it as it is now, run `agentry trust` again (or name it: `--config {name}`).",
            shown(&path)
        )),
        None => Err(format!(
            "{} was found in the current directory and is not trusted; it would:\n{listed}\
             Nothing was started. If you trust it, run `agentry trust` (or name it: \
             `--config {name}`).",
            shown(&path)
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
            println!("{}{state}", escaped(path));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.revoke {
        let path = where_found(&args.path).or_else(|_| {
            std::path::absolute(&args.path).map_err(|e| format!("{}: {e}", shown(&args.path)))
        })?;
        if path
            .to_str()
            .is_some_and(|key| store.files.remove(key).is_some())
        {
            store.save()?;
            println!("{} is no longer trusted", shown(&path));
        } else {
            println!("{} was not trusted", shown(&path));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let loaded = Loaded::read(&args.path)?;
    let path = where_found(&args.path)?;
    let powers = powers(&loaded);
    if powers.is_empty() {
        println!(
            "{} starts nothing and grants nothing: it runs without trust",
            shown(&path)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let Some(key) = path.to_str() else {
        return Err(format!(
            "{}: its path is not UTF-8, so it cannot be recorded as trusted; if you trust \
             it, name it: `--config {}`",
            shown(&path),
            shown(&args.path)
        ));
    };
    print!("{} would:\n{}", shown(&path), list(&powers));
    store.files.insert(key.to_owned(), sha256(&loaded.text));
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

/// The file at `path` as trust knows it: the canonical directory it is in,
/// and its own name, not followed (a symlink is a file of its own: what it
/// starts would start in the link's directory, not its target's).
fn where_found(path: &Path) -> Result<PathBuf, String> {
    let failed = |e: std::io::Error| format!("{}: {e}", shown(path));
    path.symlink_metadata().map_err(failed)?;
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file", shown(path)))?;
    let dir = canonical_dir(path.parent().unwrap_or(Path::new(""))).map_err(failed)?;
    Ok(dir.join(name))
}

/// A file's directory, canonical (`""`, the parent of a bare name, is `.`).
fn canonical_dir(dir: &Path) -> std::io::Result<PathBuf> {
    if dir.as_os_str().is_empty() {
        Path::new(".").canonicalize()
    } else {
        dir.canonicalize()
    }
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

    /// The records (none when the file does not exist yet). A store that
    /// its group or others may write is refused: whoever can write it can
    /// trust any file.
    fn load() -> Result<Self, String> {
        let location = Self::location()?;
        #[cfg(unix)]
        if let Ok(metadata) = std::fs::metadata(&location) {
            use std::os::unix::fs::PermissionsExt;
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o022 != 0 {
                return Err(format!(
                    "{} may be written by others (mode {mode:o}), so it is not used: anyone \
                     who can write it can trust any file; make it private with `chmod 600 {}` \
                     if its records are yours",
                    shown(&location),
                    shown(&location)
                ));
            }
        }
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
    fn an_mcp_sign_in_says_which_secret_and_where_its_tokens_go() {
        let text = "[mcp.servers.notes]\nurl = \"https://notes.example/mcp\"\n\
                    [mcp.servers.notes.oauth]\nclient_id = \"a\"\n\
                    client_secret_env = \"NOTES_SECRET\"\ntoken_file = \"/tmp/t.json\"\n";
        assert_eq!(
            powers_of(text),
            [
                "use the MCP server `notes` at https://notes.example/mcp, signing in with \
              $NOTES_SECRET, keeping its sign-in tokens in /tmp/t.json"
            ]
        );
    }

    #[test]
    fn remote_a2a_agents_need_trust() {
        let text = "[a2a.agents.billing]\nurl = \"https://billing.example\"\n\
                    bearer_env = \"BILLING_TOKEN\"\ntrusted = true\n\
                    [a2a.agents.docs]\nurl = \"http://127.0.0.1:9000\"\n";
        assert_eq!(
            powers_of(text),
            [
                "use the A2A agent `billing` at https://billing.example, sending it \
                 $BILLING_TOKEN (its calls run without approval)",
                "use the A2A agent `docs` at http://127.0.0.1:9000",
            ]
        );
    }

    #[test]
    fn sending_traces_away_needs_trust() {
        let away = "[telemetry]\nendpoint = \"https://otel.example:4318\"\n";
        assert_eq!(
            powers_of(away),
            ["send traces of every run to https://otel.example:4318"]
        );
        let content = format!("{away}capture_content = true\n");
        assert_eq!(
            powers_of(&content),
            [
                "send traces of every run to https://otel.example:4318, with the conversations \
                 and tool arguments and results"
            ]
        );
        let from_env = "[telemetry]\ncapture_content = true\n";
        assert_eq!(
            powers_of(from_env),
            [
                "put the conversations and tool arguments and results in the traces sent to \
                 $OTEL_EXPORTER_OTLP_ENDPOINT"
            ]
        );
        // Off, or only a service name: nothing leaves.
        let off = "[telemetry]\nenabled = false\nendpoint = \"https://otel.example\"\n";
        assert_eq!(powers_of(off), Vec::<String>::new());
        let on = "[telemetry]\nenabled = true\n";
        assert_eq!(
            powers_of(on),
            [
                "send traces of every run to $OTEL_EXPORTER_OTLP_ENDPOINT (else a collector on \
                 this machine)"
            ]
        );
        let named = "[telemetry]\nservice_name = \"desk\"\n";
        assert_eq!(powers_of(named), Vec::<String>::new());
    }

    #[test]
    fn the_starter_file_and_plain_settings_need_no_trust() {
        assert_eq!(powers_of(crate::config::STARTER), Vec::<String>::new());
        let plain = "[model]\nprovider = \"local\"\nname = \"qwen\"\n[agent]\nsystem = \"hi\"\n\
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
             embedder = \"openai\"\n[model]\nprovider = \"anthropic\"\n\
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
                "send the conversations to Anthropic, with your $ANTHROPIC_API_KEY",
                "send what is remembered to an OpenAI-compatible embeddings service \
                 ($OPENAI_BASE_URL, else OpenAI), with your $OPENAI_API_KEY",
            ]
        );
        assert_eq!(
            powers_of("[model]\nprovider = \"openai\"\n"),
            [
                "send the conversations to an OpenAI-compatible service ($OPENAI_BASE_URL, \
                 else OpenAI), with your $OPENAI_API_KEY"
            ]
        );
    }

    #[test]
    fn a_sqlite_store_outside_the_files_folder_needs_trust() {
        let parent = Path::new("..").canonicalize().unwrap();
        assert_eq!(
            powers_of("[memory]\nstore = \"../elsewhere.db\"\n"),
            [format!(
                "keep chat sessions in the SQLite file {}, outside its folder",
                parent.join("elsewhere.db").display()
            )]
        );
        assert_eq!(
            powers_of("[memory]\nstore = \"/no/such/dir/x.db\"\n"),
            ["keep chat sessions in the SQLite file /no/such/dir/x.db, outside its folder"]
        );
        assert_eq!(
            powers_of("[memory]\nstore = \"./in.db\"\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_files_strings_are_shown_escaped() {
        let text = "[mcp.servers.docs]\ncommand = \"sh -c 'touch x' \\\"\\u001b[2K\\r  - start \
                    the MCP server `docs`: `npx docs\\\"\"\n\
                    [grants]\nnet = [\"example.com\"]\nfs_read = [\"a\\u202eb\"]\n";
        assert_eq!(
            powers_of(text),
            [
                r#"start the MCP server `docs`: `sh -c 'touch x' "\u{1b}[2K\r  - start the MCP server `docs`: `npx docs"`"#,
                r"let tools read a\u{202e}b",
                "let tools reach example.com",
            ]
        );
    }
}
