//! Capability-enforcing handles a tool reaches through its
//! [`ToolContext`](super::ToolContext): file access confined to granted
//! directories (after canonicalisation, symlinks included) and environment
//! variables limited to granted names. The HTTP handle lives in
//! `agentry-providers`, which owns the network dependencies.

use std::fs;
use std::path::{Path, PathBuf};

use super::capability::{Capabilities, Capability};

/// A tool tried to use something it was not granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    /// The capability is not in the tool's effective set.
    #[error("{capability} is not granted to this tool")]
    NotGranted {
        /// What was asked for.
        capability: Capability,
    },
    /// A path resolved outside every granted directory.
    #[error("{path:?} is outside the directories granted for {access} ({granted})")]
    OutsideGrant {
        /// The path as resolved (symlinks followed).
        path: String,
        /// `reading` or `writing`.
        access: &'static str,
        /// The granted directories.
        granted: String,
    },
    /// The file system refused or the path does not exist.
    #[error("{path:?}: {message}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        message: String,
    },
}

/// File access limited to the tool's granted directories.
#[derive(Debug, Clone)]
pub struct Fs {
    read_dirs: Vec<PathBuf>,
    write_dirs: Vec<PathBuf>,
}

impl Fs {
    pub(crate) fn new(capabilities: &Capabilities) -> Self {
        Self {
            read_dirs: capabilities.dirs(false),
            write_dirs: capabilities.dirs(true),
        }
    }

    /// Where `path` really points (symlinks followed), if reading it is allowed.
    /// Relative paths are taken from the first granted read directory.
    pub fn resolve_read(&self, path: impl AsRef<Path>) -> Result<PathBuf, CapabilityError> {
        let path = path.as_ref();
        let joined = anchor(path, &self.read_dirs, false)?;
        let real = joined
            .canonicalize()
            .map_err(|error| io_error(path, error))?;
        check_inside(real, &self.read_dirs, "reading")
    }

    /// Where writing `path` would land, if that is allowed. The parent
    /// directory must exist; an existing target is resolved through symlinks.
    pub fn resolve_write(&self, path: impl AsRef<Path>) -> Result<PathBuf, CapabilityError> {
        let path = path.as_ref();
        let joined = anchor(path, &self.write_dirs, true)?;
        let target = match joined.canonicalize() {
            Ok(real) => real,
            Err(_) => {
                let name = joined.file_name().ok_or_else(|| CapabilityError::Io {
                    path: path.display().to_string(),
                    message: "not a file path".into(),
                })?;
                let parent = joined.parent().unwrap_or(Path::new("/"));
                parent
                    .canonicalize()
                    .map_err(|error| io_error(parent, error))?
                    .join(name)
            }
        };
        check_inside(target, &self.write_dirs, "writing")
    }

    /// Read a granted file as UTF-8 text.
    pub fn read_to_string(&self, path: impl AsRef<Path>) -> Result<String, CapabilityError> {
        let real = self.resolve_read(path)?;
        fs::read_to_string(&real).map_err(|error| io_error(&real, error))
    }

    /// Read a granted file's bytes.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Vec<u8>, CapabilityError> {
        let real = self.resolve_read(path)?;
        fs::read(&real).map_err(|error| io_error(&real, error))
    }

    /// The entries of a granted directory, sorted by name.
    pub fn read_dir(&self, path: impl AsRef<Path>) -> Result<Vec<String>, CapabilityError> {
        let real = self.resolve_read(path)?;
        let entries = fs::read_dir(&real).map_err(|error| io_error(&real, error))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Write a file inside a granted write directory.
    pub fn write(
        &self,
        path: impl AsRef<Path>,
        contents: impl AsRef<[u8]>,
    ) -> Result<(), CapabilityError> {
        let target = self.resolve_write(path)?;
        fs::write(&target, contents).map_err(|error| io_error(&target, error))
    }
}

fn anchor(path: &Path, dirs: &[PathBuf], write: bool) -> Result<PathBuf, CapabilityError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    match dirs.first() {
        Some(root) => Ok(root.join(path)),
        None => Err(CapabilityError::NotGranted {
            capability: if write {
                Capability::FsWrite(path.to_path_buf())
            } else {
                Capability::FsRead(path.to_path_buf())
            },
        }),
    }
}

fn check_inside(
    real: PathBuf,
    dirs: &[PathBuf],
    access: &'static str,
) -> Result<PathBuf, CapabilityError> {
    if dirs.iter().any(|dir| real.starts_with(dir)) {
        return Ok(real);
    }
    let granted = if dirs.is_empty() {
        "none".to_owned()
    } else {
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(CapabilityError::OutsideGrant {
        path: real.display().to_string(),
        access,
        granted,
    })
}

fn io_error(path: &Path, error: std::io::Error) -> CapabilityError {
    CapabilityError::Io {
        path: path.display().to_string(),
        message: error.to_string(),
    }
}

/// Read the environment variable `name` if it is granted; `Ok(None)` when granted but unset.
pub(crate) fn read_env(
    capabilities: &Capabilities,
    name: &str,
) -> Result<Option<String>, CapabilityError> {
    if !capabilities.allows_env(name) {
        return Err(CapabilityError::NotGranted {
            capability: Capability::env(name),
        });
    }
    Ok(std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("agentry-guard-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("granted/sub")).unwrap();
        fs::write(dir.join("granted/sub/note.txt"), "hello").unwrap();
        fs::write(dir.join("secret.txt"), "top secret").unwrap();
        dir
    }

    #[test]
    fn reads_inside_and_refuses_traversal_and_symlinks() {
        let dir = scratch("read");
        let granted = dir.join("granted");
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.join("secret.txt"), granted.join("link.txt")).unwrap();
        let fs_handle = Fs::new(&Capabilities::from([Capability::fs_read(&granted)]));
        assert_eq!(fs_handle.read_to_string("sub/note.txt").unwrap(), "hello");
        assert_eq!(fs_handle.read_dir(".").unwrap(), vec!["link.txt", "sub"]);
        let escape = fs_handle.read_to_string("../secret.txt").unwrap_err();
        assert!(
            matches!(
                escape,
                CapabilityError::OutsideGrant {
                    access: "reading",
                    ..
                }
            ),
            "{escape}"
        );
        #[cfg(unix)]
        assert!(matches!(
            fs_handle.read_to_string("link.txt").unwrap_err(),
            CapabilityError::OutsideGrant { .. }
        ));
        assert!(matches!(
            fs_handle.write("new.txt", "x").unwrap_err(),
            CapabilityError::NotGranted { .. }
        ));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn writes_only_inside_write_grants() {
        let dir = scratch("write");
        let granted = dir.join("granted");
        let fs_handle = Fs::new(&Capabilities::from([Capability::fs_write(&granted)]));
        fs_handle.write("out.txt", "data").unwrap();
        assert_eq!(fs::read_to_string(granted.join("out.txt")).unwrap(), "data");
        assert!(matches!(
            fs_handle.write("../escape.txt", "x").unwrap_err(),
            CapabilityError::OutsideGrant {
                access: "writing",
                ..
            }
        ));
        assert!(!dir.join("escape.txt").exists());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn env_needs_a_grant() {
        let caps = Capabilities::from([Capability::env("PATH")]);
        assert!(read_env(&caps, "PATH").unwrap().is_some());
        assert_eq!(
            read_env(&caps, "HOME").unwrap_err().to_string(),
            "env(\"HOME\") is not granted to this tool"
        );
    }
}
