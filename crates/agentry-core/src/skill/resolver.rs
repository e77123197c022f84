//! [`SkillResolver`]: which skills the model sees on a turn, how a name is
//! read, and (optionally) how skills are searched: [`InMemoryResolver`],
//! [`SearchableResolver`], and [`effective_resolver`] for a run.

use std::collections::HashSet;
use std::sync::Arc;

use crate::BoxFuture;

use super::search::{SearchOpts, search_skills_of};
use super::skill::{Skill, find_skill};
use crate::model::Message;

/// What [`SkillResolver::list`] sees of the turn.
#[derive(Clone, Copy, Debug, Default)]
pub struct ListContext<'a> {
    /// The conversation so far (the new user message last).
    pub messages: &'a [Message],
    /// The agent's system prompt, before the skill index joins it.
    pub system: Option<&'a str>,
    /// The model's id.
    pub model: &'a str,
}

/// Pluggable strategy for which skills the model sees.
///
/// The agent loop calls [`list`](Self::list) once per turn to build the
/// system-prompt index, [`read`](Self::read) from `read_skill` and
/// `apply_skill`, and [`search`](Self::search) from `search_skills`, which
/// exists only when [`can_search`](Self::can_search) is true. `read` is
/// decoupled from `list`: a store-backed resolver may serve skills it never
/// advertised.
///
/// A resolver that advertises only the skills whose `when` words appear in
/// the user's last message:
///
/// ```
/// use agentry_core::BoxFuture;
/// use agentry_core::model::Message;
/// use agentry_core::skill::{ListContext, Skill, SkillResolver, find_skill};
///
/// struct ByKeyword(Vec<Skill>);
///
/// impl SkillResolver for ByKeyword {
///     fn list<'a>(&'a self, ctx: ListContext<'a>) -> BoxFuture<'a, Vec<Skill>> {
///         let last = match ctx.messages.last() {
///             Some(Message::User { text }) => text.to_lowercase(),
///             _ => String::new(),
///         };
///         let listed = self.0.iter()
///             .filter(|skill| skill.when.iter().any(|word| last.contains(word.as_str())))
///             .cloned()
///             .collect();
///         Box::pin(async move { listed })
///     }
///     fn read<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Skill>> {
///         Box::pin(async move { find_skill(&self.0, name).cloned() })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let resolver = ByKeyword(vec![
///     Skill::new("refunds", "How to handle refunds").when(["refund"]),
///     Skill::new("tone", "Our voice").when(["reply"]),
/// ]);
/// let messages = [Message::user("Can I get a refund?")];
/// let listed = resolver.list(ListContext { messages: &messages, system: None, model: "any" }).await;
/// assert_eq!(listed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["refunds"]);
/// assert!(resolver.read("tone").await.is_some(), "read serves what list did not show");
/// # });
/// ```
pub trait SkillResolver: Send + Sync {
    /// The skills to advertise this turn.
    fn list<'a>(&'a self, ctx: ListContext<'a>) -> BoxFuture<'a, Vec<Skill>>;

    /// The skill named `name`, or `None`.
    fn read<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Skill>>;

    /// Whether [`search`](Self::search) is implemented (adds `search_skills`).
    fn can_search(&self) -> bool {
        false
    }

    /// Skills matching `query`, best first.
    fn search<'a>(&'a self, query: &'a str, opts: SearchOpts) -> BoxFuture<'a, Vec<Skill>> {
        let _ = (query, opts);
        Box::pin(async { Vec::new() })
    }
}

impl<R: SkillResolver + ?Sized> SkillResolver for Arc<R> {
    fn list<'a>(&'a self, ctx: ListContext<'a>) -> BoxFuture<'a, Vec<Skill>> {
        (**self).list(ctx)
    }
    fn read<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Skill>> {
        (**self).read(name)
    }
    fn can_search(&self) -> bool {
        (**self).can_search()
    }
    fn search<'a>(&'a self, query: &'a str, opts: SearchOpts) -> BoxFuture<'a, Vec<Skill>> {
        (**self).search(query, opts)
    }
}

/// The default resolver: lists every skill every turn, reads by name, no search.
#[derive(Clone, Debug, Default)]
pub struct InMemoryResolver {
    skills: Arc<Vec<Skill>>,
}

impl InMemoryResolver {
    /// A resolver over `skills` that lists all of them every turn.
    pub fn new(skills: Vec<Skill>) -> Self {
        Self {
            skills: Arc::new(skills),
        }
    }

    /// The skills it serves.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }
}

impl SkillResolver for InMemoryResolver {
    fn list<'a>(&'a self, _ctx: ListContext<'a>) -> BoxFuture<'a, Vec<Skill>> {
        Box::pin(async move { self.skills.as_ref().clone() })
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Skill>> {
        Box::pin(async move { find_skill(&self.skills, name).cloned() })
    }
}

/// A resolver that advertises only its always-on skills and finds the rest
/// through `search_skills` (substring ranking) and `read_skill`.
#[derive(Clone, Debug, Default)]
pub struct SearchableResolver {
    skills: Arc<Vec<Skill>>,
    always_on: Arc<HashSet<String>>,
}

impl SearchableResolver {
    /// A resolver over `skills` that lists only those named in `always_on`
    /// and finds the rest by search.
    pub fn new<I, S>(skills: Vec<Skill>, always_on: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            skills: Arc::new(skills),
            always_on: Arc::new(always_on.into_iter().map(Into::into).collect()),
        }
    }

    /// The skills it serves.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }
}

impl SkillResolver for SearchableResolver {
    fn list<'a>(&'a self, _ctx: ListContext<'a>) -> BoxFuture<'a, Vec<Skill>> {
        Box::pin(async move {
            self.skills
                .iter()
                .filter(|skill| self.always_on.contains(&skill.name))
                .cloned()
                .collect()
        })
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<Skill>> {
        Box::pin(async move { find_skill(&self.skills, name).cloned() })
    }

    fn can_search(&self) -> bool {
        true
    }

    fn search<'a>(&'a self, query: &'a str, opts: SearchOpts) -> BoxFuture<'a, Vec<Skill>> {
        Box::pin(async move { search_skills_of(&self.skills, query, opts) })
    }
}

/// The resolver a run uses: an explicit resolver wins outright; otherwise
/// the skills (if there are any) are wrapped in an [`InMemoryResolver`]; with neither,
/// `None` — the run gets no skill index and no skill built-ins.
pub fn effective_resolver(
    skill_resolver: Option<Arc<dyn SkillResolver>>,
    skills: Option<Vec<Skill>>,
) -> Option<Arc<dyn SkillResolver>> {
    match (skill_resolver, skills) {
        (Some(resolver), _) => Some(resolver),
        (None, Some(skills)) if !skills.is_empty() => Some(Arc::new(InMemoryResolver::new(skills))),
        (None, _) => None,
    }
}
