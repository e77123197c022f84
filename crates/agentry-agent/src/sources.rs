//! A run's tools from [`ToolSource`]s: loaded when the run starts, replaced
//! between steps when a source says they changed.

use std::collections::HashSet;
use std::sync::Arc;

use super::agent::Agent;
use crate::run_tools::RunTools;
use agentry_core::tool::{Tool, ToolSource};

impl RunTools {
    /// Add every source's tools that the allow-list lets through.
    pub(super) async fn load_sources(&mut self, agent: &Agent) {
        let sources = &agent.settings.sources;
        if sources.is_empty() {
            return;
        }
        let tools = fetch(sources, agent.settings.allow.as_deref()).await;
        self.sourced = tools.iter().map(|tool| tool.name.clone()).collect();
        let shown = self.catalogue(agent, tools);
        self.add(shown, false);
    }

    /// Between steps: when a source's tools changed, replace all sourced tools
    /// with what the sources offer now.
    pub(super) async fn refresh_sources(&mut self, agent: &Agent) {
        let sources = &agent.settings.sources;
        if !sources.iter().any(|source| source.changed()) {
            return;
        }
        tracing::info!("a tool source changed; its tools are reloaded");
        self.toolbox = self
            .toolbox
            .without(|tool| self.sourced.contains(&tool.name));
        let advertised = self
            .advertised
            .iter()
            .filter(|schema| !self.sourced.contains(&schema.name))
            .cloned()
            .collect();
        self.advertised = Arc::new(advertised);
        self.load_sources(agent).await;
    }
}

/// Each source's tools, allowed ones only; a source that fails is left out.
async fn fetch(sources: &[Arc<dyn ToolSource>], allow: Option<&HashSet<String>>) -> Vec<Tool> {
    let mut all = Vec::new();
    for source in sources {
        match source.tools().await {
            Ok(tools) => all.extend(
                tools
                    .into_iter()
                    .filter(|tool| allow.is_none_or(|allow| allow.contains(&tool.name))),
            ),
            Err(error) => {
                tracing::warn!(source = source.name(), %error, "a tool source gave no tools")
            }
        }
    }
    all
}
