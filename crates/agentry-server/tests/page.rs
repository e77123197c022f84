//! The web chat page at `/`, in a real browser: headless Chromium (the
//! Debian package) driven by `npm/web/drive-chat-page.mjs` (playwright-core)
//! against this server with a scripted model that calls a tool and answers
//! in Markdown laced with script injections. The test reads the rendered
//! DOM the driver reports, and keeps a screenshot in
//! `target/test-artifacts/chat-page-scripted.png`.

mod support;

use std::path::PathBuf;

use agentry_agent::Agent;
use agentry_core::model::{ScriptedModel, Step, Usage};
use agentry_core::tool::{ToolCall, function};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The driver, when Chromium and playwright-core are installed; loudly `None`
/// otherwise (a panic under `AGENTRY_REQUIRE_BROWSER=1`).
fn driver() -> Option<PathBuf> {
    let script = repo().join("npm/web/drive-chat-page.mjs");
    let ready = PathBuf::from("/usr/bin/chromium").exists()
        && repo().join("npm/node_modules/playwright-core").exists();
    if ready {
        return Some(script);
    }
    if std::env::var("AGENTRY_REQUIRE_BROWSER").as_deref() == Ok("1") {
        panic!(
            "Chromium or playwright-core is missing and AGENTRY_REQUIRE_BROWSER=1: run scripts/setup"
        );
    }
    eprintln!("\n*** SKIPPED: run scripts/setup (chromium, npm ci) to test the chat page ***\n");
    None
}

const ANSWER: &str = "# Result\n\nThe **answer** is `391`, see [the docs](https://example.com/docs).\n\n\
- first point\n- second point\n\n\
<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=2</script> \
[click me](javascript:window.__pwned=3)";

