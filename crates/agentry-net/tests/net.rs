//! The capability-checked HTTP client: only granted schemes, hosts and ports,
//! no private address unless granted by address (also after DNS), and every
//! redirect hop checked, with credentials kept within their origin.

mod support;

use agentry_core::tool::{Capabilities, Capability};
use agentry_net::{HttpClient, NetError, read_body, read_prefix, read_text};
use reqwest::Method;
use serde_json::json;
use support::{Reply, serve};

fn client(grants: &[&str]) -> HttpClient {
    HttpClient::new(grants.iter().map(|g| Capability::net(*g)).collect())
}

#[tokio::test]
async fn granted_hosts_are_reachable() {
    let server = serve(vec![Reply::Text("sunny".into())]).await;
    let client = client(&["http://127.0.0.1:*"]);
    let response = client
        .get(&format!("{}/weather", server.base_url))
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "sunny");
}

#[tokio::test]
async fn an_undeclared_host_is_refused_before_connecting() {
    let server = serve(vec![Reply::Text("secret".into())]).await;
    let client = client(&["api.weather.com"]);
    let error = client
        .get(&format!("{}/x", server.base_url))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "net(\"http://127.0.0.1:{}\") is not granted to this tool (url: {}/x)",
            server.port, server.base_url
        )
    );
    assert!(server.requests().is_empty(), "no connection was made");
}

#[tokio::test]
async fn the_scheme_and_port_must_be_granted_too() {
    let server = serve(vec![Reply::Text("secret".into())]).await;
    let url = format!("{}/x", server.base_url);
    let other_port = if server.port == 1 { 2 } else { server.port - 1 };
    for grant in [
        "127.0.0.1".to_owned(),                       // https on 443 only
        format!("https://127.0.0.1:{}", server.port), // another scheme
        format!("http://127.0.0.1:{other_port}"),     // another port
    ] {
        let error = client(&[&grant]).get(&url).await.unwrap_err();
        assert!(
            matches!(error, NetError::NotGranted { .. }),
            "{grant}: {error}"
        );
    }
    assert!(server.requests().is_empty(), "no connection was made");
    let exact = format!("http://127.0.0.1:{}", server.port);
    let response = client(&[&exact]).get(&url).await.unwrap();
    assert_eq!(response.text().await.unwrap(), "secret");
}

#[tokio::test]
async fn a_wildcard_never_reaches_loopback_or_link_local_addresses() {
    let server = serve(vec![Reply::Text("internal".into())]).await;
    let everything = client(&["http://*:*", "*"]);
    for url in [
        format!("http://127.0.0.1:{}/admin", server.port),
        format!("http://[::ffff:127.0.0.1]:{}/admin", server.port),
        format!("http://2130706433:{}/admin", server.port), // 127.0.0.1 as one number
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://[fe80::1]/".to_owned(),
        "http://10.0.0.1/".to_owned(),
        "https://192.168.1.1/".to_owned(),
    ] {
        let error = everything.get(&url).await.unwrap_err();
        assert!(
            matches!(error, NetError::NotGranted { .. }),
            "{url}: {error}"
        );
    }
    assert!(server.requests().is_empty(), "no connection was made");
}

#[tokio::test]
async fn a_granted_name_that_resolves_to_loopback_is_refused_after_dns() {
    let server = serve(vec![Reply::Text("internal".into())]).await;
    let url = format!("http://localhost:{}/admin", server.port);
    // A grant for one port of the address opens no other port to a name.
    for grants in [
        vec!["http://*:*"],
        vec!["http://localhost:*"],
        vec!["http://localhost:*", "http://127.0.0.1:1"],
        vec!["http://*:*", "http://127.0.0.1:1", "https://127.0.0.1:*"],
    ] {
        let error = client(&grants).get(&url).await.unwrap_err();
        let NetError::AddressRefused { host, addresses } = &error else {
            panic!("{grants:?}: {error}");
        };
        assert_eq!(host, "localhost");
        assert!(addresses.iter().all(|a| a.is_loopback()), "{addresses:?}");
        assert!(
            error.to_string().starts_with("localhost resolves to ")
                && error.to_string().ends_with(
                    "which is not a public address; grant the address itself to reach it"
                ),
            "{error}"
        );
    }
    assert!(server.requests().is_empty(), "no connection was made");
    // Granting the address as well opens it.
    let both = client(&["http://localhost:*", "http://127.0.0.1:*"]);
    let response = both.get(&url).await.unwrap();
    assert_eq!(response.text().await.unwrap(), "internal");
}

#[tokio::test]
async fn a_redirect_to_an_undeclared_host_is_refused() {
    let target = serve(vec![Reply::Text("exfiltrated".into())]).await;
    let location = format!("http://localhost:{}/steal", target.port);
    let server = serve(vec![Reply::Redirect {
        code: 302,
        location: location.clone(),
    }])
    .await;
    let client = client(&["http://127.0.0.1:*"]);
    let error = client
        .get(&format!("{}/start", server.base_url))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, NetError::RedirectRefused { to, .. } if *to == location),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "redirect from {}/start to {location} refused: net(\"http://localhost:{}\") is not granted to this tool",
            server.base_url, target.port
        )
    );
    assert!(
        target.requests().is_empty(),
        "the redirect target was never contacted"
    );
}

