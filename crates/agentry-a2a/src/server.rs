//! An agentry agent served over A2A: the agent card and the JSON-RPC
//! endpoint as axum routers, to mount beside other routes (`agentry serve
//! --a2a` mounts them in the HTTP API, behind its API keys).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_server::{DefaultRequestHandler, StaticAgentCard};
use agentry_agent::Agent;
use axum::Router;

use crate::card::{CardInfo, agent_card};
use crate::executor::{Executor, State};
use crate::guarded::Guarded;
use crate::store::{BoundedStore, DEFAULT_MAX_TASK_BYTES, DEFAULT_MAX_TASKS};

/// Where the JSON-RPC endpoint is mounted.
pub const A2A_PATH: &str = "/a2a";

/// How long a destructive call waits for the caller's decision unless told
/// otherwise.
pub const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(600);

/// Runs one caller may have going at once unless told otherwise.
pub const DEFAULT_MAX_RUNNING_PER_CALLER: usize = 8;

/// The two routers: the card, for anyone; the endpoint, for callers with a key.
pub struct A2aRoutes {
    /// `GET /.well-known/agent-card.json`.
    pub card: Router,
    /// `POST /a2a` (JSON-RPC: `SendMessage`, `SendStreamingMessage`,
    /// `GetTask`, `CancelTask`, `SubscribeToTask`). Mount it behind your
    /// key check; that check must set [`PRINCIPAL_HEADER`](crate::PRINCIPAL_HEADER)
    /// to the caller's id, or every caller is one.
    pub rpc: Router,
}

/// An agent to serve over A2A.
pub struct A2aServer {
    agent: Arc<Agent>,
    name: String,
    description: String,
    version: String,
    approval_wait: Duration,
    max_running_per_caller: usize,
    max_tasks: usize,
}

impl A2aServer {
    /// Serve `agent`, named `name` on its card.
    pub fn new(name: impl Into<String>, agent: Agent) -> Self {
        Self {
            agent: Arc::new(agent),
            name: name.into(),
            description: "An agentry agent.".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            approval_wait: DEFAULT_APPROVAL_WAIT,
            max_running_per_caller: DEFAULT_MAX_RUNNING_PER_CALLER,
            max_tasks: DEFAULT_MAX_TASKS,
        }
    }

    /// What the card says the agent does.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The version on the card.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// How long a destructive call waits as `input-required` for the
    /// caller's decision before the run is stopped.
    pub fn approval_wait(mut self, wait: Duration) -> Self {
        self.approval_wait = wait;
        self
    }

    /// Runs one caller may have going at once; a task beyond is `rejected`.
    pub fn max_running_per_caller(mut self, runs: usize) -> Self {
        self.max_running_per_caller = runs.max(1);
        self
    }

    /// Tasks kept in memory; past it the oldest settled one is forgotten.
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks;
        self
    }

    /// The routers, for an agent reached at `base_url` (`http://host:port`,
    /// the card names `{base_url}/a2a`); `keyed` when the endpoint sits
    /// behind bearer keys (the card says so).
    pub async fn routes(self, base_url: &str, keyed: bool) -> A2aRoutes {
        let info = CardInfo {
            name: self.name,
            description: self.description,
            version: self.version,
            url: format!("{}{A2A_PATH}", base_url.trim_end_matches('/')),
            keyed,
        };
        let card = agent_card(&self.agent, &info).await;
        let state = Arc::new(Mutex::new(State::default()));
        let executor = Executor {
            agent: self.agent,
            state: state.clone(),
            wait: self.approval_wait,
            max_live_per_caller: self.max_running_per_caller,
        };
        let owners = state.clone();
        let owner_of: crate::store::OwnerOf = Arc::new(move |task: &str| {
            let state = owners.lock().unwrap_or_else(|p| p.into_inner());
            state.owners.get(task).map(str::to_owned)
        });
        let store = BoundedStore::new(self.max_tasks, DEFAULT_MAX_TASK_BYTES, owner_of);
        let inner = DefaultRequestHandler::new(executor, store)
            .with_capabilities(card.capabilities.clone());
        let handler = Arc::new(Guarded { inner, state });
        A2aRoutes {
            card: a2a_server::agent_card::agent_card_router(Arc::new(StaticAgentCard::new(card))),
            rpc: Router::new().nest(A2A_PATH, a2a_server::jsonrpc::jsonrpc_router(handler)),
        }
    }
}
