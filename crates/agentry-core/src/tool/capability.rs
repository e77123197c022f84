//! Capabilities: what a tool may touch outside the process.
//!
//! A tool declares what it needs; an agent grants a set; the tool runs with
//! the intersection (seed 003's least privilege: `call_tool` runs a task with
//! only the capabilities it declared ∩ the agent's, even when the agent has
//! more). The handles on [`ToolContext`](super::ToolContext) enforce the result.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One permission.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Connect to a host. A grant of `*.example.com` covers its subdomains; `*` covers every host.
    Net(String),
    /// Read files under a directory.
    FsRead(PathBuf),
    /// Create and write files under a directory.
    FsWrite(PathBuf),
    /// Read one environment variable.
    Env(String),
}

impl Capability {
    /// `Net(host)`.
    pub fn net(host: impl Into<String>) -> Self {
        Self::Net(host.into().to_ascii_lowercase())
    }
    /// `FsRead(dir)`.
    pub fn fs_read(dir: impl Into<PathBuf>) -> Self {
        Self::FsRead(dir.into())
    }
    /// `FsWrite(dir)`.
    pub fn fs_write(dir: impl Into<PathBuf>) -> Self {
        Self::FsWrite(dir.into())
    }
    /// `Env(name)`.
    pub fn env(name: impl Into<String>) -> Self {
        Self::Env(name.into())
    }

    /// The part of `self` (a declared need) that `grant` allows, if any.
    fn allowed_by(&self, grant: &Capability) -> Option<Capability> {
        match (self, grant) {
            (Capability::Net(need), Capability::Net(granted)) => {
                host_matches(granted, need).then(|| self.clone())
            }
            (Capability::FsRead(need), Capability::FsRead(granted))
            | (Capability::FsWrite(need), Capability::FsWrite(granted)) => {
                let need = normalize_path(need);
                let granted = normalize_path(granted);
                let inside = need.starts_with(&granted);
                let narrowed = match self {
                    Capability::FsRead(_) => Capability::FsRead(need),
                    _ => Capability::FsWrite(need),
                };
                inside.then_some(narrowed)
            }
            (Capability::Env(need), Capability::Env(granted)) => {
                (need == granted).then(|| self.clone())
            }
            _ => None,
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Net(host) => write!(f, "net({host:?})"),
            Capability::FsRead(dir) => write!(f, "fs_read({:?})", dir.display().to_string()),
            Capability::FsWrite(dir) => write!(f, "fs_write({:?})", dir.display().to_string()),
            Capability::Env(name) => write!(f, "env({name:?})"),
        }
    }
}

fn host_matches(grant: &str, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let grant = grant.to_ascii_lowercase();
    if grant == "*" || grant == host {
        return true;
    }
    match grant.strip_prefix("*.") {
        Some(domain) => host.ends_with(&format!(".{domain}")),
        None => false,
    }
}

/// An absolute path with symlinks resolved as far as the path exists, and `.`
/// and `..` removed lexically beyond that.
pub fn normalize_path(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    if let Ok(real) = absolute.canonicalize() {
        return real;
    }
    // Remove `.` and `..` lexically, resolve the longest existing ancestor, append the rest.
    let mut lexical = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other.as_os_str()),
        }
    }
    let mut existing = lexical;
    let mut rest = Vec::new();
    while !existing.exists() {
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    out
}

/// A set of capabilities: what an agent grants, or what a tool may use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities(Vec<Capability>);

impl Capabilities {
    /// No capabilities at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// The capabilities in this set.
    pub fn iter(&self) -> impl Iterator<Item = &Capability> {
        self.0.iter()
    }

    /// True when the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// What a tool declaring `declared` may use under this grant: the
    /// intersection. `Err` lists every declared need the grant does not cover.
    pub fn grant_to(&self, declared: &[Capability]) -> Result<Capabilities, Vec<Capability>> {
        let mut allowed = Vec::new();
        let mut missing = Vec::new();
        for need in declared {
            match self.0.iter().find_map(|grant| need.allowed_by(grant)) {
                Some(capability) => allowed.push(capability),
                None => missing.push(need.clone()),
            }
        }
        if missing.is_empty() {
            Ok(Capabilities(allowed))
        } else {
            Err(missing)
        }
    }

