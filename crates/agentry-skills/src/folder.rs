//! Loading and validating Agent Skills folders: a `SKILL.md` with YAML front
//! matter (`name`, `description`, `license`, `compatibility`, `metadata`,
//! `allowed-tools`) and any files beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentry_core::skill::{Skill, SkillError};

use crate::validate::{MAX_DESCRIPTION, Problem, check_front_matter};

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";

/// Largest `SKILL.md` read, in bytes. The specification asks for bodies
/// under 500 lines; a megabyte leaves room and stops a hostile folder from
/// exhausting memory.
pub const MAX_SKILL_FILE: u64 = 1024 * 1024;

/// A `SKILL.md`'s text: a regular file (never a FIFO that would block the
/// read forever) of at most [`MAX_SKILL_FILE`] bytes. The file is opened
/// without waiting (`O_NONBLOCK`) and judged by the handle opened, so a
/// FIFO swapped in after a look at the path is refused too.
fn read_skill_file(file: &Path) -> Result<String, Problem> {
    use std::io::Read;
    let unreadable = |e: std::io::Error| Problem::Unreadable(format!("{}: {e}", file.display()));
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let opened = options.open(file).map_err(unreadable)?;
    let meta = opened.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(Problem::NotAFile);
    }
    let too_large = |len| Problem::TooLarge {
        len,
        max: MAX_SKILL_FILE,
    };
    if meta.len() > MAX_SKILL_FILE {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::new();
    opened
        .take(MAX_SKILL_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_SKILL_FILE {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| Problem::Unreadable(format!("{}: {e}", file.display())))
}

/// A skill folder's metadata. The body stays on disk until the skill is read
/// (progressive disclosure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFolder {
    /// The skill's name (equal to the folder's name).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Licence name or bundled licence file.
    pub license: Option<String>,
    /// Environment requirements.
    pub compatibility: Option<String>,
    /// Extra string properties.
    pub metadata: BTreeMap<String, String>,
    /// Pre-approved tools (`allowed-tools`, space-separated in the file).
    pub allowed_tools: Vec<String>,
    /// The folder.
    pub path: PathBuf,
    /// What breaks the specification without making the skill unusable
    /// (a description over 1,024 characters, unknown fields, a name that
    /// differs from the folder's): the skill loads, and these are reported.
    pub warnings: Vec<Problem>,
}

/// Split a `SKILL.md` into its front matter (YAML text) and its body.
pub fn split_front_matter(text: &str) -> Result<(&str, &str), Problem> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(Problem::NoFrontMatter)?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return Ok((yaml, body.trim_start_matches(['\r', '\n'])));
        }
        offset += line.len();
    }
    Err(Problem::UnclosedFrontMatter)
}

impl SkillFolder {
    /// Load the skill folder at `dir`, liberally: problems that leave the
    /// skill usable become [`warnings`](Self::warnings) (and a `tracing`
    /// warning); a fatal one refuses the folder, with every problem found.
    pub fn load(dir: &Path) -> Result<Self, Vec<Problem>> {
        let text = read_skill_file(&dir.join(SKILL_FILE)).map_err(|p| vec![p])?;
        let (yaml, _body) = split_front_matter(&text).map_err(|p| vec![p])?;
        let folder_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (front, warnings) = check_front_matter(yaml, &folder_name)?;
        for warning in &warnings {
            tracing::warn!(skill = %front.name, folder = %dir.display(), %warning, "skill loaded despite a problem");
        }
        Ok(Self {
            name: front.name,
            description: front.description,
            license: front.license,
            compatibility: front.compatibility,
            metadata: front.metadata,
            allowed_tools: front.allowed_tools,
            path: dir.to_path_buf(),
            warnings,
        })
    }

    /// Check the folder at `dir` strictly against the specification: every
    /// problem, fatal or not (empty when it is valid).
    pub fn validate(dir: &Path) -> Vec<Problem> {
        match Self::load(dir) {
            Ok(skill) => skill.warnings,
            Err(problems) => problems,
        }
    }

    /// The instructions: `SKILL.md` after the front matter, read now.
    pub fn body(&self) -> Result<String, SkillError> {
        let text = read_skill_file(&self.path.join(SKILL_FILE))
            .map_err(|p| SkillError::File(p.to_string()))?;
        let (_, body) = split_front_matter(&text).map_err(|p| SkillError::File(p.to_string()))?;
        Ok(body.to_owned())
    }

    /// The folder as a [`Skill`]: name and description now, the body read
    /// from disk only when the skill is read, files readable by relative path.
    /// A description over [`MAX_DESCRIPTION`] characters is shortened (with
    /// `…`) so the index line stays within the limit.
    pub fn to_skill(&self) -> Skill {
        let folder = self.clone();
        let description = shorten(&self.description, MAX_DESCRIPTION);
        let mut skill = Skill::new(&self.name, description).body_fn(move |_ctx| folder.body());
        skill.root = Some(self.path.clone());
        skill
    }
}

/// `text` cut to at most `max` characters, the last of them `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max - 1).collect();
    short.push('…');
    short
}

/// What loading a directory of skill folders found.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// The skills that load, sorted by name (some may carry
    /// [`warnings`](SkillFolder::warnings)).
    pub skills: Vec<SkillFolder>,
    /// Each folder that cannot load, with everything wrong with it, sorted by path.
    pub invalid: Vec<(PathBuf, Vec<Problem>)>,
}

impl LoadReport {
    /// The valid skills as [`Skill`]s.
    pub fn to_skills(&self) -> Vec<Skill> {
        self.skills.iter().map(SkillFolder::to_skill).collect()
    }

    /// True when every folder follows the specification: none refused, none
    /// loaded with warnings.
    pub fn is_valid(&self) -> bool {
        self.invalid.is_empty() && self.skills.iter().all(|skill| skill.warnings.is_empty())
    }

    /// The skills that loaded with warnings.
    pub fn with_warnings(&self) -> impl Iterator<Item = &SkillFolder> {
        self.skills
            .iter()
            .filter(|skill| !skill.warnings.is_empty())
    }
}

/// Load every skill folder directly under `dir` (sub-folders holding a
/// `SKILL.md`; `dir` itself when it holds one).
pub fn load_dir(dir: &Path) -> std::io::Result<LoadReport> {
    let mut report = LoadReport::default();
    let folders: Vec<PathBuf> = if dir.join(SKILL_FILE).is_file() {
        vec![dir.to_path_buf()]
    } else {
        let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_dir() && path.join(SKILL_FILE).exists())
            .collect();
        folders.sort();
        folders
    };
    for folder in folders {
        match SkillFolder::load(&folder) {
            Ok(skill) => match report.skills.iter().find(|kept| kept.name == skill.name) {
                // Two skills of one name would make `read_skill` ambiguous.
                Some(kept) => {
                    let duplicate = Problem::Duplicate {
                        name: skill.name,
                        first: kept.path.display().to_string(),
                    };
                    report.invalid.push((folder, vec![duplicate]));
                }
                None => report.skills.push(skill),
            },
            Err(problems) => report.invalid.push((folder, problems)),
        }
    }
    report.skills.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(report)
}
