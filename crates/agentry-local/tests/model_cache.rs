//! The model cache trusts nothing it has not checked: a file of the right
//! size but other bytes is not used, a download may not grow past its size,
//! two pulls at once do not share a temporary file, and a cache folder that
//! others can write is refused. Served from a real HTTP server on loopback.

use std::os::unix::fs::PermissionsExt;

use agentry_local::fetch::{self, FetchError, ModelSpec};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serve `body` to every connection as an HTTP/1.1 200 response.
async fn serve(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    format!("http://{address}/model.gguf")
}

fn spec_for(bytes: &[u8]) -> ModelSpec {
    let sha256: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    ModelSpec {
        id: "tiny",
        file_name: "tiny.gguf",
        size: bytes.len() as u64,
        sha256: Box::leak(sha256.into_boxed_str()),
        parts: &[],
        huggingface: "",
    }
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cache_uses_only_what_it_checked() {
    let cache = std::env::temp_dir().join(format!("agentry-model-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    // SAFETY: this test binary has a single test, so nothing reads the
    // environment concurrently.
    unsafe { std::env::set_var("AGENTRY_MODEL_DIR", &cache) };
    let model = b"GGUF tiny model bytes".to_vec();
    let spec = spec_for(&model);
    let url = serve(model.clone()).await;

    // Two pulls at once: each its own temporary file, both verified.
    let (a, b) = tokio::join!(
        fetch::pull_from_url(&spec, &url, |_| {}),
        fetch::pull_from_url(&spec, &url, |_| {})
    );
    let path = a.unwrap();
    assert_eq!(b.unwrap(), path);
    assert_eq!(entries(&cache), [".tiny.gguf.verified", "tiny.gguf"]);
    assert_eq!(fetch::installed(&spec), Some(path.clone()));
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the cache folder is private");

    // Same size, other bytes: not used.
    std::fs::write(&path, b"GGUF evil model bytes").unwrap();
    assert_eq!(fetch::installed(&spec), None);
    std::fs::write(&path, &model).unwrap();
    assert_eq!(
        fetch::installed(&spec),
        Some(path.clone()),
        "re-checked, and fine again"
    );

    // A download that grows past the model's size is cut off, nothing kept.
    std::fs::remove_file(&path).unwrap();
    let big = serve(vec![b'x'; 1 << 20]).await;
    let error = fetch::pull_from_url(&spec, &big, |_| {}).await.unwrap_err();
    assert!(
        matches!(&error, FetchError::Verification { expected, .. } if expected == "at most 21 bytes"),
        "{error:?}"
    );
    assert!(
        !entries(&cache)
            .iter()
            .any(|name| name.ends_with(".partial")),
        "{:?}",
        entries(&cache)
    );

    // A cache folder others may write is not used, nor written to.
    fetch::pull_from_url(&spec, &url, |_| {}).await.unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(fetch::installed(&spec), None);
    let error = fetch::pull_from_url(&spec, &url, |_| {}).await.unwrap_err();
    assert!(
        error.to_string().contains("is writable by group or others"),
        "{error}"
    );
    std::fs::remove_dir_all(&cache).unwrap();
}
