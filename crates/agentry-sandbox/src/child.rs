//! The child's side: [`serve_if_child`] at the start of `main` turns a
//! process started by a [`Sandbox`](crate::Sandbox) into a confined runner
//! of one call, and leaves any other process alone.

use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

use agentry_core::tool::{Tool, ToolCall, ToolContext, Toolbox};

use crate::confine::{Enforcement, confine};
use crate::isolate;
use crate::protocol::{CHILD_ENV, Request, Response};

/// When this process is a sandbox's child, run the one call it is sent, in
/// confinement, and exit; otherwise return at once.
///
/// Call it first thing in a plain (not `#[tokio::main]`) `main`, before any
/// thread or runtime starts: confinement binds the thread that applies it
/// and the threads it starts later, so the child refuses to run a call
/// while it has other threads. `tools` makes the tools the child may be
/// asked to run; only their names and handlers are used (the parent has
/// already checked the input, and sends the capabilities the call gets).
///
/// ```no_run
/// /// Count the lines of a file under the granted directory.
/// #[agentry::tool(sandbox, fs_read = "/srv/data")]
/// fn count_lines(path: String) -> Result<usize, String> {
///     let text = std::fs::read_to_string(std::path::Path::new("/srv/data").join(path))
///         .map_err(|e| e.to_string())?;
///     Ok(text.lines().count())
/// }
///
/// fn main() {
///     agentry_sandbox::serve_if_child(|| vec![count_lines::tool()]);
///     // … build the runtime and the agent, with `.sandbox(Sandbox::new())`.
/// }
/// ```
pub fn serve_if_child<F>(tools: F)
where
    F: FnOnce() -> Vec<Tool>,
{
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    // Answers go to a private copy of stdout; stdout itself then joins
    // stderr, so whatever the tool prints cannot be read as an answer.
    // SAFETY: dup and dup2 on the standard descriptors this process owns.
    let answers = unsafe {
        let copy = libc::dup(1);
        if copy < 0 || libc::dup2(2, 1) < 0 {
            std::process::exit(2);
        }
        // Descriptors the parent left open without close-on-exec (a
        // listening socket, a terminal) do not reach the tool.
        close_from(3, copy);
        File::from_raw_fd(copy)
    };
    let Some(response) = serve(tools) else {
        // The parent went away before sending a call.
        std::process::exit(0);
    };
    let mut answers = answers;
    let mut line = serde_json::to_vec(&response).unwrap_or_else(|error| {
        serde_json::to_vec(&Response::Error(format!(
            "the tool's output could not be sent back: {error}"
        )))
        .expect("a string serialises")
    });
    line.push(b'\n');
    let code = match answers.write_all(&line).and_then(|()| answers.flush()) {
        Ok(()) => 0,
        Err(_) => 3,
    };
    std::process::exit(code);
}

/// Close every descriptor from `first` up but `keep`.
///
/// # Safety
/// Nothing in this process may use the descriptors closed.
unsafe fn close_from(first: libc::c_int, keep: libc::c_int) {
    #[cfg(target_os = "linux")]
    // SAFETY: close_range only closes descriptors (the caller owns them all).
    unsafe {
        if keep > first {
            libc::syscall(libc::SYS_close_range, first, keep - 1, 0);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (first, keep);
}

/// Get ready, wait for the call, confine, run it. `None` when stdin closes
/// before a call arrives.
fn serve<F: FnOnce() -> Vec<Tool>>(tools: F) -> Option<Response> {
    let ready = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|error| format!("the sandbox's child could not start a runtime: {error}"))
        .and_then(|runtime| {
            Toolbox::for_agent(tools())
                .map(|toolbox| (runtime, toolbox))
                .map_err(|error| format!("the sandbox's child could not list its tools: {error}"))
        });
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => return None,
        Ok(_) => {}
    }
    keep_relay();
    let (runtime, toolbox) = match ready {
        Ok(ready) => ready,
        Err(message) => return Some(Response::Error(message)),
    };
    let request: Request = match serde_json::from_str(&line) {
        Ok(request) => request,
        Err(error) => {
            return Some(Response::Error(format!(
                "the sandbox's child could not read its call: {error}"
            )));
        }
    };
    Some(run(&runtime, &toolbox, request))
}

