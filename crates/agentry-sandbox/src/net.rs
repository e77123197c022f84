//! TCP for sandboxed tools. A call with a `Net` grant runs in a network
//! namespace of its own, with no way out but the sandbox's relay: the
//! parent process connects for it, after the same checks as the HTTP
//! client (the grant's host and port, then each address after DNS:
//! loopback, private and link-local ones only when a grant names them), and
//! hands the tool the connected socket.
//!
//! `std::net::TcpStream::connect` to an address is relayed as it is; a
//! host name needs DNS, which the namespace has not: [`connect`] asks the
//! relay to resolve it.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use agentry_core::tool::{Capabilities, ToolContext};

use crate::protocol::{RelayReply, RelayRequest};
use crate::wire;

/// How long the relay waits for one address to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The child's end of the relay, once it is a sandbox's child.
static RELAY: OnceLock<Mutex<OwnedFd>> = OnceLock::new();

/// Connect to `host:port` (a name or an address) as the call's `Net`
/// grants allow: in a sandbox's child, through the sandbox's relay (the
/// only way out of its network namespace); elsewhere, directly, after the
/// same checks.
///
/// A name resolves only to what the grants allow: public addresses, or
/// ones a grant names. A refusal is [`io::ErrorKind::PermissionDenied`],
/// with the reason.
///
/// ```no_run
/// use std::io::Read;
/// use agentry_core::tool::ToolContext;
///
/// /// The time, from a daytime server the call's grants name
/// /// (`http://time.example.com:13`).
/// fn daytime(ctx: &ToolContext) -> std::io::Result<String> {
///     let mut stream = agentry_sandbox::connect(ctx, "time.example.com", 13)?;
///     let mut text = String::new();
///     stream.read_to_string(&mut text)?;
///     Ok(text)
/// }
/// ```
pub fn connect(ctx: &ToolContext, host: &str, port: u16) -> io::Result<TcpStream> {
    match RELAY.get() {
        Some(relay) => through_relay(relay, host, port),
        None => dial(ctx.capabilities(), host, port).map_err(io::Error::from),
    }
}

/// Keep the child's end of the relay for [`connect`].
pub(crate) fn set_relay(relay: OwnedFd) {
    let _ = RELAY.set(Mutex::new(relay));
}

/// The child's end of the relay, when set.
pub(crate) fn relay() -> Option<&'static Mutex<OwnedFd>> {
    RELAY.get()
}

fn through_relay(relay: &Mutex<OwnedFd>, host: &str, port: u16) -> io::Result<TcpStream> {
    let relay = relay
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let request = RelayRequest::Connect {
        host: host.to_owned(),
        port,
    };
    wire::send(relay.as_fd(), &request, None)?;
    match wire::receive::<RelayReply>(relay.as_fd())? {
        Some((RelayReply::Connected, Some(socket))) => Ok(TcpStream::from(socket)),
        Some((RelayReply::Refused(reason), _)) => {
            Err(io::Error::new(io::ErrorKind::PermissionDenied, reason))
        }
        Some((RelayReply::Failed(reason), _)) => Err(io::Error::other(reason)),
        _ => Err(io::Error::other("the sandbox's relay gave no socket")),
    }
}

/// Why the relay did not connect.
#[derive(Debug)]
pub(crate) enum DialError {
    /// No grant allows TCP to this host and port.
    NotGranted { host: String, port: u16 },
    /// The host resolved only to addresses that are not public and not
    /// granted by address.
    AddressRefused {
        host: String,
        addresses: Vec<IpAddr>,
    },
    /// Resolving or connecting failed.
    Io(io::Error),
}

impl fmt::Display for DialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotGranted { host, port } => {
                write!(f, "TCP to {host}:{port} is not granted to this tool")
            }
            Self::AddressRefused { host, addresses } => write!(
                f,
                "{host} resolves to {}, which is not a public address; grant the address \
                 itself to reach it",
                addresses
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::Io(error) => write!(f, "{error}"),
        }
    }
}

impl From<DialError> for io::Error {
    fn from(error: DialError) -> Self {
        match error {
            DialError::Io(error) => error,
            refused => io::Error::new(io::ErrorKind::PermissionDenied, refused.to_string()),
        }
    }
}

/// True when a grant allows TCP to `host:port` (`host` a name or an
/// address), over either scheme a grant may name.
pub(crate) fn granted(capabilities: &Capabilities, host: &str, port: u16) -> bool {
    ["https", "http"]
        .iter()
        .any(|scheme| capabilities.allows_net(scheme, host, port))
}

/// Connect to `host:port` as `capabilities` allow: the grant first, then
/// every address the host resolves to ([`Capabilities::allows_address_on`]),
/// the first allowed one that accepts.
pub(crate) fn dial(
    capabilities: &Capabilities,
    host: &str,
    port: u16,
) -> Result<TcpStream, DialError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if !granted(capabilities, host, port) {
        return Err(DialError::NotGranted {
            host: host.to_owned(),
            port,
        });
    }
    let resolved: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(DialError::Io)?
        .collect();
    let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = resolved
        .into_iter()
        .partition(|address| capabilities.allows_address_on(None, address.ip(), port));
    if allowed.is_empty() {
        return Err(DialError::AddressRefused {
            host: host.to_owned(),
            addresses: refused.iter().map(SocketAddr::ip).collect(),
        });
    }
    let mut last = io::Error::other(format!("{host} resolves to no address"));
    for address in allowed {
        match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT)
            .and_then(|stream| settle(&stream, &address).map(|()| stream))
        {
            Ok(stream) => return Ok(stream),
            Err(error) => last = error,
        }
    }
    Err(DialError::Io(last))
}

/// Call `connect` once more on `stream`, which `connect_timeout` connected
/// to `address` without blocking: the kernel then marks the socket itself
/// connected (until now it was only "connecting", whatever TCP's state).
/// A socket left so is connected again by a send with `MSG_FASTOPEN`
/// after a reset, to any address, from this process's network; a connected
/// one answers "already connected".
#[cfg(target_os = "linux")]
fn settle(stream: &TcpStream, address: &SocketAddr) -> io::Result<()> {
    // SAFETY: sockaddr_storage is plain data, large enough for either
    // family; connect reads `length` bytes of it.
    let mut raw: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let length = match address {
        SocketAddr::V4(v4) => {
            let inet = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut raw as *mut libc::sockaddr_storage).cast(), inet) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            // SAFETY: plain data.
            let mut inet: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
            inet.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            inet.sin6_port = v6.port().to_be();
            inet.sin6_flowinfo = v6.flowinfo();
            inet.sin6_addr.s6_addr = v6.ip().octets();
            inet.sin6_scope_id = v6.scope_id();
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut raw as *mut libc::sockaddr_storage).cast(), inet) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    use std::os::fd::AsRawFd;
    // SAFETY: connect reads the address passed, `length` bytes.
    let connected = unsafe {
        libc::connect(
            stream.as_raw_fd(),
            (&raw as *const libc::sockaddr_storage).cast(),
            length as libc::socklen_t,
        )
    };
    let error = io::Error::last_os_error();
    if connected == 0 || error.raw_os_error() == Some(libc::EISCONN) {
        Ok(())
    } else {
        Err(error)
    }
}

/// Elsewhere there is no relay to keep a socket for.
#[cfg(not(target_os = "linux"))]
fn settle(_stream: &TcpStream, _address: &SocketAddr) -> io::Result<()> {
    Ok(())
}
