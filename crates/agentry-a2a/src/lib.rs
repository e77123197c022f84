//! # agentry-a2a
//!
//! A2A (the Agent2Agent protocol, 1.0) for agentry, on the Linux
//! Foundation's Rust SDK (`a2a-lf`, `a2a-server-lf`, `a2a-client-lf`):
//!
//! - [`A2aServer`]: an agent served over A2A. Its card
//!   (`/.well-known/agent-card.json`) lists its tools and skills; each
//!   `SendMessage` or `SendStreamingMessage` is a task running the agent,
//!   streamed as status updates, answered with an `answer` artifact; a
//!   destructive call leaves the task `input-required` until the caller
//!   approves or denies it; tasks can be read, followed and canceled, by
//!   the caller who started them only.
//! - [`remote_agent`]: a remote A2A agent as a tool an agentry agent calls.
//!
//! ```
//! use agentry_a2a::A2aServer;
//! use agentry_agent::Agent;
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new().reply(Step::Final { text: "Hi!".into(), tokens: Usage::new(3, 1) });
//! let agent = Agent::builder(model).build().unwrap();
//! let routes = A2aServer::new("greeter", agent)
//!     .description("Says hello.")
//!     .routes("http://127.0.0.1:8080", false)
//!     .await;
//! let app = routes.card.merge(routes.rpc); // an axum Router: serve it
//! # let _ = app;
//! # });
//! ```

#![warn(missing_docs)]

mod card;
mod client;
mod conversations;
mod executor;
mod guarded;
mod server;
mod store;

pub use card::{CardInfo, agent_card};
pub use client::{RemoteAgent, remote_agent};
pub use executor::PRINCIPAL_HEADER;
pub use server::{
    A2A_PATH, A2aRoutes, A2aServer, DEFAULT_APPROVAL_WAIT, DEFAULT_MAX_RUNNING_PER_CALLER,
};
pub use store::{DEFAULT_MAX_TASK_BYTES, DEFAULT_MAX_TASKS};

/// `text` cut to at most `max` bytes (at a character's edge), marked with
/// `…` when cut.
pub(crate) fn clip(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}
