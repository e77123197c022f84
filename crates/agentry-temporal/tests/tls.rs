//! Reaching a Temporal server over TLS ([`Endpoint`] with [`Tls`]): the dev
//! server behind a TLS-terminating proxy that asks for a client certificate
//! (mutual TLS, as a self-hosted server or Temporal Cloud's mTLS does). A
//! worker and a caller with the CA and a client certificate run an agent;
//! one without a client certificate, one that does not trust the server's
//! CA, and one in plaintext are refused, each saying why. Certificates are
//! made by `openssl`, the proxy is `tests/tls/proxy.py` (Python's `ssl`).

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use agentry_agent::{Agent, Outcome};
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_temporal::{Endpoint, TemporalRuns, Tls, serve};

/// `program`, or `None` (said loudly; a failure under `AGENTRY_REQUIRE_TEMPORAL`).
fn needed(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_TEMPORAL").is_none(),
            "AGENTRY_REQUIRE_TEMPORAL is set but there is no `{program}` (scripts/setup installs it)"
        );
        eprintln!("\n*** SKIPPED: no `{program}` for the TLS test ***\n");
    }
    found
}

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "openssl {args:?}");
}

/// A CA, a server certificate for `localhost` and a client certificate,
/// each signed by the CA; and a second CA that signed nothing here.
fn certificates(dir: &Path) {
    for ca in ["ca", "other-ca"] {
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                &format!("/CN={ca}"),
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.pem"),
            ],
        );
    }
    std::fs::write(dir.join("server.ext"), "subjectAltName=DNS:localhost\n").unwrap();
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    for (name, cn) in [("server", "localhost"), ("client", "worker")] {
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={cn}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                &format!("{name}.ext"),
                "-out",
                &format!("{name}.pem"),
            ],
        );
    }
}

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The proxy in front of `upstream`'s port, and the port it listens on.
fn proxy(python: &Path, dir: &Path, upstream: &str) -> (Proxy, u16) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tls/proxy.py");
    let port = upstream.rsplit(':').next().unwrap();
    let mut child = Command::new(python)
        .arg(script)
        .args(["server.pem", "server.key", "ca.pem", port])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let listening = line.trim().parse().expect("the proxy's port");
    (Proxy(child), listening)
}

fn tls(dir: &Path, ca: &str, client: bool) -> Tls {
    let (cert, key) = (dir.join("client.pem"), dir.join("client.key"));
    Tls::from_files(
        Some(&dir.join(ca)),
        client.then_some(cert.as_path()),
        client.then_some(key.as_path()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn workers_and_callers_reach_a_server_over_mutual_tls() {
    let (Some(_), Some(python)) = (needed("openssl"), needed("python3")) else {
        return;
    };
    let Some(server) = common::dev_server() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("agentry-temporal-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    let (_proxy, port) = proxy(&python, &dir, server.address());
    let address = format!("localhost:{port}");
    let endpoint = Endpoint::new(&address).tls(tls(&dir, "ca.pem", true));

    // A worker and a caller over mutual TLS.
    let model = ScriptedModel::new().reply(Step::Final {
        text: "over TLS".into(),
        tokens: Usage::new(3, 2),
    });
    let agent = Agent::builder(model).build().unwrap();
    let client = endpoint.connect().await.unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let _ = serve(Arc::new(agent), client, "tls").await;
        });
    });
    let runs = TemporalRuns::connect_to(&endpoint)
        .await
        .unwrap()
        .task_queue("tls");
    let outcome = runs.run("tls-1", "hello").await.unwrap();
    assert_eq!(outcome.outcome, Outcome::Final("over TLS".into()));

    // Refused, each saying so: no client certificate, a CA that did not
    // sign the server's certificate, plaintext to a TLS port.
    let refused = |endpoint: Endpoint| async move {
        endpoint
            .connect()
            .await
            .map(|_| ())
            .expect_err("the connection is refused")
            .to_string()
    };
    let no_cert = refused(Endpoint::new(&address).tls(tls(&dir, "ca.pem", false))).await;
    assert!(
        no_cert.contains("connecting to Temporal at localhost"),
        "{no_cert}"
    );
    let untrusted = refused(Endpoint::new(&address).tls(tls(&dir, "other-ca.pem", true))).await;
    assert!(
        untrusted.to_lowercase().contains("certificate"),
        "{untrusted}"
    );
    let plaintext = refused(Endpoint::new(&address)).await;
    assert!(
        plaintext.contains("connecting to Temporal at localhost"),
        "{plaintext}"
    );
    eprintln!("no client certificate: {no_cert}\nuntrusted: {untrusted}\nplaintext: {plaintext}");
    // An API key alone goes over TLS (the system's roots do not know this
    // test's CA, so it is refused for that, not sent in plaintext).
    let keyed = refused(Endpoint::new(&address).api_key("not-shown")).await;
    assert!(keyed.contains("UnknownIssuer"), "{keyed}");
    assert!(!keyed.contains("not-shown"), "{keyed}");
    // Half a client certificate is refused before any connection.
    let half = Tls::from_files(None, Some(&dir.join("client.pem")), None).unwrap_err();
    assert!(
        half.to_string().contains("both a certificate and its key"),
        "{half}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
