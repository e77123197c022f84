//! The sandbox against a tool that tries everything it should not: read
//! `/etc/passwd`, open a TCP socket, write outside its grant, start a
//! shell, allocate 10 GB, spin past its CPU time, write a file past its
//! size limit, raise its own limits, change a file's mode, limit its
//! parent, reach a Unix socket with a Net grant, write more files than a
//! call may or grow one without opening it; and does what it may
//! (read and write inside its grant, start a thread, print) normally. Each
//! outcome is checked exactly.
//!
//! A plain `main` (no test harness): the sandbox starts this binary again
//! as its child, and `main` must hand the child its tools before anything
//! else runs. Where the kernel cannot confine (no Landlock or seccomp) the
//! tests say so and pass, unless `AGENTRY_REQUIRE_SANDBOX=1`.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentry::agent::Agent;
use agentry::model::{ScriptedModel, Step, Usage};
use agentry::tool::{
    Capabilities, Capability, Tool, ToolCall, ToolContext, ToolResult, Toolbox, function,
};
use agentry_core::tool::gated_dispatch;
use agentry_sandbox::{Limits, Sandbox};
use futures_util::future::LocalBoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

#[path = "confinement/files.rs"]
mod files;
#[path = "confinement/network.rs"]
mod network;
#[path = "confinement/relay.rs"]
mod relay;
use network::{
    granted_network, mixed_grants, names_through_the_relay, network_namespace,
    no_loopback_for_any_host, no_reconnect_by_fast_open, no_udp, no_udp_bind, without_a_namespace,
};

#[derive(Deserialize)]
struct Probe {
    action: String,
    #[serde(default)]
    arg: String,
}

/// The tool: one action per attempt. `read` and `write` declare the
/// directories it is granted (the child only needs the name and handler).
fn probe(read: &Path, write: &Path) -> Tool {
    function("probe")
        .description("Try one thing.")
        .arg::<String>("action", "what to try")
        .arg::<String>("arg", "its argument")
        .capability(Capability::fs_read(read))
        .capability(Capability::fs_write(write))
        .sandboxed()
        .handler(|probe: Probe, ctx: &ToolContext| attempt(&probe.action, &probe.arg, ctx))
        .build()
        .expect("a valid tool")
        .with_name("probe")
}

/// A tool that needs TCP to one port of this machine, and the same attempts.
fn online(port: u16) -> Tool {
    networked("online", &[format!("http://127.0.0.1:{port}")])
}

/// A tool named `name` that declares the Net `grants`, and the same attempts.
fn networked(name: &str, grants: &[String]) -> Tool {
    let mut tool = function(name)
        .arg::<String>("action", "what to try")
        .arg::<String>("arg", "its argument");
    for grant in grants {
        tool = tool.capability(Capability::net(grant));
    }
    tool.sandboxed()
        .handler(|probe: Probe, ctx: &ToolContext| attempt(&probe.action, &probe.arg, ctx))
        .build()
        .expect("a valid tool")
        .with_name(name)
}

/// The tools of the network checks, as the child serves them (it needs
/// only their names and handlers).
fn network_tools() -> Vec<Tool> {
    ["elsewhere", "anywhere", "named", "fetch_and_write"]
        .into_iter()
        .map(|name| networked(name, &[]))
        .collect()
}

/// Return the contents of a file, straight from `std` (no capability handle).
#[agentry::tool(sandbox)]
fn cat(path: String) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|error| error.to_string())
}