fn run(runtime: &tokio::runtime::Runtime, toolbox: &Toolbox, request: Request) -> Response {
    let name = request.tool.clone();
    if toolbox.find_for_call(&name).is_none() {
        return Response::Error(format!(
            "tool \"{name}\" is not among the tools this program's sandbox child serves \
             (pass it to agentry_sandbox::serve_if_child at the start of main)"
        ));
    }
    match thread_count() {
        Some(1) => {}
        Some(threads) => {
            return Response::Error(format!(
                "tool \"{name}\" was not run: the sandbox's child has {threads} threads, and \
                 confinement binds only the one applying it (call serve_if_child before \
                 starting any thread or runtime)"
            ));
        }
        None => {
            return Response::Error(format!(
                "tool \"{name}\" was not run: the sandbox's child could not count its threads \
                 (/proc/self/stat), so it cannot tell that confinement binds them all"
            ));
        }
    }
    // A Net grant: a network namespace of its own, made while the child
    // still holds the privilege to (the limits drop every capability).
    let networked = request.capabilities.net_grants().next().is_some();
    let no_network = match networked {
        true => isolate::own_network().err(),
        false => None,
    };
    for (key, value) in &request.env {
        // SAFETY: the process has one thread (checked above).
        unsafe { std::env::set_var(key, value) };
    }
    let _ = std::env::set_current_dir(&request.working_dir);
    // What the kernel lacks may be accepted (allow_unconfined); a failure
    // to apply what it has never is.
    let enforcement = match confine(&request.capabilities, &request.limits) {
        Ok(enforcement) => enforcement,
        Err(error) => {
            return Response::Error(format!(
                "tool \"{name}\" was not run: the sandbox could not confine it: {error}"
            ));
        }
    };
    // Its connects, and its opens for writing, go to the parent, wherever
    // seccomp is in force.
    let notified = isolate::Notified {
        connects: networked,
        writes: !request.capabilities.dirs(true).is_empty(),
    };
    if (notified.connects || notified.writes)
        && enforcement != Enforcement::None
        && let Err(error) = relay_notifications(notified)
    {
        return Response::Error(format!(
            "tool \"{name}\" was not run: the sandbox could not confine it: {error}"
        ));
    }
    let lacking = match enforcement {
        Enforcement::Full => no_network,
        Enforcement::Partial => Some(
            "this kernel's Landlock is older than the rules need (Linux 6.12): \
             some are not enforced"
                .to_owned(),
        ),
        Enforcement::None => Some("this kernel has no Landlock or seccomp".to_owned()),
    };
    if let Some(reason) = lacking
        && !request.allow_unconfined
    {
        return Response::Error(format!(
            "tool \"{name}\" was not run: it could not be confined ({reason}); \
             Sandbox::allow_unconfined(true) runs such calls anyway"
        ));
    }
    let mut ctx = ToolContext::new()
        .with_capabilities(request.capabilities)
        .with_extras(request.extras)
        .inside_sandbox();
    if let Some(session) = request.session {
        ctx = ctx.with_session(session);
    }
    if let Some(sender) = request.sender {
        ctx = ctx.with_sender(sender);
    }
    let call = ToolCall::new("sandboxed", name, request.input);
    let result = runtime.block_on(toolbox.dispatch_with(call, &ctx));
    match result.error_message() {
        Some(message) => Response::Error(message.to_owned()),
        None => Response::Ok(result.output),
    }
}

/// Keep stdin, the relay socket, for the call's network requests (see
/// [`net::connect`](crate::net::connect)), and give the tool `/dev/null` as
/// its stdin instead.
fn keep_relay() {
    // SAFETY: fcntl duplicates a descriptor this process owns; open and
    // dup2 put /dev/null in the place of stdin, which nothing else reads
    // any more (the call's line has been read).
    unsafe {
        let relay = libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3);
        if relay >= 0 {
            crate::net::set_relay(OwnedFd::from_raw_fd(relay));
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::close(null);
        }
    }
}

/// Hand this process's connects or opens for writing (`notified`) to the
/// parent over the relay.
fn relay_notifications(notified: isolate::Notified) -> Result<(), String> {
    let relay = crate::net::relay().ok_or("the sandbox's relay is missing")?;
    let relay = relay
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    isolate::relay_notifications(relay.as_fd(), notified)
}

/// How many threads this process has (from `/proc/self/stat`); `None`
/// where that cannot be read (on Linux), one elsewhere.
fn thread_count() -> Option<usize> {
    if !cfg!(target_os = "linux") {
        return Some(1);
    }
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 20, counted after the command name's closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(17)?.parse().ok()
}
