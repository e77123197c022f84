//! Discovery: the model starts with the modules' summaries (and
//! the schemas of groups marked `always_include`), and calls
//! `discover({"tools": "kb"})` (a namespace, or a list of namespaces and
//! tool names) to load the concrete schemas it needs. Loaded tools join the
//! next step's tool list, in catalog order, and stay for the run. A call to
//! a tool not loaded yet gets an error result that says to discover it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use serde::Deserialize;
use serde_json::{Value, json};

use super::agent::Agent;
use super::outcome::CallRecord;
use super::prompt_schema::{definition_size, prompt_schema};
use crate::run_tools::RunTools;
use agentry_core::model::Message;
use agentry_core::tool::{Tool, ToolError, ToolGroup, ToolHandler, ToolHints};

/// The built-in that loads modules: one of the names reserved by agent
/// runtimes ([`RESERVED_NAMES`](agentry_core::tool::RESERVED_NAMES)).
pub const DISCOVER: &str = "discover";

/// The built-in that finds tools in a big catalog (with a [`ToolSearcher`](agentry_core::tool::ToolSearcher)).
pub const SEARCH_TOOLS: &str = "search_tools";

/// Most modules the prompt lists; past this, with a searcher, the model
/// finds tools with `search_tools` instead of reading the list.
pub(crate) const MAX_LISTED_MODULES: usize = 40;

/// How many tools one `search_tools` call finds.
pub const SEARCH_LIMIT: usize = 5;

/// How much tool definition (bytes of name, description and input schema
/// JSON; about 3.5 bytes a token) one `search_tools` call loads at most, so
/// the next step's prompt stays small at any catalog size. The best match
/// is always loaded; the others are loaded best first while they fit, and
/// the rest are listed for the model to `discover` by name.
pub const SEARCH_BUDGET_BYTES: usize = 5_000;

/// Most bytes of names (modules and functions together, quoted) that
/// `discover`'s argument lists as an `enum`; past this it is any string.
/// The enum is written twice in the schema (one name, or a list), so this
/// costs at most about 600 prompt tokens: 173 names at 100 tools had made
/// step 1 3,858 tokens instead of 314.
pub(crate) const DISCOVER_ENUM_BYTES: usize = 1_000;

/// What the agent tells the model about one module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Module {
    pub namespace: String,
    /// Its line in the module list.
    pub summary: String,
    pub always_include: bool,
}

impl Module {
    pub(super) fn of(group: &ToolGroup) -> Self {
        Self {
            namespace: group.namespace.clone(),
            summary: group.summary(),
            always_include: group.always_include,
        }
    }

    /// A module for tools that came without a group: named after their namespace.
    fn implicit(namespace: &str, title: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            summary: format!("- {namespace} ({title})"),
            always_include: false,
        }
    }
}

/// The tools' namespace: what comes before the last `.` (none for a bare name).
pub(super) fn namespace_of(name: &str) -> Option<&str> {
    name.rsplit_once('.').map(|(namespace, _)| namespace)
}

/// Every module and tool one run can load.
#[derive(Clone, Debug, Default)]
pub(super) struct Catalog {
    modules: Vec<Module>,
    /// Position of each module in `modules`, by namespace.
    module_at: HashMap<String, usize>,
    /// Tool names with one-line descriptions, in the order they were added.
    tools: Vec<(String, String)>,
    /// Position of each tool in `tools`, by name.
    tool_at: HashMap<String, usize>,
    /// How large each tool's definition is as the prompt shows it (name,
    /// description and input schema, in bytes), in the order of `tools`.
    sizes: Vec<usize>,
}

