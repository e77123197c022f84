//! What a sandboxed call costs: one tool call that reads a small file
//! inside its grant, dispatched in this process (no sandbox), in a cold
//! child (started for the call), in a warm child (started ahead of it),
//! in a warm child that fetches the note over TCP from a listener on
//! 127.0.0.1 granted by address (a `Net` grant: the call gets its own
//! network namespace and its connect goes through the relay), in a warm
//! child that writes one file inside an `FsWrite` grant (its open for
//! writing is counted by the parent), the time one open for writing takes
//! inside such a call (30 opens a call, timed by the tool), and, as the
//! peer, in a child started under bubblewrap (`bwrap` with
//! every namespace unshared) that runs the same handler.
//!
//! ```text
//! cargo bench -p agentry-sandbox --bench call_latency -- [CALLS]
//! ```
//!
//! Prints p50, p95 and mean wall time per call for each way, all in one
//! run; each call comes 20 ms after the last, as an agent's calls come a
//! model step apart. A plain `main`: the sandbox starts this binary again as its child.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentry_core::tool::gated_dispatch;
use agentry_core::tool::{
    Capabilities, Capability, Tool, ToolCall, ToolContext, Toolbox, function,
};
use agentry_sandbox::Sandbox;
use serde::Deserialize;
use serde_json::json;

/// Marks a child started by bubblewrap: run the handler once and print.
const BWRAP_CHILD: &str = "AGENTRY_BENCH_BWRAP_CHILD";

/// The pause before each timed call.
const PAUSE: Duration = Duration::from_millis(20);

#[derive(Deserialize)]
struct Read {
    path: String,
}

fn read_note(dir: &Path) -> Tool {
    function("read_note")
        .description("Read a note.")
        .arg::<String>("path", "the note's path")
        .capability(Capability::fs_read(dir))
        .sandboxed()
        .handler(|read: Read| std::fs::read_to_string(read.path).map_err(|e| e.to_string()))
        .build()
        .expect("a valid tool")
        .with_name("read_note")
}

/// Write a short note to a file under `dir` (granted for writing).
fn write_note(dir: &Path) -> Tool {
    function("write_note")
        .description("Write a note.")
        .arg::<String>("path", "the note's path")
        .capability(Capability::fs_write(dir))
        .sandboxed()
        .handler(|write: Read| {
            std::fs::write(write.path, "a short note")
                .map(|()| "a short note".to_owned())
                .map_err(|e| e.to_string())
        })
        .build()
        .expect("a valid tool")
        .with_name("write_note")
}

/// How many files [`open_many`] opens for writing in a call.
const OPENS: u32 = 30;

/// Open [`OPENS`] files under `dir` for writing (granted); the time each
/// open took on average, in nanoseconds, timed inside the call.
fn open_many(dir: &Path) -> Tool {
    function("open_many")
        .description("Open files for writing.")
        .arg::<String>("path", "the directory")
        .capability(Capability::fs_write(dir))
        .sandboxed()
        .handler(|open: Read| {
            let dir = PathBuf::from(open.path);
            let started = Instant::now();
            for i in 0..OPENS {
                std::fs::File::create(dir.join(format!("many-{i}"))).map_err(|e| e.to_string())?;
            }
            Ok::<_, String>(started.elapsed().as_nanos() as u64 / u64::from(OPENS))
        })
        .build()
        .expect("a valid tool")
        .with_name("open_many")
}

#[derive(Deserialize)]
struct Fetch {
    address: String,
}

/// Read the note from a TCP listener at `address` (granted by address).
fn fetch_note(port: u16) -> Tool {
    function("fetch_note")
        .description("Fetch a note.")
        .arg::<String>("address", "host:port of the note server")
        .capability(Capability::net(format!("http://127.0.0.1:{port}")))
        .sandboxed()
        .handler(|fetch: Fetch| {
            use std::io::Read;
            let mut text = String::new();
            std::net::TcpStream::connect(&fetch.address)
                .and_then(|mut stream| stream.read_to_string(&mut text))
                .map(|_| text)
                .map_err(|e| e.to_string())
        })
        .build()
        .expect("a valid tool")
        .with_name("fetch_note")
}

/// A listener on 127.0.0.1 that answers every connection with the note.
fn note_server() -> u16 {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(b"a short note");
        }
    });
    port
}

