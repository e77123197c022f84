//! A2A in the program: remote agents as tools (`--a2a [NAME=]URL`,
//! `[a2a.agents.NAME]`), and the served agent's A2A face (`agentry serve
//! --a2a`).

use std::collections::BTreeMap;
use std::time::Duration;

use agentry::tool::Tool;
use agentry_a2a::RemoteAgent;
use serde::Deserialize;

use crate::config::Loaded;

/// `[a2a]`: remote agents.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aSection {
    /// `[a2a.agents.NAME]`: each a tool named NAME.
    #[serde(default)]
    pub agents: BTreeMap<String, A2aAgentTable>,
}

/// `[a2a.agents.NAME]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aAgentTable {
    /// The agent's base URL (its card at `/.well-known/agent-card.json`).
    pub url: String,
    /// The environment variable holding its bearer token.
    pub bearer_env: Option<String>,
    /// Its calls run without approval.
    pub trusted: Option<bool>,
    /// Seconds one call may take [default: 300].
    pub timeout_secs: Option<u64>,
}

/// The remote agents the flags (`[NAME=]URL`) and the file name.
pub fn remote_agents(specs: &[String], loaded: &Loaded) -> Result<Vec<RemoteAgent>, String> {
    let mut agents = Vec::new();
    for spec in specs {
        let (name, url) = match spec.split_once('=') {
            Some((name, url)) if !name.contains("://") => (Some(name.to_owned()), url),
            _ => (None, spec.as_str()),
        };
        let mut agent = RemoteAgent::new(url);
        agent.name = name;
        agents.push(agent);
    }
    for (name, table) in &loaded.file.a2a.agents {
        let mut agent = RemoteAgent::new(&table.url);
        agent.name = Some(name.clone());
        agent.trusted = table.trusted.unwrap_or(false);
        if let Some(secs) = table.timeout_secs {
            agent.timeout = Duration::from_secs(secs.max(1));
        }
        if let Some(variable) = &table.bearer_env {
            let token = std::env::var(variable)
                .map_err(|_| format!("[a2a.agents.{name}] bearer_env: ${variable} is not set"))?;
            agent.bearer = Some(token);
        }
        agents.push(agent);
    }
    Ok(agents)
}

/// Each remote agent as a tool (its card read now).
pub async fn tools(agents: Vec<RemoteAgent>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    for agent in agents {
        let url = agent.url.clone();
        let tool = agentry_a2a::remote_agent(agent)
            .await
            .map_err(|e| format!("A2A agent {url}: {e}"))?;
        tools.push(tool);
    }
    Ok(tools)
}
