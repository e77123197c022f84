//! The connections, each served by hyper's HTTP/1.1 under a watch, so that
//! clients that send slowly or not at all cannot hold the server.
//!
//! - A connection waiting for a request (a new one, or a kept-alive one
//!   after its last answer) may wait `idle_timeout` for the request's first
//!   byte, and from that byte `header_read_timeout` for the whole head
//!   (request line and headers); past either it is closed.
//! - A request's body may pause `idle_timeout` between pieces, and take
//!   `body_read_timeout` in all from the end of the head; past either the
//!   connection is closed. Once the body is read nothing times the
//!   connection out: a server-sent event stream waits as long as the model
//!   takes.
//! - At most `max_connections` are open, and `max_per_peer` from one
//!   address (IPv6 by its /64). A new connection past either makes room by
//!   closing one (of that address, or of all) whose request is not being
//!   answered: first the one that has waited longest without sending a byte
//!   of its next request, else the one whose request (head or body still
//!   coming) began longest ago. So a flood of silent connections only ever
//!   pushes out its own, and a request that is being sent is pushed out only
//!   by other requests being sent, the slowest first. When every one is
//!   being answered, a new connection from a full address is answered 429
//!   (at most 64 such refusals at once, the rest closed unanswered), and one
//!   past the total waits in the listen queue until a connection closes.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

mod refusal;
mod wire;

use refusal::Refusals;
use wire::{PerRequest, Watched};

/// How long connections may take and how many may be open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectionLimits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) body_read_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_per_peer: usize,
}

/// Where one connection is: how many requests it has in flight, since when
/// it has waited for the next, when the current request's first byte came,
/// and, while a request's body is being read, when it began and when a
/// piece of it last came.
#[derive(Debug)]
struct Phase {
    in_flight: usize,
    waiting_since: Instant,
    first_byte: Option<Instant>,
    body_started: Option<Instant>,
    body_moved: Option<Instant>,
}

/// Which connection to close first to make room: lower first, then the
/// earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Evictable {
    /// Nothing of its next request has come, since this instant.
    Silent(Instant),
    /// Its request (head or body) has been coming since this instant.
    Sending(Instant),
}

/// One open connection, as the table and its watch see it.
#[derive(Debug)]
struct Conn {
    id: u64,
    /// Its address as counted ([`counted`]).
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
    /// `None` once a request's body is read.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        let phase = self.phase();
        if phase.in_flight > 0 {
            let (started, moved) = phase.body_started.zip(phase.body_moved)?;
            return Some((moved + limits.idle_timeout).min(started + limits.body_read_timeout));
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
        {
            let mut phase = self.phase();
            if let Some(at) = moved {
                phase.body_started.get_or_insert(at);
            } else {
                phase.body_started = None;
            }
            phase.body_moved = moved;
        }
        self.changed.notify_one();
    }

    /// Whether, and how readily, it may be closed to make room; `None`
    /// while a request whose body is read is being answered.
    fn evictable(&self) -> Option<Evictable> {
        let phase = self.phase();
        if phase.in_flight == 0 {
            return Some(match phase.first_byte {
                None => Evictable::Silent(phase.waiting_since),
                Some(first) => Evictable::Sending(first),
            });
        }
        phase.body_moved?;
        Some(Evictable::Sending(
            phase.first_byte.unwrap_or(phase.waiting_since),
        ))
    }
}

/// A request in flight on `Conn` until dropped (with its response's body).
struct InFlight(Arc<Conn>);