fn main() {
    agentry_sandbox::serve_if_child(|| {
        vec![
            read_note(Path::new("/")),
            fetch_note(0),
            write_note(Path::new("/")),
            open_many(Path::new("/")),
        ]
    });
    if let Some(path) = std::env::var_os(BWRAP_CHILD) {
        let text = std::fs::read_to_string(path).expect("the note");
        println!("{}", json!(text));
        return;
    }
    let calls: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(200);
    let dir = std::env::temp_dir().join(format!("agentry-sandbox-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let note = dir.join("note.txt");
    std::fs::write(&note, "a short note").unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("{calls} calls each; wall time per call (ms)");
    println!("{:<44} {:>8} {:>8} {:>8}", "way", "p50", "p95", "mean");
    runtime.block_on(async {
        let grants = Capabilities::from([Capability::fs_read(&dir)]);
        let toolbox = Toolbox::for_agent([read_note(&dir)]).unwrap();
        let plain = Toolbox::for_agent([Tool {
            hints: Default::default(),
            ..read_note(&dir)
        }])
        .unwrap();
        let call = ToolCall::new("b", "read_note", json!({"path": note}));
        let time = |toolbox: Toolbox, ctx: ToolContext| {
            let (call, grants) = (call.clone(), grants.clone());
            async move {
                let mut times = Vec::with_capacity(calls);
                for _ in 0..calls {
                    // An agent's calls come a model step apart: leave the
                    // pool time to refill, outside the timing.
                    tokio::time::sleep(PAUSE).await;
                    let started = Instant::now();
                    let result = gated_dispatch(&toolbox, call.clone(), &grants, &ctx).await;
                    times.push(started.elapsed());
                    assert_eq!(result.output, json!("a short note"), "{result:?}");
                }
                times
            }
        };
        report(
            "in process, no sandbox",
            time(plain, ToolContext::new()).await,
        );
        let cold = ToolContext::new().with_sandbox(Sandbox::new());
        report(
            "agentry sandbox, cold child",
            time(toolbox.clone(), cold).await,
        );
        let warm = Sandbox::new().warm(2);
        warm.prewarm();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let warm = ToolContext::new().with_sandbox(warm);
        report(
            "agentry sandbox, warm child (2 kept)",
            time(toolbox, warm.clone()).await,
        );
        let written = dir.join("written.txt");
        let write = ToolCall::new("w", "write_note", json!({"path": written}));
        let write_grants = Capabilities::from([Capability::fs_write(&dir)]);
        let writer = Toolbox::for_agent([write_note(&dir)]).unwrap();
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            tokio::time::sleep(PAUSE).await;
            let started = Instant::now();
            let result = gated_dispatch(&writer, write.clone(), &write_grants, &warm).await;
            times.push(started.elapsed());
            assert_eq!(result.output, json!("a short note"), "{result:?}");
        }
        report("agentry sandbox, warm child, writes one file", times);
        let opener = Toolbox::for_agent([open_many(&dir)]).unwrap();
        let open = ToolCall::new("o", "open_many", json!({"path": dir}));
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            tokio::time::sleep(PAUSE).await;
            let result = gated_dispatch(&opener, open.clone(), &write_grants, &warm).await;
            let nanos = result
                .output
                .as_u64()
                .unwrap_or_else(|| panic!("{result:?}"));
            times.push(Duration::from_nanos(nanos));
        }
        report("one open for writing, inside such a call", times);
        let port = note_server();
        let address = format!("127.0.0.1:{port}");
        let fetch = ToolCall::new("f", "fetch_note", json!({"address": address}));
        let net_grants = Capabilities::from([Capability::net(format!("http://127.0.0.1:{port}"))]);
        let online = Toolbox::for_agent([fetch_note(port)]).unwrap();
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            tokio::time::sleep(PAUSE).await;
            let started = Instant::now();
            let result = gated_dispatch(&online, fetch.clone(), &net_grants, &warm).await;
            times.push(started.elapsed());
            assert_eq!(result.output, json!("a short note"), "{result:?}");
        }
        report("agentry sandbox, warm child, TCP by Net grant", times);
    });
    match bubblewrap(&note, calls) {
        Ok(times) => report("peer: bubblewrap child (bwrap --unshare-all)", times),
        Err(why) => println!("peer: bubblewrap not measured: {why}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Start this binary under bubblewrap `calls` times, each reading the note.
fn bubblewrap(note: &Path, calls: usize) -> Result<Vec<Duration>, String> {
    let program = std::env::current_exe().map_err(|e| e.to_string())?;
    let bwrap = PathBuf::from("/usr/bin/bwrap");
    if !bwrap.exists() {
        return Err("/usr/bin/bwrap is not installed (apt-get install bubblewrap)".into());
    }
    let dir = note.parent().expect("a directory");
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        std::thread::sleep(PAUSE);
        let started = Instant::now();
        let output = Command::new(&bwrap)
            .args(["--ro-bind", "/usr", "/usr", "--ro-bind", "/lib", "/lib"])
            .args(["--ro-bind-try", "/lib64", "/lib64"])
            .arg("--ro-bind")
            .args([&program, &program])
            .arg("--ro-bind")
            .args([dir, dir])
            .args(["--dev", "/dev", "--proc", "/proc", "--unshare-all"])
            .args(["--die-with-parent", "--new-session", "--clearenv"])
            .arg("--setenv")
            .arg(BWRAP_CHILD)
            .arg(note)
            .arg(&program)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| e.to_string())?;
        times.push(started.elapsed());
        if !output.status.success() {
            return Err(format!("bwrap failed: {}", output.status));
        }
        let text: String = serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
        assert_eq!(text, "a short note");
    }
    Ok(times)
}

fn report(way: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(times[((times.len() as f64 * q) as usize).min(times.len() - 1)]);
    let mean = times.iter().map(|d| ms(*d)).sum::<f64>() / times.len() as f64;
    println!("{way:<44} {:>8.3} {:>8.3} {:>8.3}", at(0.5), at(0.95), mean);
}
