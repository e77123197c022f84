//! The [`Skill`] record and the functions over a set of skills:
//! [`build_index`], [`index_line`], [`list_skills_of`], [`load_body`],
//! [`find_skill`] and [`for_agent`].

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::tool::Tool;

/// The header [`build_index`] puts above the skill lines.
pub const INDEX_HEADER: &str = "Available skills you can read with read_skill(name):";

/// The `ctx` a body function receives: model-supplied keys merged with the
/// harness's `skill_context` (harness keys win).
pub type SkillContext = Map<String, Value>;

/// Why a skill could not be produced or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// The body function failed; its message is passed on.
    #[error("{0}")]
    Body(String),
    /// A `ctx` key did not have the type the body function's parameter needs.
    #[error("ctx key {key:?}: {message}")]
    Context {
        /// The key.
        key: String,
        /// What was wrong.
        message: String,
    },
    /// Two skills share a name.
    #[error("two skills are named {0:?}; skill names must be unique")]
    DuplicateName(String),
    /// No skill has this name.
    #[error("unknown skill {0:?}; call list_skills to see the available skills")]
    Unknown(String),
    /// A bundled file could not be read (outside the folder, missing, not text).
    #[error("{0}")]
    File(String),
}

type BodyClosure = dyn Fn(&SkillContext) -> Result<String, SkillError> + Send + Sync;

/// A body function: `ctx` in, instructions out.
#[derive(Clone)]
pub struct BodyFn(Arc<BodyClosure>);

impl BodyFn {
    /// Wrap a closure.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(&SkillContext) -> Result<String, SkillError> + Send + Sync + 'static,
    {
        Self(Arc::new(f))
    }

    /// Call it.
    pub fn call(&self, ctx: &SkillContext) -> Result<String, SkillError> {
        (self.0)(ctx)
    }
}

impl fmt::Debug for BodyFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BodyFn(..)")
    }
}

/// A reusable prompt augmentation the model can pull in on demand.
///
/// Prompt-only skills are built directly; function-backed ones come from
/// `#[skill]`. Every field but `name` and `description` is optional: empty
/// vectors and `None` mean "not set".
#[derive(Clone, Debug, Default)]
pub struct Skill {
    /// Unique identifier used with `read_skill` / `apply_skill`.
    pub name: String,
    /// Short summary the model uses to decide when to pull the skill.
    pub description: String,
    /// Trigger phrases, joined into the index line.
    pub when: Vec<String>,
    /// Input kinds the skill acts on; `None` ≡ `["text"]`. Advisory only.
    pub modalities: Option<Vec<String>>,
    /// Inline instructions, returned verbatim (never interpolated).
    pub body: Option<String>,
    /// Context-aware instructions; wins over `body` when set.
    pub body_fn: Option<BodyFn>,
    /// Tools that become callable once the skill is read.
    pub tools: Vec<Tool>,
    /// Names of skills this one depends on; they come with it when it is read.
    pub requires: Vec<String>,
    /// The path of the Rust function the skill was declared on.
    pub function: Option<&'static str>,
    /// The folder of an Agent Skills skill: files in it are readable through
    /// `read_skill(name, path)`, and nothing outside it.
    pub root: Option<PathBuf>,
    /// Let this skill's bundled [`tools`](Self::tools) run even when the
    /// agent's allow-list does not name them. Off by default: a skill's tools
    /// obey the allow-list like any other. Capability grants apply either way.
    pub tools_bypass_allow_list: bool,
}