impl InFlight {
    fn start(conn: Arc<Conn>) -> Self {
        {
            // Its first byte stays: when the request began.
            let mut phase = conn.phase();
            phase.in_flight += 1;
            phase.body_started = None;
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

/// The address as counted: IPv4 (mapped ones too) whole, IPv6 by its /64,
/// which one host usually holds whole.
pub(crate) fn counted(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
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
    /// Its address has `max_per_peer` connections, each being answered.
    PeerFull,
    /// `max_connections` are open, each being answered.
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

    /// Close the connection (of `peer`, or of any) that is first to go
    /// ([`Evictable`]); false when every one is being answered.
    fn evict_one(&mut self, peer: Option<IpAddr>) -> bool {
        let first = self
            .open
            .values()
            .filter(|conn| peer.is_none_or(|peer| conn.peer == peer))
            .filter_map(|conn| Some((conn.evictable()?, conn.id)))
            .min();
        let Some((_, id)) = first else {
            return false;
        };
        if let Some(conn) = self.open.get(&id) {
            conn.evict.notify_one();
        }
        self.forget(id);
        true
    }

    fn admit(&mut self, peer: IpAddr, limits: &ConnectionLimits, room: &Arc<Notify>) -> Admission {
        let peer = counted(peer);
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
                body_started: None,
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
    let refusals = Refusals::default();
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
                    // Past the refusals in progress, closed unanswered.
                    if let Some(slot) = refusals.slot() {
                        tasks.spawn(refusal::refuse(stream, limits.max_per_peer, slot));
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_per_peer: usize) -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 512,
            max_per_peer,
        }
    }

    fn open(admission: Admission) -> Arc<Conn> {
        match admission {
            Admission::Open(conn) => conn,
            Admission::PeerFull => panic!("refused: its address is full"),
            Admission::Full => panic!("refused: the server is full"),
        }
    }

    #[tokio::test]
    async fn an_ipv6_64_and_an_ipv4_address_mapped_or_not_are_each_one_peer() {
        let (limits, room) = (limits(1), Arc::new(Notify::new()));
        let mut table = Table::default();
        let first = open(table.admit("2001:db8:0:1::1".parse().unwrap(), &limits, &room));
        // Being answered: it cannot make room.
        let _answering = InFlight::start(first.clone());
        assert!(matches!(
            table.admit("2001:db8:0:1:ffff::2".parse().unwrap(), &limits, &room),
            Admission::PeerFull
        ));
        open(table.admit("2001:db8:0:2::1".parse().unwrap(), &limits, &room));
        let mapped = open(table.admit("::ffff:10.0.0.1".parse().unwrap(), &limits, &room));
        let _answering = InFlight::start(mapped);
        assert!(matches!(
            table.admit("10.0.0.1".parse().unwrap(), &limits, &room),
            Admission::PeerFull
        ));
        assert_eq!(table.open.len(), 3);
    }

    #[tokio::test]
    async fn room_is_made_from_silent_connections_first_then_the_oldest_request_being_sent() {
        let (limits, room) = (limits(3), Arc::new(Notify::new()));
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        let mut table = Table::default();
        let mid_head = open(table.admit(peer, &limits, &room));
        mid_head.bytes_read();
        let mid_body = open(table.admit(peer, &limits, &room));
        mid_body.bytes_read();
        let _request = InFlight::start(mid_body.clone());
        mid_body.body(Some(Instant::now()));
        let silent = open(table.admit(peer, &limits, &room));
        let ids = |table: &Table| {
            let mut ids: Vec<u64> = table.open.keys().copied().collect();
            ids.sort_unstable();
            ids
        };
        let fourth = open(table.admit(peer, &limits, &room));
        assert!(!table.open.contains_key(&silent.id));
        assert_eq!(
            ids(&table),
            [mid_head.id, mid_body.id, fourth.id],
            "the silent one went first"
        );
        fourth.bytes_read();
        let fifth = open(table.admit(peer, &limits, &room));
        assert_eq!(
            ids(&table),
            [mid_body.id, fourth.id, fifth.id],
            "then the oldest request"
        );
        // Its body read, the second is being answered; the fourth too.
        mid_body.body(None);
        let _answering = InFlight::start(fourth.clone());
        let sixth = open(table.admit(peer, &limits, &room));
        assert_eq!(ids(&table), [mid_body.id, fourth.id, sixth.id]);
        let _answering = InFlight::start(sixth);
        assert!(matches!(
            table.admit(peer, &limits, &room),
            Admission::PeerFull
        ));
    }
}