    /// What both sets allow: for each pair of capabilities of the same kind,
    /// the narrower one when one lies within the other. A child agent's tools
    /// get its grants ∩ its parent's.
    pub fn intersection(&self, other: &Capabilities) -> Capabilities {
        let mut both: Vec<Capability> = Vec::new();
        for mine in &self.0 {
            for theirs in &other.0 {
                let narrower = mine.allowed_by(theirs).or_else(|| theirs.allowed_by(mine));
                if let Some(capability) = narrower
                    && !both.contains(&capability)
                {
                    both.push(capability);
                }
            }
        }
        Capabilities(both)
    }

    /// True when connecting to `host` is allowed.
    pub fn allows_host(&self, host: &str) -> bool {
        self.0
            .iter()
            .any(|c| matches!(c, Capability::Net(grant) if host_matches(grant, host)))
    }

    /// True when the environment variable `name` may be read.
    pub fn allows_env(&self, name: &str) -> bool {
        self.0
            .iter()
            .any(|c| matches!(c, Capability::Env(granted) if granted == name))
    }

    /// The directories granted for reading (`write == false`) or writing, normalised.
    pub fn dirs(&self, write: bool) -> Vec<PathBuf> {
        self.0
            .iter()
            .filter_map(|c| match (c, write) {
                (Capability::FsRead(dir), false) | (Capability::FsWrite(dir), true) => {
                    Some(normalize_path(dir))
                }
                _ => None,
            })
            .collect()
    }
}

impl FromIterator<Capability> for Capabilities {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl<const N: usize> From<[Capability; N]> for Capabilities {
    fn from(capabilities: [Capability; N]) -> Self {
        Self(capabilities.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_get_the_intersection() {
        let granted = Capabilities::from([
            Capability::net("api.weather.com"),
            Capability::net("*.example.com"),
            Capability::env("HOME"),
            Capability::fs_read("/tmp"),
        ]);
        let effective = granted
            .grant_to(&[
                Capability::net("api.weather.com"),
                Capability::fs_read("/tmp/x/../y"),
            ])
            .unwrap();
        assert!(effective.allows_host("api.weather.com"));
        assert!(
            !effective.allows_host("docs.example.com"),
            "not declared, so not usable"
        );
        assert!(!effective.allows_env("HOME"));
        assert_eq!(
            effective.dirs(false),
            vec![normalize_path(Path::new("/tmp/y"))]
        );
        assert!(granted.allows_host("docs.example.com"));
        assert!(!granted.allows_host("example.com.evil.org"));
    }

    #[test]
    fn intersections_keep_the_narrower_grant() {
        let parent = Capabilities::from([
            Capability::net("*.example.com"),
            Capability::fs_read("/tmp"),
            Capability::env("HOME"),
        ]);
        let child = Capabilities::from([
            Capability::net("*"),
            Capability::net("api.example.com"),
            Capability::fs_read("/tmp/child"),
            Capability::fs_write("/tmp"),
            Capability::env("PATH"),
        ]);
        let both = child.intersection(&parent);
        assert!(both.allows_host("docs.example.com"), "* ∩ *.example.com");
        assert!(both.allows_host("api.example.com"));
        assert!(!both.allows_host("evil.org"));
        assert_eq!(
            both.dirs(false),
            vec![normalize_path(Path::new("/tmp/child"))]
        );
        assert!(both.dirs(true).is_empty(), "the parent grants no writing");
        assert!(!both.allows_env("PATH") && !both.allows_env("HOME"));
    }

    #[test]
    fn uncovered_needs_are_listed() {
        let granted = Capabilities::from([Capability::fs_read("/tmp/a")]);
        let missing = granted
            .grant_to(&[
                Capability::fs_read("/tmp"),
                Capability::net("x.org"),
                Capability::fs_write("/tmp/a"),
            ])
            .unwrap_err();
        assert_eq!(missing.len(), 3);
        assert_eq!(missing[1].to_string(), "net(\"x.org\")");
    }

    #[test]
    fn normalisation_removes_dots_past_missing_parts() {
        let path = normalize_path(Path::new("/definitely/not/here/../there/./file"));
        assert_eq!(path, PathBuf::from("/definitely/not/there/file"));
    }
}
