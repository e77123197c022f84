//! The tools and system prompt of one run ([`RunTools`]): what the agent
//! has, plus what skills, tool sources and discovery add as the run goes on
//! (their methods live beside them: `skills.rs`, `sources.rs`,
//! `discovery.rs`).

use std::collections::HashSet;
use std::sync::Arc;

use crate::agent::Agent;
use agentry_core::model::{ChatModel, Message};
use agentry_core::skill::{ListContext, SkillResolver, build_index, builtin_tools};
use agentry_core::tool::{Tool, ToolSchema, Toolbox};

/// The tools and system prompt of one run.
pub(crate) struct RunTools {
    /// Everything callable this run.
    pub toolbox: Toolbox,
    /// What the model is shown.
    pub advertised: Arc<Vec<ToolSchema>>,
    /// The system prompt, skill index included. Fixed for the run.
    pub system: Option<String>,
    pub(crate) resolver: Option<Arc<dyn SkillResolver>>,
    /// Tools callable whatever the allow-list says: the skill built-ins, and
    /// the tools of skills the developer trusted.
    pub(crate) exempt: HashSet<String>,
    /// Skills the model was offered: listed in the index or found by search.
    pub(crate) offered: HashSet<String>,
    /// Skills whose tools are already active.
    pub(crate) activated: HashSet<String>,
    /// Names of the tools that came from tool sources, to replace when they change.
    pub(crate) sourced: HashSet<String>,
    /// With discovery: what `discover` can load.
    pub(crate) catalog: Option<Arc<std::sync::RwLock<crate::discovery::Catalog>>>,
    /// With discovery: tools in the toolbox not loaded yet.
    pub(crate) hidden: HashSet<String>,
    /// Offer lookup names as enums ([`AgentBuilder::name_enums`](crate::AgentBuilder::name_enums)).
    pub(crate) name_enums: bool,
    /// The files (other than `SKILL.md`) of the skills read so far: what
    /// `read_skill`'s `path` may name (the instructions list them).
    pub(crate) skill_files: std::collections::BTreeSet<String>,
}

impl RunTools {
    /// The run's tools: the agent's own, plus skill built-ins and the index
    /// when the agent has skills or a resolver.
    pub async fn prepare(agent: &Agent, model: &dyn ChatModel, messages: &[Message]) -> Self {
        let mut run = Self {
            toolbox: agent.toolbox.clone(),
            advertised: agent.advertised.clone(),
            system: agent.settings.system.clone(),
            resolver: agent.resolver(),
            exempt: HashSet::new(),
            offered: HashSet::new(),
            activated: HashSet::new(),
            sourced: HashSet::new(),
            catalog: None,
            hidden: HashSet::new(),
            name_enums: agent.settings.name_enums,
            skill_files: Default::default(),
        };
        let resolver = run.resolver.clone();
        if let Some(resolver) = &resolver {
            run.offer_skills(&**resolver, model, messages).await;
        }
        run.enable_discovery(agent);
        if let Some(resolver) = resolver {
            let builtins = builtin_tools(resolver, agent.settings.skill_context.clone());
            run.add(builtins, true);
            run.constrain_skill_names();
        }
        run.load_sources(agent).await;
        run.announce_modules(agent);
        run
    }

    /// List the skills this turn offers, put their index in the system
    /// prompt and remember their names.
    async fn offer_skills(
        &mut self,
        resolver: &dyn SkillResolver,
        model: &dyn ChatModel,
        messages: &[Message],
    ) {
        let system = &self.system;
        let listed = resolver
            .list(ListContext {
                messages,
                system: system.as_deref(),
                model: model.model_id(),
            })
            .await;
        let index = build_index(&listed);
        if !index.is_empty() {
            self.system = Some(match system {
                Some(system) => format!("{system}\n\n{index}"),
                None => index,
            });
        }
        self.offered = listed.into_iter().map(|skill| skill.name).collect();
    }

    /// The tool a call names, when the allow-list lets it run; the error
    /// the model reads otherwise (`NAME => not allowed`).
    pub fn allowed_tool(
        &self,
        allow: Option<&HashSet<String>>,
        name: &str,
    ) -> Result<&Tool, String> {
        self.toolbox
            .find_for_call(name)
            .filter(|tool| self.allows(allow, tool))
            .ok_or_else(|| format!("{name} => not allowed"))
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
    pub(crate) fn add(&mut self, tools: Vec<Tool>, exempt: bool) {
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

    /// Replace the advertised schema of the built-in `name` with its own
    /// schema (as the toolbox has it) after `edit`: the edits of earlier
    /// steps never pile up. Does nothing for a tool that is not an exempt
    /// built-in or not advertised.
    pub(crate) fn readvertise(&mut self, name: &str, edit: impl FnOnce(&mut ToolSchema)) {
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
}
