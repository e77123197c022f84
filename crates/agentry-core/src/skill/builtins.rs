//! The built-in skill tools the agent loop adds when skills are configured:
//! `list_skills`, `read_skill`, `apply_skill`, and `search_skills` when the
//! resolver can search.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{read_skill_file, skill_files};
use super::resolver::{ListContext, SkillResolver};
use super::search::SearchOpts;
use super::skill::{Skill, SkillContext, SkillError, list_skills_of, load_body};
use crate::tool::{Tool, ToolError, ToolHandler, ToolHints};

/// Name of the tool that lists the advertised skills.
pub const LIST_SKILLS: &str = "list_skills";
/// Name of the tool that returns a skill's body (or one of its files).
pub const READ_SKILL: &str = "read_skill";
/// Name of the tool that returns a skill's body for a model-supplied `ctx`.
pub const APPLY_SKILL: &str = "apply_skill";
/// Name of the tool that searches the resolver.
pub const SEARCH_SKILLS: &str = "search_skills";
/// The `ctx` key only the harness may set (the model's value is dropped).
pub const RESERVED_CTX_KEY: &str = "attachments";

/// Every built-in skill tool name.
pub const BUILTIN_NAMES: &[&str] = &[LIST_SKILLS, READ_SKILL, APPLY_SKILL, SEARCH_SKILLS];

fn read_only() -> ToolHints {
    ToolHints {
        read_only: true,
        idempotent: true,
        concurrency_safe: true,
        ..ToolHints::default()
    }
}

fn failed(error: SkillError) -> ToolError {
    ToolError::from_error(error)
}

fn to_value<T: serde::Serialize>(value: T) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|e| ToolError::Output(e.to_string()))
}

/// The skill named `name`, or the error result `read_skill` and
/// `apply_skill` give for an unknown name.
async fn read_known(resolver: &dyn SkillResolver, name: &str) -> Result<Skill, ToolError> {
    resolver
        .read(name)
        .await
        .ok_or_else(|| failed(SkillError::Unknown(name.to_owned())))
}

/// `skill`'s body for `ctx`, followed by the bodies of the skills it
/// requires (transitively, each once) and the list of its bundled files.
pub async fn body_with_requirements(
    resolver: &dyn SkillResolver,
    skill: &Skill,
    ctx: &SkillContext,
) -> Result<String, SkillError> {
    let mut text = load_body(skill, ctx)?;
    let mut seen: HashSet<String> = HashSet::from([skill.name.clone()]);
    let mut queue: VecDeque<String> = skill.requires.iter().cloned().collect();
    while let Some(name) = queue.pop_front() {
        if !seen.insert(name.clone()) {
            continue;
        }
        match resolver.read(&name).await {
            Some(required) => {
                let body = load_body(&required, ctx)?;
                text.push_str(&format!("\n\nRequired skill {name}:\n{body}"));
                queue.extend(required.requires.iter().cloned());
            }
            None => text.push_str(&format!("\n\nRequired skill {name} is not available.")),
        }
    }
    let files = skill_files(skill);
    let files: Vec<&String> = files.iter().filter(|f| *f != "SKILL.md").collect();
    if !files.is_empty() {
        text.push_str(&format!(
            "\n\nFiles in this skill (read one with {READ_SKILL}(name, path)):"
        ));
        for file in files {
            text.push_str("\n- ");
            text.push_str(file);
        }
    }
    Ok(text)
}

/// `list_skills` that asks the resolver on every call, so it stays in step
/// with resolvers whose output changes.
pub fn list_skills_tool(resolver: impl SkillResolver + 'static) -> Tool {
    list_skills_over(Arc::new(resolver))
}

fn list_skills_over(resolver: Arc<dyn SkillResolver>) -> Tool {
    let handler = ToolHandler::from_async(move |_input: Value, _ctx| {
        let resolver = resolver.clone();
        async move { to_value(list_skills_of(&resolver.list(ListContext::default()).await)) }
    });
    Tool::new(
        LIST_SKILLS,
        json!({"type": "object", "properties": {}}),
        handler,
    )
    .with_description("List the skills you can read, with what each is for.")
    .with_hints(read_only())
}

#[derive(Deserialize)]
struct ReadInput {
    name: String,
    #[serde(default)]
    path: Option<String>,
}

fn names_the_skill(path: &str, name: &str) -> bool {
    let path = path.trim_start_matches("./");
    path.is_empty() || path == name || path == "SKILL.md" || path == format!("{name}/SKILL.md")
}

/// `read_skill` that looks names up through the resolver: the body of the
/// named skill (with its requirements), the text of one of its bundled files
/// when `path` is given, or an error for an unknown name.
pub fn read_skill_tool(resolver: impl SkillResolver + 'static) -> Tool {
    read_skill_over(Arc::new(resolver))
}

