//! The checks of what a call leaves on disk: each file is capped by the
//! file-size limit, and the files a call may create or open for writing
//! (and the names it makes or renames) are counted (by the parent, answering a seccomp notification for each),
//! so the total is at most `files_written × file_bytes`. What could grow a
//! file or make one without such an open is refused: `openat2` (its flags
//! lie in memory), a path's `truncate`, `fallocate` past the end of a file
//! (or the ioctl that reserves space), a rename that leaves a whiteout.

use std::os::unix::ffi::OsStrExt;

use super::*;

/// The files a call of the checks may write, and the size of each.
pub(super) const FILES_WRITTEN: u64 = 8;
pub(super) const FILE_BYTES: u64 = 1 << 20;

/// More than the call may write: the loops stop here on code that does not count.
const TRIES: u64 = FILES_WRITTEN + 4;

/// The tool's actions on files, by name; `None` for another action.
pub(super) fn attempt(action: &str, arg: &str) -> Option<Result<Value, String>> {
    let text = |r: std::io::Result<()>| r.map(|()| json!("done")).map_err(|e| e.to_string());
    let dir = Path::new(arg);
    Some(match action {
        // Files of FILE_BYTES each, until one fails.
        "fill" => (0..TRIES)
            .try_for_each(|i| {
                std::fs::write(
                    dir.join(format!("fill-{i}")),
                    vec![b'x'; FILE_BYTES as usize],
                )
                .map_err(|e| format!("file {i}: {e}"))
            })
            .map(|()| json!(format!("wrote {TRIES} files"))),
        // Directories, symbolic links, hard links and renames (of the
        // last link), until one fails.
        "names" => (0..TRIES)
            .try_for_each(|i| {
                let name = dir.join(format!("name-{i}"));
                match i % 4 {
                    0 => std::fs::create_dir(&name),
                    1 => std::os::unix::fs::symlink("notes.txt", &name),
                    2 => std::fs::hard_link(dir.join("notes.txt"), &name),
                    _ => std::fs::rename(dir.join(format!("name-{}", i - 1)), &name),
                }
                .map_err(|e| format!("name {i}: {e}"))
            })
            .map(|()| json!(format!("made {TRIES} names"))),
        // Fetch from the address before the space, then fill the directory after it.
        "fetch_and_fill" => {
            use std::io::Read;
            let (address, dir) = arg.split_once(' ').unwrap();
            let mut answer = String::new();
            std::net::TcpStream::connect(address)
                .and_then(|mut stream| stream.read_to_string(&mut answer))
                .map_err(|e| e.to_string())
                .and_then(|_| match attempt("fill", dir) {
                    Some(Err(error)) => Err(format!("after {answer:?}: {error}")),
                    other => other.unwrap(),
                })
        }
        // Read the same file many times, then write one: reads cost nothing.
        "read_then_write" => (0..2 * TRIES)
            .try_for_each(|_| std::fs::read(dir.join("notes.txt")).map(drop))
            .and_then(|()| std::fs::write(dir.join("after-reads.txt"), "one file"))
            .map(|()| json!("done"))
            .map_err(|e| e.to_string()),
        // A path's truncate, to four times the file-size limit... of which
        // the kernel would allow up to the limit.
        "truncate" => text(path_call(arg, |path| {
            // SAFETY: truncate reads the path passed.
            unsafe { libc::truncate(path.as_ptr(), FILE_BYTES as libc::off_t) }
        })),
        // openat2 for writing: its flags are in memory, out of a filter's reach.
        "openat2" => text(path_call(arg, |path| {
            let how = OpenHow {
                flags: (libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC) as u64,
                mode: 0o600,
                resolve: 0,
            };
            // SAFETY: openat2 reads the path and the struct passed; the
            // descriptor it may return is closed below.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    &how,
                    size_of::<OpenHow>(),
                )
            };
            if fd >= 0 {
                // SAFETY: the descriptor is ours.
                unsafe { libc::close(fd as i32) };
            }
            fd as i32
        })),
        // Blocks past the end of a file, which the file-size limit does not see.
        "fallocate_beyond" => std::fs::File::create(arg)
            .and_then(|file| {
                use std::os::fd::AsRawFd;
                let length = (4 * FILE_BYTES) as libc::off_t;
                // SAFETY: fallocate on a descriptor we own.
                match unsafe {
                    libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, length)
                } {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            })
            .map(|()| json!("done"))
            .map_err(|e| e.to_string()),
        // The same through the ioctl that reserves space (FS_IOC_RESVSP64).
        "reserve_beyond" => std::fs::File::create(arg)
            .and_then(|file| {
                use std::os::fd::AsRawFd;
                let reservation = SpaceReservation {
                    kind: 0,
                    whence: 0,
                    start: 0,
                    length: (4 * FILE_BYTES) as i64,
                    system: 0,
                    pid: 0,
                    pad: [0; 4],
                };
                // SAFETY: the ioctl reads the struct passed, on a descriptor we own.
                match unsafe { libc::ioctl(file.as_raw_fd(), RESERVE_SPACE, &reservation) } {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            })
            .map(|()| json!("done"))
            .map_err(|e| e.to_string()),
        // A rename that leaves a whiteout (a new name) behind.
        "whiteout" => text(path_call(arg, |path| {
            let moved = std::ffi::CString::new(format!("{arg}.moved")).unwrap();
            // SAFETY: renameat2 reads the two paths passed.
            unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    path.as_ptr(),
                    libc::AT_FDCWD,
                    moved.as_ptr(),
                    libc::RENAME_WHITEOUT,
                ) as i32
            }
        })),
        _ => return None,
    })
}

