//! The network checks: a call with a `Net` grant reaches only what its
//! grants name, by TCP, through the sandbox's relay; no UDP; names are
//! checked after DNS; a relayed socket stays where the relay connected
//! it; the relay's threads end with their children, whatever the tool
//! sends them.

use std::net::TcpStream;
use std::os::fd::AsRawFd;

use super::*;

/// The network actions of the tool, by name; `None` for another action.
pub(super) fn attempt(action: &str, arg: &str, ctx: &ToolContext) -> Option<Result<Value, String>> {
    let ports: Vec<u16> = arg.split(',').filter_map(|p| p.parse().ok()).collect();
    Some(match action {
        "fast_open" => fast_open(ports[0], ports[1], arg.ends_with("sendmsg")),
        "fast_open_connect" => fast_open_connect(ports[0]),
        "reconnect" => TcpStream::connect(("127.0.0.1", ports[0]))
            .map_err(|e| e.to_string())
            .and_then(|stream| reconnect(&stream, ports[1])),
        "reconnect_by_name" => agentry_sandbox::connect(ctx, "127.0.0.1", ports[0])
            .map_err(|e| e.to_string())
            .and_then(|stream| reconnect(&stream, ports[1])),
        _ => return None,
    })
}

/// A relayed socket to `port`, set to connect on its first send
/// (`TCP_FASTOPEN_CONNECT`).
fn fast_open_connect(port: u16) -> Result<Value, String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads the int passed.
    let set = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN_CONNECT,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    match set {
        0 => Ok(json!("set")),
        _ => Err(std::io::Error::last_os_error().to_string()),
    }
}