impl Skill {
    /// A prompt-only skill with a name and description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            ..Self::default()
        }
    }

    /// Set the trigger phrases.
    pub fn when<I, S>(mut self, phrases: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.when = phrases.into_iter().map(Into::into).collect();
        self
    }

    /// Set the input kinds.
    pub fn modalities<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.modalities = Some(kinds.into_iter().map(Into::into).collect());
        self
    }

    /// Set the static body.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Set the body function.
    pub fn body_fn<F>(mut self, f: F) -> Self
    where
        F: Fn(&SkillContext) -> Result<String, SkillError> + Send + Sync + 'static,
    {
        self.body_fn = Some(BodyFn::new(f));
        self
    }

    /// Let the bundled tools run whatever the agent's allow-list says (see
    /// [`tools_bypass_allow_list`](Self::tools_bypass_allow_list)).
    pub fn trust_tools(mut self) -> Self {
        self.tools_bypass_allow_list = true;
        self
    }

    /// Bundle tools that become callable once the skill is read.
    pub fn tools<I>(mut self, tools: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<Tool>,
    {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Name the skills this one depends on.
    pub fn requires<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.requires = names.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the modalities differ from the default `["text"]`.
    fn has_non_default_modalities(&self) -> bool {
        self.modalities
            .as_ref()
            .is_some_and(|kinds| !kinds.is_empty() && kinds.iter().any(|kind| kind != "text"))
    }
}

/// One skill as a line of the index: ` - name: description (when: a, b) [modalities: image, pdf]`.
///
/// Missing fields are left out; the modalities clause appears only when they
/// are set and not the default `["text"]`.
pub fn index_line(skill: &Skill) -> String {
    let mut line = format!(" - {}", skill.name);
    if !skill.description.is_empty() {
        line.push_str(": ");
        line.push_str(&skill.description);
    }
    if !skill.when.is_empty() {
        line.push_str(&format!(" (when: {})", skill.when.join(", ")));
    }
    if skill.has_non_default_modalities() {
        let kinds = skill.modalities.as_deref().unwrap_or_default();
        line.push_str(&format!(" [modalities: {}]", kinds.join(", ")));
    }
    line
}

/// The system-prompt fragment listing `skills`: [`INDEX_HEADER`], then one
/// [`index_line`] per skill. Empty when there are no skills.
pub fn build_index(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut index = String::from(INDEX_HEADER);
    for skill in skills {
        index.push('\n');
        index.push_str(&index_line(skill));
    }
    index
}

/// What `list_skills` shows of a skill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkillSummary {
    /// The name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The trigger phrases (`[]` when none).
    pub when: Vec<String>,
}

/// The body of a `list_skills` call: `{name, description, when}` per skill.
pub fn list_skills_of(skills: &[Skill]) -> Vec<SkillSummary> {
    skills
        .iter()
        .map(|skill| SkillSummary {
            name: skill.name.clone(),
            description: skill.description.clone(),
            when: skill.when.clone(),
        })
        .collect()
}

/// The body of `skill` for this invocation: `body_fn(ctx)` when set (its
/// errors propagate), else `body`, else `""`.
pub fn load_body(skill: &Skill, ctx: &SkillContext) -> Result<String, SkillError> {
    match &skill.body_fn {
        Some(body_fn) => body_fn.call(ctx),
        None => Ok(skill.body.clone().unwrap_or_default()),
    }
}

/// The skill named `name`.
pub fn find_skill<'a>(skills: &'a [Skill], name: &str) -> Option<&'a Skill> {
    skills.iter().find(|skill| skill.name == name)
}

/// Normalise an agent's skills (`#[skill]` functions' `skill()`, or built
/// [`Skill`]s) into a list, refusing duplicate names. Every skill is listed
/// explicitly; there is no glob.
pub fn for_agent<I>(entries: I) -> Result<Vec<Skill>, SkillError>
where
    I: IntoIterator,
    I::Item: Into<Skill>,
{
    let skills: Vec<Skill> = entries.into_iter().map(Into::into).collect();
    let mut seen = HashSet::new();
    for skill in &skills {
        if !seen.insert(skill.name.as_str()) {
            return Err(SkillError::DuplicateName(skill.name.clone()));
        }
    }
    Ok(skills)
}

/// Read the `ctx` key `name` as a body function's parameter: a missing key is
/// `null`, which an `Option` parameter takes as `None`. Used by `#[skill]`.
pub fn ctx_arg<T: DeserializeOwned>(ctx: &SkillContext, name: &str) -> Result<T, SkillError> {
    let value = ctx.get(name).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|error| SkillError::Context {
        key: name.to_owned(),
        message: error.to_string(),
    })
}

/// What a `#[skill]` body function may return: text, or a `Result` of text.
pub trait IntoBody {
    /// The body, or the body function's error.
    fn into_body(self) -> Result<String, SkillError>;
}

impl IntoBody for String {
    fn into_body(self) -> Result<String, SkillError> {
        Ok(self)
    }
}

impl IntoBody for &str {
    fn into_body(self) -> Result<String, SkillError> {
        Ok(self.to_owned())
    }
}

impl<T: Into<String>, E: fmt::Display> IntoBody for Result<T, E> {
    fn into_body(self) -> Result<String, SkillError> {
        self.map(Into::into)
            .map_err(|error| SkillError::Body(error.to_string()))
    }
}
