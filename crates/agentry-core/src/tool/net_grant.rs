//! Network grants: the scheme, host and port a [`Capability::Net`](super::Capability::Net)
//! allows, and which addresses count as private.
//!
//! A grant is written `[scheme://]host[:port]`:
//!
//! | Grant | Allows |
//! |---|---|
//! | `api.weather.com` | `https://api.weather.com` on port 443 |
//! | `http://api.weather.com:8080` | that scheme, host and port only |
//! | `https://*.example.com` | every subdomain of `example.com`, on port 443 |
//! | `http://127.0.0.1:*` | that address, on any port |
//! | `*` | every public host, over https on port 443 |
//!
//! The scheme is `http` or `https` (https when left out); the port defaults to the scheme's
//! own. Loopback, private, link-local and other non-public addresses are reached only when
//! a grant names the address itself: `*` and host names never reach them, also when a name
//! resolves to one (the HTTP client checks each address after DNS resolution).
//!
//! ```
//! use agentry_core::tool::NetGrant;
//!
//! let grant = NetGrant::parse("https://*.example.com")?;
//! assert!(grant.allows("https", "docs.example.com", 443));
//! assert!(!grant.allows("http", "docs.example.com", 80), "another scheme");
//! assert!(!grant.allows("https", "docs.example.com", 8443), "another port");
//! assert!(!NetGrant::parse("*")?.allows("https", "169.254.169.254", 443), "not public");
//! assert!(NetGrant::parse("http://127.0.0.1:*")?.allows("http", "127.0.0.1", 8080));
//! assert_eq!(NetGrant::parse("HTTPS://API.Weather.com:443")?.to_string(), "api.weather.com");
//! # Ok::<_, agentry_core::tool::NetGrantError>(())
//! ```

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why a net grant could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid net grant {grant:?}: {reason}")]
pub struct NetGrantError {
    /// The grant as written.
    pub grant: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Which hosts a grant covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// `*`: every host with a public address.
    Any,
    /// One host name.
    Name(String),
    /// `*.domain`: every subdomain of `domain` (not `domain` itself).
    Subdomains(String),
    /// One address, public or not.
    Address(IpAddr),
}

/// One network grant: a scheme, a host pattern and a port (`None`: any port).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NetGrant {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The hosts covered.
    pub host: HostPattern,
    /// The port, or `None` for `:*`.
    pub port: Option<u16>,
}

impl NetGrant {
    /// Read a grant written `[scheme://]host[:port]`: `api.example.com` (https, port 443),
    /// `http://host:8080`, `https://*.example.com` (every subdomain), `http://127.0.0.1:*`
    /// (any port) or `*` (every public host over https).
    pub fn parse(grant: &str) -> Result<Self, NetGrantError> {
        let fail = |reason| NetGrantError {
            grant: grant.to_owned(),
            reason,
        };
        let text = grant.trim().to_ascii_lowercase();
        let (scheme, rest) = match text.split_once("://") {
            Some(("https", rest)) => ("https", rest),
            Some(("http", rest)) => ("http", rest),
            Some(_) => return Err(fail("the scheme must be http or https")),
            None => ("https", text.as_str()),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#', '@']) {
            return Err(fail(
                "a grant names a scheme, a host and a port; no path, query or user",
            ));
        }
        let (host, port) = split_port(rest).ok_or_else(|| fail("the port is not valid"))?;
        let port = match port {
            None => Some(default_port(scheme)),
            Some("*") => None,
            Some(port) => match port.parse::<u16>() {
                Ok(0) | Err(_) => return Err(fail("the port must be 1 to 65535 or *")),
                Ok(port) => Some(port),
            },
        };
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(domain) = host.strip_prefix("*.") {
            if !is_host_name(domain) {
                return Err(fail("`*.` must be followed by a domain name"));
            }
            HostPattern::Subdomains(domain.to_owned())
        } else if let Some(address) = parse_address(host) {
            HostPattern::Address(address)
        } else if is_host_name(host) {
            HostPattern::Name(host.to_owned())
        } else {
            return Err(fail(
                "the host is not a name, an address, `*` or `*.domain`",
            ));
        };
        Ok(Self { scheme, host, port })
    }