/// `struct space_resv` of the space-reservation ioctls.
#[repr(C)]
struct SpaceReservation {
    kind: i16,
    whence: i16,
    start: i64,
    length: i64,
    system: i32,
    pid: u32,
    pad: [i32; 4],
}

/// `FS_IOC_RESVSP64`: `_IOW('X', 42, struct space_resv)`.
const RESERVE_SPACE: libc::Ioctl = 0x4030_582a;

/// `struct open_how` of openat2(2).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Call `call` with `path` as a C string; its -1 as the OS error.
fn path_call(path: &str, call: impl FnOnce(&std::ffi::CStr) -> i32) -> std::io::Result<()> {
    let path = std::ffi::CString::new(Path::new(path).as_os_str().as_bytes()).unwrap();
    match call(&path) {
        -1 => Err(std::io::Error::last_os_error()),
        _ => Ok(()),
    }
}

/// A fresh directory under the grant, with `notes.txt` in it.
fn fresh_dir(world: &World, name: &str) -> PathBuf {
    let dir = world.inside.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "inside the grant").unwrap();
    dir
}

/// The error result of `probe` when the call used up its files.
fn quota_spent(what: &str) -> String {
    format!(
        "tool \"probe\" failed: {what}: Disk quota exceeded (os error 122) (a sandboxed call \
         may create, rename or open for writing {FILES_WRITTEN} files, each of at most 1 MiB)"
    )
}

/// The bytes the regular files directly in `dir` hold, and their names.
fn files_in(dir: &Path) -> (u64, Vec<String>) {
    let mut names = Vec::new();
    let mut bytes = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let metadata = std::fs::symlink_metadata(entry.path()).unwrap();
        if metadata.is_file() {
            bytes += metadata.len();
        }
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    (bytes, names)
}

pub(super) async fn files_are_counted(world: &World) {
    let dir = fresh_dir(world, "fill");
    let fill = world.call("fill", dir.to_str().unwrap()).await;
    assert_eq!(error(&fill), quota_spent(&format!("file {FILES_WRITTEN}")));
    let (bytes, names) = files_in(&dir);
    assert_eq!(
        bytes,
        std::fs::metadata(dir.join("notes.txt")).unwrap().len() + FILES_WRITTEN * FILE_BYTES
    );
    let mut expected: Vec<String> = (0..FILES_WRITTEN).map(|i| format!("fill-{i}")).collect();
    expected.push("notes.txt".into());
    expected.sort();
    assert_eq!(names, expected, "the ninth file was not even created");
    // Each call counts for itself: the next one writes again.
    let again = world
        .call("write", dir.join("again.txt").to_str().unwrap())
        .await;
    assert_eq!(again.output, json!("done"), "{again:?}");
}

pub(super) async fn names_are_counted(world: &World) {
    let dir = fresh_dir(world, "names");
    let names = world.call("names", dir.to_str().unwrap()).await;
    assert_eq!(error(&names), quota_spent(&format!("name {FILES_WRITTEN}")));
    // name-2 and name-6 were renamed to name-3 and name-7; the ninth
    // (a directory) was not made.
    let (_, made) = files_in(&dir);
    let expected = [
        "name-0",
        "name-1",
        "name-3",
        "name-4",
        "name-5",
        "name-7",
        "notes.txt",
    ];
    assert_eq!(made, expected);
}