fn read_skill_over(resolver: Arc<dyn SkillResolver>) -> Tool {
    let handler = ToolHandler::from_async(move |input: Value, _ctx| {
        let resolver = resolver.clone();
        async move {
            let input: ReadInput = crate::tool::from_input(input)?;
            let skill = read_known(resolver.as_ref(), &input.name).await?;
            // Small models fill optional arguments eagerly: a path naming the
            // skill itself (or its SKILL.md) means its instructions.
            let text = match input.path.as_deref().map(str::trim) {
                Some(path) if !names_the_skill(path, &skill.name) => read_skill_file(&skill, path),
                _ => body_with_requirements(resolver.as_ref(), &skill, &SkillContext::new()).await,
            };
            text.map(Value::String).map_err(failed)
        }
    });
    Tool::new(
        READ_SKILL,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, as listed."},
                "path": {"type": "string", "description": "Leave out to read the skill's instructions. Only to read one of the files the instructions list, relative to the skill's folder."}
            },
            "required": ["name"]
        }),
        handler,
    )
    .with_description("Read a skill's instructions before doing what it covers.")
    .with_hints(read_only())
}

#[derive(Deserialize)]
struct ApplyInput {
    name: String,
    #[serde(default)]
    ctx: Option<SkillContext>,
}

/// Merge the model's `ctx` with the harness's: the reserved key
/// ([`RESERVED_CTX_KEY`]) is dropped from the model's, and harness keys win.
pub fn merge_skill_context(model: SkillContext, harness: Option<&SkillContext>) -> SkillContext {
    let mut merged = model;
    merged.remove(RESERVED_CTX_KEY);
    if let Some(harness) = harness {
        for (key, value) in harness {
            merged.insert(key.clone(), value.clone());
        }
    }
    merged
}

/// `apply_skill` through the resolver: like `read_skill`, but the model
/// passes a `ctx` that reaches the skill's body function, merged with the
/// harness's `skill_context` (harness keys win; `attachments` is reserved).
pub fn apply_skill_tool(
    resolver: impl SkillResolver + 'static,
    skill_context: Option<SkillContext>,
) -> Tool {
    apply_skill_over(Arc::new(resolver), skill_context)
}

fn apply_skill_over(resolver: Arc<dyn SkillResolver>, skill_context: Option<SkillContext>) -> Tool {
    let skill_context = Arc::new(skill_context);
    let handler = ToolHandler::from_async(move |input: Value, _ctx| {
        let resolver = resolver.clone();
        let skill_context = skill_context.clone();
        async move {
            let input: ApplyInput = crate::tool::from_input(input)?;
            let skill = read_known(resolver.as_ref(), &input.name).await?;
            let ctx = merge_skill_context(
                input.ctx.unwrap_or_default(),
                skill_context.as_ref().as_ref(),
            );
            body_with_requirements(resolver.as_ref(), &skill, &ctx)
                .await
                .map(Value::String)
                .map_err(failed)
        }
    });
    Tool::new(
        APPLY_SKILL,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name, as listed."},
                "ctx": {"type": "object", "description": "Values the skill's instructions depend on."}
            },
            "required": ["name"]
        }),
        handler,
    )
    .with_description("Apply a skill: get its instructions for the given context.")
    .with_hints(read_only())
}

#[derive(Deserialize)]
struct SearchInput {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

/// `search_skills` over the resolver's search (add it only when
/// [`SkillResolver::can_search`] is true).
pub fn search_skills_tool(resolver: impl SkillResolver + 'static) -> Tool {
    search_skills_over(Arc::new(resolver))
}

fn search_skills_over(resolver: Arc<dyn SkillResolver>) -> Tool {
    let handler = ToolHandler::from_async(move |input: Value, _ctx| {
        let resolver = resolver.clone();
        async move {
            let input: SearchInput = crate::tool::from_input(input)?;
            let opts = SearchOpts {
                limit: input.limit.unwrap_or(SearchOpts::default().limit),
                ..SearchOpts::default()
            };
            to_value(list_skills_of(&resolver.search(&input.query, opts).await))
        }
    });
    Tool::new(
        SEARCH_SKILLS,
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you need a skill for."},
                "limit": {"type": "integer", "minimum": 1, "description": "Most results (default 10)."}
            },
            "required": ["query"]
        }),
        handler,
    )
    .with_description("Search for skills that are not in the list.")
    .with_hints(read_only())
}

/// The per-turn skill toolset: `list_skills`, `read_skill`, `apply_skill`,
/// and `search_skills` when the resolver can search.
pub fn builtin_tools(
    resolver: impl SkillResolver + 'static,
    skill_context: Option<SkillContext>,
) -> Vec<Tool> {
    let resolver: Arc<dyn SkillResolver> = Arc::new(resolver);
    let mut tools = vec![
        list_skills_over(resolver.clone()),
        read_skill_over(resolver.clone()),
        apply_skill_over(resolver.clone(), skill_context),
    ];
    if resolver.can_search() {
        tools.push(search_skills_over(resolver));
    }
    tools
}
