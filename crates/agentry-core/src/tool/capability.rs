//! Capabilities: what a tool may touch outside the process.
//!
//! A tool declares what it needs; an agent grants a set; the tool runs with
//! the intersection (least privilege: [`call_tool`](super::call_tool) runs a
//! tool with only the capabilities it declared ∩ the agent's, even when the
//! agent has more). The handles on [`ToolContext`](super::ToolContext) enforce the result.

use std::fmt;
use std::net::IpAddr;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::net_grant::NetGrant;

/// One permission.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Connect to a scheme, host and port, written `[scheme://]host[:port]`
    /// (https on 443 when left out): see [`NetGrant`]. `*.example.com`
    /// covers its subdomains; `*` every public host; loopback, private and
    /// link-local addresses only when granted by address.
    Net(String),
    /// Read files under a directory.
    FsRead(PathBuf),
    /// Create and write files under a directory.
    FsWrite(PathBuf),
    /// Read one environment variable.
    Env(String),
}

impl Capability {
    /// `Net(grant)`, in [`NetGrant`]'s canonical form when it reads as one
    /// (`"HTTPS://API.Weather.com:443"` becomes `"api.weather.com"`). A grant
    /// that does not read allows nothing, and [`Capabilities::check`] reports it.
    pub fn net(grant: impl Into<String>) -> Self {
        let grant = grant.into();
        match NetGrant::parse(&grant) {
            Ok(parsed) => Self::Net(parsed.to_string()),
            Err(_) => Self::Net(grant.to_ascii_lowercase()),
        }
    }
    /// `FsRead(dir)`.
    pub fn fs_read(dir: impl Into<PathBuf>) -> Self {
        Self::FsRead(dir.into())
    }
    /// `FsWrite(dir)`.
    pub fn fs_write(dir: impl Into<PathBuf>) -> Self {
        Self::FsWrite(dir.into())
    }

    /// The same capability with a directory as an absolute, normalised path
    /// ([`normalize_path`], against this process's working directory): what
    /// another process with another working directory reads alike.
    pub fn absolute(&self) -> Self {
        match self {
            Self::FsRead(dir) => Self::FsRead(normalize_path(dir)),
            Self::FsWrite(dir) => Self::FsWrite(normalize_path(dir)),
            other => other.clone(),
        }
    }
    /// `Env(name)`.
    pub fn env(name: impl Into<String>) -> Self {
        Self::Env(name.into())
    }

