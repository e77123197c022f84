//! Reading the files bundled in a skill folder (`scripts/`, `references/`,
//! `assets/`, ...) by relative path, never outside the folder: `..`,
//! absolute paths and symlinks that lead out are refused.

use std::path::{Component, Path};

use super::skill::{Skill, SkillError};

/// Largest bundled file `read_skill` returns.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// The text of `relative` inside `skill`'s folder.
pub fn read_skill_file(skill: &Skill, relative: &str) -> Result<String, SkillError> {
    let fail = |message: String| SkillError::File(message);
    let Some(root) = &skill.root else {
        return Err(fail(format!(
            "skill {:?} has no bundled files; read it without a path",
            skill.name
        )));
    };
    let path = Path::new(relative);
    if relative.is_empty()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(fail(format!(
            "{relative:?} is not a relative path inside skill {:?} (no '..', no absolute paths)",
            skill.name
        )));
    }
    let root = root
        .canonicalize()
        .map_err(|e| fail(format!("skill {:?}: folder unreadable: {e}", skill.name)))?;
    let target = root
        .join(path)
        .canonicalize()
        .map_err(|_| fail(format!("skill {:?} has no file {relative:?}", skill.name)))?;
    if !target.starts_with(&root) {
        return Err(fail(format!(
            "{relative:?} leads outside skill {:?} (through a symlink)",
            skill.name
        )));
    }
    let meta = std::fs::metadata(&target).map_err(|e| fail(format!("{relative:?}: {e}")))?;
    if !meta.is_file() {
        return Err(fail(format!(
            "{relative:?} in skill {:?} is not a file",
            skill.name
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(fail(format!(
            "{relative:?} is {} bytes; read_skill returns files up to {MAX_FILE_BYTES} bytes",
            meta.len()
        )));
    }
    let bytes = std::fs::read(&target).map_err(|e| fail(format!("{relative:?}: {e}")))?;
    String::from_utf8(bytes).map_err(|_| {
        fail(format!(
            "{relative:?} in skill {:?} is not UTF-8 text",
            skill.name
        ))
    })
}

/// Every file in `skill`'s folder, as sorted relative paths with `/`
/// separators (symlinks are not followed).
pub fn skill_files(skill: &Skill) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => walk(&entry.path(), &relative, out),
                Ok(kind) if kind.is_file() => out.push(relative),
                _ => {}
            }
        }
    }
    let mut files = Vec::new();
    if let Some(root) = &skill.root {
        walk(root, "", &mut files);
    }
    files.sort();
    files
}
