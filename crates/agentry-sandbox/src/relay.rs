//! The parent's side of a call's network and files: a thread that answers
//! the child over the relay socket. The child's `connect` calls stop in its
//! seccomp filter and come here as notifications; each is checked against
//! the call's `Net` grants ([`net::dial`]), connected from the parent's own
//! network, and the connected socket is put in place of the tool's
//! (`SECCOMP_IOCTL_NOTIF_ADDFD`). A connect refused answers "Operation not
//! permitted" and nothing is dialled. Its opens for writing come here the
//! same way, and are counted ([`FileQuota`]).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;

use agentry_core::tool::Capabilities;

use crate::net::{self, DialError};
use crate::protocol::{RelayReply, RelayRequest};
use crate::quota::FileQuota;
use crate::wire;

/// Answer the child at the other end of `socket` until it goes away;
/// `quota` counts its opens for writing (a call with an `FsWrite` grant).
pub(crate) fn serve(socket: UnixStream, capabilities: Capabilities, mut quota: Option<FileQuota>) {
    let mut listener: Option<OwnedFd> = None;
    let mut relayed = Relayed::default();
    loop {
        let mut polled = [
            libc::pollfd {
                fd: socket.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: listener.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll reads and writes the two pollfd structs passed.
        if unsafe { libc::poll(polled.as_mut_ptr(), 2, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if let Some(fd) = &listener {
            if polled[1].revents & libc::POLLIN != 0 {
                answer(fd.as_fd(), &capabilities, quota.as_mut(), &mut relayed);
            } else if polled[1].revents != 0 {
                listener = None; // the child is gone
            }
        }
        if polled[0].revents != 0 {
            let Ok(Some((request, fd))) = wire::receive::<RelayRequest>(socket.as_fd()) else {
                return; // closed, or a message not believed
            };
            let answered = match request {
                RelayRequest::Listener if listener.is_none() && fd.is_some() => {
                    listener = fd;
                    wire::send(socket.as_fd(), &RelayReply::Ready, None)
                }
                RelayRequest::Listener => wire::send(
                    socket.as_fd(),
                    &RelayReply::Refused("the relay already has its listener".into()),
                    None,
                ),
                RelayRequest::Connect { host, port } => {
                    match net::dial(&capabilities, &host, port) {
                        Ok(stream) => {
                            wire::send(socket.as_fd(), &RelayReply::Connected, Some(stream.as_fd()))
                        }
                        Err(DialError::Io(error)) => {
                            wire::send(socket.as_fd(), &RelayReply::Failed(error.to_string()), None)
                        }
                        Err(refused) => wire::send(
                            socket.as_fd(),
                            &RelayReply::Refused(refused.to_string()),
                            None,
                        ),
                    }
                }
            };
            if answered.is_err() {
                return;
            }
        }
    }
}

/// Take one notification from `listener` and answer it: an open for
/// writing goes on while `quota` has files left; a connect has the tool's
/// socket connected where the grants allow; otherwise an error number.
fn answer(
    listener: BorrowedFd<'_>,
    capabilities: &Capabilities,
    quota: Option<&mut FileQuota>,
    relayed: &mut Relayed,
) {
    // SAFETY: seccomp_notif is plain data; RECV wants it zeroed.
    let mut notice: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: RECV writes the struct passed.
    if unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &mut notice,
        )
    } != 0
    {
        return; // the task died, or was interrupted: nothing waits for an answer
    }
    let reply = match quota {
        Some(quota) if FileQuota::counts(notice.data.nr) => quota.answer(notice.id),
        _ => {
            let mut reply = libc::seccomp_notif_resp {
                id: notice.id,
                val: 0,
                error: 0,
                flags: 0,
            };
            if let Err(errno) = connect_for(&notice, listener, capabilities, relayed) {
                reply.error = -errno;
            }
            reply
        }
    };
    // SAFETY: SEND reads the struct passed; a task that died meanwhile
    // answers ENOENT, which leaves nothing to do.
    let sent = unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &reply) };
    if sent != 0
        && reply.flags != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
    {
        // A kernel without SECCOMP_USER_NOTIF_FLAG_CONTINUE (before 5.5;
        // it has no Landlock either, and the child relays nothing where
        // Landlock is missing): refuse rather than leave the tool waiting.
        let refused = libc::seccomp_notif_resp {
            flags: 0,
            error: -libc::EDQUOT,
            ..reply
        };
        // SAFETY: as above.
        unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &refused,
            )
        };
    }
}

