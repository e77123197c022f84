//! The MCP client against the reference server, `@modelcontextprotocol/server-everything`
//! from npm, over stdio and Streamable HTTP.

mod support;

use std::time::Duration;

use agentry_core::tool::Toolbox;
use agentry_mcp::{McpClient, McpServerConfig};
use serde_json::json;
use support::{call, free_port, peers};

async fn everything_stdio() -> Option<McpClient> {
    let (node, everything) = peers()?;
    let config = McpServerConfig::stdio("everything", &format!("{node} {everything} stdio"));
    Some(
        McpClient::connect(config)
            .await
            .expect("the reference server starts"),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_servers_tools_become_agentry_tools_over_stdio() {
    let Some(client) = everything_stdio().await else {
        return;
    };
    let tools = client.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    for expected in [
        "everything.echo",
        "everything.get-sum",
        "everything.get-structured-content",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let echo = tools
        .iter()
        .find(|tool| tool.name == "everything.echo")
        .unwrap();
    assert!(echo.pass_input, "MCP tools take their input as given");
    assert!(
        echo.hints.destructive,
        "an untrusted server's tools need approval"
    );
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");

    let toolbox = Toolbox::for_agent(tools).unwrap();
    let echoed = call(&toolbox, "everything.echo", json!({"message": "hi"})).await;
    assert_eq!((echoed.is_error, echoed.output), (false, json!("Echo: hi")));
    let sum = call(&toolbox, "everything.get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(sum.output, json!("The sum of 2 and 3 is 5."));
    // The server's own validation of bad input comes back as an error result.
    let bad = call(&toolbox, "everything.get-sum", json!({"a": "two"})).await;
    assert!(bad.is_error, "{bad:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_content_is_checked_against_the_output_schema() {
    let Some(client) = everything_stdio().await else {
        return;
    };
    let tools = client.tools().await.unwrap();
    let weather = tools
        .iter()
        .find(|tool| tool.name == "everything.get-structured-content")
        .unwrap();
    let schema = weather.output_schema.clone().expect("an output schema");
    let toolbox = Toolbox::for_agent(tools).unwrap();
    let result = call(
        &toolbox,
        "everything.get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    assert!(result.output["temperature"].is_number(), "{result:?}");
    assert!(jsonschema::is_valid(&schema, &result.output));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn annotated_and_mixed_content_reads_as_blocks() {
    let Some(client) = everything_stdio().await else {
        return;
    };
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let result = call(
        &toolbox,
        "everything.get-annotated-message",
        json!({"messageType": "success", "includeImage": true}),
    )
    .await;
    assert!(!result.is_error, "{result:?}");
    let blocks = result.output.as_array().expect("text and an image");
    assert_eq!(blocks[0]["type"], "text");
    assert_eq!(blocks[1]["type"], "image");
    assert_eq!(blocks[1]["mime_type"], "image/png");
    assert!(
        blocks[1]["bytes"].as_u64().unwrap() > 0,
        "described, not pasted as base64"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_call_is_cancelled_at_its_timeout_and_the_server_stays_usable() {
    let Some((node, everything)) = peers() else {
        return;
    };
    let config = McpServerConfig::stdio("everything", &format!("{node} {everything} stdio"))
        .call_timeout(Duration::from_secs(1));
    let client = McpClient::connect(config).await.unwrap();
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let slow = call(
        &toolbox,
        "everything.trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    )
    .await;
    assert!(slow.is_error);
    assert!(
        slow.output
            .as_str()
            .unwrap()
            .contains("did not answer within 1s; the request was cancelled"),
        "{slow:?}"
    );
    let echoed = call(
        &toolbox,
        "everything.echo",
        json!({"message": "still here"}),
    )
    .await;
    assert_eq!(echoed.output, json!("Echo: still here"));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_killed_mid_call_gives_an_error_and_is_restarted() {
    let Some((node, everything)) = peers() else {
        return;
    };
    let pid_file = std::env::temp_dir().join(format!("agentry-mcp-pid-{}", std::process::id()));
    let script = format!(
        "echo $$ > {}; exec {node} {everything} stdio",
        pid_file.display()
    );
    let config = McpServerConfig::command("everything", "sh", ["-c", script.as_str()]);
    let client = McpClient::connect(config).await.unwrap();
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        std::process::Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap();
    });
    let cut = call(
        &toolbox,
        "everything.trigger-long-running-operation",
        json!({"duration": 10, "steps": 10}),
    )
    .await;
    killer.await.unwrap();
    assert!(cut.is_error, "{cut:?}");
    assert!(
        cut.output
            .as_str()
            .unwrap()
            .contains("the MCP server everything is down"),
        "{cut:?}"
    );
    // The next call starts a new server and goes through.
    let echoed = call(&toolbox, "everything.echo", json!({"message": "again"})).await;
    assert_eq!(echoed.output, json!("Echo: again"), "{echoed:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_server_over_streamable_http() {
    let Some((node, everything)) = peers() else {
        return;
    };
    let port = free_port();
    let mut server = tokio::process::Command::new(&node)
        .args([everything.as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut connected = None;
    for _ in 0..100 {
        let config = McpServerConfig::http("everything", &url).bearer("secret-token");
        if let Ok(client) = McpClient::connect(config).await {
            connected = Some(client);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let client = connected.expect("the HTTP server answers");
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let sum = call(&toolbox, "everything.get-sum", json!({"a": 20, "b": 22})).await;
    assert_eq!(sum.output, json!("The sum of 20 and 22 is 42."));
    client.close().await;
    server.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_prints_garbage_on_stdout() {
    let Some((node, everything)) = peers() else {
        return;
    };
    // Lines that are not JSON-RPC before the first message are skipped.
    let script = format!(
        "echo 'Starting up... not JSON'; echo '{{\"jsonrpc\": 7}}'; exec {node} {everything} stdio"
    );
    let config = McpServerConfig::command("noisy", "sh", ["-c", script.as_str()]);
    let client = McpClient::connect(config).await.unwrap();
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let echoed = call(&toolbox, "noisy.echo", json!({"message": "hi"})).await;
    assert_eq!(echoed.output, json!("Echo: hi"));
    client.close().await;

    // Nothing but garbage: the handshake gives up at its timeout.
    let junk = McpServerConfig::command(
        "junk",
        "sh",
        ["-c", "while true; do echo garbage; sleep 0.1; done"],
    )
    .connect_timeout(Duration::from_secs(2));
    let error = McpClient::connect(junk).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the MCP handshake failed: no answer within 2s"
    );

    // A server that answers a call with garbage (and a reply to another id):
    // an error result at the call timeout, never a hang.
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/garbage_server.js"
    );
    let garbage = McpServerConfig::command("garbage", node.as_str(), [fixture])
        .call_timeout(Duration::from_secs(1));
    let client = McpClient::connect(garbage).await.unwrap();
    let toolbox = Toolbox::for_agent(client.tools().await.unwrap()).unwrap();
    let result = call(&toolbox, "garbage.echo", json!({})).await;
    assert!(result.is_error);
    assert_eq!(
        result.output,
        json!(
            "tool \"garbage.echo\" failed: the MCP server garbage did not answer within 1s; the request was cancelled"
        )
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn prompts_resources_and_templates_are_each_opted_in() {
    let Some((node, everything)) = peers() else {
        return;
    };
    let command = format!("{node} {everything} stdio");
    let extras = |config: McpServerConfig| async move {
        let client = McpClient::connect(config).await.unwrap();
        let names: Vec<String> = client
            .tools()
            .await
            .unwrap()
            .into_iter()
            .map(|tool| tool.name)
            .filter(|name| {
                name.contains(".prompt_")
                    || name.contains(".template_")
                    || name.contains("_resource")
            })
            .collect();
        client.close().await;
        names
    };
    let plain = extras(McpServerConfig::stdio("everything", &command)).await;
    assert!(plain.is_empty(), "{plain:?}");
    let resources = extras(McpServerConfig::stdio("everything", &command).with_resources()).await;
    assert_eq!(
        resources,
        ["everything.list_resources", "everything.read_resource"]
    );
    let templates = extras(McpServerConfig::stdio("everything", &command).with_templates()).await;
    assert!(
        !templates.is_empty()
            && templates
                .iter()
                .all(|name| name.starts_with("everything.template_")),
        "{templates:?}"
    );
    let prompts = extras(McpServerConfig::stdio("everything", &command).with_prompts()).await;
    assert!(
        !prompts.is_empty()
            && prompts
                .iter()
                .all(|name| name.starts_with("everything.prompt_")),
        "{prompts:?}"
    );
}
