//! Capability-enforcing handles a tool reaches through its
//! [`ToolContext`](super::ToolContext): file access confined to granted
//! directories (openat-style, symlinks included) and environment
//! variables limited to granted names. The HTTP handle lives in
//! `agentry-providers`, which owns the network dependencies.

use std::path::{Component, Path, PathBuf};

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
    /// A path outside every granted directory, or one that leads out of
    /// one through a symlink.
    #[error("{path:?} is outside the directories granted for {access} ({granted})")]
    OutsideGrant {
        /// The path as the tool gave it, made absolute (never where a symlink points).
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
///
/// Every path is placed in a granted directory by its text alone (`.` and
/// `..` removed lexically; a relative path starts in the first granted
/// directory), so a path outside every grant is refused without touching the
/// file system: no error tells whether it exists. The file is then opened
/// relative to the granted directory with openat-style resolution
/// (`cap-std`): no symlink, `..` or symlink swapped in between can lead out
/// of it, and a symlink that would is refused like a path outside the grant.
/// Relative symlinks that stay inside work; absolute ones are refused.
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

    /// Read a granted file as UTF-8 text.
    pub fn read_to_string(&self, path: impl AsRef<Path>) -> Result<String, CapabilityError> {
        let place = Place::find(path.as_ref(), &self.read_dirs, Access::Read)?;
        place
            .dir()?
            .read_to_string(&place.relative)
            .map_err(|e| place.error(e))
    }

    /// Read a granted file's bytes.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Vec<u8>, CapabilityError> {
        let place = Place::find(path.as_ref(), &self.read_dirs, Access::Read)?;
        place
            .dir()?
            .read(&place.relative)
            .map_err(|e| place.error(e))
    }

    /// Open a granted regular file for reading, for a caller that reads it
    /// within a bound of its own (`Read::take`). Opening never waits: a
    /// FIFO or device is opened without blocking and then refused, like a
    /// directory, by the metadata of the handle opened (not of the path, so
    /// nothing swapped in between is read).
    pub fn open_file(&self, path: impl AsRef<Path>) -> Result<std::fs::File, CapabilityError> {
        let place = Place::find(path.as_ref(), &self.read_dirs, Access::Read)?;
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NONBLOCK);
        }
        let file = place
            .dir()?
            .open_with(&place.relative, &options)
            .map_err(|e| place.error(e))?;
        let metadata = file.metadata().map_err(|e| place.error(e))?;
        if !metadata.is_file() {
            return Err(CapabilityError::Io {
                path: place.shown,
                message: "not a regular file".into(),
            });
        }
        Ok(file.into_std())
    }

    /// The entries of a granted directory, sorted by name.
    pub fn read_dir(&self, path: impl AsRef<Path>) -> Result<Vec<String>, CapabilityError> {
        let place = Place::find(path.as_ref(), &self.read_dirs, Access::Read)?;
        let dir = place.dir()?;
        let entries = if place.relative.as_os_str().is_empty() {
            dir.entries()
        } else {
            dir.read_dir(&place.relative)
        }
        .map_err(|e| place.error(e))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Write (create or replace) a file inside a granted write directory.
    /// Its parent directory must exist.
    pub fn write(
        &self,
        path: impl AsRef<Path>,
        contents: impl AsRef<[u8]>,
    ) -> Result<(), CapabilityError> {
        let place = Place::find(path.as_ref(), &self.write_dirs, Access::Write)?;
        if place.relative.as_os_str().is_empty() {
            return Err(CapabilityError::Io {
                path: place.shown,
                message: "not a file path".into(),
            });
        }
        place
            .dir()?
            .write(&place.relative, contents)
            .map_err(|e| place.error(e))
    }
}

#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

impl Access {
    fn word(self) -> &'static str {
        match self {
            Access::Read => "reading",
            Access::Write => "writing",
        }
    }
}

/// A path placed in one granted directory: the directory and the path
/// relative to it, found from the path's text alone.
struct Place<'a> {
    grant: &'a Path,
    relative: PathBuf,
    /// The path as the tool gave it, made absolute, for messages.
    shown: String,
    granted: &'a [PathBuf],
    access: Access,
}

