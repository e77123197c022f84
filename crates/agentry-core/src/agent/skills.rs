//! Per-run skill wiring: the skill index joins the system prompt, the skill
//! built-ins join the toolbox, and a skill's bundled tools (and those of the
//! skills it requires) become callable once the model has read it.

use std::collections::HashSet;
use std::sync::Arc;

use super::agent::Agent;
use super::outcome::CallRecord;
use crate::model::{ChatModel, Message};
use crate::skill::{
    APPLY_SKILL, ListContext, READ_SKILL, SkillResolver, build_index, builtins_with_resolver,
};
use crate::tool::{Tool, ToolSchema, Toolbox};

/// The tools and system prompt of one run.
pub(super) struct RunTools {
    /// Everything callable this run.
    pub toolbox: Toolbox,
    /// What the model is shown.
    pub advertised: Arc<Vec<ToolSchema>>,
    /// The system prompt, skill index included. Fixed for the run.
    pub system: Option<String>,
    resolver: Option<Arc<dyn SkillResolver>>,
    /// Tools that skills brought (built-ins and bundled tools): callable
    /// whatever the allow-list says, since the developer configured the skills.
    from_skills: HashSet<String>,
    /// Skills whose tools are already active.
    activated: HashSet<String>,
}

impl RunTools {
    /// The run's tools: the agent's own, plus skill built-ins and the index
    /// when the agent has skills or a resolver.
    pub async fn prepare(agent: &Agent, model: &dyn ChatModel, messages: &[Message]) -> Self {
        let system = &agent.settings.system;
        let Some(resolver) = agent.resolver() else {
            return Self {
                toolbox: agent.toolbox.clone(),
                advertised: agent.advertised.clone(),
                system: system.clone(),
                resolver: None,
                from_skills: HashSet::new(),
                activated: HashSet::new(),
            };
        };
        let listed = resolver
            .list(ListContext {
                messages,
                system: system.as_deref(),
                model: model.model_id(),
            })
            .await;
        let index = build_index(&listed);
        let system = match (system, index.is_empty()) {
            (Some(system), false) => Some(format!("{system}\n\n{index}")),
            (None, false) => Some(index),
            (system, true) => system.clone(),
        };
        let mut run = Self {
            toolbox: agent.toolbox.clone(),
            advertised: agent.advertised.clone(),
            system,
            resolver: Some(resolver.clone()),
            from_skills: HashSet::new(),
            activated: HashSet::new(),
        };
        run.add(builtins_with_resolver(
            resolver,
            agent.settings.skill_context.clone(),
        ));
        run
    }

    /// Whether `tool` may run: brought by a skill, or on the agent's allow-list.
    pub fn allows(&self, allow: Option<&HashSet<String>>, tool: &Tool) -> bool {
        self.from_skills.contains(&tool.name)
            || allow.is_none_or(|allow| allow.contains(&tool.name))
    }

    /// Add tools (ones whose names are taken are skipped: the agent's own win).
    fn add(&mut self, tools: Vec<Tool>) {
        let new: Vec<Tool> = tools
            .into_iter()
            .filter(|tool| {
                let taken = self.toolbox.find_by_name(&tool.name).is_some();
                if taken {
                    tracing::warn!(tool = %tool.name, "a tool with this name exists; the skill's is not added");
                }
                !taken
            })
            .collect();
        if new.is_empty() {
            return;
        }
        let timeout = self.toolbox.default_timeout;
        let all = self.toolbox.to_vec().into_iter().chain(new.iter().cloned());
        match Toolbox::for_agent(all) {
            Ok(toolbox) => {
                self.toolbox = toolbox.with_default_timeout(timeout);
                let mut advertised = self.advertised.as_ref().clone();
                advertised.extend(new.iter().map(Tool::schema));
                self.advertised = Arc::new(advertised);
                self.from_skills
                    .extend(new.into_iter().map(|tool| tool.name));
            }
            Err(error) => tracing::warn!(%error, "skill tools could not be added"),
        }
    }

    /// After a step: for each skill the model read or applied successfully,
    /// make its bundled tools and those of the skills it requires callable.
    pub async fn activate(&mut self, records: &[CallRecord]) {
        let Some(resolver) = self.resolver.clone() else {
            return;
        };
        let mut queue: Vec<String> = records
            .iter()
            .filter(|record| !record.result.is_error)
            .filter(|record| {
                self.toolbox
                    .find_for_call(&record.call.name)
                    .is_some_and(|tool| tool.name == READ_SKILL || tool.name == APPLY_SKILL)
            })
            .filter_map(|record| record.call.input.get("name")?.as_str().map(str::to_owned))
            .collect();
        let mut tools = Vec::new();
        while let Some(name) = queue.pop() {
            if !self.activated.insert(name.clone()) {
                continue;
            }
            if let Some(skill) = resolver.read(&name).await {
                tools.extend(skill.tools.iter().cloned());
                queue.extend(skill.requires.iter().cloned());
            }
        }
        self.add(tools);
    }
}
