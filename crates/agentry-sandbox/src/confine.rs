//! Confining the child process, once and for good, before it runs a call:
//! resource limits, then Landlock (files, TCP ports, signals and abstract
//! sockets), then seccomp (no new programs or processes, no network
//! sockets unless granted, none of the system calls a tool has no business
//! making). Each applies to this thread and every thread it starts later,
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
    /// Landlock runs at an older ABI: some file rights (say, truncation) or
    /// the TCP port rules are not enforced; seccomp and limits are.
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
        soft: u64,
        hard: u64,
    ) -> Result<(), String> {
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
    let ports = tcp_ports(capabilities);
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(failed)?
        .scope(Scope::from_all(ABI))
        .map_err(failed)?;
    // Without a Net grant seccomp refuses every socket; with grants that
    // name their ports, TCP reaches only those.
    if ports.is_some() {
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
    if let Some(ports) = ports {
        for port in ports {
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

/// The TCP ports the Net grants name; `None` when a grant allows any port
/// (then Landlock leaves TCP alone) or there is no grant (seccomp refuses
/// sockets).
fn tcp_ports(capabilities: &Capabilities) -> Option<Vec<u16>> {
    let grants: Vec<_> = capabilities.net_grants().collect();
    if grants.is_empty() {
        return None;
    }
    grants.iter().map(|grant| grant.port).collect()
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
    let deny: BpfProgram = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(failed)?
    .try_into()
    .map_err(failed)?;
    // clone3 passes its flags in memory a filter cannot read: it answers
    // "not implemented", and the C library falls back to clone for threads.
    let clone3: BpfProgram = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(failed)?
    .try_into()
    .map_err(failed)?;
    seccompiler::apply_filter(&deny).map_err(failed)?;
    seccompiler::apply_filter(&clone3).map_err(failed)?;
    Ok(())
}
