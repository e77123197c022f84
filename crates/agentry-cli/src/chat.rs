//! `agentry chat`: an interactive terminal chat on seed 002 turns, with
//! memory in the SQLite file (or PostgreSQL). Replies stream as they are
//! written, each tool call is shown, lines can be edited and recalled
//! (`rustyline`; history kept beside the model cache, or in the file
//! `AGENTRY_CHAT_HISTORY` names), and Ctrl-C stops the
//! reply being written (what was said is kept) without leaving the chat.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agentry::agent::Agent;
use agentry::memory::RecentOpts;
use agentry::skill::ListContext;
use agentry::tool::{Identity, Session};
use agentry::turn::{TurnConfig, TurnError, TurnEvent, TurnEvents, TurnInput};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use crate::args::ModelArgs;
use crate::definition::{AgentArgs, MemoryArgs};

/// The session a chat starts in unless told otherwise.
pub const DEFAULT_SESSION: &str = "main";

/// Arguments of `agentry chat`.
#[derive(clap::Args)]
pub struct ChatArgs {
    /// The session to continue (or start) [default: main].
    #[arg(long)]
    session: Option<String>,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    agent: AgentArgs,
    #[command(flatten)]
    memory: MemoryArgs,
    /// Approve destructive tool calls without asking.
    #[arg(long)]
    yes: bool,
}

const HELP: &str = "/new: a new session · /session NAME: switch to (or start) a session · \
/tools: the agent's tools · /skills: its skills · /exit: leave (also Ctrl-D) · \
Ctrl-C stops a reply";

/// Chat until `/exit` or end of input.
pub async fn run(args: ChatArgs) -> Result<ExitCode, String> {
    let loaded = args.agent.load()?;
    crate::telemetry::start(&loaded)?;
    let choice = crate::definition::ModelChoice {
        prompt_store: true, // the next run starts warm
        ..args.model.choose(&loaded)
    };
    let model = crate::providers::chat_model(&choice).await?;
    let agent = args
        .agent
        .builder(&loaded, model, &choice)
        .await?
        .approver(crate::mcp::CliApprover {
            yes: args.yes,
            durable: false,
        })
        .build()
        .map_err(|e| e.to_string())?;
    let memory = args.memory.open(&loaded).await?;
    let name = loaded.file.name.clone().unwrap_or_else(|| "agentry".into());
    let mut config = TurnConfig::for_agent(name.clone(), agent.clone(), memory);
    let screen = Screen::default();
    config.events = screen.events();
    let user = std::env::var("USER").unwrap_or_else(|_| "you".into());

    let mut session = args.session.unwrap_or_else(|| DEFAULT_SESSION.into());
    let mut editor = DefaultEditor::new().map_err(|e| e.to_string())?;
    let history = std::env::var_os("AGENTRY_CHAT_HISTORY")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| agentry_local::fetch::cache_dir().join("chat_history.txt"));
    let _ = editor.load_history(&history);
    println!("agentry chat · {name} on {} · {HELP}", agent.model_id());
    announce(&config, &session).await;
    loop {
        let prompt = format!("{session}> ");
        let (returned, line) = tokio::task::spawn_blocking(move || {
            let line = editor.readline(&prompt);
            (editor, line)
        })
        .await
        .map_err(|e| e.to_string())?;
        editor = returned;
        let line = match line {
            Ok(line) => line,
            // Ctrl-C at the prompt: a fresh line.
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(error) => return Err(error.to_string()),
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(text);
        if let Some(command) = text.strip_prefix('/') {
            let (command, rest) = command.split_once(' ').unwrap_or((command, ""));
            match (command, rest.trim()) {
                ("exit" | "quit", _) => break,
                ("new", _) => {
                    session = format!("chat-{}", jiff::Zoned::now().strftime("%Y%m%d-%H%M%S"));
                    announce(&config, &session).await;
                }
                ("session", "") => println!("session {session}"),
                ("session", wanted) => match session_name(wanted) {
                    Ok(wanted) => {
                        session = wanted;
                        announce(&config, &session).await;
                    }
                    Err(error) => println!("{error}"),
                },
                ("tools", _) => print_tools(&agent).await,
                ("skills", _) => print_skills(&agent).await,
                ("help", _) => println!("{HELP}"),
                _ => println!("unknown command /{command}: {HELP}"),
            }
            continue;
        }
        let input = TurnInput::new(
            Session::new(session.clone()),
            Identity::new(user.clone()),
            text,
        );
        screen.start();
        let reply = config
            .run_until(input, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await;
        screen.end_line();
        match reply {
            Ok(_) => {}
            Err(TurnError::Stopped { .. }) => println!("[stopped: what was said is kept]"),
            Err(error) => println!("[error: {error}]"),
        }
    }
    if let Some(dir) = history.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = editor.save_history(&history);
    Ok(ExitCode::SUCCESS)
}

/// A session name as the user typed it, or why it cannot be one.
fn session_name(name: &str) -> Result<String, String> {
    let fine = name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/'));
    if fine {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "{name:?} cannot name a session: use letters, digits and - _ . : / (at most 128)"
        ))
    }
}

