//! The child's side of what the parent decides for it. A call with a `Net`
//! grant gets a network namespace of its own ([`own_network`]): its
//! loopback is down and it has no other device, so nothing it sends leaves
//! it. Its `connect` calls go to the parent instead
//! ([`relay_notifications`]), which connects where the grants allow and
//! puts the socket in the tool's hands. A call with an `FsWrite` grant
//! sends the parent its opens for writing the same way, to be counted
//! ([`quota`](crate::quota)).

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

/// What a child's notification filter sends to the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Notified {
    /// Every `connect`: a call with a `Net` grant.
    pub(crate) connects: bool,
    /// Every open for writing and every name made, to be counted (see
    /// [`quota`](crate::quota)): a call with an `FsWrite` grant.
    pub(crate) writes: bool,
}

/// Send every later `connect` of this process, or open for writing, or
/// both (`notified`), to the parent: a seccomp filter turns each into a
/// notification, and its listener goes to the parent over `relay` (a
/// process has one listener at most, so one filter serves both). Returns
/// once the parent holds it.
#[cfg(target_os = "linux")]
pub(crate) fn relay_notifications(relay: BorrowedFd<'_>, notified: Notified) -> Result<(), String> {
    let filter = notification_filter(notified)?;
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
            "seccomp: could not relay system calls to the parent: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: seccomp returned a new descriptor that nothing else owns.
    let listener = unsafe { OwnedFd::from_raw_fd(listener as i32) };
    let failed = |error: std::io::Error| format!("the sandbox's relay: {error}");
    wire::send(relay, &RelayRequest::Listener, Some(listener.as_fd())).map_err(failed)?;
    // The listener stays with the parent alone: the tool cannot answer
    // its own system calls.
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
pub(crate) fn relay_notifications(
    _relay: BorrowedFd<'_>,
    _notified: Notified,
) -> Result<(), String> {
    Err("this system has no seccomp".into())
}

/// Where a filter instruction jumps: to the next one, past `n` more, or
/// to the program's end (allow, or wait for the parent).
#[cfg(target_os = "linux")]
#[derive(Clone, Copy)]
enum Jump {
    Next,
    Over(u8),
    Allow,
    Notify,
}

/// The classic BPF program: on this architecture, `connect` (when
/// `notified.connects`) and the counted system calls of
/// [`quota`](crate::quota) (when `notified.writes`: the makers always, the
/// opens when their flags, read from a register, may write) wait for the
/// listener's answer; everything else is left to the other filters.
#[cfg(target_os = "linux")]
fn notification_filter(notified: Notified) -> Result<Vec<libc::sock_filter>, String> {
    use crate::quota::{MAKERS, OPENS, WRITE_FLAGS};
    const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_EQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JUMP_SET: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const ALLOW: u32 = 0x7fff_0000;
    let arch: u32 = match std::env::consts::ARCH {
        "x86_64" => 0xc000_003e,
        "aarch64" => 0xc000_00b7,
        other => return Err(format!("seccomp: no relay of system calls for {other}")),
    };
    // struct seccomp_data: nr, arch, instruction_pointer, then six 64-bit
    // arguments; flags are an int, in the argument's low word.
    let low_word = |index: u8| {
        let offset = 16 + 8 * u32::from(index);
        if cfg!(target_endian = "big") {
            offset + 4
        } else {
            offset
        }
    };
    let mut steps = vec![
        (LOAD_WORD, Jump::Next, Jump::Next, 4), // the architecture
        (JUMP_EQ, Jump::Next, Jump::Allow, arch),
        (LOAD_WORD, Jump::Next, Jump::Next, 0), // the system call's number
    ];
    if notified.connects {
        steps.push((JUMP_EQ, Jump::Notify, Jump::Next, libc::SYS_connect as u32));
    }
    if notified.writes {
        for &call in MAKERS {
            steps.push((JUMP_EQ, Jump::Notify, Jump::Next, call as u32));
        }
        for &(call, flags) in OPENS {
            steps.push((JUMP_EQ, Jump::Next, Jump::Over(2), call as u32));
            steps.push((LOAD_WORD, Jump::Next, Jump::Next, low_word(flags)));
            steps.push((JUMP_SET, Jump::Notify, Jump::Allow, WRITE_FLAGS));
        }
    }
    let allow_at = steps.len();
    let notify_at = allow_at + 1;
    let mut program = Vec::with_capacity(steps.len() + 2);
    for (at, (code, jt, jf, k)) in steps.into_iter().enumerate() {
        let offset = |jump| {
            let target = match jump {
                Jump::Next => at + 1,
                Jump::Over(n) => at + 1 + usize::from(n),
                Jump::Allow => allow_at,
                Jump::Notify => notify_at,
            };
            u8::try_from(target - at - 1).map_err(|_| "seccomp: the relay's filter is too long")
        };
        let (jt, jf) = match code {
            JUMP_EQ | JUMP_SET => (offset(jt)?, offset(jf)?),
            _ => (0, 0),
        };
        program.push(libc::sock_filter { code, jt, jf, k });
    }
    program.push(libc::sock_filter {
        code: RETURN,
        jt: 0,
        jf: 0,
        k: ALLOW,
    });
    program.push(libc::sock_filter {
        code: RETURN,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_USER_NOTIF,
    });
    Ok(program)
}
