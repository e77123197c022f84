//! `agentry chat` driven as a person drives it: in a terminal (`tmux`), keys
//! sent and the screen read back. With the offline model: the slash
//! commands, history recall with the Up key, and memory kept across runs.
//! With the local model: a streamed reply with its tool call shown, and
//! Ctrl-C stopping a reply without leaving the chat.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{AGENTRY, Dir, models_present, tmux_present};

/// A terminal running one program, on a tmux server of its own.
struct Terminal {
    socket: String,
    dir: PathBuf,
}

impl Terminal {
    /// Start `agentry chat ARGS` in a 160×50 terminal, with its memory and
    /// history in a fresh directory `dir` (kept when `dir` is given).
    fn chat(tag: &str, dir: &Path, args: &[&str]) -> Self {
        let socket = format!("agentry-chat-{tag}-{}", std::process::id());
        let mut line = format!(
            "AGENTRY_CHAT_HISTORY={} {AGENTRY} chat --memory {} --dir {}",
            dir.join("history.txt").display(),
            dir.join("memory.db").display(),
            dir.display()
        );
        for arg in args {
            line.push(' ');
            line.push_str(arg);
        }
        // Keep the pane after the program exits, to read its last words.
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "50",
            ])
            .arg(format!("{line}; echo '[exited]'; sleep 600"))
            .status()
            .unwrap();
        assert!(status.success());
        Self {
            socket,
            dir: dir.to_owned(),
        }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Type `text` (literally), then the keys named in `keys` (`Enter`, `Up`, `C-c`).
    fn send(&self, text: &str, keys: &[&str]) {
        if !text.is_empty() {
            self.tmux(&["send-keys", "-l", text]);
        }
        for key in keys {
            self.tmux(&["send-keys", key]);
        }
    }

    /// The whole screen and its scrollback, as text.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-S", "-1000"])
    }

    /// Wait until the screen satisfies `done`; panic with the screen after `limit`.
    fn wait_for(&self, what: &str, limit: Duration, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if started.elapsed() > limit {
                panic!("waited {limit:?} for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
        let _ = &self.dir;
    }
}

fn count(screen: &str, needle: &str) -> usize {
    screen.matches(needle).count()
}

#[test]
fn the_slash_commands_history_and_memory_work_in_a_terminal() {
    if !tmux_present() || !models_present(false) {
        return;
    }
    let dir = Dir::new("chat-offline");
    let term = Terminal::chat("offline", &dir.0, &["--provider", "offline"]);
    term.wait_for("the prompt", Duration::from_secs(60), |s| {
        s.contains("main> ")
    });
    assert!(term.screen().contains("session main: new"));

    term.send("hello there", &["Enter"]);
    term.wait_for("the reply", Duration::from_secs(30), |s| {
        count(s, "[no llm provider]") == 1
    });
    // Up recalls the last line; Enter sends it again.
    term.send("", &["Up", "Enter"]);
    let screen = term.wait_for("the second reply", Duration::from_secs(30), |s| {
        count(s, "[no llm provider]") == 2
    });
    assert_eq!(count(&screen, "main> hello there"), 2, "{screen}");

    term.send("/tools", &["Enter"]);
    term.wait_for("the tool list", Duration::from_secs(10), |s| {
        s.contains("calculator: Evaluate an arithmetic expression and return the number.")
            && s.contains("read_file: ")
    });
    term.send("/skills", &["Enter"]);
    term.wait_for("no skills", Duration::from_secs(10), |s| {
        s.contains("no skills (give a folder with --skills or agent.skills)")
    });
    term.send("/session work", &["Enter"]);
    term.wait_for("the new session", Duration::from_secs(10), |s| {
        s.contains("session work: new")
    });
    term.send("/session main", &["Enter"]);
    term.wait_for("the old session", Duration::from_secs(10), |s| {
        s.contains("session main: 4 earlier messages")
    });
    term.send("/session two words", &["Enter"]);
    term.wait_for("a refusal", Duration::from_secs(10), |s| {
        s.contains("\"two words\" cannot name a session")
    });
    term.send("/new", &["Enter"]);
    term.wait_for("a fresh session", Duration::from_secs(10), |s| {
        s.contains("session chat-") && s.contains(": new")
    });
    term.send("/frobnicate", &["Enter"]);
    term.wait_for("the help", Duration::from_secs(10), |s| {
        s.contains("unknown command /frobnicate: /new: a new session")
    });
    term.send("/exit", &["Enter"]);
    term.wait_for("the exit", Duration::from_secs(10), |s| {
        s.contains("[exited]")
    });
    drop(term);

    // A second run finds the session, and the history, where they were left.
    let term = Terminal::chat("offline2", &dir.0, &["--provider", "offline"]);
    term.wait_for("the prompt", Duration::from_secs(60), |s| {
        s.contains("session main: 4 earlier messages") && s.contains("main> ")
    });
    term.send("", &["Up"]);
    term.wait_for("the recalled line", Duration::from_secs(10), |s| {
        s.contains("main> /exit")
    });
    term.send("", &["C-u"]);
    term.send("", &["C-d"]);
    term.wait_for("the exit on Ctrl-D", Duration::from_secs(10), |s| {
        s.contains("[exited]")
    });
}

#[test]
fn the_local_model_streams_shows_tool_calls_and_stops_on_ctrl_c() {
    if !tmux_present() || !models_present(true) {
        return;
    }
    let dir = Dir::new("chat-local");
    // The small model: this tests the terminal, not the answers.
    let term = Terminal::chat(
        "local",
        &dir.0,
        &["--session", "calc", "--model", common::SMALL],
    );
    term.wait_for("the model to load", Duration::from_secs(180), |s| {
        s.contains("calc> ")
    });
    term.send("What is 17 * 23?", &["Enter"]);
    let screen = term.wait_for("the answer", Duration::from_secs(300), |s| {
        count(s, "calc> ") == 2
    });
    assert!(screen.contains("⚙ calculator("), "{screen}");
    assert!(screen.contains("→ 391"), "{screen}");
    let answer = screen
        .split("→ 391")
        .nth(1)
        .and_then(|rest| rest.split("calc> ").next())
        .unwrap_or("");
    assert!(
        answer.contains("391"),
        "the reply uses the result:\n{screen}"
    );

    // A long reply, stopped once it has begun to stream.
    term.send(
        "Without using any tool, write a long story of at least 400 words about a lighthouse keeper.",
        &["Enter"],
    );
    // The line editor echoes the question a moment after it is typed (later on a loaded machine).
    let before = term.wait_for("the question to be echoed", Duration::from_secs(60), |s| {
        s.contains("lighthouse keeper.")
    });
    let question_at = before.rfind("lighthouse keeper.").unwrap();
    term.wait_for("the story to start", Duration::from_secs(300), |s| {
        s.len() > question_at + 120 && s.rfind("lighthouse keeper.") == Some(question_at)
    });
    term.send("", &["C-c"]);
    let screen = term.wait_for("the stop", Duration::from_secs(60), |s| {
        s.contains("[stopped: what was said is kept]") && count(s, "calc> ") == 3
    });
    assert!(
        !screen.contains("[exited]"),
        "Ctrl-C left the chat:\n{screen}"
    );
    // Still chatting, and the stopped reply was stored with the rest.
    term.send("/session calc", &["Enter"]);
    term.wait_for("the stored messages", Duration::from_secs(30), |s| {
        s.contains("session calc: 4 earlier messages")
    });
    term.send("/exit", &["Enter"]);
    term.wait_for("the exit", Duration::from_secs(30), |s| {
        s.contains("[exited]")
    });
}
