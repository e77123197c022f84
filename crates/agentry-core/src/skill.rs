//! Skills: named bundles of instructions (and optionally tools)
//! that an agent pulls into its context on demand.
//!
//! The agent lists skills in its system prompt ([`build_index`]) and gives
//! the model the built-in tools ([`builtin_tools`]) to read them. A
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
    apply_skill_tool, builtin_tools, list_skills_tool, read_skill_tool, search_skills_tool,
};
pub use files::{MAX_FILE_BYTES, read_skill_file, skill_files};
pub use resolver::{
    InMemoryResolver, ListContext, SearchableResolver, SkillResolver, effective_resolver,
};
pub use search::{SearchOpts, search_skills_of};
pub use skill::{
    BodyFn, INDEX_HEADER, IntoBody, Skill, SkillContext, SkillError, SkillSummary, build_index,
    ctx_arg, find_skill, for_agent, index_line, list_skills_of, load_body,
};
