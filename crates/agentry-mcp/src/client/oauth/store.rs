//! Where a server's tokens are kept between runs: a file only its owner may
//! read (0600, in a 0700 folder, written whole and renamed into place), or
//! memory.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use sha2::{Digest, Sha256};

/// Where the tokens for one MCP server are kept.
#[derive(Clone)]
pub struct TokenStore(Kind);

#[derive(Clone)]
enum Kind {
    File(PathBuf),
    Memory(Arc<Mutex<Option<StoredCredentials>>>),
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Kind::File(path) => f.debug_tuple("TokenStore::File").field(path).finish(),
            Kind::Memory(_) => f.write_str("TokenStore::Memory"),
        }
    }
}

impl TokenStore {
    /// A JSON file at `path`, created readable and writable by its owner
    /// only; a file others may read is refused, not used.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self(Kind::File(path.into()))
    }

    /// This process's memory only: the person signs in again next run.
    pub fn memory() -> Self {
        Self(Kind::Memory(Arc::default()))
    }

    /// The file, for a file store.
    pub fn path(&self) -> Option<&Path> {
        match &self.0 {
            Kind::File(path) => Some(path),
            Kind::Memory(_) => None,
        }
    }

    /// Whether tokens are stored (a sign-in happened and was not cleared).
    pub async fn is_signed_in(&self) -> bool {
        matches!(self.load().await, Ok(Some(stored)) if stored.token_response.is_some())
    }

    /// Forget the tokens (sign out): the file is removed.
    pub async fn sign_out(&self) -> std::io::Result<()> {
        match &self.0 {
            Kind::File(path) => match std::fs::remove_file(path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
                _ => Ok(()),
            },
            Kind::Memory(memory) => {
                *memory.lock().unwrap_or_else(|p| p.into_inner()) = None;
                Ok(())
            }
        }
    }
}

/// The file name for the server at `url`: its host and a digest of the
/// whole address, so two servers never share one.
pub(crate) fn file_name(url: &str) -> String {
    let host: String = url
        .split("://")
        .nth(1)
        .unwrap_or(url)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let digest = Sha256::digest(url.as_bytes());
    let short: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{host}-{short}.json")
}

fn store_error(path: &Path, what: &str, error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(format!("{what} {}: {error}", path.display()))
}

fn read(path: &Path) -> Result<Option<StoredCredentials>, AuthError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(store_error(path, "reading the token file", error)),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|error| store_error(path, "reading the token file", error))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(store_error(
                path,
                "refusing the token file",
                format!(
                    "others may read it (mode {:o}); remove it, or make it private with chmod 600",
                    mode & 0o777
                ),
            ));
        }
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|error| store_error(path, "the token file is not valid", error))
}

fn write(path: &Path, stored: &StoredCredentials) -> Result<(), AuthError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|error| store_error(dir, "creating the token folder", error))?;
    let text = serde_json::to_vec_pretty(stored)
        .map_err(|error| store_error(path, "encoding the token file", error))?;
    let temporary = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("tokens"),
        std::process::id()
    ));
    // A fresh file: never one that is there already (a link someone left).
    let _ = std::fs::remove_file(&temporary);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temporary).and_then(|mut file| {
        file.write_all(&text)?;
        file.sync_all()
    });
    if let Err(error) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(store_error(path, "writing the token file", error));
    }
    Ok(())
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match &self.0 {
            Kind::File(path) => read(path),
            Kind::Memory(memory) => Ok(memory.lock().unwrap_or_else(|p| p.into_inner()).clone()),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        match &self.0 {
            Kind::File(path) => write(path, &credentials),
            Kind::Memory(memory) => {
                *memory.lock().unwrap_or_else(|p| p.into_inner()) = Some(credentials);
                Ok(())
            }
        }
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.sign_out()
            .await
            .map_err(|error| AuthError::CredentialStoreError(error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_servers_on_one_host_get_two_files() {
        let a = file_name("https://mcp.example.com/a/mcp");
        let b = file_name("https://mcp.example.com/b/mcp");
        assert!(
            a.starts_with("mcp.example.com-") && a.ends_with(".json"),
            "{a}"
        );
        assert_ne!(a, b);
        assert!(!file_name("http://../../etc/passwd").contains('/'));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_file_is_private_and_a_readable_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("agentry-token-store-{}", std::process::id()));
        let path = dir.join("sub").join("server.json");
        let store = TokenStore::file(&path);
        assert!(
            store.load().await.unwrap().is_none(),
            "no file is no tokens"
        );
        store
            .save(StoredCredentials::new("client".into(), None, vec![], None))
            .await
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(store.load().await.unwrap().unwrap().client_id, "client");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = store.load().await.unwrap_err().to_string();
        assert!(
            refused.contains("others may read it (mode 644)"),
            "{refused}"
        );
        store.sign_out().await.unwrap();
        assert!(!path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
