//! The parent's side: start a child (or take a warm one), send it the call,
//! read its answer, and turn a child that died into a message that says why.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::Stdio;

use agentry_core::tool::{Capability, SandboxedCall};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::Sandbox;
use crate::protocol::{CHILD_ENV, Request, Response};

/// How much of a child's stderr is kept for messages: the end of it.
const STDERR_KEPT: usize = 4096;

/// Variables a child inherits (it needs them to start at all); every other
/// variable is cleared, and granted ones are sent with the call.
const INHERITED: &[&str] = &["LD_LIBRARY_PATH"];

/// A started child, waiting for its call.
#[derive(Debug)]
pub(crate) struct Ready {
    child: Child,
    /// The parent's end of the child's stdin, a Unix socket: the call goes
    /// out on it, then the child's network requests come back on it.
    relay: UnixStream,
}

impl Sandbox {
    /// Start a child of the configured program; it gets ready and waits.
    pub(crate) fn spawn(&self) -> Result<Ready, String> {
        let settings = &self.inner;
        let failed = |error: std::io::Error| {
            format!(
                "the sandbox could not start {}: {error}",
                settings.program.display()
            )
        };
        let (relay, stdin) = UnixStream::pair().map_err(failed)?;
        let mut command = Command::new(&settings.program);
        command
            .args(&settings.args)
            .env_clear()
            .env(CHILD_ENV, "1")
            .stdin(Stdio::from(OwnedFd::from(stdin)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in INHERITED {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        let child = command.spawn().map_err(failed)?;
        Ok(Ready { child, relay })
    }

    /// A warm child when one is waiting, a new one otherwise.
    fn take(&self) -> Result<Ready, String> {
        let warm = self.inner.pool.lock().expect("pool").pop();
        match warm {
            Some(ready) => Ok(ready),
            None => self.spawn(),
        }
    }

    /// Start children until `warm` wait.
    pub(crate) fn refill(&self) {
        let mut pool = self.inner.pool.lock().expect("pool");
        while pool.len() < self.inner.warm {
            match self.spawn() {
                Ok(ready) => pool.push(ready),
                Err(_) => break, // the next call starts its own and reports why
            }
        }
    }

    /// Run `call` in a child: its answer, or why there is none. Dispatch
    /// holds `call.timeout` by dropping this future, which kills the child.
    pub(crate) async fn run_call(&self, call: SandboxedCall<'_>) -> Result<Value, String> {
        let tool = call.tool.name.clone();
        let capabilities = call.capabilities;
        let env = capabilities
            .iter()
            .filter_map(|capability| match capability {
                Capability::Env(name) => std::env::var(name).ok().map(|v| (name.clone(), v)),
                _ => None,
            })
            .collect();
        let working_dir = capabilities
            .dirs(true)
            .into_iter()
            .chain(capabilities.dirs(false))
            .next()
            .unwrap_or_else(|| "/".into());
        let request = Request {
            tool: tool.clone(),
            input: call.input,
            capabilities: capabilities.clone(),
            env,
            session: call.context.session().cloned(),
            sender: call.context.sender().cloned(),
            extras: call.context.extras().clone(),
            limits: self.inner.limits.clone(),
            allow_unconfined: self.inner.allow_unconfined,
            working_dir,
        };
        let mut line = serde_json::to_vec(&request).map_err(|error| error.to_string())?;
        line.push(b'\n');
        let Ready { mut child, relay } = self.take()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let pid = child.id();
        let networked = capabilities.net_grants().next().is_some();
        let writes = !capabilities.dirs(true).is_empty();
        // A child that died while warm shows it when the call is written.
        // Once the call is on its way, the pool is topped up while the
        // child works, not before, so a warm call never waits for a start.
        let sent = async {
            let written = write_call(relay, &line).await.map(|relay| {
                // With a Net grant the child's connects come back on the
                // same socket, with an FsWrite grant its opens for
                // writing; without either it is closed.
                if networked || writes {
                    let files = writes.then_some(self.inner.limits.files_written);
                    serve_relay(relay, pid, capabilities.clone(), files);
                }
            });
            self.refill();
            written
        };
        // stderr matters only when no answer comes; it is read alongside.
        let errors = tokio::spawn(tail(stderr));
        let (sent, answer) = tokio::join!(sent, read_answer(stdout));
        if sent.is_ok()
            && let Some(response) = answer
        {
            // The child exits on its own once it has answered; dropping it
            // leaves the zombie to the runtime to reap.
            return match response {
                Response::Ok(output) => Ok(output),
                Response::Error(message) => {
                    Err(explain_refusal(message, &capabilities, &self.inner.limits))
                }
            };
        }
        let status = child
            .wait()
            .await
            .map_err(|error| format!("tool \"{tool}\": the sandbox lost its child: {error}"))?;
        let errors = errors.await.unwrap_or_default();
        Err(self.death_message(&tool, status, &errors))
    }

    /// Why a child ended without an answer.
    fn death_message(&self, tool: &str, status: std::process::ExitStatus, stderr: &str) -> String {
        use std::os::unix::process::ExitStatusExt;
        let limits = &self.inner.limits;
        let said = stderr.trim();
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {}", last_lines(said, 3))
        };
        if let Some(failure) = stderr
            .lines()
            .find(|l| l.starts_with("memory allocation of"))
        {
            return format!(
                "tool \"{tool}\" ran out of memory: a sandboxed call may use {} MiB ({failure})",
                limits.memory_bytes >> 20
            );
        }
        match status.signal() {
            Some(libc::SIGXCPU) => format!(
                "tool \"{tool}\" used up its CPU time: a sandboxed call may use {} s",
                limits.cpu_seconds
            ),
            Some(libc::SIGKILL) => format!(
                "tool \"{tool}\" was killed in the sandbox (SIGKILL: past its CPU time of {} s, \
                 or the system ran out of memory){said}",
                limits.cpu_seconds
            ),
            Some(signal) => format!(
                "tool \"{tool}\" was stopped by signal {signal} ({}) in the sandbox{said}",
                signal_name(signal)
            ),
            None => format!(
                "tool \"{tool}\": the sandbox's child ended ({status}) without an answer{said}"
            ),
        }
    }
}

/// The name of the threads that answer children's network requests (as
/// `/proc/PID/task/TID/comm` shows it).
pub(crate) const RELAY_THREAD: &str = "sandbox-relay";

/// Write the call's line to the child; the socket, back in blocking mode.
async fn write_call(relay: UnixStream, line: &[u8]) -> std::io::Result<UnixStream> {
    relay.set_nonblocking(true)?;
    let mut relay = tokio::net::UnixStream::from_std(relay)?;
    relay.write_all(line).await?;
    let relay = relay.into_std()?;
    relay.set_nonblocking(false)?;
    Ok(relay)
}

/// Answer the child's network requests, and count its opens for writing
/// when `files` says how many it may make, on a thread of their own, until
/// the child goes away (see [`relay`](crate::relay)).
fn serve_relay(
    relay: UnixStream,
    pid: Option<u32>,
    capabilities: agentry_core::tool::Capabilities,
    files: Option<u64>,
) {
    #[cfg(target_os = "linux")]
    {
        let quota = files.map(crate::quota::FileQuota::new);
        let child = pid.and_then(crate::relay::pidfd);
        let spawned = std::thread::Builder::new()
            .name(RELAY_THREAD.into())
            .spawn(move || crate::relay::serve(relay, child, capabilities, quota));
        // Without the thread the child's connects and writes fail: its
        // listener is never taken, and the child refuses to run the call.
        drop(spawned);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (relay, pid, capabilities, files);
}

/// A tool's own error, with what the sandbox allows added when the error
/// is a refusal, so the model knows the limit was the sandbox's.
fn explain_refusal(
    message: String,
    capabilities: &agentry_core::tool::Capabilities,
    limits: &crate::Limits,
) -> String {
    // The count of files written ran out (only a call that may write is
    // counted).
    if message.contains(QUOTA_ERROR) && !capabilities.dirs(true).is_empty() {
        return format!(
            "{message} (a sandboxed call may create, rename or open for writing {} files, each \
             of at most {})",
            limits.files_written,
            size(limits.file_bytes)
        );
    }
    // A call the child did not run says why itself.
    let refused = ["Permission denied", "Operation not permitted"]
        .iter()
        .any(|text| message.contains(text))
        && !message.contains("\" was not run: ");
    if !refused {
        return message;
    }
    let list = |dirs: Vec<std::path::PathBuf>| {
        if dirs.is_empty() {
            "nothing".to_owned()
        } else {
            dirs.iter()
                .map(|dir| dir.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let grants: Vec<String> = capabilities
        .net_grants()
        .map(|grant| grant.to_string())
        .collect();
    let network = match grants.is_empty() {
        true => "none".to_owned(),
        false => format!("TCP to {} only, no UDP", grants.join(", ")),
    };
    format!(
        "{message} (the tool runs in a sandbox: it may read {}, write {}; network: {network}; \
         it may not start programs)",
        list(capabilities.dirs(false)),
        list(capabilities.dirs(true)),
    )
}

/// How the count of files written running out reads in a tool's error.
const QUOTA_ERROR: &str = "Disk quota exceeded (os error 122)";

/// `bytes` in the largest binary unit that divides it.
fn size(bytes: u64) -> String {
    match bytes {
        0 => "0 bytes".to_owned(),
        b if b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The largest answer read from a child, in bytes: past it the child's
/// answer is refused and it is treated as one that gave none.
const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// The child's one answer line, when it sent a whole one (of at most
/// [`MAX_ANSWER_BYTES`]).
async fn read_answer(reader: impl AsyncRead + Unpin) -> Option<Response> {
    let mut line = Vec::new();
    BufReader::new(reader.take(MAX_ANSWER_BYTES))
        .read_until(b'\n', &mut line)
        .await
        .ok()?;
    if line.last() != Some(&b'\n') {
        return None; // cut off, or never ended
    }
    serde_json::from_slice(&line).ok()
}

/// The last [`STDERR_KEPT`] bytes `reader` gives, read to its end.
async fn tail(mut reader: impl AsyncRead + Unpin) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 8192];
    while let Ok(read) = reader.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        kept.extend_from_slice(&buffer[..read]);
        if kept.len() > 2 * STDERR_KEPT {
            kept.drain(..kept.len() - STDERR_KEPT);
        }
    }
    let start = kept.len().saturating_sub(STDERR_KEPT);
    String::from_utf8_lossy(&kept[start..]).into_owned()
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSYS => "SIGSYS",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}
