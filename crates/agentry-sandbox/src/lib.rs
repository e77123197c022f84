//! # agentry-sandbox
//!
//! Tools confined by the operating system. A tool marked `#[tool(sandbox)]`
//! (or built with `.sandboxed()`) runs each call in a child process of the
//! same program that is confined before it reads the call's input:
//!
//! - **network namespace**: a call with a `Net` grant runs in a network
//!   namespace of its own, with no device up, so nothing it sends leaves
//!   it. Its TCP `connect` calls go to the parent process instead, which
//!   checks them as the HTTP client does (the grant's host and port, then
//!   the address: loopback, private and link-local ones only when a grant
//!   names them), connects from its own network, and puts the connected
//!   socket in the tool's hands (a `connect` on it again answers "already
//!   connected"); a host name goes through [`connect`]. The parent's
//!   thread that answers a call ends when its child exits, whatever the
//!   child sent it.
//! - **Landlock**: it reads only under its granted `FsRead` directories and
//!   writes only under its `FsWrite` ones; it binds no TCP port; no
//!   signals or abstract sockets reach outside processes.
//! - **seccomp**: it cannot start a program (`execve`), a process (`fork`,
//!   `clone` without `CLONE_THREAD`), open any socket unless a `Net`
//!   capability is granted (and then only TCP sockets: no UDP, raw or Unix
//!   ones, and no TCP Fast Open, which connects a socket without a
//!   `connect`: no send with `MSG_FASTOPEN`, no `TCP_FASTOPEN_CONNECT`,
//!   `TCP_FASTOPEN` or `TCP_REPAIR`), change
//!   a file's mode, owner or extended attributes (which Landlock does not
//!   cover), set another process's limits or priority, or make system calls
//!   that reach into other processes or change the system (`ptrace`,
//!   `mount`, `bpf`, io_uring, memfd, x32 numbers, …), or grow a file
//!   without opening it (a path's `truncate`). Refused calls fail with
//!   "Operation not permitted" (`fallocate` past a file's end, and the
//!   ioctls that reserve space: "Operation not supported"; `openat2`, whose flags a filter cannot read: "Function
//!   not implemented", and the C library falls back to `openat`).
//! - **resource limits**: memory (address space), CPU time, the size of
//!   each file and open files ([`Limits`]); every Linux capability is
//!   dropped first, so a program run as root cannot raise them again.
//!   Descriptors the parent left open are closed.
//! - **files written**: in a call with an `FsWrite` grant, each open for
//!   writing and each name made or renamed (a directory, a link) stops in a seccomp
//!   filter and is counted by the parent, which lets it go on while the
//!   call has files left ([`Limits::files_written`]) and answers "Disk
//!   quota exceeded" after; with the size of each file capped, a call
//!   leaves at most [`Limits::total_written_bytes`] on disk.
//!
//! This holds whatever the tool's code does: `std::fs`, `std::net` and
//! `std::process` are confined, not only the capability handles on
//! [`ToolContext`](agentry_core::tool::ToolContext). Where the kernel
//! lacks Landlock or seccomp, or its Landlock is older than the rules need
//! (Linux 6.12), or a call with a `Net` grant cannot have a network
//! namespace (neither root nor user namespaces), the call is refused,
//! unless [`Sandbox::allow_unconfined`]
//! says to run it anyway; a failure to apply what the kernel has is always
//! a refusal.
//!
//! ```standalone_crate
//! use std::sync::Arc;
//! use agentry_core::tool::{ToolCall, ToolContext, Toolbox};
//! use agentry_sandbox::Sandbox;
//! use serde_json::json;
//!
//! /// Read a file: the sandbox decides which.
//! #[agentry::tool(sandbox)]
//! fn peek(path: String) -> Result<String, String> {
//!     std::fs::read_to_string(path).map_err(|error| error.to_string())
//! }
//!
//! fn main() {
//!     // In the child process the sandbox starts, this runs the call and exits.
//!     agentry_sandbox::serve_if_child(|| vec![peek::tool()]);
//!
//!     let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//!     runtime.block_on(async {
//!         let tools = Toolbox::for_agent([peek::tool()]).unwrap();
//!         let call = ToolCall::new("call_1", peek::NAME, json!({"path": "/etc/passwd"}));
//!         // No sandbox configured: a sandboxed tool does not run at all.
//!         let refused = tools.dispatch(call.clone()).await;
//!         assert!(refused.error_message().unwrap().contains("none is configured"));
//!         // In the sandbox it runs, granted no directory, so the read fails.
//!         let ctx = ToolContext::new().with_sandbox(Sandbox::new());
//!         let denied = tools.dispatch_with(call, &ctx).await;
//!         let message = denied.error_message().unwrap();
//!         assert!(
//!             message.starts_with(&format!("tool \"{}\" failed: Permission denied (os error 13)", peek::NAME))
//!                 // where the kernel has no Landlock:
//!                 || message.contains("could not be confined"),
//!             "{message}"
//!         );
//!     });
//! }
//! ```
//!
//! With an agent: `Agent::builder().sandbox(Sandbox::new())`. The program's
//! `main` must call [`serve_if_child`] first, with every sandboxed tool.
#![warn(missing_docs)]

