//! Messages over the relay's Unix socket: one JSON line each, with at most
//! one descriptor passed along (`SCM_RIGHTS`). One message is in flight at
//! a time: each side answers before the other sends again. The child reads
//! its answers with [`receive`]; the parent, which does not trust the
//! child, reads what comes without waiting for a line's end, into an
//! [`Inbox`].

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The longest message read, in bytes: past it the peer is not believed.
const MAX_MESSAGE: usize = 64 << 10;

/// Room for one control message carrying one descriptor (aligned).
type ControlBuffer = [u64; 4];

/// Send `message` as one line, with `fd` attached to its first byte.
pub(crate) fn send(
    socket: BorrowedFd<'_>,
    message: &impl Serialize,
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut sent = 0;
    let mut fd = fd.map(|fd| fd.as_raw_fd());
    while sent < line.len() {
        let rest = &line[sent..];
        let mut iov = libc::iovec {
            iov_base: rest.as_ptr() as *mut libc::c_void,
            iov_len: rest.len(),
        };
        let mut control: ControlBuffer = [0; 4];
        // SAFETY: msghdr is plain data; every pointer set below points at
        // a live local that outlives the sendmsg call.
        let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
        header.msg_iov = &mut iov;
        header.msg_iovlen = 1;
        if let Some(fd) = fd.take() {
            put_descriptor(&mut header, &mut control, fd);
        }
        // SAFETY: the header points at valid buffers (see above).
        let written = unsafe { libc::sendmsg(socket.as_raw_fd(), &header, libc::MSG_NOSIGNAL) };
        if written < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        sent += written as usize;
    }
    Ok(())
}

/// Attach `fd` to `header` as an `SCM_RIGHTS` control message in `control`.
fn put_descriptor(header: &mut libc::msghdr, control: &mut ControlBuffer, fd: RawFd) {
    header.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    header.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as _;
    // SAFETY: the control buffer holds CMSG_SPACE(4) bytes, so the first
    // header and its data fit.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(header);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
    }
}

/// Read one line and the descriptor sent with it; `None` when the peer
/// closed its end first.
pub(crate) fn receive<T: DeserializeOwned>(
    socket: BorrowedFd<'_>,
) -> io::Result<Option<(T, Option<OwnedFd>)>> {
    let mut line = Vec::new();
    let mut passed: Option<OwnedFd> = None;
    let mut buffer = [0u8; 4096];
    loop {
        let mut iov = libc::iovec {
            iov_base: buffer.as_mut_ptr().cast(),
            iov_len: buffer.len(),
        };
        let mut control: ControlBuffer = [0; 4];
        // SAFETY: as in `send`: plain data, pointers to live locals.
        let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
        header.msg_iov = &mut iov;
        header.msg_iovlen = 1;
        header.msg_control = control.as_mut_ptr().cast();
        header.msg_controllen = size_of::<ControlBuffer>() as _;
        // SAFETY: the header points at valid buffers.
        let read =
            unsafe { libc::recvmsg(socket.as_raw_fd(), &mut header, libc::MSG_CMSG_CLOEXEC) };
        if read < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        for fd in take_descriptors(&header) {
            // The first descriptor is the message's; any other is dropped.
            passed.get_or_insert(fd);
        }
        if read == 0 {
            return Ok(None);
        }
        line.extend_from_slice(&buffer[..read as usize]);
        if line.last() == Some(&b'\n') {
            let message = serde_json::from_slice(&line).map_err(io::Error::other)?;
            return Ok(Some((message, passed)));
        }
        if line.len() > MAX_MESSAGE || line.contains(&b'\n') {
            return Err(io::Error::other(
                "the relay's peer sent a malformed message",
            ));
        }
    }
}

/// Messages from a peer not trusted, read as they come by a thread that
/// polls (the parent's relay): bytes past a line's end wait for the next
/// read, a line longer than [`MAX_MESSAGE`] ends the conversation, and a
/// descriptor is kept only when one is wanted and it came with a message's
/// first byte; every other is closed at once (one kept while the rest of
/// its line was awaited could be the peer's own end, which never closes
/// then).
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    pending: Vec<u8>,
    passed: Option<OwnedFd>,
}

impl Inbox {
    /// Read what `socket` (non-blocking) holds now, keeping a descriptor
    /// when `descriptor_wanted`; `false` when the peer closed its end.
    pub(crate) fn read(
        &mut self,
        socket: BorrowedFd<'_>,
        descriptor_wanted: bool,
    ) -> io::Result<bool> {
        let mut buffer = [0u8; 4096];
        loop {
            let mut iov = libc::iovec {
                iov_base: buffer.as_mut_ptr().cast(),
                iov_len: buffer.len(),
            };
            let mut control: ControlBuffer = [0; 4];
            // SAFETY: as in `send`: plain data, pointers to live locals.
            let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
            header.msg_iov = &mut iov;
            header.msg_iovlen = 1;
            header.msg_control = control.as_mut_ptr().cast();
            header.msg_controllen = size_of::<ControlBuffer>() as _;
            let flags = libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT;
            // SAFETY: the header points at valid buffers.
            let read = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut header, flags) };
            if read < 0 {
                let error = io::Error::last_os_error();
                return match error.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => Ok(true),
                    _ => Err(error),
                };
            }
            let first_byte = self.pending.is_empty() && self.passed.is_none();
            for fd in take_descriptors(&header) {
                if descriptor_wanted && first_byte && self.passed.is_none() {
                    self.passed = Some(fd);
                } // any other is dropped, so closed, here
            }
            if read == 0 {
                return Ok(false);
            }
            self.pending.extend_from_slice(&buffer[..read as usize]);
            let unfinished = self
                .pending
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(self.pending.len(), |end| self.pending.len() - end - 1);
            if unfinished > MAX_MESSAGE {
                return Err(io::Error::other(
                    "the relay's peer sent a malformed message",
                ));
            }
            return Ok(true);
        }
    }

    /// The next whole message read, and the descriptor that came with it.
    pub(crate) fn next<T: DeserializeOwned>(&mut self) -> io::Result<Option<(T, Option<OwnedFd>)>> {
        let Some(end) = self.pending.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        let line: Vec<u8> = self.pending.drain(..=end).collect();
        let passed = self.passed.take();
        let message = serde_json::from_slice(&line).map_err(io::Error::other)?;
        Ok(Some((message, passed)))
    }
}

/// Every descriptor the control messages of `header` carry, owned.
fn take_descriptors(header: &libc::msghdr) -> Vec<OwnedFd> {
    let mut fds = Vec::new();
    // SAFETY: the kernel filled the control buffer `header` points at; the
    // CMSG macros walk it within msg_controllen.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let bytes = (*cmsg).cmsg_len as usize - (data as usize - cmsg as usize);
                for index in 0..bytes / size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(index));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(header, cmsg);
        }
    }
    fds
}