#[tokio::test]
async fn a_redirect_to_the_metadata_address_is_refused() {
    let server = serve(vec![Reply::Redirect {
        code: 307,
        location: "http://169.254.169.254/latest/meta-data/iam".into(),
    }])
    .await;
    let client = client(&["http://127.0.0.1:*", "http://*:*"]);
    let error = client.get(&server.base_url).await.unwrap_err();
    assert!(matches!(error, NetError::RedirectRefused { .. }), "{error}");
}

#[tokio::test]
async fn redirects_within_granted_hosts_are_followed() {
    let target = serve(vec![Reply::Text("moved here".into())]).await;
    let server = serve(vec![Reply::Redirect {
        code: 307,
        location: format!("{}/new", target.base_url),
    }])
    .await;
    let client = client(&["http://127.0.0.1:*"]);
    let response = client
        .get(&format!("{}/old", server.base_url))
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "moved here");
    assert_eq!(target.requests()[0].path, "/new");
}

#[tokio::test]
async fn credentials_do_not_follow_a_redirect_to_another_origin() {
    // Another port is another origin, as for browsers.
    let elsewhere = serve(vec![Reply::Text("other origin".into())]).await;
    let server = serve(vec![
        Reply::Redirect {
            code: 307,
            location: "/same".into(),
        },
        Reply::Redirect {
            code: 307,
            location: format!("{}/elsewhere", elsewhere.base_url),
        },
    ])
    .await;
    let mut key: reqwest::header::HeaderValue = "k-123".parse().unwrap();
    key.set_sensitive(true);
    let response = client(&["http://127.0.0.1:*"])
        .request(Method::POST, &format!("{}/start", server.base_url))
        .bearer_auth("secret-token")
        .header("cookie", "session=1")
        .header("x-api-key", key)
        .header("x-trace", "t-1")
        .json(&json!({"q": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "other origin");
    let same = &server.requests()[1];
    assert_eq!(same.path, "/same");
    assert_eq!(same.header("authorization"), Some("Bearer secret-token"));
    assert_eq!(same.header("x-api-key"), Some("k-123"));
    let moved = &elsewhere.requests()[0];
    assert_eq!(
        (moved.method.as_str(), moved.body.as_str()),
        ("POST", "{\"q\":1}")
    );
    assert_eq!(moved.header("x-trace"), Some("t-1"));
    for credential in ["authorization", "cookie", "x-api-key"] {
        assert_eq!(
            moved.header(credential),
            None,
            "{credential} left the origin"
        );
    }
}

#[tokio::test]
async fn built_requests_pass_the_same_checks() {
    let server = serve(vec![Reply::Text("secret".into())]).await;
    let error = client(&["api.weather.com"])
        .post(&format!("{}/upload", server.base_url))
        .bearer_auth("token")
        .body("data")
        .send()
        .await
        .unwrap_err();
    assert!(matches!(error, NetError::NotGranted { .. }), "{error}");
    assert!(server.requests().is_empty(), "no connection was made");
    let error = client(&["*"]).get("not a url").await.unwrap_err();
    assert_eq!(error.to_string(), "invalid URL \"not a url\"");
}

#[test]
fn an_agent_with_a_malformed_grant_is_not_built() {
    let error = agentry_agent::Agent::builder(agentry_core::model::OfflineModel)
        .grant(Capability::net("ftp://files.example.com"))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        error.to_string(),
        "invalid net grant \"ftp://files.example.com\": the scheme must be http or https"
    );
    let none: Capabilities = Capabilities::none();
    assert!(none.check().is_ok());
}

#[tokio::test]
async fn a_body_is_read_within_its_limit_and_no_further() {
    let server = serve(vec![
        Reply::Flood { declared: None },
        Reply::Flood {
            declared: Some(200 << 20),
        },
        Reply::Text("small".into()),
        Reply::Flood { declared: None },
    ])
    .await;
    let client = client(&["http://127.0.0.1:*"]);
    let url = format!("{}/big", server.base_url);
    let reads = async {
        // An endless chunked body: reading stops past 1 MiB.
        let endless = client.get(&url).await.unwrap();
        let error = read_text(endless, 1 << 20).await.unwrap_err();
        assert!(matches!(error, NetError::BodyTooLarge { limit: 1048576 }));
        assert_eq!(error.to_string(), "response over 1048576 bytes");
        // 200 MB announced by Content-Length: refused before reading.
        let declared = client.get(&url).await.unwrap();
        let error = read_body(declared, 1 << 20).await.unwrap_err();
        assert_eq!(error.to_string(), "response over 1048576 bytes");
        // A body of exactly the limit is read whole.
        let small = client.get(&url).await.unwrap();
        assert_eq!(read_text(small, 5).await.unwrap(), "small");
        // The first bytes of an endless body, and word that more followed.
        let endless = client.get(&url).await.unwrap();
        assert_eq!(
            read_prefix(endless, 10).await.unwrap(),
            (b"xxxxxxxxxx".to_vec(), true)
        );
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), reads)
        .await
        .expect("bounded reads finish (60 s or the test fails as hung)");
    assert_eq!(server.requests().len(), 4);
}