    /// The part of `self` (a declared need) that `grant` allows, if any.
    fn allowed_by(&self, grant: &Capability) -> Option<Capability> {
        match (self, grant) {
            (Capability::Net(need), Capability::Net(granted)) => {
                let (need, granted) = (NetGrant::parse(need).ok()?, NetGrant::parse(granted).ok()?);
                granted.covers(&need).then(|| self.clone())
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
            Capability::Net(grant) => write!(f, "net({grant:?})"),
            Capability::FsRead(dir) => write!(f, "fs_read({:?})", dir.display().to_string()),
            Capability::FsWrite(dir) => write!(f, "fs_write({:?})", dir.display().to_string()),
            Capability::Env(name) => write!(f, "env({name:?})"),
        }
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    pub(crate) fn grant_to(
        &self,
        declared: &[Capability],
    ) -> Result<Capabilities, Vec<Capability>> {
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

    /// The network grants, read; those that do not read are left out.
    pub fn net_grants(&self) -> impl Iterator<Item = NetGrant> + '_ {
        self.0.iter().filter_map(|c| match c {
            Capability::Net(grant) => NetGrant::parse(grant).ok(),
            _ => None,
        })
    }

    /// True when a request to `scheme://host:port` is allowed (`host` a name or
    /// an address). A name may still resolve to an address that is refused:
    /// see [`allows_address_on`](Self::allows_address_on).
    pub fn allows_net(&self, scheme: &str, host: &str, port: u16) -> bool {
        self.net_grants()
            .any(|grant| grant.allows(scheme, host, port))
    }

    /// True when `address`, which a granted name resolved to, may be dialled
    /// on `port` (over `scheme`, or either scheme when `None`): it is public,
    /// or a grant names the address itself with that port and scheme. A grant
    /// for one port of an address never opens its other ports to a name.
    ///
    /// ```
    /// use agentry_core::tool::{Capabilities, Capability};
    ///
    /// let grants = Capabilities::from_iter([
    ///     Capability::Net("http://localhost:*".into()),
    ///     Capability::Net("http://127.0.0.1:8080".into()),
    /// ]);
    /// let loopback = "127.0.0.1".parse().unwrap();
    /// assert!(grants.allows_address_on(Some("http"), loopback, 8080));
    /// assert!(!grants.allows_address_on(Some("http"), loopback, 22), "not that port");
    /// assert!(!grants.allows_address_on(Some("https"), loopback, 8080), "not that scheme");
    /// assert!(grants.allows_address_on(None, "93.184.215.14".parse().unwrap(), 22), "public");
    /// ```
    pub fn allows_address_on(&self, scheme: Option<&str>, address: IpAddr, port: u16) -> bool {
        super::net_grant::is_public(address)
            || self.net_grants().any(|grant| {
                grant.names_address(address)
                    && grant.port.is_none_or(|granted| granted == port)
                    && scheme.is_none_or(|scheme| grant.scheme.eq_ignore_ascii_case(scheme))
            })
    }

    /// True when `address` may be dialled for the name `host` whatever port
    /// and scheme the request used, for a resolver that is not told them:
    /// it is public, or for every grant that lets `host` through, a grant
    /// naming the address covers the same scheme and ports
    /// ([`allows_address_on`](Self::allows_address_on) when the port is known).
    ///
    /// ```
    /// use agentry_core::tool::{Capabilities, Capability};
    ///
    /// let loopback = "127.0.0.1".parse().unwrap();
    /// let narrow = Capabilities::from_iter([
    ///     Capability::Net("http://localhost:*".into()),
    ///     Capability::Net("http://127.0.0.1:8080".into()),
    /// ]);
    /// assert!(!narrow.allows_address_for("localhost", loopback), "localhost:22 would pass");
    /// let whole = Capabilities::from_iter([
    ///     Capability::Net("http://localhost:8080".into()),
    ///     Capability::Net("http://127.0.0.1:8080".into()),
    /// ]);
    /// assert!(whole.allows_address_for("localhost", loopback));
    /// ```
    pub fn allows_address_for(&self, host: &str, address: IpAddr) -> bool {
        if super::net_grant::is_public(address) {
            return true;
        }
        let grants: Vec<NetGrant> = self.net_grants().collect();
        let mut letting = grants
            .iter()
            .filter(|grant| grant.allows(grant.scheme, host, grant.port.unwrap_or(1)))
            .peekable();
        letting.peek().is_some()
            && letting.all(|name| {
                grants.iter().any(|named| {
                    named.names_address(address)
                        && named.scheme == name.scheme
                        && (named.port.is_none() || named.port == name.port)
                })
            })
    }

    /// The first malformed capability, if any: a `Net` grant that does not read.
    pub fn check(&self) -> Result<(), super::net_grant::NetGrantError> {
        for capability in &self.0 {
            if let Capability::Net(grant) = capability {
                NetGrant::parse(grant)?;
            }
        }
        Ok(())
    }

    /// True when the environment variable `name` may be read.
    pub(crate) fn allows_env(&self, name: &str) -> bool {
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
        assert!(effective.allows_net("https", "api.weather.com", 443));
        assert!(
            !effective.allows_net("https", "docs.example.com", 443),
            "not declared, so not usable"
        );
        assert!(!effective.allows_env("HOME"));
        assert_eq!(
            effective.dirs(false),
            vec![normalize_path(Path::new("/tmp/y"))]
        );
        assert!(granted.allows_net("https", "docs.example.com", 443));
        assert!(!granted.allows_net("https", "example.com.evil.org", 443));
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
        assert!(
            both.allows_net("https", "docs.example.com", 443),
            "* ∩ *.example.com"
        );
        assert!(both.allows_net("https", "api.example.com", 443));
        assert!(!both.allows_net("https", "evil.org", 443));
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
