//! Confining the child process, once and for good, before it runs a call:
//! resource limits, then Landlock (files, TCP binds, signals and abstract
//! sockets), then seccomp (no new programs or processes, no sockets unless
//! a `Net` grant, and then TCP ones only, without Fast Open; nothing that grows a file without
//! opening it; none of the system calls a tool has no business making).
//! The network namespace and the relay of connects and opens for writing
//! are [`isolate`](crate::isolate)'s. Each applies to this thread and every thread it starts later,
//! so it runs while the child has one thread.

use std::collections::BTreeMap;
use std::path::PathBuf;

use agentry_core::tool::Capabilities;
use serde::{Deserialize, Serialize};

use crate::Limits;

/// How far the kernel confined a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Every restriction asked for is in force.
    Full,
    /// Landlock runs at an older ABI: some file rights (say, truncation),
    /// the TCP port rules or signal scoping are not enforced; seccomp and
    /// limits are. A call runs so only with `allow_unconfined`.
    Partial,
    /// The kernel has no Landlock (or no seccomp): the call runs only when
    /// the sandbox allows running unconfined.
    None,
}

/// Apply `limits`, Landlock and seccomp for a call with `capabilities`.
/// `Ok` says how far they are enforced; `Err` why they could not be applied.
#[cfg(target_os = "linux")]
pub fn confine(capabilities: &Capabilities, limits: &Limits) -> Result<Enforcement, String> {
    apply_limits(limits)?;
    drop_privileges()?;
    let landlock = landlock_rules(capabilities)?;
    let seccomp = seccomp_filters(capabilities)
        .map(|()| true)
        .or_else(|error| {
            // A kernel built without seccomp answers EINVAL; anything else is a bug here.
            if error.contains("Invalid argument") {
                Ok(false)
            } else {
                Err(error)
            }
        })?;
    Ok(match (landlock, seccomp) {
        (Enforcement::None, _) | (_, false) => Enforcement::None,
        (enforcement, true) => enforcement,
    })
}

/// Other systems have neither Landlock nor seccomp.
#[cfg(not(target_os = "linux"))]
pub fn confine(_capabilities: &Capabilities, limits: &Limits) -> Result<Enforcement, String> {
    let _ = limits;
    Ok(Enforcement::None)
}

