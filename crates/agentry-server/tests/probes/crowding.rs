//! Clients that crowd others out while looking busy: a request body
//! trickled just fast enough, a flood of connections that are each
//! answered 429, a half-sent head pushed out by newer silent connections,
//! and (not an attack) a lowercase `bearer`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::support::{DripModel, Running};
use super::{LONG, address, closed, error, exchange, open, read_answer};

/// The head of a turn whose 100-byte body is still to come.
const TURN_HEAD: &[u8] =
    b"POST /v1/sessions/s/turns HTTP/1.1\r\nHost: localhost\r\nAuthorization: \
    Bearer alice-key\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";

/// Sockets the server listening on `port` holds open: those it accepted
/// and has not closed, read from `/proc/net/tcp` (the listener is in state
/// `0A`; sockets not yet accepted, or closed by the server, have no inode).
fn held(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields[1].rsplit(':').next().unwrap();
            u16::from_str_radix(local, 16).unwrap() == port && fields[3] != "0A" && fields[9] != "0"
        })
        .count()
}

fn port(server: &Running) -> u16 {
    address(server).rsplit_once(':').unwrap().1.parse().unwrap()
}

async fn models(server: &Running, authorization: &str) -> super::Answer {
    exchange(
        server,
        &["GET /v1/models HTTP/1.1", "Host: localhost", authorization],
        "",
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_trickled_just_under_the_idle_timeout_is_closed_at_its_deadline() {
    let server = super::support::serve(DripModel::new("Hi.", 0), |s| {
        s.idle_timeout(Duration::from_secs(2))
            .header_read_timeout(Duration::from_secs(2))
            .body_read_timeout(Duration::from_secs(3))
            .max_connections_per_peer(1)
    })
    .await;
    let mut trickle = TcpStream::connect(address(&server)).await.unwrap();
    trickle.write_all(TURN_HEAD).await.unwrap();
    // One byte a second: each piece well within the 2 s idle timeout.
    let mut sent = 0;
    let mut byte = [0u8; 1];
    loop {
        tokio::select! {
            read = trickle.read(&mut byte) => {
                assert!(!matches!(read, Ok(1)), "no answer to a body never finished");
                break;
            }
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                assert!(sent < 15, "still open after {sent} s of trickling");
                sent += 1;
                let _ = trickle.write_all(b" ").await;
            }
        }
    }
    assert!(sent < 15);
    assert!(server.store.is_empty(), "no turn ran");
    // The address's one connection is free again.
    let next = models(&server, "Authorization: Bearer alice-key").await;
    assert_eq!(next.status, 200, "{next:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_still_sending_its_body_makes_room_for_a_new_one() {
    let server = super::support::serve(DripModel::new("Hi.", 0), |s| {
        s.idle_timeout(LONG)
            .header_read_timeout(LONG)
            .body_read_timeout(LONG)
            .max_connections_per_peer(1)
    })
    .await;
    let mut trickle = TcpStream::connect(address(&server)).await.unwrap();
    trickle.write_all(TURN_HEAD).await.unwrap();
    trickle.write_all(b"{\"text\"").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let next = models(&server, "Authorization: Bearer alice-key").await;
    assert_eq!(next.status, 200, "{next:?}");
    assert!(closed(&mut trickle).await, "the unfinished body was closed");
    assert!(server.store.is_empty(), "no turn ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_refused_connections_holds_a_bounded_number_of_sockets() {
    let server = super::support::serve(DripModel::new(&"word ".repeat(20), 200), |s| {
        s.max_connections_per_peer(1)
    })
    .await;
    let body = r#"{"text": "hi"}"#;
    let turn = format!(
        "POST /v1/sessions/s/turns HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \
         alice-key\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut busy = TcpStream::connect(address(&server)).await.unwrap();
    busy.write_all(turn.as_bytes()).await.unwrap();
    let mut start = [0u8; 64];
    let read = busy.read(&mut start).await.unwrap();
    assert!(start[..read].starts_with(b"HTTP/1.1 200 OK"));
    let port = port(&server);
    let mut silent = Vec::new();
    let mut most = 0;
    for _ in 0..300 {
        silent.push(TcpStream::connect(address(&server)).await.unwrap());
        most = most.max(held(port));
    }
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        most = most.max(held(port));
    }
    println!("the server held at most {most} sockets at once");
    // The busy connection and at most 64 refusals in progress.
    assert!(most <= 1 + 64, "the server held {most} sockets at once");
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), busy.read_to_end(&mut rest))
        .await
        .expect("the busy client finishes within 30 s")
        .unwrap();
    let rest = String::from_utf8_lossy(&rest);
    assert!(rest.contains("event: turn:end"), "{rest}");
    drop(silent);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_half_sent_head_is_not_pushed_out_by_newer_silent_connections() {
    let server =
        super::support::serve(DripModel::new("Hi.", 0), |s| s.max_connections_per_peer(2)).await;
    let mut a = TcpStream::connect(address(&server)).await.unwrap();
    a.write_all(b"GET /v1/models HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut b = TcpStream::connect(address(&server)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c = TcpStream::connect(address(&server)).await.unwrap();
    assert!(closed(&mut b).await, "the silent B made room for C");
    assert!(open(&c), "C is open");
    a.write_all(b"Authorization: Bearer alice-key\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = read_answer(&mut a).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.json()["data"][0]["id"], "helper");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bearer_scheme_is_matched_in_any_case() {
    let server = super::support::serve(DripModel::new("Hi.", 0), |s| s).await;
    for authorization in [
        "Authorization: bearer alice-key",
        "Authorization: BEARER bob-key",
        "Authorization: Bearer alice-key",
    ] {
        let answer = models(&server, authorization).await;
        assert_eq!(answer.status, 200, "{authorization}: {answer:?}");
    }
    let wrong = models(&server, "Authorization: Basic alice-key").await;
    assert_eq!(wrong.status, 401);
    assert_eq!(
        wrong.json(),
        error(
            "a valid API key is required: send `Authorization: Bearer <key>`",
            "authentication_error",
            "unauthorized"
        )
    );
}