/// Say which session is on, and how much it holds.
async fn announce(config: &TurnConfig, session: &str) {
    let opts = RecentOpts {
        include_roles: vec!["user".into(), "assistant".into()],
        ..RecentOpts::default()
    };
    match config.memory.store().recent(session, &opts).await {
        Ok(records) if records.is_empty() => println!("session {session}: new"),
        Ok(records) => println!(
            "session {session}: {} earlier message{}",
            records.len(),
            if records.len() == 1 { "" } else { "s" }
        ),
        Err(error) => println!("session {session}: the memory store failed: {error}"),
    }
}

async fn print_tools(agent: &Agent) {
    let mut tools = agent.toolbox().to_vec();
    for source in agent.sources() {
        match source.tools().await {
            Ok(more) => tools.extend(more),
            Err(error) => println!("{}: {error}", source.name()),
        }
    }
    if tools.is_empty() {
        println!("no tools");
    }
    for tool in tools {
        let description = tool.description.as_deref().unwrap_or("");
        println!(
            "{}: {}",
            tool.name,
            description.lines().next().unwrap_or("")
        );
    }
}

async fn print_skills(agent: &Agent) {
    let Some(resolver) = agent.resolver() else {
        return println!("no skills (give a folder with --skills or agent.skills)");
    };
    let skills = resolver
        .list(ListContext {
            messages: &[],
            system: agent.system(),
            model: agent.model_id(),
        })
        .await;
    if skills.is_empty() {
        println!("no skills");
    }
    for skill in skills {
        println!("{}: {}", skill.name, skill.description);
    }
}

/// What the chat writes while a reply runs: the text as it streams, and a
/// line per tool call and per result, each starting on a line of its own.
#[derive(Clone, Default)]
struct Screen {
    /// True when the cursor is at the start of a line.
    at_line_start: Arc<Mutex<bool>>,
}

impl Screen {
    fn start(&self) {
        *self.at_line_start.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }

    fn end_line(&self) {
        let mut at_start = self.at_line_start.lock().unwrap_or_else(|p| p.into_inner());
        if !*at_start {
            println!();
            *at_start = true;
        }
    }

    fn events(&self) -> TurnEvents {
        let screen = self.clone();
        TurnEvents::new(move |event| {
            let mut out = std::io::stdout().lock();
            let mut at_start = screen
                .at_line_start
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            match event {
                TurnEvent::ReplyDelta { text, .. } if !text.is_empty() => {
                    let _ = write!(out, "{text}");
                    *at_start = text.ends_with('\n');
                }
                TurnEvent::ToolCall { call, .. } => {
                    if !*at_start {
                        let _ = writeln!(out);
                    }
                    let _ = writeln!(out, "  ⚙ {}({})", call.name, call.input);
                    *at_start = true;
                }
                TurnEvent::ToolResult { result, .. } => {
                    let mark = if result.is_error { "✗" } else { "→" };
                    let _ = writeln!(out, "  {mark} {}", shorten(&result.output_text(), 300));
                    *at_start = true;
                }
                _ => {}
            }
            let _ = out.flush();
        })
    }
}

/// `text` on one line, cut to `most` characters.
fn shorten(text: &str, most: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(most) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_shown_on_one_short_line() {
        assert_eq!(shorten("a\n  b\tc", 10), "a b c");
        assert_eq!(shorten("abcdef", 3), "abc…");
    }

    #[test]
    fn session_names_are_checked() {
        assert_eq!(session_name("work-2").unwrap(), "work-2");
        assert!(session_name("two words").is_err());
    }
}
