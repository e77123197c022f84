//! The capability-checked HTTP client: only granted hosts, also after redirects.

mod support;

use agentry_core::tool::{Capabilities, Capability};
use agentry_providers::net::{HttpClient, NetError};
use support::{Reply, serve};

#[tokio::test]
async fn granted_hosts_are_reachable() {
    let server = serve(vec![Reply::Text("sunny".into())]).await;
    let client = HttpClient::new(Capabilities::from([Capability::net("127.0.0.1")]));
    let response = client
        .get(&format!("{}/weather", server.base_url))
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "sunny");
}

#[tokio::test]
async fn an_undeclared_host_is_refused_before_connecting() {
    let server = serve(vec![Reply::Text("secret".into())]).await;
    let client = HttpClient::new(Capabilities::from([Capability::net("api.weather.com")]));
    let error = client
        .get(&format!("{}/x", server.base_url))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "net(\"127.0.0.1\") is not granted to this tool (url: {}/x)",
            server.base_url
        )
    );
    assert!(server.requests().is_empty(), "no connection was made");
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
    let client = HttpClient::new(Capabilities::from([Capability::net("127.0.0.1")]));
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
            "redirect from {}/start to {location} refused: net(\"localhost\") is not granted to this tool",
            server.base_url
        )
    );
    assert!(
        target.requests().is_empty(),
        "the redirect target was never contacted"
    );
}

#[tokio::test]
async fn redirects_within_granted_hosts_are_followed() {
    let target = serve(vec![Reply::Text("moved here".into())]).await;
    let server = serve(vec![Reply::Redirect {
        code: 307,
        location: format!("{}/new", target.base_url),
    }])
    .await;
    let client = HttpClient::new(Capabilities::from([Capability::net("127.0.0.1")]));
    let response = client
        .get(&format!("{}/old", server.base_url))
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "moved here");
    assert_eq!(target.requests()[0].path, "/new");
}