#[cfg(target_os = "linux")]
fn apply_limits(limits: &Limits) -> Result<(), String> {
    fn set(
        resource: libc::__rlimit_resource_t,
        name: &str,
        mut soft: u64,
        mut hard: u64,
    ) -> Result<(), String> {
        // Never above the limit this process already has: raising it needs
        // a privilege, and a lower one is what was asked for anyway.
        let mut current = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct we pass and nothing else.
        if unsafe { libc::getrlimit(resource, &mut current) } == 0 {
            soft = soft.min(current.rlim_max);
            hard = hard.min(current.rlim_max);
        }
        let limit = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct we pass and nothing else.
        if unsafe { libc::setrlimit(resource, &limit) } != 0 {
            return Err(format!(
                "could not limit {name}: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
    set(
        libc::RLIMIT_AS,
        "memory",
        limits.memory_bytes,
        limits.memory_bytes,
    )?;
    // Past the soft limit the kernel sends SIGXCPU; a second later, SIGKILL.
    set(
        libc::RLIMIT_CPU,
        "CPU time",
        limits.cpu_seconds,
        limits.cpu_seconds + 1,
    )?;
    set(
        libc::RLIMIT_FSIZE,
        "file size",
        limits.file_bytes,
        limits.file_bytes,
    )?;
    set(
        libc::RLIMIT_NOFILE,
        "open files",
        limits.open_files,
        limits.open_files,
    )?;
    set(libc::RLIMIT_CORE, "core dumps", 0, 0)?;
    // A write past the file-size limit then fails with EFBIG ("File too
    // large") instead of killing the process with SIGXFSZ.
    // SAFETY: installing SIG_IGN for a signal runs no handler code.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    Ok(())
}

/// Give up every Linux capability (a program run as root, as in many
/// containers, would otherwise keep them: CAP_SYS_RESOURCE raises the
/// limits again, CAP_NET_RAW opens raw sockets): the bounding and ambient
/// sets, then the effective, permitted and inheritable ones.
#[cfg(target_os = "linux")]
fn drop_privileges() -> Result<(), String> {
    const PR_CAPBSET_DROP: libc::c_int = 24;
    const PR_CAP_AMBIENT: libc::c_int = 47;
    const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
    const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl with integer arguments; an unknown capability number
    // answers EINVAL, which ends the loop.
    unsafe {
        libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        for capability in 0..64 {
            if libc::prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
            {
                break;
            }
        }
    }
    let header = Header {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let none = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads the header and two data structs we pass.
    if unsafe { libc::syscall(libc::SYS_capset, &header, none.as_ptr()) } != 0 {
        return Err(format!(
            "could not drop capabilities: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The Landlock ABI the rules are written for (Linux 6.12 and later); older
/// kernels enforce what they know of it.
#[cfg(target_os = "linux")]
const ABI: landlock::ABI = landlock::ABI::V6;

#[cfg(target_os = "linux")]
fn landlock_rules(capabilities: &Capabilities) -> Result<Enforcement, String> {
    use landlock::{
        Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, Scope, path_beneath_rules,
    };
    let failed = |error: landlock::RulesetError| format!("Landlock: {error}");
    let read = AccessFs::from_read(ABI);
    let all = AccessFs::from_all(ABI);
    let networked = capabilities.net_grants().next().is_some();
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(failed)?
        .scope(Scope::from_all(ABI))
        .map_err(failed)?;
    // Without a Net grant seccomp refuses every socket. With one, no TCP
    // port is bound, and a connect that skipped the relay (which answers
    // it before Landlock would see it) reaches only a granted port.
    if networked {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI))
            .map_err(failed)?;
    }
    let mut created = ruleset.create().map_err(failed)?;
    created = created
        .add_rules(path_beneath_rules(capabilities.dirs(false), read))
        .map_err(failed)?
        .add_rules(path_beneath_rules(capabilities.dirs(true), all))
        .map_err(failed)?
        .add_rules(path_beneath_rules(runtime_reads(capabilities), read))
        .map_err(failed)?
        .add_rules(path_beneath_rules(DEVICES_READ, read))
        .map_err(failed)?
        .add_rules(path_beneath_rules(
            ["/dev/null"],
            read | AccessFs::WriteFile,
        ))
        .map_err(failed)?;
    if networked {
        for port in tcp_ports(capabilities) {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(failed)?;
        }
    }
    let status = created.restrict_self().map_err(failed)?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    })
}

/// The TCP ports the Net grants name (a grant for any port names none).
fn tcp_ports(capabilities: &Capabilities) -> Vec<u16> {
    capabilities
        .net_grants()
        .filter_map(|grant| grant.port)
        .collect()
}

/// Devices any call may read: what `std::process` and random number
/// generators open (`/dev/null` may also be written).
const DEVICES_READ: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/urandom"];

/// Files a granted network call needs to read beyond the tool's grants:
/// name resolution and the system's certificates.
fn runtime_reads(capabilities: &Capabilities) -> Vec<PathBuf> {
    if capabilities.net_grants().next().is_none() {
        return Vec::new();
    }
    [
        "/etc/hosts",
        "/etc/resolv.conf",
        "/etc/nsswitch.conf",
        "/etc/gai.conf",
        "/etc/ssl",
        "/etc/ca-certificates",
        "/etc/pki",
        "/usr/share/ca-certificates",
    ]
    .into_iter()
    .map(PathBuf::from)
    .filter(|path| path.exists())
    .collect()
}

/// System calls no sandboxed call may make, whatever it is granted: they
/// start programs, reach into other processes, change the system, or
/// escape the other rules (io_uring bypasses seccomp; handles bypass paths).
#[cfg(target_os = "linux")]
const REFUSED: &[libc::c_long] = &[
    libc::SYS_execve,
    libc::SYS_execveat,
    libc::SYS_fork,
    libc::SYS_vfork,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_fanotify_init,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    // Landlock does not cover a file's mode, owner or extended attributes.
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    // Memory outside the address-space limit; mounts by other means.
    libc::SYS_memfd_create,
    libc::SYS_memfd_secret,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_personality,
    libc::SYS_process_madvise,
    // A path's truncate grows a file without opening it for writing, which
    // is what the files written count (ftruncate needs such an open).
    libc::SYS_truncate,
];

/// The ioctls that reserve or free a file's space as `fallocate` with a
/// mode does (`FS_IOC_RESVSP` = `_IOW('X', 40, struct space_resv)`, its
/// 64-bit twin, their unreserving pair, `FS_IOC_ZERO_RANGE`), and XFS's
/// older `ALLOCSP`/`FREESP` ones, which set a file's size: the kernel reads
/// the request number as 32 bits.
#[cfg(target_os = "linux")]
const RESERVE_SPACE: [u32; 9] = [
    0x4030_5828, // FS_IOC_RESVSP
    0x4030_5829, // FS_IOC_UNRESVSP
    0x4030_582a, // FS_IOC_RESVSP64
    0x4030_582b, // FS_IOC_UNRESVSP64
    0x4030_5839, // FS_IOC_ZERO_RANGE
    0x4030_580a, // XFS_IOC_ALLOCSP
    0x4030_580b, // XFS_IOC_FREESP
    0x4030_5824, // XFS_IOC_ALLOCSP64
    0x4030_5825, // XFS_IOC_FREESP64
];

/// System calls refused when they name another process (a nonzero pid in
/// argument `.1`): limits, priorities and CPU placement of others.
#[cfg(target_os = "linux")]
const OTHERS: &[(libc::c_long, u8)] = &[
    (libc::SYS_prlimit64, 0),
    (libc::SYS_setpriority, 1),
    (libc::SYS_ioprio_set, 1),
    (libc::SYS_sched_setaffinity, 0),
    (libc::SYS_sched_setscheduler, 0),
    (libc::SYS_sched_setparam, 0),
    (libc::SYS_sched_setattr, 0),
];

/// Network system calls, refused unless a Net capability is granted.
#[cfg(target_os = "linux")]
const NETWORK: &[libc::c_long] = &[libc::SYS_socket, libc::SYS_socketpair];

#[cfg(target_os = "linux")]
fn seccomp_filters(capabilities: &Capabilities) -> Result<(), String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    fn failed(error: impl std::fmt::Display) -> String {
        format!("seccomp: {error}")
    }
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|_| format!("seccomp: no filter for {}", std::env::consts::ARCH))?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|&call| (call, Vec::new())).collect();
    if capabilities.net_grants().next().is_none() {
        refused.extend(NETWORK.iter().map(|&call| (call, Vec::new())));
    } else {
        refused.insert(libc::SYS_socket, tcp_only().map_err(failed)?);
        refused.insert(libc::SYS_socketpair, Vec::new());
    }
    for &(call, argument) in OTHERS {
        let another = SeccompCondition::new(argument, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, 0)
            .map_err(failed)?;
        refused.insert(call, vec![SeccompRule::new(vec![another]).map_err(failed)?]);
    }
    // clone without CLONE_THREAD makes a process; threads stay allowed.
    let new_process = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
        0,
    )
    .map_err(failed)?;
    refused.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![new_process]).map_err(failed)?],
    );
    // A rename that leaves a whiteout makes a name no count sees.
    let whiteout = SeccompCondition::new(
        4,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(u64::from(libc::RENAME_WHITEOUT)),
        u64::from(libc::RENAME_WHITEOUT),
    )
    .map_err(failed)?;
    refused.insert(
        libc::SYS_renameat2,
        vec![SeccompRule::new(vec![whiteout]).map_err(failed)?],
    );
    refused.extend(no_fast_open().map_err(failed)?);
    let deny: BpfProgram = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(failed)?
    .try_into()
    .map_err(failed)?;
    // clone3 and openat2 pass their flags in memory a filter cannot read:
    // they answer "not implemented", and the C library falls back to clone
    // for threads and to openat (whose opens for writing are counted).
    let not_implemented: BpfProgram = SeccompFilter::new(
        BTreeMap::from([
            (libc::SYS_clone3, Vec::new()),
            (libc::SYS_openat2, Vec::new()),
        ]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(failed)?
    .try_into()
    .map_err(failed)?;
    // fallocate with a mode (FALLOC_FL_KEEP_SIZE and the rest) allocates
    // past a file's end or moves its end, unseen by the file-size limit;
    // mode 0 is checked against it. So do the ioctls that reserve space.
    // "Not supported", as a filesystem without the mode answers.
    let with_a_mode =
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, 0).map_err(failed)?;
    let reserving = RESERVE_SPACE
        .iter()
        .map(|&request| {
            SeccompCondition::new(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                u64::from(request),
            )
            .and_then(|condition| SeccompRule::new(vec![condition]))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    let not_supported: BpfProgram = SeccompFilter::new(
        BTreeMap::from([
            (
                libc::SYS_fallocate,
                vec![SeccompRule::new(vec![with_a_mode]).map_err(failed)?],
            ),
            (libc::SYS_ioctl, reserving),
        ]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EOPNOTSUPP as u32),
        arch,
    )
    .map_err(failed)?
    .try_into()
    .map_err(failed)?;
    #[cfg(target_arch = "x86_64")]
    seccompiler::apply_filter(&no_x32()).map_err(failed)?;
    seccompiler::apply_filter(&deny).map_err(failed)?;
    seccompiler::apply_filter(&not_implemented).map_err(failed)?;
    seccompiler::apply_filter(&not_supported).map_err(failed)?;
    Ok(())
}

/// The `socket` calls a Net grant still refuses: a family other than IP
/// (a Unix socket reaches the session bus or a container engine, which
/// could start programs outside), a type other than a stream (UDP, raw
/// sockets), or a protocol other than TCP (SCTP, MPTCP).
#[cfg(target_os = "linux")]
fn tcp_only() -> Result<Vec<seccompiler::SeccompRule>, seccompiler::BackendError> {
    use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
    let argument = |index, op, value: i32| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value as u64)
    };
    let mut rules = vec![SeccompRule::new(vec![
        argument(0, SeccompCmpOp::Ne, libc::AF_INET)?,
        argument(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
    ])?];
    // The type's low four bits; the rest are SOCK_NONBLOCK and SOCK_CLOEXEC.
    for kind in (0..16).filter(|&kind| kind != libc::SOCK_STREAM) {
        rules.push(SeccompRule::new(vec![argument(
            1,
            SeccompCmpOp::MaskedEq(0xf),
            kind,
        )?])?);
    }
    rules.push(SeccompRule::new(vec![
        argument(2, SeccompCmpOp::Ne, 0)?,
        argument(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
    ])?);
    Ok(rules)
}

/// The sends and socket options of TCP Fast Open, which connect a socket
/// without a `connect` (so unseen by the relay): a send with
/// `MSG_FASTOPEN` (`sendto` and `sendmmsg` take flags in argument 3,
/// `sendmsg` in 2) connects a relayed socket that a reset disconnected
/// again, from the parent's network, to the address it names;
/// `TCP_FASTOPEN_CONNECT` defers a connect to the first send,
/// `TCP_FASTOPEN` is a listener's, and `TCP_REPAIR` sets a socket's state
/// by hand.
#[cfg(target_os = "linux")]
fn no_fast_open()
-> Result<Vec<(libc::c_long, Vec<seccompiler::SeccompRule>)>, seccompiler::BackendError> {
    use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
    let fast_open = |index| {
        let flag = libc::MSG_FASTOPEN as u32 as u64;
        SeccompCondition::new(
            index,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .and_then(|condition| SeccompRule::new(vec![condition]))
        .map(|rule| vec![rule])
    };
    let options = [
        libc::TCP_FASTOPEN_CONNECT,
        libc::TCP_FASTOPEN,
        libc::TCP_REPAIR,
    ]
    .into_iter()
    .map(|option| {
        let argument = |index, value: i32| {
            SeccompCondition::new(
                index,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                value as u64,
            )
        };
        SeccompRule::new(vec![argument(1, libc::IPPROTO_TCP)?, argument(2, option)?])
    })
    .collect::<Result<Vec<_>, _>>()?;
    Ok(vec![
        (libc::SYS_sendto, fast_open(3)?),
        (libc::SYS_sendmmsg, fast_open(3)?),
        (libc::SYS_sendmsg, fast_open(2)?),
        (libc::SYS_setsockopt, options),
    ])
}

/// On x86_64 the x32 ABI numbers every system call again with bit 30 set,
/// past a list of numbers: refuse them all.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn no_x32() -> seccompiler::BpfProgram {
    use seccompiler::sock_filter;
    const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_EQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JUMP_GE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const X32_BIT: u32 = 0x4000_0000;
    const ALLOW: u32 = 0x7fff_0000;
    const ERRNO: u32 = 0x0005_0000;
    let at = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        at(LOAD_WORD, 0, 0, 4), // the architecture
        at(JUMP_EQ, 0, 3, AUDIT_ARCH_X86_64),
        at(LOAD_WORD, 0, 0, 0), // the system call's number
        at(JUMP_GE, 0, 1, X32_BIT),
        at(RETURN, 0, 0, ERRNO | libc::EPERM as u32),
        at(RETURN, 0, 0, ALLOW),
    ]
}