/// `connect` on a relayed `stream` again, to `again`.
fn reconnect(stream: &TcpStream, again: u16) -> Result<Value, String> {
    let again = ipv4(again);
    // SAFETY: connect reads the address struct passed.
    let connected = unsafe {
        libc::connect(
            stream.as_raw_fd(),
            (&again as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    match connected {
        0 => Ok(json!("connected again")),
        _ => Err(std::io::Error::last_os_error().to_string()),
    }
}

/// `127.0.0.1:port` as the kernel takes it.
fn ipv4(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// The review's escape: a relayed socket to `granted` (a greeter, which
/// closes), written to until the peer resets it, then sent data with
/// `MSG_FASTOPEN` to `target` (by `sendto`, or `sendmsg` with a name),
/// twice: the first send after the reset disconnects the socket, the
/// second would connect it again, from the parent's network. The last
/// error, or where it got to.
fn fast_open(granted: u16, target: u16, by_sendmsg: bool) -> Result<Value, String> {
    use std::io::Read;
    let mut stream = TcpStream::connect(("127.0.0.1", granted)).map_err(|e| e.to_string())?;
    let mut greeting = String::new();
    stream
        .read_to_string(&mut greeting)
        .map_err(|e| e.to_string())?;
    for _ in 0..100 {
        if stream.write_all(b"anyone there?").is_err() {
            break; // the peer's reset arrived
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let destination = ipv4(target);
    let payload = b"escaped by fast open";
    let flags = libc::MSG_FASTOPEN | libc::MSG_NOSIGNAL;
    let length = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let mut last = String::new();
    for _ in 0..2 {
        let sent = if by_sendmsg {
            let mut iov = libc::iovec {
                iov_base: payload.as_ptr() as *mut libc::c_void,
                iov_len: payload.len(),
            };
            // SAFETY: msghdr is plain data; its pointers are to live locals.
            let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
            header.msg_name = (&destination as *const libc::sockaddr_in).cast_mut().cast();
            header.msg_namelen = length;
            header.msg_iov = &mut iov;
            header.msg_iovlen = 1;
            // SAFETY: sendmsg reads the header and what it points at.
            unsafe { libc::sendmsg(stream.as_raw_fd(), &header, flags) }
        } else {
            // SAFETY: sendto reads the payload and the address passed.
            unsafe {
                libc::sendto(
                    stream.as_raw_fd(),
                    payload.as_ptr().cast(),
                    payload.len(),
                    flags,
                    (&destination as *const libc::sockaddr_in).cast(),
                    length,
                )
            }
        };
        if sent >= 0 {
            return Ok(json!(format!("connected to {target}")));
        }
        last = std::io::Error::last_os_error().to_string();
    }
    Err(last)
}

/// A listener on 127.0.0.1 that answers each connection with `greeting`,
/// on a thread; its port.
pub(super) fn greeter(greeting: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(greeting.as_bytes());
        }
    });
    port
}

/// A call of the tool `name` to try `action` with `arg`, granted `grants`.
pub(super) async fn try_net(
    sandbox: &Sandbox,
    tool: Tool,
    grants: &[String],
    action: &str,
    arg: &str,
) -> ToolResult {
    let name = tool.name.clone();
    let toolbox = Toolbox::for_agent([tool]).unwrap();
    let ctx = ToolContext::new().with_sandbox(sandbox.clone());
    let grants: Capabilities = grants.iter().map(Capability::net).collect();
    let call = ToolCall::new("n", name, json!({"action": action, "arg": arg}));
    gated_dispatch(&toolbox, call, &grants, &ctx).await
}

/// The error of a tool with Net grants that the sandbox refused.
pub(super) fn refused_net(tool: &str, grants: &str, error: &str) -> String {
    format!(
        "tool \"{tool}\" failed: {error} (the tool runs in a sandbox: it may read nothing, \
         write nothing; network: TCP to {grants} only, no UDP; it may not start programs)"
    )
}

/// Nothing connected to `listener` (checked without waiting).
fn accepted_nothing(listener: &TcpListener) {
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept();
    assert_eq!(
        accepted.map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "no connection arrived"
    );
}

pub(super) async fn network_namespace(sandbox: &Sandbox) {
    // A grant for another host on the listener's own port: the host is
    // what counts, not the port.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let grant = format!("http://api.example.com:{}", address.port());
    let tool = networked("elsewhere", std::slice::from_ref(&grant));
    let result = try_net(
        sandbox,
        tool,
        std::slice::from_ref(&grant),
        "connect",
        &address.to_string(),
    )
    .await;
    assert_eq!(
        error(&result),
        refused_net("elsewhere", &grant, NOT_PERMITTED)
    );
    accepted_nothing(&listener);
}

pub(super) async fn no_loopback_for_any_host(sandbox: &Sandbox) {
    // `*` (here on any port) is for public hosts: never loopback.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let any = "https://*:*".to_owned();
    let tool = networked("anywhere", std::slice::from_ref(&any));
    let result = try_net(
        sandbox,
        tool,
        std::slice::from_ref(&any),
        "connect",
        &address.to_string(),
    )
    .await;
    assert_eq!(error(&result), refused_net("anywhere", &any, NOT_PERMITTED));
    accepted_nothing(&listener);
}

pub(super) async fn no_udp(sandbox: &Sandbox) {
    let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = receiver.local_addr().unwrap().to_string();
    // Even a grant that names the address and port (for TCP).
    let port = receiver.local_addr().unwrap().port();
    let grant = format!("http://127.0.0.1:{port}");
    let sent = try_net(
        sandbox,
        online(port),
        std::slice::from_ref(&grant),
        "udp_send",
        &address,
    )
    .await;
    assert_eq!(error(&sent), refused_net("online", &grant, NOT_PERMITTED));
    receiver.set_nonblocking(true).unwrap();
    let mut buffer = [0u8; 64];
    assert_eq!(
        receiver.recv_from(&mut buffer).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing was received"
    );
}

pub(super) async fn no_udp_bind(sandbox: &Sandbox) {
    let grant = "http://127.0.0.1:8080".to_owned();
    let bound = try_net(
        sandbox,
        online(8080),
        std::slice::from_ref(&grant),
        "udp_bind",
        "127.0.0.1:0",
    )
    .await;
    assert_eq!(error(&bound), refused_net("online", &grant, NOT_PERMITTED));
}

pub(super) async fn names_through_the_relay(sandbox: &Sandbox) {
    use std::net::ToSocketAddrs;
    let port = greeter("hello by name");
    let by_name = format!("http://localhost:{port}");
    let by_address = format!("http://127.0.0.1:{port}");
    let target = format!("localhost:{port}");
    let both = [by_name.clone(), by_address.clone()];
    // A granted name that resolves to loopback: refused after DNS, as the
    // HTTP client refuses it, unless the address is granted too.
    let resolved: Vec<String> = target
        .to_socket_addrs()
        .unwrap()
        .map(|address| address.ip().to_string())
        .collect();
    let only_name = std::slice::from_ref(&by_name);
    let tool = networked("named", only_name);
    let refused = try_net(sandbox, tool, only_name, "fetch_by_name", &target).await;
    assert_eq!(
        error(&refused),
        format!(
            "tool \"named\" failed: localhost resolves to {}, which is not a public address; \
             grant the address itself to reach it",
            resolved.join(", ")
        )
    );
    // `std` resolving the name itself (from /etc/hosts) gets no further:
    // the connect to the address it found is checked as one.
    let tool = networked("named", only_name);
    let by_std = try_net(sandbox, tool, only_name, "fetch", &target).await;
    assert_eq!(
        error(&by_std),
        refused_net("named", &by_name, NOT_PERMITTED)
    );
    let fetched = try_net(
        sandbox,
        networked("named", &both),
        &both,
        "fetch_by_name",
        &target,
    )
    .await;
    assert_eq!(fetched.output, json!("hello by name"), "{fetched:?}");
    // A name no grant covers.
    let other = format!("localhost:{}", port.wrapping_add(1).max(1));
    let tool = networked("named", &both);
    let ungranted = try_net(sandbox, tool, &both, "fetch_by_name", &other).await;
    assert_eq!(
        error(&ungranted),
        format!("tool \"named\" failed: TCP to {other} is not granted to this tool")
    );
}

pub(super) async fn no_reconnect_by_fast_open(sandbox: &Sandbox) {
    let port = greeter("hello, then goodbye");
    let grant = format!("http://127.0.0.1:{port}");
    let grants = std::slice::from_ref(&grant);
    for send in ["sendto", "sendmsg"] {
        let elsewhere = TcpListener::bind("127.0.0.1:0").unwrap();
        let target = elsewhere.local_addr().unwrap().port();
        let arg = format!("{port},{target},{send}");
        let result = try_net(sandbox, online(port), grants, "fast_open", &arg).await;
        assert_eq!(
            error(&result),
            refused_net("online", &grant, NOT_PERMITTED),
            "by {send}"
        );
        accepted_nothing(&elsewhere);
    }
    // Nor a connect deferred to the first send.
    let arg = port.to_string();
    let deferred = try_net(sandbox, online(port), grants, "fast_open_connect", &arg).await;
    assert_eq!(
        error(&deferred),
        refused_net("online", &grant, NOT_PERMITTED)
    );
    // A relayed socket is connected: a connect on it, even to the granted
    // port, answers as the kernel does, and nothing is dialled.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let granted = listener.local_addr().unwrap().port();
    let grant = format!("http://127.0.0.1:{granted}");
    let arg = format!("{granted},{granted}");
    for action in ["reconnect", "reconnect_by_name"] {
        let again = try_net(
            sandbox,
            online(granted),
            std::slice::from_ref(&grant),
            action,
            &arg,
        )
        .await;
        assert_eq!(
            error(&again),
            "tool \"online\" failed: Transport endpoint is already connected (os error 106)",
            "{action}"
        );
        assert!(
            listener.accept().is_ok(),
            "{action}: the first connect arrived"
        );
        accepted_nothing(&listener);
        listener.set_nonblocking(false).unwrap();
    }
}

pub(super) async fn mixed_grants(sandbox: &Sandbox) {
    use std::net::ToSocketAddrs;
    // A grant of one port of 127.0.0.1 beside one for every public host:
    // a name that resolves to 127.0.0.1 reaches no other port of it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!("localhost:{}", listener.local_addr().unwrap().port());
    let grants = ["https://*:*".to_owned(), "http://127.0.0.1:1".to_owned()];
    let resolved: Vec<String> = target
        .to_socket_addrs()
        .unwrap()
        .map(|address| address.ip().to_string())
        .collect();
    let tool = networked("named", &grants);
    let refused = try_net(sandbox, tool, &grants, "fetch_by_name", &target).await;
    assert_eq!(
        error(&refused),
        format!(
            "tool \"named\" failed: localhost resolves to {}, which is not a public address; \
             grant the address itself to reach it",
            resolved.join(", ")
        )
    );
    accepted_nothing(&listener);
}

/// Where no network namespace can be made (not root, no user namespaces),
/// a call with a Net grant is refused unless `allow_unconfined`. Run so:
///
/// ```text
/// unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces &&
///   setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all --reuid=0 \
///   env AGENTRY_SANDBOX_EXPECT_NO_NETNS=1 target/debug/deps/confinement-HASH'
/// ```
pub(super) async fn without_a_namespace(sandbox: &Sandbox) {
    let port = greeter("hello without a namespace");
    let grant = format!("http://127.0.0.1:{port}");
    let address = format!("127.0.0.1:{port}");
    let grants = std::slice::from_ref(&grant);
    let refused = try_net(sandbox, online(port), grants, "fetch", &address).await;
    assert_eq!(
        error(&refused),
        "tool \"online\" was not run: it could not be confined (no network namespace could be \
         made for it: Operation not permitted (os error 1); in a user namespace: No space left \
         on device (os error 28)); Sandbox::allow_unconfined(true) runs such calls anyway"
    );
    // Allowed to run unconfined, its connects still go through the relay.
    let unconfined = Sandbox::new().allow_unconfined(true);
    let fetched = try_net(&unconfined, online(port), grants, "fetch", &address).await;
    assert_eq!(
        fetched.output,
        json!("hello without a namespace"),
        "{fetched:?}"
    );
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let elsewhere = other.local_addr().unwrap().to_string();
    let closed = try_net(&unconfined, online(port), grants, "connect", &elsewhere).await;
    assert_eq!(error(&closed), refused_net("online", &grant, NOT_PERMITTED));
    accepted_nothing(&other);
}

pub(super) async fn granted_network(sandbox: &Sandbox) {
    let port = greeter("hello from the listener");
    let toolbox = Toolbox::for_agent([online(port)]).unwrap();
    let ctx = ToolContext::new().with_sandbox(sandbox.clone());
    let grants = Capabilities::from([Capability::net(format!("http://127.0.0.1:{port}"))]);
    let call = |arg: String| ToolCall::new("n", "online", json!({"action": "connect", "arg": arg}));
    let open = gated_dispatch(&toolbox, call(format!("127.0.0.1:{port}")), &grants, &ctx).await;
    assert_eq!(open.output, json!("done"), "{open:?}");
    // The relay's socket carries the conversation both ways.
    let fetch = ToolCall::new(
        "f",
        "online",
        json!({"action": "fetch", "arg": format!("127.0.0.1:{port}")}),
    );
    let fetched = gated_dispatch(&toolbox, fetch, &grants, &ctx).await;
    assert_eq!(
        fetched.output,
        json!("hello from the listener"),
        "{fetched:?}"
    );
    // Only a socket is connected: the relay does not replace stdout.
    let stdout = ToolCall::new(
        "s",
        "online",
        json!({"action": "connect_stdout", "arg": format!("127.0.0.1:{port}")}),
    );
    let stdout = gated_dispatch(&toolbox, stdout, &grants, &ctx).await;
    assert_eq!(
        error(&stdout),
        "tool \"online\" failed: Socket operation on non-socket (os error 88)"
    );
    // Another port of the same host: the relay refuses the connection.
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port();
    let closed = gated_dispatch(
        &toolbox,
        call(format!("127.0.0.1:{other_port}")),
        &grants,
        &ctx,
    )
    .await;
    let refused = |error: &str| refused_net("online", &format!("http://127.0.0.1:{port}"), error);
    assert_eq!(error(&closed), refused(NOT_PERMITTED));
    accepted_nothing(&other);
    // A Net grant is for IP: a Unix socket (a session bus, a container
    // engine) stays out of reach.
    let path = std::env::temp_dir().join(format!("agentry-sandbox-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let call = ToolCall::new(
        "u",
        "online",
        json!({"action": "unix", "arg": path.to_str().unwrap()}),
    );
    let result = gated_dispatch(&toolbox, call, &grants, &ctx).await;
    assert_eq!(error(&result), refused(NOT_PERMITTED));
    unix.set_nonblocking(true).unwrap();
    assert!(unix.accept().is_err(), "no connection arrived");
    let _ = std::fs::remove_file(&path);
}
