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

pub use folder::{
    LoadReport, MAX_SKILL_FILE, SKILL_FILE, SkillFolder, load_dir, split_front_matter,
};
pub use search::{DEFAULT_LEXICAL_WEIGHT, RRF_K, SkillSearch, embedding_text, search_text};
pub use validate::{FIELDS, MAX_COMPATIBILITY, MAX_DESCRIPTION, MAX_NAME, Problem, name_problems};