/// Dial what the notified `connect` asks for and put the socket in place
/// of the tool's; the error number to answer otherwise.
fn connect_for(
    notice: &libc::seccomp_notif,
    listener: BorrowedFd<'_>,
    capabilities: &Capabilities,
    relayed: &mut Relayed,
) -> Result<(), i32> {
    if notice.data.nr != libc::SYS_connect as i32 {
        return Err(libc::EPERM);
    }
    let [fd, pointer, length, ..] = notice.data.args;
    // Only a socket is connected: another descriptor (the answer's, say)
    // is not replaced.
    let target = std::fs::read_link(format!("/proc/{}/fd/{fd}", notice.pid));
    let Some(target) = target
        .ok()
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.starts_with("socket:"))
    else {
        return Err(libc::ENOTSOCK);
    };
    // A socket the relay connected stays so: the kernel would answer
    // "already connected", and no other is dialled in its place.
    if relayed.0.contains(&target) {
        return Err(libc::EISCONN);
    }
    let mut address = [0u8; 128];
    let length = (length as usize).min(address.len());
    let memory =
        std::fs::File::open(format!("/proc/{}/mem", notice.pid)).map_err(|_| libc::EPERM)?;
    memory
        .read_exact_at(&mut address[..length], pointer)
        .map_err(|_| libc::EFAULT)?;
    // The pid still names the task that asked (it may have died and its
    // number been reused while the memory was read).
    // SAFETY: ID_VALID reads the id passed.
    if unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &notice.id,
        )
    } != 0
    {
        return Err(libc::ENOENT);
    }
    let destination = socket_address(&address[..length]).ok_or(libc::EPERM)?;
    let host = destination.ip().to_string();
    let stream =
        net::dial(capabilities, &host, destination.port()).map_err(|error| match error {
            DialError::Io(error) => error.raw_os_error().unwrap_or(libc::ECONNREFUSED),
            _ => libc::EPERM,
        })?;
    if nonblocking(notice.pid, fd) {
        stream.set_nonblocking(true).map_err(|_| libc::EIO)?;
    }
    let add = libc::seccomp_notif_addfd {
        id: notice.id,
        flags: libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        srcfd: stream.as_raw_fd() as u32,
        newfd: fd as u32,
        newfd_flags: libc::O_CLOEXEC as u32,
    };
    // SAFETY: ADDFD reads the struct passed; the tool's descriptor `fd` is
    // replaced by a copy of the connected socket, as dup2 would.
    if unsafe { libc::ioctl(listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ADDFD, &add) } < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    if let Ok(socket) = std::fs::read_link(format!("/proc/self/fd/{}", stream.as_raw_fd())) {
        relayed.0.insert(socket.to_string_lossy().into_owned());
    }
    Ok(())
}

/// The sockets the relay put in a child's hands, by what their
/// descriptors link to (`socket:[inode]`, the same in both processes and
/// for every copy).
#[derive(Debug, Default)]
struct Relayed(HashSet<String>);

/// The IP address and port in a `sockaddr_in` or `sockaddr_in6`.
fn socket_address(bytes: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes(bytes.get(..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(bytes.get(2..4)?.try_into().ok()?);
    let ip = match i32::from(family) {
        libc::AF_INET => {
            let octets: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            IpAddr::V4(Ipv4Addr::from(octets))
        }
        libc::AF_INET6 => {
            let octets: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            IpAddr::V6(Ipv6Addr::from(octets))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Whether the tool's descriptor `fd` is non-blocking (its `fdinfo`
/// flags), so the socket put in its place is too.
fn nonblocking(pid: u32, fd: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"))
        .ok()
        .and_then(|info| {
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            i64::from_str_radix(flags.trim(), 8).ok()
        })
        .is_some_and(|flags| flags & i64::from(libc::O_NONBLOCK) != 0)
}
