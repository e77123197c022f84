//! The connections, each served by hyper's HTTP/1.1 under a watch, so that
//! clients that send slowly or not at all cannot hold the server.
//!
//! - A connection waiting for a request (a new one, or a kept-alive one
//!   after its last answer) may wait `idle_timeout` for the request's first
//!   byte, and from that byte `header_read_timeout` for the whole head
//!   (request line and headers); past either it is closed.
//! - A request's body may pause `idle_timeout` between pieces; past that
//!   the connection is closed. Once the body is read nothing times the
//!   connection out: a server-sent event stream waits as long as the model
//!   takes.
//! - At most `max_connections` are open, and `max_per_peer` from one
//!   address. A new connection past either makes room by closing the one
//!   (of that address, or of all) that has waited longest without a request
//!   in flight, so a flood of silent connections only ever pushes out its
//!   own. When every one has a request in flight, a new connection from a
//!   full address is answered 429 at once, and one past the total waits in
//!   the listen queue until a connection closes.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::error::ApiError;

/// How long connections may take and how many may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectionLimits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_per_peer: usize,
}

/// Where one connection is: how many requests it has in flight, since when
/// it has waited for the next, when that request's first byte came, and,
/// while a request's body is being read, when a piece of it last came.
#[derive(Debug)]
struct Phase {
    in_flight: usize,
    waiting_since: Instant,
    first_byte: Option<Instant>,
    body_moved: Option<Instant>,
}

/// One open connection, as the table and its watch see it.
#[derive(Debug)]
struct Conn {
    id: u64,
    peer: IpAddr,
    phase: Mutex<Phase>,
    /// The phase changed: the watch works out its deadline again.
    changed: Notify,
    /// Close now, to make room for a new connection.
    evict: Notify,
    /// The registry's: told when this connection goes idle.
    room: Arc<Notify>,
}

impl Conn {
    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When this connection is to be closed unless something happens;
    /// `None` while a request is in flight.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        let phase = self.phase();
        if phase.in_flight > 0 {
            return phase.body_moved.map(|at| at + limits.idle_timeout);
        }
        Some(match phase.first_byte {
            Some(first) => first + limits.header_read_timeout,
            None => phase.waiting_since + limits.idle_timeout,
        })
    }

    /// Bytes came in: the first of a request's head when none is in flight.
    fn bytes_read(&self) {
        let mut phase = self.phase();
        if phase.in_flight == 0 && phase.first_byte.is_none() {
            phase.first_byte = Some(Instant::now());
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// A piece of a request's body came (`Some(now)`), or it is all read
    /// or dropped (`None`).
    fn body(&self, moved: Option<Instant>) {
        self.phase().body_moved = moved;
        self.changed.notify_one();
    }

    /// Since when it has waited without a request in flight, if it has.
    fn idle_since(&self) -> Option<Instant> {
        let phase = self.phase();
        (phase.in_flight == 0).then_some(phase.waiting_since)
    }
}

/// A request in flight on `Conn` until dropped (with its response's body).
struct InFlight(Arc<Conn>);

impl InFlight {
    fn start(conn: Arc<Conn>) -> Self {
        {
            let mut phase = conn.phase();
            phase.in_flight += 1;
            phase.first_byte = None;
            phase.body_moved = None;
        }
        conn.changed.notify_one();
        Self(conn)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut phase = self.0.phase();
            phase.in_flight -= 1;
            if phase.in_flight == 0 {
                phase.waiting_since = Instant::now();
                phase.first_byte = None;
            }
        }
        self.0.changed.notify_one();
        self.0.room.notify_one();
    }
}

/// The open connections.
#[derive(Debug, Default)]
struct Table {
    next_id: u64,
    open: HashMap<u64, Arc<Conn>>,
    per_peer: HashMap<IpAddr, usize>,
}

/// What to do with a new connection.
enum Admission {
    Open(Arc<Conn>),
    /// Its address has `max_per_peer` connections, each with a request in flight.
    PeerFull,
    /// `max_connections` are open, each with a request in flight.
    Full,
}

impl Table {
    fn forget(&mut self, id: u64) {
        if let Some(conn) = self.open.remove(&id)
            && let Some(count) = self.per_peer.get_mut(&conn.peer)
        {
            *count -= 1;
            if *count == 0 {
                self.per_peer.remove(&conn.peer);
            }
        }
    }

    /// Close the connection (of `peer`, or of any) that has waited longest
    /// without a request in flight; false when there is none.
    fn evict_one(&mut self, peer: Option<IpAddr>) -> bool {
        let oldest = self
            .open
            .values()
            .filter(|conn| peer.is_none_or(|peer| conn.peer == peer))
            .filter_map(|conn| Some((conn.idle_since()?, conn.id)))
            .min();
        let Some((_, id)) = oldest else {
            return false;
        };
        if let Some(conn) = self.open.get(&id) {
            conn.evict.notify_one();
        }
        self.forget(id);
        true
    }

    fn admit(&mut self, peer: IpAddr, limits: &ConnectionLimits, room: &Arc<Notify>) -> Admission {
        let from_peer = self.per_peer.get(&peer).copied().unwrap_or(0);
        if from_peer >= limits.max_per_peer && !self.evict_one(Some(peer)) {
            return Admission::PeerFull;
        }
        if self.open.len() >= limits.max_connections && !self.evict_one(None) {
            return Admission::Full;
        }
        self.next_id += 1;
        let conn = Arc::new(Conn {
            id: self.next_id,
            peer,
            phase: Mutex::new(Phase {
                in_flight: 0,
                waiting_since: Instant::now(),
                first_byte: None,
                body_moved: None,
            }),
            changed: Notify::new(),
            evict: Notify::new(),
            room: room.clone(),
        });
        self.open.insert(conn.id, conn.clone());
        *self.per_peer.entry(peer).or_default() += 1;
        Admission::Open(conn)
    }
}

