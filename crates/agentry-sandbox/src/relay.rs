//! The parent's side of a call's network and files: a thread that answers
//! the child over the relay socket. The child's `connect` calls stop in its
//! seccomp filter and come here as notifications; each is checked against
//! the call's `Net` grants ([`net::dial`]), connected from the parent's own
//! network, and the connected socket is put in place of the tool's
//! (`SECCOMP_IOCTL_NOTIF_ADDFD`). A connect refused answers "Operation not
//! permitted" and nothing is dialled. Its opens for writing come here the
//! same way, and are counted ([`FileQuota`]). The child is not trusted:
//! the thread never waits on it (what it sends is read as it comes, its
//! answers go out without blocking) and ends when the child exits.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;

use agentry_core::tool::Capabilities;

use crate::net::{self, DialError};
use crate::protocol::{RelayReply, RelayRequest};
use crate::quota::FileQuota;
use crate::wire;

/// Answer the child at the other end of `socket` until it goes away: its
/// end closes, or `child` (a pidfd of it, where the kernel has them) says
/// it exited, whatever the child left half-sent or unread. `quota` counts
/// its opens for writing (a call with an `FsWrite` grant). Answers go out
/// without waiting: a child that does not read them ends its relay.
pub(crate) fn serve(
    socket: UnixStream,
    child: Option<OwnedFd>,
    capabilities: Capabilities,
    mut quota: Option<FileQuota>,
) {
    if socket.set_nonblocking(true).is_err() {
        return;
    }
    let mut inbox = wire::Inbox::default();
    let mut listener: Option<OwnedFd> = None;
    let mut relayed = Relayed::default();
    loop {
        let watched = |fd: Option<&OwnedFd>| libc::pollfd {
            fd: fd.map_or(-1, AsRawFd::as_raw_fd),
            events: libc::POLLIN,
            revents: 0,
        };
        let mut polled = [
            libc::pollfd {
                fd: socket.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            watched(listener.as_ref()),
            watched(child.as_ref()),
        ];
        // SAFETY: poll reads and writes the three pollfd structs passed.
        if unsafe { libc::poll(polled.as_mut_ptr(), 3, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if polled[2].revents != 0 {
            return; // the child exited
        }
        if let Some(fd) = &listener {
            if polled[1].revents & libc::POLLIN != 0 {
                answer(fd.as_fd(), &capabilities, quota.as_mut(), &mut relayed);
            } else if polled[1].revents != 0 {
                listener = None; // the child is gone
            }
        }
        if polled[0].revents != 0 {
            // Only the first message, the listener, carries a descriptor.
            match inbox.read(socket.as_fd(), listener.is_none()) {
                Ok(true) => {}
                _ => return, // closed, or a message not believed
            }
            loop {
                let (request, fd) = match inbox.next::<RelayRequest>() {
                    Ok(Some(message)) => message,
                    Ok(None) => break,
                    Err(_) => return,
                };
                let answered = reply(socket.as_fd(), request, fd, &mut listener, &capabilities);
                if answered.map(|socket| relayed.remember(socket)).is_err() {
                    return; // gone, or not reading its answers
                }
            }
        }
    }
}

/// Answer one request of the child; `fd`, the descriptor that came with
/// it, is kept only as the listener, and only a seccomp listener. The
/// socket connected for it, if one was.
fn reply(
    socket: BorrowedFd<'_>,
    request: RelayRequest,
    fd: Option<OwnedFd>,
    listener: &mut Option<OwnedFd>,
    capabilities: &Capabilities,
) -> std::io::Result<Option<std::net::TcpStream>> {
    let none = |sent: std::io::Result<()>| sent.map(|()| None);
    match request {
        RelayRequest::Listener if listener.is_none() && fd.as_ref().is_some_and(is_listener) => {
            *listener = fd;
            none(wire::send(socket, &RelayReply::Ready, None))
        }
        RelayRequest::Listener => none(wire::send(
            socket,
            &RelayReply::Refused("the relay has its listener, or this is none".into()),
            None,
        )),
        RelayRequest::Connect { host, port } => match net::dial(capabilities, &host, port) {
            Ok(stream) => wire::send(socket, &RelayReply::Connected, Some(stream.as_fd()))
                .map(|()| Some(stream)),
            Err(DialError::Io(error)) => none(wire::send(
                socket,
                &RelayReply::Failed(error.to_string()),
                None,
            )),
            Err(refused) => none(wire::send(
                socket,
                &RelayReply::Refused(refused.to_string()),
                None,
            )),
        },
    }
}

/// Whether `fd` is a seccomp notification listener (and not, say, the
/// child's end of the relay).
fn is_listener(fd: &OwnedFd) -> bool {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .is_ok_and(|target| target.as_os_str() == "anon_inode:seccomp notify")
}

/// A pidfd of the process `pid` (Linux 5.3 and later): readable once it
/// has exited. `pid` must be a child not yet waited for, so its number is
/// not reused meanwhile.
pub(crate) fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes integers and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a descriptor the kernel just made, owned by nothing else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
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
    relayed.remember(Some(stream));
    Ok(())
}

/// The sockets the relay put in a child's hands, by what their
/// descriptors link to (`socket:[inode]`, the same in both processes and
/// for every copy).
#[derive(Debug, Default)]
struct Relayed(HashSet<String>);

impl Relayed {
    /// Remember `stream`, a socket handed to the child (then closed here).
    fn remember(&mut self, stream: Option<std::net::TcpStream>) {
        let Some(stream) = stream else { return };
        if let Ok(socket) = std::fs::read_link(format!("/proc/self/fd/{}", stream.as_raw_fd())) {
            self.0.insert(socket.to_string_lossy().into_owned());
        }
    }
}

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
