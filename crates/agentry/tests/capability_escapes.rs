//! Capability escapes through the agent's gate, with exact outcomes: `../`
//! traversal, a symlink out of the granted directory, an env var that was
//! not granted, and a tool declaring more than the agent grants.

use std::path::PathBuf;

use agentry::agent::Agent;
use agentry::model::{ScriptedModel, Step, Usage};
use agentry::tool::{Capability, Tool, ToolCall, ToolContext, ToolResult, function};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct PathArg {
    path: String,
}

fn read_file(dir: &PathBuf) -> Tool {
    function("read_file")
        .namespace("fs")
        .description("Read a text file from the notes directory.")
        .arg::<String>("path", "Path relative to the notes directory")
        .capability(Capability::fs_read(dir))
        .handler(|args: PathArg, ctx: &ToolContext| ctx.fs().read_to_string(&args.path))
        .build()
        .unwrap()
}

#[derive(Deserialize)]
struct NameArg {
    name: String,
}

fn read_env() -> Tool {
    function("read_env")
        .namespace("sys")
        .arg::<String>("name", "Variable name")
        .capability(Capability::env("AGENTRY_TEST_VISIBLE"))
        .handler(|args: NameArg, ctx: &ToolContext| ctx.env(&args.name))
        .build()
        .unwrap()
}

async fn run_calls(
    tools: Vec<Tool>,
    grants: Vec<Capability>,
    calls: Vec<ToolCall>,
) -> Vec<ToolResult> {
    let script = ScriptedModel::new()
        .reply(Step::Tool {
            calls,
            text: String::new(),
            tokens: Usage::default(),
        })
        .reply(Step::Final {
            text: "done".into(),
            tokens: Usage::default(),
        });
    let agent = Agent::builder(script)
        .tools(tools)
        .grants(grants.into_iter().collect())
        .build()
        .unwrap();
    let run = agent.run("go").await;
    run.steps[0]
        .calls
        .iter()
        .map(|call| call.result.clone())
        .collect()
}

#[tokio::test]
async fn file_access_stays_inside_the_granted_directory() {
    let root = std::env::temp_dir().join(format!("agentry-escape-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let notes = root.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), "buy milk").unwrap();
    std::fs::write(root.join("secret.txt"), "hunter2").unwrap();
    std::os::unix::fs::symlink(root.join("secret.txt"), notes.join("shortcut.txt")).unwrap();
    let real_root = root.canonicalize().unwrap();
    let real_notes = notes.canonicalize().unwrap();

    let results = run_calls(
        vec![read_file(&notes)],
        vec![Capability::fs_read(&root)],
        vec![
            ToolCall::new("ok", "fs.read_file", json!({"path": "todo.txt"})),
            ToolCall::new("dots", "fs.read_file", json!({"path": "../secret.txt"})),
            ToolCall::new("link", "fs.read_file", json!({"path": "shortcut.txt"})),
            ToolCall::new(
                "abs",
                "fs.read_file",
                json!({"path": root.join("secret.txt")}),
            ),
        ],
    )
    .await;
    let outside = |id: &str, path: std::path::PathBuf| {
        ToolResult::error(
            id,
            format!(
                "tool \"fs.read_file\" failed: \"{}\" is outside the directories granted for reading ({})",
                path.display(),
                real_notes.display()
            ),
        )
    };
    assert_eq!(results[0], ToolResult::ok("ok", json!("buy milk")));
    assert_eq!(results[1], outside("dots", real_root.join("secret.txt")));
    // The symlink is refused by its own name: where it points is not told.
    assert_eq!(results[2], outside("link", real_notes.join("shortcut.txt")));
    assert_eq!(results[3], outside("abs", real_root.join("secret.txt")));
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test]
async fn env_vars_need_their_own_grant() {
    // SAFETY: set before any thread of this test reads the environment.
    unsafe { std::env::set_var("AGENTRY_TEST_VISIBLE", "yes") };
    let results = run_calls(
        vec![read_env()],
        vec![
            Capability::env("AGENTRY_TEST_VISIBLE"),
            Capability::env("HOME"),
        ],
        vec![
            ToolCall::new(
                "granted",
                "sys.read_env",
                json!({"name": "AGENTRY_TEST_VISIBLE"}),
            ),
            ToolCall::new("home", "sys.read_env", json!({"name": "HOME"})),
        ],
    )
    .await;
    assert_eq!(results[0], ToolResult::ok("granted", json!("yes")));
    assert_eq!(
        results[1],
        ToolResult::error(
            "home",
            "tool \"sys.read_env\" failed: env(\"HOME\") is not granted to this tool"
        )
    );
}

#[tokio::test]
async fn a_tool_declaring_more_than_the_grant_does_not_run() {
    let notes = std::env::temp_dir();
    let results = run_calls(
        vec![read_file(&notes)],
        vec![Capability::fs_read(notes.join("only-this-subdir"))],
        vec![ToolCall::new("c", "fs.read_file", json!({"path": "x"}))],
    )
    .await;
    assert_eq!(
        results[0],
        ToolResult::error(
            "c",
            format!(
                "tool \"fs.read_file\" needs fs_read({:?}), which this agent does not grant",
                notes.display().to_string()
            )
        )
    );
}