/// The table, shared by the accept loop and the connections' tasks.
#[derive(Debug, Default)]
struct Registry {
    table: Mutex<Table>,
    /// A connection closed or went idle: one past the total may be admitted.
    room: Arc<Notify>,
}

impl Registry {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Takes a connection out of the table when its task ends.
struct Leave(Arc<Registry>, u64);

impl Drop for Leave {
    fn drop(&mut self) {
        self.0.table().forget(self.1);
        self.0.room.notify_one();
    }
}

/// Serve `router` on `listener` under `limits` until `shutdown`, then let
/// the requests in flight finish.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let registry = Arc::new(Registry::default());
    let (stop, stopping) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    'accept: loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(error).await;
                    continue;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        // Each streamed event goes out at once, not held back for Nagle's algorithm.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "could not set TCP_NODELAY");
        }
        let conn = loop {
            // A close or idle after this read of the table leaves a permit.
            let room = registry.room.notified();
            let admission = registry.table().admit(peer.ip(), &limits, &registry.room);
            match admission {
                Admission::Open(conn) => break conn,
                Admission::PeerFull => {
                    tasks.spawn(refuse(stream, limits.max_per_peer));
                    continue 'accept;
                }
                Admission::Full => tokio::select! {
                    () = &mut shutdown => break 'accept,
                    () = room => {}
                    Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                },
            }
        };
        let leave = Leave(registry.clone(), conn.id);
        tasks.spawn(connection(
            stream,
            peer,
            conn,
            router.clone(),
            limits,
            stopping.clone(),
            leave,
        ));
    }
    drop(listener);
    let _ = stop.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// An error accepting: the peer's own trouble is passed over; anything
/// else (out of file descriptors) waits a moment before the next accept.
async fn accept_failed(error: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Answer a connection its address has no room for: 429, after reading
/// what its request sent (closing on unread bytes would reset the
/// connection and lose the answer).
async fn refuse(mut stream: TcpStream, limit: usize) {
    let error = ApiError::too_many_connections(limit);
    let body = serde_json::to_string(&error.body()).unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut buffer = [0u8; 4096];
    let mut head = Vec::new();
    let read_head = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buffer[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), read_head).await;
    if stream.write_all(answer.as_bytes()).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    let drain = async { while matches!(stream.read(&mut buffer).await, Ok(n) if n > 0) {} };
    let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
}

/// Serve one connection under its watch.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    conn: Arc<Conn>,
    router: Router,
    limits: ConnectionLimits,
    mut stopping: watch::Receiver<bool>,
    _leave: Leave,
) {
    let io = TokioIo::new(Watched {
        stream,
        conn: conn.clone(),
    });
    let service = PerRequest {
        router,
        conn: conn.clone(),
        peer,
    };
    let http = hyper::server::conn::http1::Builder::new();
    let mut served = std::pin::pin!(http.serve_connection(io, service));
    let mut stopped = *stopping.borrow();
    if stopped {
        served.as_mut().graceful_shutdown();
    }
    loop {
        let deadline = conn.deadline(&limits);
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%error, %peer, "connection ended");
                }
                return;
            }
            () = conn.evict.notified() => {
                tracing::debug!(%peer, "connection closed to make room");
                return;
            }
            () = conn.changed.notified() => {}
            () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                if conn.deadline(&limits).is_some_and(|due| due <= Instant::now()) {
                    tracing::debug!(%peer, "connection closed: no request within the timeouts");
                    return;
                }
            }
            _ = stopping.changed(), if !stopped => {
                stopped = true;
                served.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The socket, telling its connection's watch when bytes come in.
struct Watched {
    stream: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.bytes_read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// The router for one connection: each request carries the peer's address
/// (`ConnectInfo`) and counts as in flight until its answer is sent.
struct PerRequest {
    router: Router,
    conn: Arc<Conn>,
    peer: SocketAddr,
}

impl hyper::service::Service<Request<Incoming>> for PerRequest {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let in_flight = InFlight::start(self.conn.clone());
        let conn = self.conn.clone();
        let mut request = request.map(|body| {
            let reading = !http_body::Body::is_end_stream(&body);
            if reading {
                conn.body(Some(Instant::now()));
            }
            Upload {
                body,
                conn,
                reading,
            }
        });
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let router = self.router.clone();
        Box::pin(async move {
            let response = router.oneshot(request).await?;
            Ok(response.map(|body| {
                Body::new(Held {
                    body,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// A response body that keeps its request in flight until sent (or dropped).
struct Held {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request's body, telling its connection's watch when pieces come and
/// when it is all read (or dropped unread).
struct Upload {
    body: Incoming,
    conn: Arc<Conn>,
    reading: bool,
}

impl Upload {
    fn done(&mut self) {
        if std::mem::take(&mut self.reading) {
            self.conn.body(None);
        }
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        self.done();
    }
}

impl http_body::Body for Upload {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(_))) if self.body.is_end_stream() => self.done(),
            Poll::Ready(Some(Ok(_))) if self.reading => self.conn.body(Some(Instant::now())),
            Poll::Ready(None | Some(Err(_))) => self.done(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
