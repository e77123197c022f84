//! The two built-in ways through the authorization server's page: a person
//! with a browser (a loopback listener takes the redirect), and a server
//! that approves without one (its redirect is read directly).

use std::time::Duration;

use super::SignIn;

/// The address of a redirect, as the browser would follow it.
fn absolute(base: &str, location: &str) -> Result<String, String> {
    let base = reqwest::Url::parse(base).map_err(|error| error.to_string())?;
    base.join(location)
        .map(String::from)
        .map_err(|error| format!("the authorization server redirected to {location:?}: {error}"))
}

/// Fetch the authorization address without following its redirect; the
/// redirect is the answer.
pub(super) async fn headless(sign_in: SignIn) -> Result<String, String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|error| error.to_string())?;
    let response = client
        .get(&sign_in.url)
        .send()
        .await
        .map_err(|error| format!("the authorization server could not be reached: {error}"))?;
    let status = response.status();
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| {
            format!(
                "the authorization server answered {status} without a redirect: it needs a person to sign in (use a browser)"
            )
        })?;
    absolute(&sign_in.url, location)
}

/// Where the loopback listener listens and which path is the callback.
fn loopback(redirect_uri: &str) -> Result<(std::net::SocketAddr, String), String> {
    let url = reqwest::Url::parse(redirect_uri)
        .map_err(|error| format!("the redirect address {redirect_uri:?} is not valid: {error}"))?;
    let ip = url
        .host_str()
        .and_then(super::loopback_ip)
        .filter(|_| url.scheme() == "http")
        .ok_or_else(|| {
            format!(
                "the redirect address {redirect_uri:?} is not an http loopback one, so no listener here can take it"
            )
        })?;
    let port = url.port().unwrap_or(80);
    Ok(((ip, port).into(), url.path().to_owned()))
}

/// Print the address, open it in the system's browser where there is one,
/// and wait (up to `limit`) for the authorization server to send the
/// browser back to the loopback redirect address.
pub(super) async fn through_browser(sign_in: SignIn, limit: Duration) -> Result<String, String> {
    let (address, path) = loopback(&sign_in.redirect_uri)?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("listening for the sign-in on {address}: {error}"))?;
    // Both come from the servers: escaped, they cannot rewrite the terminal.
    eprintln!(
        "\nTo sign in to the MCP server {}, open this address in a browser:\n\n  {}\n",
        crate::client::escaped(&sign_in.server),
        crate::client::escaped(&sign_in.url)
    );
    open_browser(&sign_in.url);
    // Only the answer to this sign-in (its `state`) is taken: another page
    // or process calling the listener cannot end it.
    let state = query_value(&sign_in.url, "state");
    let (sender, receiver) = tokio::sync::mpsc::channel::<String>(1);
    let base = sign_in.redirect_uri.clone();
    let app = axum::Router::new().route(
        &path,
        axum::routing::get(move |uri: axum::http::Uri| {
            let (sender, base, state) = (sender.clone(), base.clone(), state.clone());
            async move {
                let query = uri.query().unwrap_or_default().to_owned();
                let answered = query.split('&').any(|pair| {
                    pair.starts_with("code=") || pair.starts_with("error=")
                });
                let ours = query_value(&format!("http://x/?{query}"), "state") == state;
                if !answered || !ours {
                    return axum::response::Html("Waiting for the sign-in.".to_owned());
                }
                let mut full = base.split('?').next().unwrap_or_default().to_owned();
                full.push('?');
                full.push_str(&query);
                let _ = sender.send(full).await;
                axum::response::Html(
                    "<!doctype html><title>Signed in</title><p>Done: you may close this tab and go back to agentry.</p>"
                        .to_owned(),
                )
            }
        }),
    );
    let stop = tokio_util::sync::CancellationToken::new();
    // Abandoned (a caller's time limit), the listener closes as well.
    let _close_on_drop = stop.clone().drop_guard();
    let server = tokio::spawn(
        axum::serve(listener, app)
            .with_graceful_shutdown(stop.clone().cancelled_owned())
            .into_future(),
    );
    let mut receiver = receiver;
    let answer = tokio::time::timeout(limit, receiver.recv()).await;
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    match answer {
        Ok(Some(url)) => Ok(url),
        Ok(None) => Err("the sign-in listener stopped".into()),
        Err(_) => Err(format!(
            "nobody signed in to {} within {} s",
            sign_in.server,
            limit.as_secs()
        )),
    }
}

/// The value of `key` in `url`'s query, decoded.
fn query_value(url: &str, key: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(name, _)| name == key)
        .map(|(_, value)| value.into_owned())
}

/// Open `url` in the system's browser, quietly, when a person is at a
/// terminal: where there is no browser (a server, a container), the printed
/// address is the way.
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return;
    }
    let _ = std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_http_loopback_redirect_can_be_listened_for() {
        let (address, path) = loopback("http://127.0.0.1:8123/callback").unwrap();
        assert_eq!(address.to_string(), "127.0.0.1:8123");
        assert_eq!(path, "/callback");
        assert!(loopback("http://localhost:9/cb").is_ok());
        assert!(loopback("https://app.example.com/callback").is_err());
        assert!(loopback("http://10.0.0.1:80/callback").is_err());
    }

    #[tokio::test]
    async fn an_abandoned_sign_in_closes_its_listener() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let sign_in = SignIn {
            server: "notes".into(),
            url: "http://127.0.0.1:9/authorize?state=s".into(),
            redirect_uri: format!("http://127.0.0.1:{port}/callback"),
        };
        let waited = tokio::time::timeout(
            Duration::from_millis(300),
            through_browser(sign_in, Duration::from_secs(60)),
        )
        .await;
        assert!(waited.is_err(), "given up on");
        let mut free = false;
        for _ in 0..50 {
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                free = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(free, "the listener on {port} closed");
    }

    #[tokio::test]
    async fn the_browser_comes_back_to_the_listener() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");
        let sign_in = SignIn {
            server: "notes".into(),
            url: "http://127.0.0.1:9/authorize?state=xyz".into(),
            redirect_uri: redirect_uri.clone(),
        };
        let waiting = tokio::spawn(through_browser(sign_in, Duration::from_secs(20)));
        let browser = reqwest::Client::new();
        // A forged answer (another state) does not end the sign-in.
        let mut forged = None;
        for _ in 0..100 {
            match browser
                .get(format!("{redirect_uri}?code=evil&state=other"))
                .send()
                .await
            {
                Ok(response) => {
                    forged = Some(response.text().await.unwrap());
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        assert_eq!(forged.unwrap(), "Waiting for the sign-in.");
        let mut page = None;
        for _ in 0..100 {
            match browser
                .get(format!(
                    "{redirect_uri}?code=abc&state=xyz&iss=http%3A%2F%2Fas"
                ))
                .send()
                .await
            {
                Ok(response) => {
                    page = Some(response.text().await.unwrap());
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        assert!(page.unwrap().contains("you may close this tab"));
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            format!("{redirect_uri}?code=abc&state=xyz&iss=http%3A%2F%2Fas")
        );
    }
}
