//! Per-run skill wiring: the skill index joins the system prompt, the skill
//! built-ins join the toolbox, and a skill's bundled tools (and those of the
//! skills it requires) become callable once the model has read it — only a
//! skill the model was offered (listed in the index, or found by
//! `search_skills`), and only tools the allow-list names, unless the skill
//! was trusted with [`Skill::trust_tools`](crate::skill::Skill::trust_tools).

use std::collections::HashSet;
use std::sync::Arc;

use super::agent::Agent;
use super::outcome::CallRecord;
use crate::model::{ChatModel, Message};
use crate::skill::{
    APPLY_SKILL, ListContext, READ_SKILL, SEARCH_SKILLS, SkillResolver, build_index,
    builtins_with_resolver,
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
    /// Tools callable whatever the allow-list says: the skill built-ins, and
    /// the tools of skills the developer trusted.
    pub(super) exempt: HashSet<String>,
    /// Skills the model was offered: listed in the index or found by search.
    offered: HashSet<String>,
    /// Skills whose tools are already active.
    activated: HashSet<String>,
    /// Names of the tools that came from tool sources, to replace when they change.
    pub(super) sourced: HashSet<String>,
    /// With discovery: what `discover` can load.
    pub(super) catalog: Option<Arc<std::sync::RwLock<super::discovery::Catalog>>>,
    /// With discovery: tools in the toolbox not loaded yet.
    pub(super) hidden: HashSet<String>,
    /// Offer lookup names as enums ([`AgentBuilder::name_enums`](super::AgentBuilder::name_enums)).
    pub(super) name_enums: bool,
    /// The files (other than `SKILL.md`) of the skills read so far: what
    /// `read_skill`'s `path` may name (the instructions list them).
    skill_files: std::collections::BTreeSet<String>,
}

impl RunTools {
    /// The run's tools: the agent's own, plus skill built-ins and the index
    /// when the agent has skills or a resolver.
    pub async fn prepare(agent: &Agent, model: &dyn ChatModel, messages: &[Message]) -> Self {
        let system = &agent.settings.system;
        let Some(resolver) = agent.resolver() else {
            let mut run = Self {
                toolbox: agent.toolbox.clone(),
                advertised: agent.advertised.clone(),
                system: system.clone(),
                resolver: None,
                exempt: HashSet::new(),
                offered: HashSet::new(),
                activated: HashSet::new(),
                sourced: HashSet::new(),
                catalog: None,
                hidden: HashSet::new(),
                name_enums: agent.settings.name_enums,
                skill_files: Default::default(),
            };
            run.enable_discovery(agent);
            run.load_sources(agent).await;
            run.announce_modules(agent);
            return run;
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
            exempt: HashSet::new(),
            offered: listed.into_iter().map(|skill| skill.name).collect(),
            activated: HashSet::new(),
            sourced: HashSet::new(),
            catalog: None,
            hidden: HashSet::new(),
            name_enums: agent.settings.name_enums,
            skill_files: Default::default(),
        };
        run.enable_discovery(agent);
        let builtins = builtins_with_resolver(resolver, agent.settings.skill_context.clone());
        run.add(builtins, true);
        run.constrain_skill_names();
        run.load_sources(agent).await;
        run.announce_modules(agent);
        run
    }

    /// Whether `tool` may run: exempt (a built-in, or a trusted skill's
    /// tool), or on the agent's allow-list.
    pub fn allows(&self, allow: Option<&HashSet<String>>, tool: &Tool) -> bool {
        self.exempt.contains(&tool.name) || allow.is_none_or(|allow| allow.contains(&tool.name))
    }

    /// Add tools (ones whose names are taken are skipped: the agent's own
    /// win); `exempt` ones may run whatever the allow-list says.
    ///
    /// One tool that cannot join (a name given twice in `tools`, a wire name
    /// another tool already has) is left out alone: the others still join,
    /// so one hostile source cannot hide every other source's tools.
    pub(super) fn add(&mut self, tools: Vec<Tool>, exempt: bool) {
        let mut seen = HashSet::new();
        let new: Vec<Tool> = tools
            .into_iter()
            .filter(|tool| {
                let taken = self.toolbox.find_by_name(&tool.name).is_some()
                    || !seen.insert(tool.name.clone());
                if taken {
                    tracing::warn!(tool = %tool.name, "a tool with this name exists; this one is not added");
                }
                !taken
            })
            .collect();
        if new.is_empty() {
            return;
        }
        let added = match self.toolbox.with_tools(new.iter().cloned()) {
            Ok(toolbox) => {
                self.toolbox = toolbox;
                new
            }
            // Rare (a wire-name clash): find the tools that cannot join, one by one.
            Err(_) => new
                .into_iter()
                .filter(|tool| match self.toolbox.with_tools([tool.clone()]) {
                    Ok(toolbox) => {
                        self.toolbox = toolbox;
                        true
                    }
                    Err(error) => {
                        tracing::warn!(tool = %tool.name, %error, "a tool could not be added");
                        false
                    }
                })
                .collect(),
        };
        let mut advertised = self.advertised.as_ref().clone();
        advertised.extend(added.iter().map(Tool::schema));
        self.advertised = Arc::new(advertised);
        if exempt {
            self.exempt.extend(added.into_iter().map(|tool| tool.name));
        }
    }