mod child;
mod confine;
mod isolate;
mod launch;
mod net;
mod protocol;
#[cfg(target_os = "linux")]
mod quota;
#[cfg(target_os = "linux")]
mod relay;
mod wire;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentry_core::BoxFuture;
use agentry_core::tool::{SandboxedCall, ToolSandbox};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use child::serve_if_child;
pub use confine::Enforcement;
pub use net::connect;
pub use protocol::CHILD_ENV;

/// What one sandboxed call may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Address space, in bytes (an allocation past it fails). Default 1 GiB.
    pub memory_bytes: u64,
    /// CPU time, in seconds. Default 30.
    pub cpu_seconds: u64,
    /// Largest file the call may write, in bytes (a write past it fails
    /// with "File too large"). Default 16 MiB. With
    /// [`files_written`](Self::files_written) it bounds the total a call
    /// writes: [`total_written_bytes`](Self::total_written_bytes).
    pub file_bytes: u64,
    /// Most files the call may create or open for writing, in a call with
    /// an `FsWrite` grant: each open with write access, `O_CREAT` or
    /// `O_TRUNC` counts one (even of a file counted before, or one that
    /// then fails), and so does each directory, link, symbolic link or
    /// device node it makes and each rename (a file written to a temporary
    /// name and renamed counts two); past it they fail with "Disk quota
    /// exceeded". Reads are not counted. Default 32.
    pub files_written: u64,
    /// Most files open at once. Default 256.
    pub open_files: u64,
}

impl Limits {
    /// The most bytes a call can leave in files:
    /// [`files_written`](Self::files_written) ×
    /// [`file_bytes`](Self::file_bytes) (by default 32 × 16 MiB = 512
    /// MiB), plus the filesystem's own record of the names it made or
    /// moved (an entry in a directory, a block for a directory or a long
    /// symbolic link, each counted among the files). Whatever grows a file
    /// needs it open for writing, or is refused (a path's `truncate`,
    /// `fallocate` past a file's end, an ioctl that reserves space). Enforced where the kernel confines the call
    /// fully or partly (not when it runs unconfined); a smaller cap: grant
    /// `FsWrite` on a size-limited filesystem (a tmpfs with `size=`, a
    /// project quota), where a write past it fails with "No space left on
    /// device".
    pub fn total_written_bytes(&self) -> u64 {
        self.files_written.saturating_mul(self.file_bytes)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 1 << 30,
            cpu_seconds: 30,
            file_bytes: 16 << 20,
            files_written: 32,
            open_files: 256,
        }
    }
}

/// Runs sandboxed tools' calls in confined child processes of this program
/// (see the [crate docs](crate)). Cheap to clone: clones share the warm pool.
#[derive(Debug, Clone)]
pub struct Sandbox {
    inner: Arc<Settings>,
}

#[derive(Debug)]
struct Settings {
    program: PathBuf,
    args: Vec<OsString>,
    limits: Limits,
    allow_unconfined: bool,
    warm: usize,
    pool: Mutex<Vec<launch::Ready>>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// A sandbox that starts this program ([`std::env::current_exe`]) for
    /// each call, with the default [`Limits`], no warm children, and
    /// unconfined calls refused.
    pub fn new() -> Self {
        let program = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"));
        Self {
            inner: Arc::new(Settings {
                program,
                args: Vec::new(),
                limits: Limits::default(),
                allow_unconfined: false,
                warm: 0,
                pool: Mutex::new(Vec::new()),
            }),
        }
    }

    fn settings(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        let settings = Arc::get_mut(&mut self.inner).expect("configure a sandbox before using it");
        change(settings);
        self
    }

    /// Start `program` (with `args`) as the child instead of this program.
    /// Its `main` must call [`serve_if_child`] with the sandboxed tools.
    pub fn program(self, program: impl Into<PathBuf>, args: Vec<OsString>) -> Self {
        let program = program.into();
        self.settings(|s| {
            s.program = program;
            s.args = args;
        })
    }

    /// Replace the limits every call runs under.
    pub fn limits(self, limits: Limits) -> Self {
        self.settings(|s| s.limits = limits)
    }

    /// Run calls even where the kernel cannot confine them fully (no
    /// Landlock or seccomp, or an older Landlock): they still run in a child
    /// process, with what the kernel enforces (on Linux, the limits).
    pub fn allow_unconfined(self, allow: bool) -> Self {
        self.settings(|s| s.allow_unconfined = allow)
    }

    /// Keep `children` started ahead of the calls, so a call does not wait
    /// for a process to start (each child still serves one call, and is
    /// confined for it alone). Started on first use.
    pub fn warm(self, children: usize) -> Self {
        self.settings(|s| s.warm = children)
    }

    /// Start the warm children now (they are otherwise started on the
    /// first call). Needs a Tokio runtime.
    pub fn prewarm(&self) {
        self.refill();
    }

    /// The limits calls run under.
    pub fn current_limits(&self) -> &Limits {
        &self.inner.limits
    }
}

impl ToolSandbox for Sandbox {
    fn run<'a>(&'a self, call: SandboxedCall<'a>) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(self.run_call(call))
    }
}