#[tokio::test(flavor = "multi_thread")]
async fn the_page_streams_a_reply_shows_the_tool_call_and_renders_markdown_safely() {
    let Some(driver) = driver() else { return };
    let multiply = function("multiply")
        .description("Multiply two numbers.")
        .arg::<i64>("a", "a")
        .arg::<i64>("b", "b")
        .handler(|v: Value| Ok::<_, String>(v["a"].as_i64().unwrap() * v["b"].as_i64().unwrap()))
        .build()
        .unwrap();
    let model = ScriptedModel::new()
        .reply(Step::Tool {
            calls: vec![ToolCall::new(
                "c1",
                "utils.multiply",
                json!({"a": 17, "b": 23}),
            )],
            text: String::new(),
            tokens: Usage::new(10, 5),
        })
        .reply(Step::Final {
            text: ANSWER.into(),
            tokens: Usage::new(12, 40),
        });
    let agent = Agent::builder(model).tool(multiply).build().unwrap();
    let server = support::serve_agent(agent, |s| s).await;

    let screenshot = repo().join("target/test-artifacts/chat-page-scripted.png");
    let _ = std::fs::remove_file(&screenshot);
    let report = drive(
        &driver,
        &server,
        &["--message", "What is 17 * 23? <b>bold?</b>"],
        &screenshot,
    )
    .await;
    assert!(screenshot.exists(), "the screenshot is kept");

    let live = &report["live"];
    let roles: Vec<&str> = live["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{report:#}");
    // The user's HTML is text, not markup.
    assert_eq!(
        live["messages"][0]["text"], "What is 17 * 23? <b>bold?</b>",
        "{report:#}"
    );
    // The tool call, folded, with its arguments and result.
    let calls = live["toolCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{report:#}");
    assert_eq!(calls[0]["name"], "utils.multiply");
    assert_eq!(calls[0]["open"], false);
    let arguments: Value = serde_json::from_str(calls[0]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"a": 17, "b": 23}));
    assert_eq!(calls[0]["result"], "391");
    // Markdown became elements; the injections stayed text.
    let html = live["messages"][1]["html"].as_str().unwrap();
    for element in [
        "<h1>Result</h1>",
        "<strong>answer</strong>",
        "<code>391</code>",
        "<li>first point</li>",
    ] {
        assert!(html.contains(element), "{element} in {html}");
    }
    let text = live["messages"][1]["text"].as_str().unwrap();
    assert!(
        text.contains("<img src=x onerror=\"window.__pwned=1\">"),
        "{text}"
    );
    assert!(text.contains("<script>window.__pwned=2</script>"), "{text}");
    assert_eq!(
        live["elements"],
        json!({"script": 0, "img": 0, "iframe": 0}),
        "{report:#}"
    );
    let links = live["links"].as_array().unwrap();
    assert_eq!(links.len(), 1, "only the https link is a link: {report:#}");
    assert_eq!(links[0]["href"], "https://example.com/docs");
    assert_eq!(links[0]["rel"], "noopener noreferrer");
    assert_eq!(report["pwned"], Value::Null);

    // After a reload the conversation comes back from the server.
    let reloaded = &report["reloaded"];
    let texts = |state: &Value| -> Vec<String> {
        state["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["text"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(texts(reloaded), texts(live), "{report:#}");
    assert_eq!(
        reloaded["elements"],
        json!({"script": 0, "img": 0, "iframe": 0})
    );

    // Nothing failed in the page; the one 401 is the page asking whether it needs a key.
    assert_eq!(report["consoleErrors"], json!([]), "{report:#}");
    assert_eq!(report["pageErrors"], json!([]), "{report:#}");
    let network = report["networkErrors"].as_array().unwrap();
    assert_eq!(network.len(), 1, "{report:#}");
    assert_eq!(network[0]["status"], 401);
    assert!(network[0]["url"].as_str().unwrap().ends_with("/v1/models"));

    // And the server stored both sides under the key's session.
    let session = report["sessionId"].as_str().unwrap();
    let stored = server
        .get_json(&format!("/v1/sessions/{session}/messages"), "alice-key")
        .await;
    assert_eq!(
        stored["messages"].as_array().unwrap().len(),
        2,
        "{stored:#}"
    );
    let other = server
        .get(&format!("/v1/sessions/{session}/messages"), Some("bob-key"))
        .await;
    assert_eq!(other.status(), 404, "another key cannot read it");
}

#[tokio::test]
async fn the_page_is_served_without_a_key_and_may_run_only_its_own_scripts() {
    let server = support::serve(support::DripModel::new("hi", 1), |s| s).await;
    for (path, kind) in [
        ("/", "text/html"),
        ("/page/chat.js", "text/javascript"),
        ("/page/chat.css", "text/css"),
    ] {
        let response = server.get(path, None).await;
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers();
        assert!(headers["content-type"].to_str().unwrap().starts_with(kind));
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("script-src 'self'"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert!(policy.contains("connect-src 'self'"), "{policy}");
    }
    let page = server.get("/", None).await.text().await.unwrap();
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "nothing fetched from elsewhere"
    );
}

/// A turn that waits for approval in the page: the prompt shows what the
/// agent wants to run; Approve (or Deny with a reason) goes on in place.
async fn approve_in_the_page(decide: &str) -> (Value, support::Running) {
    use agentry_store::SqliteStore;
    use std::sync::Arc;
    let driver = driver().expect("checked by the caller");
    let model = support::deleting_model("old.log", "I will delete it.", "**Done**: ");
    let delete = support::delete_tool(Arc::default());
    let agent = Agent::builder(model).tool(delete).build().unwrap();
    let dir =
        std::env::temp_dir().join(format!("agentry-page-runs-{}-{decide}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let journal = Arc::new(SqliteStore::open(dir.join("runs.db")).unwrap());
    let server = support::serve_agent(agent, |s| s.durable_runs(journal)).await;
    let screenshot = repo().join(format!(
        "target/test-artifacts/chat-page-approval-{decide}.png"
    ));
    let message = ["--message", "Please delete old.log", "--decide", decide];
    (drive(&driver, &server, &message, &screenshot).await, server)
}

/// The driver against `server` with alice's key, `args` and a screenshot
/// saved to `screenshot`: its report, or a failure with what it said.
async fn drive(
    driver: &std::path::Path,
    server: &support::Running,
    args: &[&str],
    screenshot: &std::path::Path,
) -> Value {
    std::fs::create_dir_all(screenshot.parent().unwrap()).unwrap();
    let output = tokio::process::Command::new("node")
        .arg(driver)
        .args(["--url", &server.url, "--key", "alice-key"])
        .args(args)
        .arg("--screenshot")
        .arg(screenshot)
        .args(["--timeout-ms", "60000"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the driver failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_asks_before_a_destructive_call_and_goes_on_when_approved() {
    if driver().is_none() {
        return;
    }
    let (report, server) = approve_in_the_page("approve").await;
    // The prompt, before the decision.
    let waiting = &report["waitingSeen"][0];
    let approvals = waiting["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{report:#}");
    assert_eq!(approvals[0]["callId"], "c1");
    assert_eq!(
        approvals[0]["text"],
        "The agent wants to run delete needs your approval."
    );
    let input: Value = serde_json::from_str(approvals[0]["input"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"path": "old.log"}));
    assert_eq!(
        waiting["toolCalls"][0]["result"],
        Value::Null,
        "not run yet"
    );
    // After it: the result and the answer in the same reply, no prompt left.
    let live = &report["live"];
    assert_eq!(live["approvals"], json!([]), "{report:#}");
    assert_eq!(
        live["toolCalls"][0]["result"], "deleted old.log",
        "{report:#}"
    );
    let texts: Vec<&str> = live["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "Please delete old.log",
            "I will delete it.\n\nDone: deleted old.log"
        ],
        "{report:#}"
    );
    assert!(
        live["messages"][1]["html"]
            .as_str()
            .unwrap()
            .contains("<strong>Done</strong>")
    );
    // Reloaded from the server: the question, what the turn said before it
    // stopped (stored with the turn), and the answer (stored on approval).
    let reloaded: Vec<&str> = report["reloaded"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        reloaded,
        [
            "Please delete old.log",
            "I will delete it.",
            "Done: deleted old.log"
        ]
    );
    assert_eq!(report["consoleErrors"], json!([]), "{report:#}");
    assert_eq!(report["pageErrors"], json!([]), "{report:#}");
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_denies_with_a_reason_and_the_agent_reads_it() {
    if driver().is_none() {
        return;
    }
    let (report, _server) = approve_in_the_page("deny").await;
    let live = &report["live"];
    assert_eq!(live["approvals"], json!([]), "{report:#}");
    assert_eq!(live["toolCalls"][0]["error"], true, "{report:#}");
    assert_eq!(
        live["toolCalls"][0]["result"],
        "tool \"delete\" was not approved: Not this one, thanks."
    );
    let answer = live["messages"][1]["text"].as_str().unwrap();
    assert!(
        answer.ends_with("Done: tool \"delete\" was not approved: Not this one, thanks."),
        "{answer}"
    );
}
