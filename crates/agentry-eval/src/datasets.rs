//! Where the evaluation data is, found when a command runs: nothing is
//! baked in when the harness is built. A flag names it; else, for the
//! datasets folder, [`DATASETS_VAR`]; else the nearest one in the working
//! directory or above it, which is the repository's when the harness runs
//! from a checkout (`cargo run -p agentry-eval -- …` anywhere in it).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that names the datasets folder (`bfcl/`,
/// `metatool/`, `skills/`, as the repository's `datasets/` holds them).
pub const DATASETS_VAR: &str = "AGENTRY_DATASETS";

/// The datasets folder's name in the repository.
pub const DATASETS: &str = "datasets";

/// The single-tool agent tasks in BFCL's layout, in the repository.
pub const AGENT_TOOLS: &str = "benches/data/agent-tools";

/// The labelled skill requests, in the repository.
pub const SKILL_REQUESTS: &str = "benches/data/skill-requests.jsonl";

/// The datasets folder: `flag` when given, else `$AGENTRY_DATASETS` when
/// set and not empty, else the nearest `datasets` folder in the working
/// directory or above it. `hint` names the flag that would have said it
/// (`--datasets DIR`), for the error when there is none.
pub fn datasets(flag: Option<&Path>, hint: &str) -> Result<PathBuf, String> {
    locate_datasets(flag, std::env::var_os(DATASETS_VAR), &working_dir()?, hint)
}

/// The repository's `path` (such as [`AGENT_TOOLS`]): `flag` when given,
/// else the nearest `path` in the working directory or above it.
pub fn in_repository(flag: Option<&Path>, path: &str, hint: &str) -> Result<PathBuf, String> {
    if let Some(given) = flag {
        return Ok(given.to_owned());
    }
    let start = working_dir()?;
    nearest(&start, Path::new(path)).ok_or_else(|| {
        format!(
            "no {path} in {} or above it: pass {hint}, or run from the repository",
            start.display()
        )
    })
}

fn working_dir() -> Result<PathBuf, String> {
    std::env::current_dir().map_err(|e| format!("the working directory: {e}"))
}

/// `path` under `start` or the nearest of its ancestors that has it.
fn nearest(start: &Path, path: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(path))
        .find(|found| found.exists())
}

fn locate_datasets(
    flag: Option<&Path>,
    variable: Option<OsString>,
    start: &Path,
    hint: &str,
) -> Result<PathBuf, String> {
    if let Some(given) = flag {
        return Ok(given.to_owned());
    }
    if let Some(named) = variable.filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(named));
    }
    nearest(start, Path::new(DATASETS)).ok_or_else(|| {
        format!(
            "no {DATASETS} folder in {} or above it: pass {hint}, or set {DATASETS_VAR}",
            start.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `root/datasets` and `root/a/b`, in a fresh temporary folder.
    fn tree(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("agentry-eval-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("datasets")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        root
    }

    #[test]
    fn the_flag_wins_then_the_variable_then_the_nearest_folder_above() {
        let root = tree("locate");
        let deep = root.join("a/b");
        let hint = "--datasets DIR";
        let flag = Path::new("/given");
        let named = Some(OsString::from("/named"));
        assert_eq!(
            locate_datasets(Some(flag), named.clone(), &deep, hint),
            Ok(flag.to_owned())
        );
        assert_eq!(
            locate_datasets(None, named, &deep, hint),
            Ok(PathBuf::from("/named"))
        );
        // An empty variable is no variable.
        let found = locate_datasets(None, Some(OsString::new()), &deep, hint);
        assert_eq!(found, Ok(root.join("datasets")));
        // A nearer folder wins.
        std::fs::create_dir_all(root.join("a/datasets")).unwrap();
        assert_eq!(
            locate_datasets(None, None, &deep, hint),
            Ok(root.join("a/datasets"))
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn no_folder_anywhere_says_what_would_name_one() {
        // The root of the file system has no `datasets` folder on a test machine.
        let error = locate_datasets(None, None, Path::new("/"), "--skills DIR").unwrap_err();
        assert_eq!(
            error,
            "no datasets folder in / or above it: pass --skills DIR, or set AGENTRY_DATASETS"
        );
    }
}
