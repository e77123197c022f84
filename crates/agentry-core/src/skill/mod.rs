//! Skills: named bundles of instructions (and optionally tools)
//! that an agent pulls into its context on demand.
//!
//! The agent lists skills in its system prompt ([`build_index`]) and gives
//! the model the built-in tools ([`builtins_with_resolver`]) to read them. A
//! [`SkillResolver`] decides which skills are advertised each turn.
//!
//! ```
//! use agentry_core::skill::{Skill, build_index};
//!
//! let tone = Skill::new("customer-tone", "Apply our voice").when(["reply", "marketing"]);
//! let escalation = Skill::new("escalation", "Decide when to escalate").when(["refund", "angry"]);
//! assert_eq!(
//!     build_index(&[tone, escalation]),
//!     "Available skills you can read with read_skill(name):\n - customer-tone: Apply our voice (when: reply, marketing)\n - escalation: Decide when to escalate (when: refund, angry)"
//! );
//! ```

mod builtins;
mod files;
mod resolver;
mod search;
#[allow(clippy::module_inception)]
mod skill;

pub use builtins::{
    APPLY_SKILL, BUILTIN_NAMES, LIST_SKILLS, READ_SKILL, RESERVED_CTX_KEY, SEARCH_SKILLS,
    body_with_requirements, builtin_apply_skill, builtin_apply_skill_r, builtin_list_skills,
    builtin_list_skills_r, builtin_read_skill, builtin_read_skill_r, builtin_search_skills_r,
    builtins, builtins_with_resolver, merge_skill_context,
};
pub use files::{MAX_FILE_BYTES, read_skill_file, skill_files};
pub use resolver::{
    InMemoryResolver, ListContext, SearchableResolver, SkillResolver, effective_resolver,
    in_memory_resolver, searchable_resolver,
};
pub use search::{
    DESCRIPTION_POINTS, NAME_POINTS, SearchOpts, WHEN_POINTS, search_skills_of, substring_score,
};
pub use skill::{
    BodyFn, INDEX_HEADER, IntoBody, Skill, SkillContext, SkillError, SkillSummary, build_index,
    ctx_arg, find_skill, for_agent, index_line, list_skills_of, load_body,
};