fn attempt(action: &str, arg: &str, ctx: &ToolContext) -> Result<Value, String> {
    let text = |r: std::io::Result<()>| r.map(|()| json!("done")).map_err(|e| e.to_string());
    match action {
        "read" => std::fs::read_to_string(arg)
            .map(Value::String)
            .map_err(|e| e.to_string()),
        "read_handle" => ctx
            .fs()
            .read_to_string(arg)
            .map(Value::String)
            .map_err(|e| e.to_string()),
        "write" => text(std::fs::write(arg, "written in the sandbox")),
        "connect" => text(std::net::TcpStream::connect(arg).map(drop)),
        "connect_stdout" => {
            // connect(2) on a descriptor that is no socket (stdout).
            let address: std::net::SocketAddrV4 = arg.parse().unwrap();
            let raw = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: address.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*address.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            let length = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            // SAFETY: connect reads the address struct passed.
            match unsafe { libc::connect(1, (&raw as *const libc::sockaddr_in).cast(), length) } {
                0 => Ok(json!("connected stdout")),
                _ => Err(std::io::Error::last_os_error().to_string()),
            }
        }
        "fetch" => {
            use std::io::Read;
            let mut answer = String::new();
            std::net::TcpStream::connect(arg)
                .and_then(|mut stream| stream.read_to_string(&mut answer))
                .map(|_| json!(answer))
                .map_err(|e| e.to_string())
        }
        "fetch_by_name" => {
            use std::io::Read;
            let (host, port) = arg.rsplit_once(':').unwrap();
            let mut answer = String::new();
            agentry_sandbox::connect(ctx, host, port.parse().unwrap())
                .and_then(|mut stream| stream.read_to_string(&mut answer))
                .map(|_| json!(answer))
                .map_err(|e| e.to_string())
        }
        "udp_send" => text(
            std::net::UdpSocket::bind("0.0.0.0:0")
                .and_then(|socket| socket.send_to(b"out of the sandbox", arg))
                .map(drop),
        ),
        "udp_bind" => text(std::net::UdpSocket::bind(arg).map(drop)),
        "shell" => std::process::Command::new("/bin/sh")
            .args(["-c", "echo escaped"])
            .output()
            .map(|out| json!(String::from_utf8_lossy(&out.stdout)))
            .map_err(|e| e.to_string()),
        "allocate" => {
            let bytes: usize = arg.parse().unwrap();
            let block = std::hint::black_box(vec![1u8; bytes]);
            Ok(json!(block.len()))
        }
        "spin" => {
            let mut x = 0u64;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        "big_file" => {
            let mut file = std::fs::File::create(arg).map_err(|e| e.to_string())?;
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..8 {
                file.write_all(&chunk).map_err(|e| e.to_string())?;
            }
            Ok(json!("wrote 8 MiB"))
        }
        "env" => Ok(json!(std::env::var(arg).ok())),
        "unix" => text(std::os::unix::net::UnixStream::connect(arg).map(drop)),
        "chmod" => {
            use std::os::unix::fs::PermissionsExt;
            text(std::fs::set_permissions(
                arg,
                std::fs::Permissions::from_mode(0o777),
            ))
        }
        "raise_memory" => {
            let unlimited = libc::rlimit {
                rlim_cur: libc::RLIM_INFINITY,
                rlim_max: libc::RLIM_INFINITY,
            };
            // SAFETY: setrlimit reads the struct passed.
            match unsafe { libc::setrlimit(libc::RLIMIT_AS, &unlimited) } {
                0 => Ok(json!("raised")),
                _ => Err(std::io::Error::last_os_error().to_string()),
            }
        }
        "limit_parent" => {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: prlimit reads the struct passed; the old value is not asked for.
            let done = unsafe {
                libc::prlimit(
                    libc::getppid(),
                    libc::RLIMIT_NOFILE,
                    &none,
                    std::ptr::null_mut(),
                )
            };
            match done {
                0 => Ok(json!("limited the parent")),
                _ => Err(std::io::Error::last_os_error().to_string()),
            }
        }
        "pid" => Ok(json!(std::process::id())),
        "thread" => Ok(json!(std::thread::spawn(|| 6 * 7).join().unwrap())),
        "print" => {
            for _ in 0..1000 {
                println!("{{\"ok\": \"not an answer\"}}");
            }
            Ok(json!("printed"))
        }
        "sleep" => {
            std::thread::sleep(Duration::from_secs(30));
            Ok(json!("woke"))
        }
        "panic" => panic!("the tool gave up"),
        other => network::attempt(other, arg, ctx)
            .or_else(|| relay::attempt(other))
            .or_else(|| files::attempt(other, arg))
            .unwrap_or_else(|| Err(format!("unknown action {other}"))),
    }
}

struct World {
    inside: PathBuf,
    outside: PathBuf,
    toolbox: Toolbox,
    grants: Capabilities,
    ctx: ToolContext,
}

/// "Permission denied" from Landlock, "Operation not permitted" from seccomp.
const DENIED: &str = "Permission denied (os error 13)";
const NOT_PERMITTED: &str = "Operation not permitted (os error 1)";

impl World {
    /// The error result of `probe` when the sandbox refused with `error`.
    fn refused(&self, error: &str) -> String {
        let dir = agentry::tool::normalize_path(&self.inside);
        let dir = dir.display();
        format!(
            "tool \"probe\" failed: {error} (the tool runs in a sandbox: it may read {dir}, \
             write {dir}; network: none; it may not start programs)"
        )
    }

    async fn call(&self, action: &str, arg: &str) -> ToolResult {
        let call = ToolCall::new("c1", "probe", json!({"action": action, "arg": arg}));
        gated_dispatch(&self.toolbox, call, &self.grants, &self.ctx).await
    }
}

fn error(result: &ToolResult) -> &str {
    result
        .error_message()
        .unwrap_or_else(|| panic!("expected an error, got {result:?}"))
}

fn main() {
    agentry_sandbox::serve_if_child(|| {
        let mut tools = vec![
            probe(Path::new("/"), Path::new("/")),
            online(0),
            cat::tool(),
        ];
        tools.extend(network_tools());
        tools
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run_all());
}

async fn run_all() {
    let root = std::env::temp_dir().join(format!("agentry-sandbox-{}", std::process::id()));
    let inside = root.join("granted");
    let outside = root.join("elsewhere");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(inside.join("notes.txt"), "inside the grant").unwrap();
    std::fs::write(outside.join("secret.txt"), "not granted").unwrap();
    let limits = Limits {
        memory_bytes: 512 << 20,
        cpu_seconds: 1,
        file_bytes: files::FILE_BYTES,
        files_written: files::FILES_WRITTEN,
        open_files: 64,
    };
    let sandbox = Sandbox::new().limits(limits);
    let world = World {
        toolbox: Toolbox::for_agent([probe(&inside, &inside)]).unwrap(),
        grants: Capabilities::from([Capability::fs_read(&inside), Capability::fs_write(&inside)]),
        ctx: ToolContext::new().with_sandbox(sandbox.clone()),
        inside,
        outside,
    };

    // Can this kernel confine at all?
    // Only a kernel that lacks Landlock or seccomp skips; a failure to
    // apply them is a failure of these tests.
    let first = world.call("read", "/etc/hostname").await;
    if let Some(message) = first.error_message()
        && message.contains("it could not be confined")
    {
        if std::env::var("AGENTRY_REQUIRE_SANDBOX").as_deref() == Ok("1") {
            panic!("AGENTRY_REQUIRE_SANDBOX=1 but this kernel cannot confine tools: {message}");
        }
        eprintln!("\n*** SKIPPED: the sandbox tests need Landlock and seccomp: {message} ***\n");
        return;
    }
    // Run where no network namespace can be made (see `without_a_namespace`):
    // only that check.
    if std::env::var("AGENTRY_SANDBOX_EXPECT_NO_NETNS").as_deref() == Ok("1") {
        without_a_namespace(&sandbox).await;
        println!("test a Net call without a network namespace is refused ... ok");
        return;
    }

    let checks: Vec<(&str, LocalBoxFuture<'_, ()>)> = vec![
        (
            "reads and writes inside its grant",
            Box::pin(inside_the_grant(&world)),
        ),
        (
            "std::fs outside the grant is refused",
            Box::pin(outside_the_grant(&world)),
        ),
        (
            "no network without a Net grant",
            Box::pin(no_network(&world)),
        ),
        ("no programs, no processes", Box::pin(no_shell(&world))),
        (
            "memory, CPU and file size are limited",
            Box::pin(limits_hold(&world)),
        ),
        (
            "a call writes at most its count of files",
            Box::pin(files::files_are_counted(&world)),
        ),
        (
            "directories, links and renames count as files written",
            Box::pin(files::names_are_counted(&world)),
        ),
        (
            "reads are not counted",
            Box::pin(files::reads_are_not_counted(&world)),
        ),
        (
            "no file grows or is made without a counted open",
            Box::pin(files::no_growth_without_a_counted_open(&world)),
        ),
        (
            "a call with Net and FsWrite grants: relayed and counted",
            Box::pin(files::relayed_and_counted(&world, &sandbox)),
        ),
        (
            "no raised limits, no file modes, no other process's limits",
            Box::pin(no_escape_from_the_limits_or_the_files(&world)),
        ),
        (
            "threads, prints and panics",
            Box::pin(ordinary_code(&world)),
        ),
        (
            "env is cleared; timeouts kill the child",
            Box::pin(env_and_timeout(&world)),
        ),
        (
            "a Net grant opens TCP to its port only",
            Box::pin(granted_network(&sandbox)),
        ),
        (
            "a grant for another host does not reach 127.0.0.1 on its port",
            Box::pin(network_namespace(&sandbox)),
        ),
        (
            "a grant for every host does not reach loopback",
            Box::pin(no_loopback_for_any_host(&sandbox)),
        ),
        (
            "no UDP datagram leaves, even with a Net grant",
            Box::pin(no_udp(&sandbox)),
        ),
        ("no UDP socket is bound", Box::pin(no_udp_bind(&sandbox))),
        (
            "a host name goes through the relay's checks",
            Box::pin(names_through_the_relay(&sandbox)),
        ),
        (
            "a relayed socket is not reconnected elsewhere by TCP Fast Open",
            Box::pin(no_reconnect_by_fast_open(&sandbox)),
        ),
        (
            "a name does not reach another port of an address granted one port",
            Box::pin(mixed_grants(&sandbox)),
        ),
        (
            "the relay's threads end with their children",
            Box::pin(relay::relays_end(&sandbox)),
        ),
        (
            "#[tool(sandbox)] and refusals without a sandbox",
            Box::pin(macro_and_refusal(&sandbox)),
        ),
        (
            "an agent's call runs in the sandbox",
            Box::pin(through_an_agent(&sandbox, &world)),
        ),
        (
            "warm children serve one call each",
            Box::pin(warm_children(&world)),
        ),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, check) in checks {
        let outcome =
            futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(check)).await;
        match outcome {
            Ok(()) => {
                println!("test {name} ... ok");
                passed += 1;
            }
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    println!("\nsandbox: {passed} passed, {failed} failed");
    if failed > 0 {
        eprintln!("{failed} sandbox checks failed");
        std::process::exit(1);
    }
}

async fn inside_the_grant(world: &World) {
    let notes = world.inside.join("notes.txt");
    let read = world.call("read", notes.to_str().unwrap()).await;
    assert_eq!(read.output, json!("inside the grant"), "{read:?}");
    let handle = world.call("read_handle", "notes.txt").await;
    assert_eq!(handle.output, json!("inside the grant"), "{handle:?}");
    let new = world.inside.join("new.txt");
    let wrote = world.call("write", new.to_str().unwrap()).await;
    assert_eq!(wrote.output, json!("done"), "{wrote:?}");
    assert_eq!(
        std::fs::read_to_string(&new).unwrap(),
        "written in the sandbox"
    );
}

async fn outside_the_grant(world: &World) {
    let passwd = world.call("read", "/etc/passwd").await;
    assert_eq!(error(&passwd), world.refused(DENIED));
    let secret = world.outside.join("secret.txt");
    let secret = world.call("read", secret.to_str().unwrap()).await;
    assert_eq!(error(&secret), world.refused(DENIED));
    let target = world.outside.join("planted.txt");
    let planted = world.call("write", target.to_str().unwrap()).await;
    assert_eq!(error(&planted), world.refused(DENIED));
    assert!(!target.exists(), "nothing was written outside the grant");
}

async fn no_network(world: &World) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let connect = world.call("connect", &address).await;
    assert_eq!(error(&connect), world.refused(NOT_PERMITTED));
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "no connection arrived");
}

async fn no_shell(world: &World) {
    let shell = world.call("shell", "").await;
    assert_eq!(error(&shell), world.refused(NOT_PERMITTED));
}

async fn limits_hold(world: &World) {
    let huge = world.call("allocate", &(10usize << 30).to_string()).await;
    assert_eq!(
        error(&huge),
        "tool \"probe\" ran out of memory: a sandboxed call may use 512 MiB \
         (memory allocation of 10737418240 bytes failed)"
    );
    let small = world.call("allocate", &(16usize << 20).to_string()).await;
    assert_eq!(small.output, json!(16 << 20));
    let spin = world.call("spin", "").await;
    assert_eq!(
        error(&spin),
        "tool \"probe\" used up its CPU time: a sandboxed call may use 1 s"
    );
    let big = world.inside.join("big.bin");
    let file = world.call("big_file", big.to_str().unwrap()).await;
    assert_eq!(
        error(&file),
        "tool \"probe\" failed: File too large (os error 27)"
    );
    assert_eq!(std::fs::metadata(&big).unwrap().len(), 1 << 20);
}

async fn no_escape_from_the_limits_or_the_files(world: &World) {
    // Even as root: every capability is dropped, so no limit goes back up.
    let raised = world.call("raise_memory", "").await;
    assert_eq!(error(&raised), world.refused(NOT_PERMITTED));
    // Landlock does not cover a file's mode: seccomp refuses the call.
    let secret = world.outside.join("secret.txt");
    let before = std::fs::metadata(&secret).unwrap().permissions();
    let chmod = world.call("chmod", secret.to_str().unwrap()).await;
    assert_eq!(error(&chmod), world.refused(NOT_PERMITTED));
    assert_eq!(std::fs::metadata(&secret).unwrap().permissions(), before);
    // Other processes' limits are out of reach.
    let parent = world.call("limit_parent", "").await;
    assert_eq!(error(&parent), world.refused(NOT_PERMITTED));
}

async fn ordinary_code(world: &World) {
    assert_eq!(world.call("thread", "").await.output, json!(42));
    assert_eq!(world.call("print", "").await.output, json!("printed"));
    let panicked = world.call("panic", "").await;
    assert_eq!(
        error(&panicked),
        "tool \"probe\" panicked: the tool gave up"
    );
}

async fn env_and_timeout(world: &World) {
    // The parent's environment does not reach the child.
    assert!(std::env::var("PATH").is_ok());
    assert_eq!(world.call("env", "PATH").await.output, Value::Null);
    let slow = Toolbox::for_agent([
        probe(&world.inside, &world.inside).with_timeout(Duration::from_millis(500))
    ])
    .unwrap();
    let call = ToolCall::new("c2", "probe", json!({"action": "sleep", "arg": ""}));
    let started = std::time::Instant::now();
    let result = gated_dispatch(&slow, call, &world.grants, &world.ctx).await;
    assert_eq!(error(&result), "tool \"probe\" timed out after 500ms");
    assert!(started.elapsed() < Duration::from_secs(10));
}

async fn macro_and_refusal(sandbox: &Sandbox) {
    assert!(cat::tool().hints.sandbox);
    let toolbox = Toolbox::for_agent([cat::tool()]).unwrap();
    let call = ToolCall::new("m", cat::NAME, json!({"path": "/etc/hostname"}));
    let unconfigured = toolbox.dispatch(call.clone()).await;
    assert_eq!(
        error(&unconfigured),
        format!(
            "tool \"{}\" runs only in a sandbox, and none is configured \
             (give the agent or context one: agentry::sandbox::Sandbox)",
            cat::NAME
        )
    );
    let ctx = ToolContext::new().with_sandbox(sandbox.clone());
    let denied = toolbox.dispatch_with(call, &ctx).await;
    assert_eq!(
        error(&denied),
        format!(
            "tool \"{}\" failed: {DENIED} (the tool runs in a sandbox: it may read nothing, \
             write nothing; network: none; it may not start programs)",
            cat::NAME
        )
    );
    // A tool the child was not given.
    let stranger = Toolbox::for_agent([Tool {
        name: "stranger".into(),
        ..cat::tool()
    }])
    .unwrap();
    let unknown = stranger
        .dispatch_with(ToolCall::new("s", "stranger", json!({"path": "/"})), &ctx)
        .await;
    assert_eq!(
        error(&unknown),
        "tool \"stranger\" is not among the tools this program's sandbox child serves \
         (pass it to agentry_sandbox::serve_if_child at the start of main)"
    );
}

async fn through_an_agent(sandbox: &Sandbox, world: &World) {
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new(
                "a1",
                "probe",
                json!({"action": "read", "arg": "/etc/passwd"}),
            )],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: "could not read it".into(),
            tokens: Usage::new(10, 5),
        });
    let agent = Agent::builder(model)
        .tool(probe(&world.inside, &world.inside))
        .grant(Capability::fs_read(&world.inside))
        .grant(Capability::fs_write(&world.inside))
        .sandbox(sandbox.clone())
        .build()
        .unwrap();
    let run = agent.run("read the password file").await;
    assert_eq!(run.text(), "could not read it");
    let record = run.calls().next().expect("one call");
    assert_eq!(error(&record.result), world.refused(DENIED));
}

