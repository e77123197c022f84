//! What the parent and a child process say to each other: one [`Request`]
//! as a JSON line on the child's stdin, one [`Response`] as a JSON line on
//! the descriptor the child keeps for answers (its original stdout).

use std::path::PathBuf;

use agentry_core::tool::{Capabilities, Identity, Session};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Limits;

/// The environment variable that marks a process as a sandbox's child.
pub const CHILD_ENV: &str = "AGENTRY_SANDBOX_CHILD";

/// One call for a child to run.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    /// The tool's name, looked up among the tools the child registered.
    pub tool: String,
    /// The validated input.
    pub input: Value,
    /// What the tool may touch: its declared capabilities ∩ the grants.
    pub capabilities: Capabilities,
    /// The environment variables the capabilities grant, with their values.
    pub env: Vec<(String, String)>,
    /// The call's session, sender and extras (typed state stays behind).
    pub session: Option<Session>,
    /// Who sent the request.
    pub sender: Option<Identity>,
    /// Harness-owned extras.
    pub extras: Map<String, Value>,
    /// Resource limits.
    pub limits: Limits,
    /// Run the call even where the kernel cannot confine it.
    pub allow_unconfined: bool,
    /// The directory the call starts in.
    pub working_dir: PathBuf,
}

/// What a child answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// The tool's output.
    Ok(Value),
    /// The tool's error, or why the child did not run it.
    Error(String),
}

/// What a child asks the parent over the relay (its stdin, a Unix socket).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelayRequest {
    /// The descriptor sent along is the child's seccomp listener for
    /// `connect`: the parent answers each of the tool's connects.
    Listener,
    /// Connect to a host (a name or an address) and port.
    Connect {
        /// The host.
        host: String,
        /// The port.
        port: u16,
    },
}

/// What the parent answers over the relay.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelayReply {
    /// The listener is taken: connects are relayed from now on.
    Ready,
    /// The descriptor sent along is the connected socket.
    Connected,
    /// The grants do not allow it: why.
    Refused(String),
    /// Resolving or connecting failed: why.
    Failed(String),
}