impl<'a> Place<'a> {
    fn find(path: &Path, dirs: &'a [PathBuf], access: Access) -> Result<Self, CapabilityError> {
        let Some(first) = dirs.first() else {
            let path = path.to_path_buf();
            return Err(CapabilityError::NotGranted {
                capability: match access {
                    Access::Read => Capability::FsRead(path),
                    Access::Write => Capability::FsWrite(path),
                },
            });
        };
        let lexical = lexically_normal(&first.join(path));
        let shown = lexical.display().to_string();
        let found = dirs
            .iter()
            .find_map(|dir| Some((dir, lexical.strip_prefix(dir).ok()?.to_path_buf())));
        match found {
            Some((grant, relative)) => Ok(Self {
                grant,
                relative,
                shown,
                granted: dirs,
                access,
            }),
            None => Err(outside(shown, dirs, access)),
        }
    }

    fn dir(&self) -> Result<cap_std::fs::Dir, CapabilityError> {
        cap_std::fs::Dir::open_ambient_dir(self.grant, cap_std::ambient_authority())
            .map_err(|error| io_error(self.grant, error))
    }

    /// An I/O error; an attempt to leave the directory reads as the path
    /// being outside the grant.
    fn error(&self, error: std::io::Error) -> CapabilityError {
        let escaped = error.kind() == std::io::ErrorKind::PermissionDenied
            && error.to_string() == "a path led outside of the filesystem";
        if escaped {
            outside(self.shown.clone(), self.granted, self.access)
        } else {
            CapabilityError::Io {
                path: self.shown.clone(),
                message: error.to_string(),
            }
        }
    }
}

/// `path` with `.` removed and each `..` taking away the component before
/// it, without looking at the file system.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other.as_os_str()),
        }
    }
    normal
}

fn outside(path: String, dirs: &[PathBuf], access: Access) -> CapabilityError {
    let granted = if dirs.is_empty() {
        "none".to_owned()
    } else {
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    CapabilityError::OutsideGrant {
        path,
        access: access.word(),
        granted,
    }
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
    use std::fs;

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

    #[cfg(unix)]
    #[test]
    fn a_dangling_symlink_cannot_carry_a_write_out_of_the_grant() {
        // Found in a review: `granted/notes.txt -> outside/new.txt` (absent)
        // let write("notes.txt") create the outside file.
        let dir = scratch("dangling");
        let granted = dir.join("granted").canonicalize().unwrap();
        let outside = dir.join("outside");
        fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(outside.join("new.txt"), granted.join("notes.txt")).unwrap();
        let fs_handle = Fs::new(&Capabilities::from([Capability::fs_write(&granted)]));
        let error = fs_handle.write("notes.txt", "x").unwrap_err();
        assert_eq!(
            error,
            CapabilityError::OutsideGrant {
                path: granted.join("notes.txt").display().to_string(),
                access: "writing",
                granted: granted.display().to_string(),
            }
        );
        assert!(
            !outside.join("new.txt").exists(),
            "nothing was created outside"
        );
        // A symlinked directory leading out is refused the same way.
        std::os::unix::fs::symlink(&outside, granted.join("out")).unwrap();
        assert!(matches!(
            fs_handle.write("out/new.txt", "x").unwrap_err(),
            CapabilityError::OutsideGrant { .. }
        ));
        assert!(!outside.join("new.txt").exists());
        // Relative symlinks that stay inside work.
        std::os::unix::fs::symlink("sub", granted.join("inner")).unwrap();
        fs_handle.write("inner/kept.txt", "in").unwrap();
        assert_eq!(
            fs::read_to_string(granted.join("sub/kept.txt")).unwrap(),
            "in"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn paths_outside_every_grant_are_refused_without_looking() {
        let dir = scratch("oracle");
        let granted = dir.join("granted").canonicalize().unwrap();
        let fs_handle = Fs::new(&Capabilities::from([Capability::fs_read(&granted)]));
        // An existing and a missing file outside get the same answer.
        let exists = fs_handle
            .read_to_string(dir.join("secret.txt"))
            .unwrap_err();
        let missing = fs_handle
            .read_to_string(dir.join("nothing.txt"))
            .unwrap_err();
        assert!(
            matches!(exists, CapabilityError::OutsideGrant { .. }),
            "{exists}"
        );
        assert!(
            matches!(missing, CapabilityError::OutsideGrant { .. }),
            "{missing}"
        );
        let dots = fs_handle
            .read_to_string("sub/../../secret.txt")
            .unwrap_err();
        assert!(
            matches!(dots, CapabilityError::OutsideGrant { .. }),
            "{dots}"
        );
        // Inside, `..` that stays inside is fine.
        assert_eq!(
            fs_handle.read_to_string("sub/../sub/note.txt").unwrap(),
            "hello"
        );
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
