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
    let bytes = read_bounded(&target).map_err(|error| match error {
        Bounded::NotAFile => fail(format!(
            "{relative:?} in skill {:?} is not a file",
            skill.name
        )),
        Bounded::TooLarge(len) if len <= MAX_FILE_BYTES + 1 => fail(format!(
            "{relative:?} holds more than {MAX_FILE_BYTES} bytes; read_skill returns files up to {MAX_FILE_BYTES} bytes"
        )),
        Bounded::TooLarge(len) => fail(format!(
            "{relative:?} is {len} bytes; read_skill returns files up to {MAX_FILE_BYTES} bytes"
        )),
        Bounded::Io(e) => fail(format!("{relative:?}: {e}")),
    })?;
    String::from_utf8(bytes).map_err(|_| {
        fail(format!(
            "{relative:?} in skill {:?} is not UTF-8 text",
            skill.name
        ))
    })
}

/// Why [`read_bounded`] read nothing.
enum Bounded {
    NotAFile,
    /// Over [`MAX_FILE_BYTES`]: its length, or what was read past the limit.
    TooLarge(u64),
    Io(std::io::Error),
}

/// The bytes of the regular file at `path`, at most [`MAX_FILE_BYTES`] of
/// them read whatever its size says (it may grow after the check). Opening
/// never waits on a FIFO, and the kind and size are those of the file opened.
fn read_bounded(path: &Path) -> Result<Vec<u8>, Bounded> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(Bounded::Io)?;
    let meta = file.metadata().map_err(Bounded::Io)?;
    if !meta.is_file() {
        return Err(Bounded::NotAFile);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Bounded::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Bounded::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Bounded::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file whose size says 0 and that holds more (procfs's symbol list,
    /// megabytes): read up to the limit and one byte past it, never to its
    /// end.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_is_read_to_the_limit_whatever_its_size_says() {
        let path = Path::new("/proc/kallsyms");
        let Ok(meta) = std::fs::metadata(path) else {
            eprintln!("skipped: this system has no {}", path.display());
            return;
        };
        assert_eq!(meta.len(), 0);
        match read_bounded(path) {
            Err(Bounded::TooLarge(read)) => assert_eq!(read, MAX_FILE_BYTES + 1),
            Err(Bounded::Io(e)) => panic!("read failed: {e}"),
            Err(Bounded::NotAFile) => panic!("refused as not a file"),
            Ok(bytes) => panic!("{} bytes returned", bytes.len()),
        }
    }

    /// A FIFO is refused at once, not waited on for a writer.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_waiting() {
        let dir = std::env::temp_dir().join(format!("agentry-skill-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(matches!(read_bounded(&fifo), Err(Bounded::NotAFile)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