impl Catalog {
    /// Add `tools`, under the `modules` the agent declared, or under a
    /// module named after their namespace (titled `title`).
    pub(super) fn add<'a>(
        &mut self,
        modules: &[Module],
        tools: impl IntoIterator<Item = &'a Tool>,
        title: &str,
    ) {
        let declared: HashMap<&str, &Module> =
            modules.iter().map(|m| (m.namespace.as_str(), m)).collect();
        for tool in tools {
            if self.tool_at.contains_key(&tool.name) {
                continue;
            }
            let namespace = namespace_of(&tool.name).unwrap_or(&tool.name);
            if !self.module_at.contains_key(namespace) {
                let module = declared
                    .get(namespace)
                    .map(|m| (*m).clone())
                    .unwrap_or_else(|| Module::implicit(namespace, title));
                self.module_at
                    .insert(namespace.to_owned(), self.modules.len());
                self.modules.push(module);
            }
            let line = tool
                .description
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or("")
                .to_owned();
            self.tool_at.insert(tool.name.clone(), self.tools.len());
            self.tools.push((tool.name.clone(), line));
            self.sizes.push(definition_size(&prompt_schema(tool)));
        }
    }

    /// The module `namespace`, if there is one.
    fn module(&self, namespace: &str) -> Option<&Module> {
        self.module_at.get(namespace).map(|&at| &self.modules[at])
    }

    /// Tools of modules that are always included.
    pub(super) fn always_included(&self) -> HashSet<String> {
        self.tools
            .iter()
            .filter(|(name, _)| {
                let namespace = namespace_of(name).unwrap_or(name);
                self.module(namespace).is_some_and(|m| m.always_include)
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The module list for the system prompt; with `searchable`, how to
    /// search, and past [`MAX_LISTED_MODULES`] only the always-included modules.
    pub(super) fn prompt(&self, searchable: bool) -> String {
        let mut text = String::from(
            "## Modules\nThe functions are grouped in modules. Call `discover` with a module's \
             namespace (or a list of namespaces or function names) to load its functions, then \
             call them as namespace.function.",
        );
        let listed: Vec<&Module> = if searchable && self.modules.len() > MAX_LISTED_MODULES {
            text.push_str(&format!(
                " There are {} modules with {} functions, too many to list: call \
                 `search_tools` with what you need to find the functions for it; what it \
                 finds can be called from the next step on.",
                self.modules.len(),
                self.tools.len()
            ));
            self.modules.iter().filter(|m| m.always_include).collect()
        } else {
            if searchable {
                text.push_str(" Or call `search_tools` with what you need to find functions.");
            }
            self.modules.iter().collect()
        };
        for module in listed {
            text.push('\n');
            text.push_str(&module.summary);
        }
        text
    }

    /// The one-line description of the tool `name` and the size of its
    /// definition, if it is in the catalog.
    fn line(&self, name: &str) -> Option<(&str, usize)> {
        let at = *self.tool_at.get(name)?;
        Some((self.tools[at].1.as_str(), self.sizes[at]))
    }

    /// The tools `wanted` names (namespaces or tool names), in catalog
    /// order, and the names that matched nothing.
    fn resolve(&self, wanted: &[String]) -> (Vec<&(String, String)>, Vec<String>) {
        let mut unknown = Vec::new();
        let mut chosen = BTreeSet::new();
        for want in wanted {
            let want = want.trim();
            let hits: Vec<usize> = self
                .tools
                .iter()
                .enumerate()
                .filter(|(_, (name, _))| name == want || namespace_of(name) == Some(want))
                .map(|(index, _)| index)
                .collect();
            if hits.is_empty() {
                unknown.push(want.to_owned());
            }
            chosen.extend(hits);
        }
        (
            chosen.into_iter().map(|i| &self.tools[i]).collect(),
            unknown,
        )
    }

    fn namespaces(&self) -> Vec<&str> {
        self.modules.iter().map(|m| m.namespace.as_str()).collect()
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Wanted {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct DiscoverInput {
    tools: Wanted,
}

/// The `discover` built-in over `catalog`. Its result lists what was loaded;
/// the run reads it to show those tools from the next step on.
pub(super) fn builtin_discover(catalog: Arc<RwLock<Catalog>>) -> Tool {
    let handler = ToolHandler::sync(move |input: Value, _ctx| {
        let input: DiscoverInput = agentry_core::tool::from_input(input)?;
        let wanted = match input.tools {
            Wanted::One(one) => vec![one],
            Wanted::Many(many) => many,
        };
        let catalog = catalog.read().unwrap_or_else(|p| p.into_inner());
        let (found, unknown) = catalog.resolve(&wanted);
        if found.is_empty() {
            return Err(ToolError::failed(format!(
                "no module or function is named {}; the modules are: {}",
                unknown.join(", "),
                catalog.namespaces().join(", ")
            )));
        }
        let loaded: Vec<Value> = found
            .iter()
            .map(|(name, line)| json!({"name": name, "description": line}))
            .collect();
        Ok(json!({"loaded": loaded, "unknown": unknown}))
    });
    let hints = ToolHints {
        read_only: true,
        idempotent: true,
        concurrency_safe: true,
        inline: true,
        ..ToolHints::default()
    };
    Tool::new(
        DISCOVER,
        json!({
            "type": "object",
            "properties": {
                "tools": {
                    "description": "A module's namespace, or a list of namespaces and function names.",
                    "anyOf": [
                        {"type": "string"},
                        {"type": "array", "items": {"type": "string"}, "minItems": 1}
                    ]
                }
            },
            "required": ["tools"]
        }),
        handler,
    )
    .with_description("Load a module's functions so they can be called from the next step on.")
    .with_hints(hints)
}

#[derive(Deserialize)]
struct SearchInput {
    query: String,
}

/// The `search_tools` built-in: `searcher`'s best tools of `catalog` for
/// the query, loaded like `discover`'s.
pub(super) fn builtin_search_tools(
    catalog: Arc<RwLock<Catalog>>,
    searcher: Arc<dyn agentry_core::tool::ToolSearcher>,
) -> Tool {
    let handler = ToolHandler::from_async(move |input: Value, _ctx| {
        let (catalog, searcher) = (catalog.clone(), searcher.clone());
        async move {
            let input: SearchInput = agentry_core::tool::from_input(input)?;
            if input.query.trim().is_empty() {
                return Err(ToolError::failed("say what you need in `query`"));
            }
            Ok(search_catalog(&catalog, searcher.as_ref(), &input.query).await)
        }
    });
    Tool::new(
        SEARCH_TOOLS,
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you need to do, in a few words."}
            },
            "required": ["query"]
        }),
        handler,
    )
    .with_description(
        "Find the functions for a task in the whole catalog; the ones found can be called from the next step on.",
    )
    .with_hints(ToolHints {
        read_only: true,
        idempotent: true,
        concurrency_safe: true,
        ..ToolHints::default()
    })
}

/// What `search_tools` answers for `query`: the best [`SEARCH_LIMIT`]
/// tools of `catalog`, loaded best first while their definitions fit
/// [`SEARCH_BUDGET_BYTES`] (the best always), the rest listed.
async fn search_catalog(
    catalog: &RwLock<Catalog>,
    searcher: &dyn agentry_core::tool::ToolSearcher,
    query: &str,
) -> Value {
    let names = searcher.search(query, SEARCH_LIMIT * 4).await;
    let catalog = catalog.read().unwrap_or_else(|p| p.into_inner());
    let found = names
        .iter()
        .filter_map(|name| Some((name, catalog.line(name)?)))
        .take(SEARCH_LIMIT);
    let (mut loaded, mut listed, mut spent) = (Vec::new(), Vec::new(), 0);
    for (name, (line, size)) in found {
        let row = json!({
            "name": name,
            "description": line,
            "namespace": namespace_of(name).unwrap_or(""),
        });
        if loaded.is_empty() || spent + size <= SEARCH_BUDGET_BYTES {
            spent += size;
            loaded.push(row);
        } else {
            listed.push(row);
        }
    }
    if listed.is_empty() {
        return json!({"loaded": loaded});
    }
    json!({
        "loaded": loaded,
        "not_loaded": listed,
        "note": "these matched too but are too large to load in the same step: \
                 call discover with one's name to load it",
    })
}

/// True for the built-ins whose results load tools.
fn loads_tools(name: &str) -> bool {
    name == DISCOVER || name == SEARCH_TOOLS
}

/// The names a successful `discover` or `search_tools` result loaded.
pub(super) fn loaded_by(output: &Value) -> impl Iterator<Item = &str> {
    output["loaded"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
}

/// The error result of a call to a tool not loaded yet.
pub(super) fn not_loaded(name: &str) -> String {
    let module = namespace_of(name).unwrap_or(name);
    format!(
        "{name} is not loaded yet: call discover({{\"tools\": \"{module}\"}}) first, then call it"
    )
}

impl RunTools {
    /// With discovery on: every tool so far goes into the catalog, hidden
    /// unless its group is always included, and `discover` joins the tools.
    pub(super) fn enable_discovery(&mut self, agent: &Agent) {
        if !agent.settings.discovery {
            return;
        }
        let catalog = agent
            .catalog
            .get_or_init(|| {
                let mut catalog = Catalog::default();
                let tools = self.toolbox.tools();
                let allowed =
                    tools.filter(|tool| self.allows(agent.settings.allow.as_deref(), tool));
                catalog.add(&agent.settings.modules, allowed, "functions");
                catalog
            })
            .clone();
        let shown = catalog.always_included();
        self.hidden = catalog
            .tools
            .iter()
            .map(|(name, _)| name)
            .filter(|name| !shown.contains(*name))
            .cloned()
            .collect();
        let advertised = self
            .advertised
            .iter()
            .filter(|schema| !self.hidden.contains(&schema.name))
            .cloned()
            .collect();
        self.advertised = Arc::new(advertised);
        let catalog = Arc::new(RwLock::new(catalog));
        self.catalog = Some(catalog.clone());
        let mut builtins = vec![builtin_discover(catalog.clone())];
        if let Some(searcher) = &agent.settings.tool_search {
            builtins.push(builtin_search_tools(catalog, searcher.clone()));
        }
        self.add(builtins, true);
        self.constrain_discover();
    }

    /// `discover`'s argument as an `enum` of the catalog's namespaces and
    /// function names (when they take at most [`DISCOVER_ENUM_BYTES`]), so
    /// that a grammar-constrained model can only name what exists.
    fn constrain_discover(&mut self) {
        let (Some(catalog), true) = (&self.catalog, self.name_enums) else {
            return;
        };
        let catalog = catalog.read().unwrap_or_else(|p| p.into_inner());
        let names: Vec<&str> = catalog
            .namespaces()
            .into_iter()
            .chain(catalog.tools.iter().map(|(name, _)| name.as_str()))
            .collect();
        // Past the limit (a source may have added tools since), any string.
        let bytes: usize = names.iter().map(|name| name.len() + 3).sum();
        let names = (bytes <= DISCOVER_ENUM_BYTES).then(|| json!(names));
        drop(catalog);
        self.readvertise(DISCOVER, |schema| {
            let Some(names) = names else {
                return;
            };
            let tools = &mut schema.input_schema["properties"]["tools"]["anyOf"];
            tools[0]["enum"] = names.clone();
            tools[1]["items"]["enum"] = names;
        });
    }

    /// With discovery on, once the sources are loaded: the module list
    /// joins the system prompt, which stays as it is for the run.
    pub(super) fn announce_modules(&mut self, agent: &Agent) {
        let Some(catalog) = &self.catalog else {
            return;
        };
        let searchable = agent.settings.tool_search.is_some();
        let modules = catalog
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .prompt(searchable);
        let modules = if searchable && agent.settings.search_first {
            format!(
                "{modules}\nThe functions that best match the request are loaded already: \
                 call one of them if it fits."
            )
        } else {
            modules
        };
        self.system = Some(match self.system.take() {
            Some(system) => format!("{system}\n\n{modules}"),
            None => modules,
        });
    }

    /// With discovery on, tools from a source (an MCP server) join the
    /// catalog as a module named after their namespace, hidden until
    /// discovered. Returns the tools to add the usual way (all of them
    /// without discovery).
    pub(super) fn catalogue(&mut self, agent: &Agent, tools: Vec<Tool>) -> Vec<Tool> {
        let Some(catalog) = &self.catalog else {
            return tools;
        };
        catalog.write().unwrap_or_else(|p| p.into_inner()).add(
            &agent.settings.modules,
            &tools,
            "tool server",
        );
        let new: Vec<Tool> = tools
            .into_iter()
            .filter(|tool| self.toolbox.find_by_name(&tool.name).is_none())
            .collect();
        match self.toolbox.with_tools(new.iter().cloned()) {
            Ok(toolbox) => {
                self.toolbox = toolbox;
                self.hidden.extend(new.into_iter().map(|tool| tool.name));
            }
            Err(error) => tracing::warn!(%error, "a source's tools could not be added"),
        }
        self.constrain_discover();
        Vec::new()
    }

    /// After a step: the tools each successful `discover` or `search_tools`
    /// loaded are shown from the next step on, after those already shown.
    pub(super) fn reveal(&mut self, records: &[CallRecord]) {
        let loaded: Vec<String> = records
            .iter()
            .filter(|record| !record.result.is_error && loads_tools(&record.call.name))
            .flat_map(|record| {
                loaded_by(&record.result.output)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        self.reveal_names(loaded);
    }

    /// Show the hidden tools among `names` from the next step on, in that
    /// order, their schemas shortened to [`PROMPT_SCHEMA_BYTES`](super::prompt_schema::PROMPT_SCHEMA_BYTES).
    fn reveal_names(&mut self, names: Vec<String>) {
        if self.catalog.is_none() {
            return;
        }
        let loaded: Vec<String> = names
            .into_iter()
            .filter(|name| self.hidden.remove(name))
            .collect();
        if loaded.is_empty() {
            return;
        }
        let mut advertised = self.advertised.as_ref().clone();
        advertised.extend(
            loaded
                .iter()
                .filter_map(|name| self.toolbox.find_by_name(name))
                .map(prompt_schema),
        );
        // Everything is loaded: nothing is left to discover or search for.
        if self.hidden.is_empty() {
            advertised.retain(|schema| !loads_tools(&schema.name));
        }
        self.advertised = Arc::new(advertised);
    }

    /// With [`search_first`](super::AgentBuilder::search_first): before the
    /// first step, search the catalog with the user's last message and load
    /// what `search_tools` would, so that step 1 can call it.
    pub(super) async fn search_first(&mut self, agent: &Agent, messages: &[Message]) {
        let (Some(catalog), Some(searcher)) = (&self.catalog, &agent.settings.tool_search) else {
            return;
        };
        let Some(query) = super::relevance::last_user_text(messages) else {
            return;
        };
        let found = search_catalog(catalog, searcher.as_ref(), query).await;
        let names: Vec<String> = loaded_by(&found).map(str::to_owned).collect();
        tracing::debug!(loaded = ?names, "searched the catalog before the first step");
        self.reveal_names(names);
    }

    /// `Err` with what to do when `name` is a tool not loaded yet.
    pub(super) fn loaded(&self, name: &str) -> Result<(), String> {
        if self.hidden.contains(name) {
            Err(not_loaded(name))
        } else {
            Ok(())
        }
    }
}

/// True when every call of a step was a lookup that failed (`discover`,
/// `read_skill` or `apply_skill` naming nothing known): such a step counts
/// as no tool round, so the model can try again with a name that exists.
pub(super) fn only_failed_lookups(records: &[CallRecord]) -> bool {
    use agentry_core::skill::{APPLY_SKILL, READ_SKILL};
    !records.is_empty()
        && records.iter().all(|record| {
            record.result.is_error
                && [DISCOVER, READ_SKILL, APPLY_SKILL].contains(&record.call.name.as_str())
        })
}

/// True when a step only discovered (and loaded something): it counts as no
/// tool round, and the next step must call a tool, since loading functions
/// is only ever a means to call one.
pub(super) fn only_discovered(records: &[CallRecord]) -> bool {
    !records.is_empty()
        && records.iter().all(|record| loads_tools(&record.call.name))
        && records.iter().any(|record| !record.result.is_error)
}
