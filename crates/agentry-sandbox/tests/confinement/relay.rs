//! The relay against a tool that talks to it directly: whatever the tool
//! sends on its relay socket (half a message with the socket itself
//! attached, requests it never reads the answers of), the parent's thread
//! that answered the call ends with the child.

use std::os::fd::RawFd;

use super::network::{greeter, try_net};
use super::*;

/// The relay actions of the tool, by name; `None` for another action.
pub(super) fn attempt(action: &str) -> Option<Result<Value, String>> {
    Some(match action {
        // Half a message ("{", no newline), carrying the relay socket
        // itself: a parent that kept it while waiting for the rest would
        // hold both ends, and wait for good.
        "relay_half_message" => {
            relay_socket().and_then(|relay| match send_with(relay, b"{", relay, 0) {
                1 => Ok(json!("sent")),
                _ => Err(std::io::Error::last_os_error().to_string()),
            })
        }
        // Connect requests, each carrying the relay socket, until the
        // socket's buffer stays full, and no answer read: a parent that
        // blocked sending its answers would wait for good.
        "relay_flood" => relay_socket().map(|relay| {
            let line = b"{\"connect\":{\"host\":\"127.0.0.1\",\"port\":1}}\n";
            let mut sent = 0;
            for _ in 0..20_000 {
                if send_with(relay, line, relay, libc::MSG_DONTWAIT) < 0 {
                    // Full: once more after the parent has read some.
                    std::thread::sleep(Duration::from_millis(50));
                    if send_with(relay, line, relay, libc::MSG_DONTWAIT) < 0 {
                        break;
                    }
                }
                sent += 1;
            }
            json!(sent)
        }),
        _ => return None,
    })
}

/// The child's end of the relay: its first Unix socket past stdio.
fn relay_socket() -> Result<RawFd, String> {
    (3..256)
        .find(|&fd| {
            let mut domain: libc::c_int = 0;
            let mut length = size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: getsockopt writes an int and its length.
            let asked = unsafe {
                libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_DOMAIN,
                    (&mut domain as *mut libc::c_int).cast(),
                    &mut length,
                )
            };
            asked == 0 && domain == libc::AF_UNIX
        })
        .ok_or_else(|| "no relay socket".to_owned())
}

/// Send `bytes` on `socket` with `fd` attached (`SCM_RIGHTS`).
fn send_with(socket: RawFd, bytes: &[u8], fd: RawFd, flags: libc::c_int) -> isize {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; its pointers are to live locals, and
    // the control buffer holds one header and one descriptor.
    unsafe {
        let mut header: libc::msghdr = std::mem::zeroed();
        header.msg_iov = &mut iov;
        header.msg_iovlen = 1;
        header.msg_control = control.as_mut_ptr().cast();
        header.msg_controllen = libc::CMSG_SPACE(size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&header);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        libc::sendmsg(socket, &header, libc::MSG_NOSIGNAL | flags)
    }
}

/// How many of this process's threads answer children's network requests
/// (the relay names them `sandbox-relay`).
fn relay_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.trim() == "sandbox-relay")
        })
        .count()
}

pub(super) async fn relays_end(sandbox: &Sandbox) {
    // Every networked call above has answered; its child exits, and the
    // thread that answered it ends.
    threads_end("the calls above").await;
    // So do calls that talk to the relay themselves, each answered.
    let port = greeter("hello to the relay");
    let grant = format!("http://127.0.0.1:{port}");
    let grants = std::slice::from_ref(&grant);
    for action in ["relay_flood", "relay_half_message"] {
        for _ in 0..3 {
            let result = try_net(sandbox, online(port), grants, action, "").await;
            assert!(result.error_message().is_none(), "{action}: {result:?}");
        }
        threads_end(action).await;
    }
}

/// Wait until no relay thread is left (5 s, or the check fails as hung).
async fn threads_end(after: &str) {
    for _ in 0..50 {
        if relay_threads() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "after {after}: {} relay threads outlived their children",
        relay_threads()
    );
}