    /// The grant a request to `scheme://host:port` needs. `host` may be an
    /// address (IPv6 with or without brackets).
    pub fn target(scheme: &str, host: &str, port: u16) -> Option<Self> {
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "https" => "https",
            "http" => "http",
            _ => return None,
        };
        let host = host.to_ascii_lowercase();
        let host = match parse_address(&host) {
            Some(address) => HostPattern::Address(address),
            None => HostPattern::Name(host.trim_end_matches('.').to_owned()),
        };
        Some(Self {
            scheme,
            host,
            port: Some(port),
        })
    }

    /// True when this grant allows a request to `scheme://host:port`.
    pub fn allows(&self, scheme: &str, host: &str, port: u16) -> bool {
        Self::target(scheme, host, port).is_some_and(|target| self.covers(&target))
    }

    /// True when everything `other` allows, this grant allows too.
    pub fn covers(&self, other: &NetGrant) -> bool {
        let port = self.port.is_none() || self.port == other.port;
        let host = match (&self.host, &other.host) {
            (HostPattern::Any, HostPattern::Address(address)) => is_public(*address),
            (HostPattern::Any, _) => true,
            (HostPattern::Subdomains(domain), HostPattern::Name(name)) => {
                name.ends_with(&format!(".{domain}"))
            }
            (HostPattern::Subdomains(domain), HostPattern::Subdomains(inner)) => {
                inner == domain || inner.ends_with(&format!(".{domain}"))
            }
            (HostPattern::Name(mine), HostPattern::Name(theirs)) => mine == theirs,
            (HostPattern::Address(mine), HostPattern::Address(theirs)) => mine == theirs,
            _ => false,
        };
        self.scheme == other.scheme && port && host
    }

    /// True when this grant names `address` itself.
    pub(crate) fn names_address(&self, address: IpAddr) -> bool {
        self.host == HostPattern::Address(canonical(address))
    }
}

/// Written back in the shortest form that reads the same: `api.weather.com`
/// for https on 443, else `scheme://host:port`.
impl fmt::Display for NetGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match &self.host {
            HostPattern::Any => "*".to_owned(),
            HostPattern::Name(name) => name.clone(),
            HostPattern::Subdomains(domain) => format!("*.{domain}"),
            HostPattern::Address(IpAddr::V6(address)) => format!("[{address}]"),
            HostPattern::Address(address) => address.to_string(),
        };
        match (self.scheme, self.port) {
            ("https", Some(443)) => f.write_str(&host),
            (scheme, Some(port)) => write!(f, "{scheme}://{host}:{port}"),
            (scheme, None) => write!(f, "{scheme}://{host}:*"),
        }
    }
}

fn default_port(scheme: &str) -> u16 {
    if scheme == "http" { 80 } else { 443 }
}

/// `host[:port]`, with IPv6 addresses in brackets (or bare, without a port).
fn split_port(text: &str) -> Option<(&str, Option<&str>)> {
    if let Some(inner) = text.strip_prefix('[') {
        let (host, after) = inner.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    if text.parse::<Ipv6Addr>().is_ok() {
        return Some((text, None));
    }
    match text.rsplit_once(':') {
        Some((host, port)) => Some((host, Some(port))),
        None => Some((text, None)),
    }
}

fn parse_address(host: &str) -> Option<IpAddr> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<IpAddr>().ok().map(canonical)
}

/// IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) as the IPv4 address they carry.
fn canonical(address: IpAddr) -> IpAddr {
    address.to_canonical()
}

fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// True when `address` is on the public internet: not loopback, private,
/// link-local, shared (CGNAT), unspecified, broadcast, multicast, reserved,
/// documentation or benchmarking space, also when carried inside IPv6
/// (mapped, NAT64 or 6to4).
pub fn is_public(address: IpAddr) -> bool {
    match address.to_canonical() {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(address: Ipv4Addr) -> bool {
    let [a, b, c, _] = address.octets();
    !(a == 0
        || a == 10
        || a == 127
        || a >= 224
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && (c == 0 || c == 2))
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113))
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    let segments = address.segments();
    let embedded = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    match segments {
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address.
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => is_public_v4(embedded(high, low)),
        [0x2002, high, low, ..] => is_public_v4(embedded(high, low)),
        [first, second, ..] => {
            !(address.is_unspecified()
                || address.is_loopback()
                || address.is_multicast()
                || address.is_unique_local()
                || address.is_unicast_link_local()
                || (first & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (first == 0x2001 && second == 0x0db8) // documentation
                || (first == 0x0064 && second == 0xff9b) // local-use NAT64
                || (first == 0x0100 && segments[1..4] == [0, 0, 0]) // discard
                || first == 0) // reserved, IPv4-compatible
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(text: &str) -> NetGrant {
        NetGrant::parse(text).unwrap()
    }

    #[test]
    fn grants_read_and_print_in_canonical_form() {
        for (written, canonical) in [
            ("api.weather.com", "api.weather.com"),
            ("HTTPS://Api.Weather.com:443/", "api.weather.com"),
            ("http://api.weather.com", "http://api.weather.com:80"),
            ("http://127.0.0.1:*", "http://127.0.0.1:*"),
            ("[::1]:8443", "https://[::1]:8443"),
            ("::1", "[::1]"),
            ("*", "*"),
            ("https://*.example.com", "*.example.com"),
            ("[::ffff:10.0.0.1]", "10.0.0.1"),
        ] {
            assert_eq!(grant(written).to_string(), canonical, "{written}");
            assert_eq!(grant(canonical), grant(written), "{written}");
        }
    }

    #[test]
    fn malformed_grants_say_why() {
        for (written, reason) in [
            (
                "ftp://files.example.com",
                "the scheme must be http or https",
            ),
            (
                "example.com/path",
                "a grant names a scheme, a host and a port; no path, query or user",
            ),
            (
                "user@example.com",
                "a grant names a scheme, a host and a port; no path, query or user",
            ),
            ("example.com:0", "the port must be 1 to 65535 or *"),
            ("example.com:99999", "the port must be 1 to 65535 or *"),
            (
                "exa mple.com",
                "the host is not a name, an address, `*` or `*.domain`",
            ),
            (
                "a.*.com",
                "the host is not a name, an address, `*` or `*.domain`",
            ),
            ("*.", "`*.` must be followed by a domain name"),
            ("", "the host is not a name, an address, `*` or `*.domain`"),
            ("[::1", "the port is not valid"),
        ] {
            let error = NetGrant::parse(written).unwrap_err();
            assert_eq!(error.reason, reason, "{written}");
        }
    }

    #[test]
    fn scheme_host_and_port_must_all_match() {
        let weather = grant("api.weather.com");
        assert!(weather.allows("https", "api.weather.com", 443));
        assert!(weather.allows("HTTPS", "API.WEATHER.COM.", 443));
        assert!(!weather.allows("http", "api.weather.com", 80));
        assert!(!weather.allows("https", "api.weather.com", 8443));
        assert!(!weather.allows("https", "weather.com", 443));
        let subdomains = grant("*.example.com");
        assert!(subdomains.allows("https", "a.b.example.com", 443));
        assert!(!subdomains.allows("https", "example.com", 443));
        assert!(!subdomains.allows("https", "example.com.evil.org", 443));
        assert!(!subdomains.allows("https", "badexample.com", 443));
        assert!(grant("http://localhost:*").allows("http", "localhost", 1234));
    }

    #[test]
    fn only_a_grant_by_address_reaches_a_private_address() {
        let any = grant("*");
        for address in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "255.255.255.255",
            "224.0.0.1",
        ] {
            assert!(!any.allows("https", address, 443), "{address}");
            assert!(!is_public(address.parse().unwrap()), "{address}");
            let written = match address.contains(':') {
                true => format!("[{address}]"),
                false => address.to_owned(),
            };
            let by_address = grant(&written);
            assert!(by_address.allows("https", address, 443), "{address}");
        }
        for address in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "64:ff9b::808:808"] {
            assert!(any.allows("https", address, 443), "{address}");
        }
    }

    #[test]
    fn a_grant_covers_only_narrower_grants() {
        assert!(grant("*").covers(&grant("api.weather.com")));
        assert!(grant("*").covers(&grant("*.example.com")));
        assert!(!grant("*").covers(&grant("http://api.weather.com")));
        assert!(!grant("*").covers(&grant("10.0.0.1")));
        assert!(grant("*.example.com").covers(&grant("*.docs.example.com")));
        assert!(grant("*.example.com").covers(&grant("*.example.com")));
        assert!(!grant("*.example.com").covers(&grant("*")));
        assert!(!grant("api.weather.com").covers(&grant("*")));
        assert!(grant("http://127.0.0.1:*").covers(&grant("http://127.0.0.1:8080")));
        assert!(!grant("http://127.0.0.1:8080").covers(&grant("http://127.0.0.1:*")));
    }
}
