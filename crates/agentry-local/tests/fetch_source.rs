//! The Hugging Face (any URL) source: a download that does not match the
//! model's size and sha256 is refused and nothing is left in the cache.
//! Served from a real HTTP server on loopback; the real Hugging Face cannot be
//! reached from the machines agentry is built on.

use agentry_local::fetch::{self, FetchError, Progress};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serve `body` once per connection as an HTTP/1.1 200 response.
async fn serve(body: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: application/octet-stream\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body).await;
        }
    });
    format!("http://{address}/model.gguf")
}

#[tokio::test]
async fn a_download_that_fails_verification_leaves_nothing() {
    let cache = std::env::temp_dir().join(format!("agentry-fetch-source-{}", std::process::id()));
    // SAFETY: this test binary has a single test, so nothing reads the
    // environment concurrently.
    unsafe { std::env::set_var("AGENTRY_MODEL_DIR", &cache) };
    let url = serve(b"GGUF but not the model").await;
    let mut seen = Vec::new();
    let error = fetch::pull_from_url(&fetch::SMOLLM2, &url, |p| seen.push(p))
        .await
        .expect_err("the bytes are not the model");
    match error {
        FetchError::Verification {
            what,
            expected,
            actual,
        } => {
            assert_eq!(what, fetch::SMOLLM2.file_name);
            assert_eq!(expected, "98362432 bytes");
            assert_eq!(actual, "22 bytes");
        }
        other => panic!("expected a verification error, got {other:?}"),
    }
    assert_eq!(
        seen.first(),
        Some(&Progress::Start {
            total: fetch::SMOLLM2.size
        })
    );
    assert!(seen.contains(&Progress::Advance { bytes: 22 }));
    let left: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(fetch::installed(&fetch::SMOLLM2).is_none());

    let refused = fetch::pull_from_url(&fetch::SMOLLM2, "http://127.0.0.1:1/x", |_| {})
        .await
        .expect_err("nothing listens on port 1");
    assert!(
        matches!(refused, FetchError::Download(_)),
        "expected a download error, got {refused:?}"
    );
    assert!(std::fs::read_dir(&cache).unwrap().next().is_none());
    std::fs::remove_dir_all(&cache).unwrap();
}