async fn warm_children(world: &World) {
    let warm = Sandbox::new().warm(1);
    warm.prewarm();
    let ctx = ToolContext::new().with_sandbox(warm);
    let notes = world.inside.join("notes.txt");
    for _ in 0..3 {
        let call = ToolCall::new("w", "probe", json!({"action": "read", "arg": notes}));
        let result = gated_dispatch(&world.toolbox, call, &world.grants, &ctx).await;
        assert_eq!(result.output, json!("inside the grant"), "{result:?}");
    }
    // Each call gets a child of its own: none is used twice.
    let mut pids = std::collections::HashSet::new();
    for _ in 0..3 {
        let call = ToolCall::new("p", "probe", json!({"action": "pid", "arg": ""}));
        let result = gated_dispatch(&world.toolbox, call, &world.grants, &ctx).await;
        assert!(pids.insert(result.output.as_u64().unwrap()), "{result:?}");
    }
    assert!(!pids.contains(&(std::process::id() as u64)));
    // A fresh child: one confined for the grant cannot be
    // reused for another.
    let passwd = ToolCall::new(
        "w",
        "probe",
        json!({"action": "read", "arg": "/etc/passwd"}),
    );
    let result = gated_dispatch(&world.toolbox, passwd, &world.grants, &ctx).await;
    assert_eq!(error(&result), world.refused(DENIED));
}