pub(super) async fn reads_are_not_counted(world: &World) {
    let dir = fresh_dir(world, "reads");
    let result = world.call("read_then_write", dir.to_str().unwrap()).await;
    assert_eq!(result.output, json!("done"), "{result:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("after-reads.txt")).unwrap(),
        "one file"
    );
}

pub(super) async fn no_growth_without_a_counted_open(world: &World) {
    let dir = fresh_dir(world, "growth");
    // A path's truncate would make a file up to the limit without opening it.
    let notes = dir.join("notes.txt");
    let truncate = world.call("truncate", notes.to_str().unwrap()).await;
    assert_eq!(error(&truncate), world.refused(NOT_PERMITTED));
    assert_eq!(
        std::fs::metadata(&notes).unwrap().len(),
        "inside the grant".len() as u64
    );
    // openat2 is "not implemented": libc falls back to openat, which counts.
    let opened = dir.join("openat2.txt");
    let openat2 = world.call("openat2", opened.to_str().unwrap()).await;
    assert_eq!(
        error(&openat2),
        "tool \"probe\" failed: Function not implemented (os error 38)"
    );
    assert!(!opened.exists(), "openat2 created nothing");
    // Blocks past the end of a file: the file-size limit does not see them.
    let beyond = dir.join("beyond.bin");
    let fallocate = world
        .call("fallocate_beyond", beyond.to_str().unwrap())
        .await;
    assert_eq!(
        error(&fallocate),
        "tool \"probe\" failed: Operation not supported (os error 95)"
    );
    let metadata = std::fs::metadata(&beyond).unwrap();
    assert_eq!(
        (
            metadata.len(),
            std::os::unix::fs::MetadataExt::blocks(&metadata)
        ),
        (0, 0)
    );
    // The same through the ioctl that reserves space.
    let reserved = dir.join("reserved.bin");
    let reserve = world
        .call("reserve_beyond", reserved.to_str().unwrap())
        .await;
    assert_eq!(
        error(&reserve),
        "tool \"probe\" failed: Operation not supported (os error 95)"
    );
    let metadata = std::fs::metadata(&reserved).unwrap();
    assert_eq!(
        (
            metadata.len(),
            std::os::unix::fs::MetadataExt::blocks(&metadata)
        ),
        (0, 0)
    );
    // A whiteout is a name made without counting.
    let whiteout = world.call("whiteout", notes.to_str().unwrap()).await;
    assert_eq!(error(&whiteout), world.refused(NOT_PERMITTED));
    assert!(notes.exists() && !dir.join("notes.txt.moved").exists());
}

pub(super) async fn relayed_and_counted(world: &World, sandbox: &Sandbox) {
    // One filter, one listener: the parent answers the connect and counts
    // the opens.
    let port = network::greeter("hello to a writer");
    let grant = format!("http://127.0.0.1:{port}");
    let dir = fresh_dir(world, "both");
    let tool = function("fetch_and_write")
        .arg::<String>("action", "what to try")
        .arg::<String>("arg", "its argument")
        .capability(Capability::net(&grant))
        .capability(Capability::fs_write(&dir))
        .sandboxed()
        .handler(|probe: Probe, ctx: &ToolContext| super::attempt(&probe.action, &probe.arg, ctx))
        .build()
        .unwrap()
        .with_name("fetch_and_write");
    let toolbox = Toolbox::for_agent([tool]).unwrap();
    let grants = Capabilities::from([Capability::net(&grant), Capability::fs_write(&dir)]);
    let ctx = ToolContext::new().with_sandbox(sandbox.clone());
    let arg = format!("127.0.0.1:{port} {}", dir.display());
    let call = ToolCall::new(
        "b",
        "fetch_and_write",
        json!({"action": "fetch_and_fill", "arg": arg}),
    );
    let result = gated_dispatch(&toolbox, call, &grants, &ctx).await;
    let spent = quota_spent(&format!(
        "after \"hello to a writer\": file {FILES_WRITTEN}"
    ));
    assert_eq!(
        error(&result),
        spent.replace("\"probe\"", "\"fetch_and_write\"")
    );
    let (bytes, _) = files_in(&dir);
    let notes = "inside the grant".len() as u64;
    assert_eq!(bytes, notes + FILES_WRITTEN * FILE_BYTES);
}
