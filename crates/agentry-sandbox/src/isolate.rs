//! The child's side of a call's network. A call with a `Net` grant gets a
//! network namespace of its own ([`own_network`]): its loopback is down and
//! it has no other device, so nothing it sends leaves it. Its `connect`
//! calls go to the parent instead ([`relay_connects`]), which connects
//! where the grants allow and puts the socket in the tool's hands.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::protocol::{RelayReply, RelayRequest};
use crate::wire;

/// Move this process into a new, empty network namespace: as root (or
/// with `CAP_SYS_ADMIN`) directly, otherwise inside a new user namespace.
/// `Err` says why neither was possible. Needs one thread (a user
/// namespace is refused to a process with more).
#[cfg(target_os = "linux")]
pub(crate) fn own_network() -> Result<(), String> {
    // SAFETY: unshare changes only this process's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } == 0 {
        return Ok(());
    }
    let direct = std::io::Error::last_os_error();
    // SAFETY: as above.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } == 0 {
        return Ok(());
    }
    let through_user = std::io::Error::last_os_error();
    Err(format!(
        "no network namespace could be made for it: {direct}; in a user namespace: \
         {through_user}"
    ))
}

/// Other systems have no network namespaces.
#[cfg(not(target_os = "linux"))]
pub(crate) fn own_network() -> Result<(), String> {
    Err("this system has no network namespaces".into())
}

/// Send every later `connect` of this process to the parent: a seccomp
/// filter turns each into a notification, and its listener goes to the
/// parent over `relay`. Returns once the parent holds it.
#[cfg(target_os = "linux")]
pub(crate) fn relay_connects(relay: BorrowedFd<'_>) -> Result<(), String> {
    let filter = connect_filter()?;
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: prctl with integer arguments; seccomp reads the program
    // passed, which outlives the call.
    let listener = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &program,
        )
    };
    if listener < 0 {
        return Err(format!(
            "seccomp: could not relay connections: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: seccomp returned a new descriptor that nothing else owns.
    let listener = unsafe { OwnedFd::from_raw_fd(listener as i32) };
    let failed = |error: std::io::Error| format!("the sandbox's relay: {error}");
    wire::send(relay, &RelayRequest::Listener, Some(listener.as_fd())).map_err(failed)?;
    // The listener stays with the parent alone: the tool cannot answer
    // its own connects.
    drop(listener);
    match wire::receive::<RelayReply>(relay).map_err(failed)? {
        Some((RelayReply::Ready, _)) => Ok(()),
        other => Err(format!(
            "the sandbox's relay did not take the listener: {other:?}"
        )),
    }
}

/// Other systems have no seccomp.
#[cfg(not(target_os = "linux"))]
pub(crate) fn relay_connects(_relay: BorrowedFd<'_>) -> Result<(), String> {
    Err("this system has no seccomp".into())
}

/// The classic BPF program: `connect` on this architecture waits for the
/// listener's answer; everything else is left to the other filters.
#[cfg(target_os = "linux")]
fn connect_filter() -> Result<Vec<libc::sock_filter>, String> {
    const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_EQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const ALLOW: u32 = 0x7fff_0000;
    let arch: u32 = match std::env::consts::ARCH {
        "x86_64" => 0xc000_003e,
        "aarch64" => 0xc000_00b7,
        other => return Err(format!("seccomp: no connect relay for {other}")),
    };
    let at = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    Ok(vec![
        at(LOAD_WORD, 0, 0, 4), // the architecture
        at(JUMP_EQ, 0, 3, arch),
        at(LOAD_WORD, 0, 0, 0), // the system call's number
        at(JUMP_EQ, 0, 1, libc::SYS_connect as u32),
        at(RETURN, 0, 0, libc::SECCOMP_RET_USER_NOTIF),
        at(RETURN, 0, 0, ALLOW),
    ])
}