    /// `read_skill`'s and `apply_skill`'s `name` as an `enum` of the skills
    /// offered so far (listed, or found by search), sorted, and
    /// `read_skill`'s `path` as an `enum` of the files of the skills read so
    /// far (none before a skill is read: small models fill `path` eagerly
    /// with invented files), so that a grammar-constrained model can only
    /// name what exists.
    fn constrain_skill_names(&mut self) {
        if self.offered.is_empty() || !self.name_enums {
            return;
        }
        let mut names: Vec<&str> = self.offered.iter().map(String::as_str).collect();
        names.sort_unstable();
        let names = serde_json::json!(names);
        let files = (!self.skill_files.is_empty()).then(|| serde_json::json!(self.skill_files));
        for builtin in [READ_SKILL, APPLY_SKILL] {
            self.readvertise(builtin, |schema| {
                let properties = &mut schema.input_schema["properties"];
                properties["name"]["enum"] = names.clone();
                if let Some(properties) = properties.as_object_mut()
                    && properties.contains_key("path")
                {
                    match &files {
                        Some(files) => properties["path"]["enum"] = files.clone(),
                        None => _ = properties.remove("path"),
                    }
                }
            });
        }
    }

    /// Replace the advertised schema of the built-in `name` with its own
    /// schema (as the toolbox has it) after `edit`: the edits of earlier
    /// steps never pile up. Does nothing for a tool that is not an exempt
    /// built-in or not advertised.
    pub(super) fn readvertise(&mut self, name: &str, edit: impl FnOnce(&mut ToolSchema)) {
        let at = self
            .advertised
            .iter()
            .position(|schema| schema.name == name);
        let own = self.toolbox.find_by_name(name).map(Tool::schema);
        let (Some(at), Some(mut schema), true) = (at, own, self.exempt.contains(name)) else {
            return;
        };
        edit(&mut schema);
        let mut advertised = self.advertised.as_ref().clone();
        advertised[at] = schema;
        self.advertised = Arc::new(advertised);
    }

    /// After a step: note the skills `search_skills` offered; then for each
    /// offered skill the model read or applied successfully, make its bundled
    /// tools and those of the skills it requires callable.
    pub async fn activate(&mut self, records: &[CallRecord]) {
        let Some(resolver) = self.resolver.clone() else {
            return;
        };
        let succeeded = |record: &&CallRecord, name: &str| {
            !record.result.is_error
                && self
                    .toolbox
                    .find_for_call(&record.call.name)
                    .is_some_and(|tool| tool.name == name)
        };
        let found: Vec<String> = records
            .iter()
            .filter(|record| succeeded(record, SEARCH_SKILLS))
            .filter_map(|record| record.result.output.as_array())
            .flatten()
            .filter_map(|summary| summary["name"].as_str().map(str::to_owned))
            .collect();
        let newly_found: Vec<String> = found
            .into_iter()
            .filter(|name| !self.offered.contains(name))
            .collect();
        self.offered.extend(newly_found.iter().cloned());
        let mut queue: Vec<String> = records
            .iter()
            .filter(|record| succeeded(record, READ_SKILL) || succeeded(record, APPLY_SKILL))
            .filter_map(|record| record.call.input.get("name")?.as_str().map(str::to_owned))
            .filter(|name| {
                let offered = self.offered.contains(name);
                if !offered {
                    tracing::warn!(skill = %name, "a skill the model was not offered is not activated");
                }
                offered
            })
            .collect();
        let mut constrain = !newly_found.is_empty();
        let (mut trusted, mut others) = (Vec::new(), Vec::new());
        while let Some(name) = queue.pop() {
            if !self.activated.insert(name.clone()) {
                continue;
            }
            if let Some(skill) = resolver.read(&name).await {
                let files = files_to_read(&skill);
                constrain |= !files.is_empty();
                self.skill_files.extend(files);
                let tools = skill.tools.iter().cloned();
                if skill.tools_bypass_allow_list {
                    trusted.extend(tools);
                } else {
                    others.extend(tools);
                }
                queue.extend(skill.requires.iter().cloned());
            }
        }
        self.add(trusted, true);
        self.add(others, false);
        if constrain {
            self.constrain_skill_names();
        }
    }
}

/// The files of `skill` that `read_skill`'s `path` may name: all but its
/// `SKILL.md` (the instructions, read without a path).
fn files_to_read(skill: &crate::skill::Skill) -> Vec<String> {
    crate::skill::skill_files(skill)
        .into_iter()
        .filter(|file| file != "SKILL.md")
        .collect()
}
