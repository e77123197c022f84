//! # agentry-skills
//!
//! [Agent Skills](https://agentskills.io) folders for agentry: load a
//! directory of `SKILL.md` folders, validate them against the
//! specification with precise problems, and hand them to an agent with
//! progressive disclosure (only name and description until a skill is read;
//! bundled files readable by relative path, never outside the folder). Plus
//! [`SkillSearch`]: BM25 skill search, optionally fused with embeddings.
//!
//! ```
//! use agentry_skills::{SkillSearch, load_dir};
//!
//! let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid");
//! let report = load_dir(&dir)?;
//! assert!(report.is_valid());
//! let names: Vec<&str> = report.skills.iter().map(|s| s.name.as_str()).collect();
//! assert_eq!(names, ["pdf-processing", "release-notes"]);
//!
//! let search = SkillSearch::bm25(report.to_skills());
//! let best = search.rank_bm25("fill in a PDF form");
//! assert_eq!(search.skills()[best[0].0].name, "pdf-processing");
//! # Ok::<_, std::io::Error>(())
//! ```

mod folder;
mod search;
mod validate;
mod yaml;

pub use agentry_search::{DEFAULT_LEXICAL_WEIGHT, RRF_K};
pub use folder::{
    LoadReport, MAX_SKILL_FILE, SKILL_FILE, SkillFolder, load_dir, split_front_matter,
};
pub use search::{SkillSearch, embedding_text, search_text};
pub use validate::{
    FIELDS, MAX_COMPATIBILITY, MAX_DESCRIPTION, MAX_FRONT_MATTER_DEPTH, MAX_FRONT_MATTER_NODES,
    MAX_NAME, Problem, name_problems,
};

/// Entry point for the fuzz target (`fuzz/`): read a `SKILL.md` text found
/// in a folder called `folder`. Not a stable API.
#[doc(hidden)]
pub mod __fuzz {
    /// Every problem of the text, or the skill's name when it loads.
    pub fn skill_md(text: &str, folder: &str) -> Result<String, Vec<crate::Problem>> {
        let (yaml, _body) = crate::split_front_matter(text).map_err(|p| vec![p])?;
        crate::validate::check_front_matter(yaml, folder).map(|(front, _warnings)| front.name)
    }
}
