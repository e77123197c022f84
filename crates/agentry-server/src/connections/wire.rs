//! What hyper reads and writes on a watched connection: the socket, which
//! tells the watch when bytes come; each request, in flight until its answer
//! is sent; and each request's body, which tells the watch how it comes.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tower::ServiceExt;

use super::{Conn, InFlight};

/// The socket, telling its connection's watch when bytes come in.
pub(super) struct Watched {
    pub(super) stream: TcpStream,
    pub(super) conn: Arc<Conn>,
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
pub(super) struct PerRequest {
    pub(super) router: Router,
    pub(super) conn: Arc<Conn>,
    pub(super) peer: SocketAddr,
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
