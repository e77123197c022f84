//! The `skill_md` fuzz target (`fuzz/`), replayed on stable: every seed
//! `SKILL.md` and thousands of mutations of them, a name or a list of
//! problems, never a panic.

#[path = "../../../fuzz/replay.rs"]
mod replay;

#[test]
fn skill_files_mutated_never_panic() {
    let mut loaded = 0;
    replay::replay("skill_md", |bytes| {
        if let Ok(text) = std::str::from_utf8(bytes)
            && agentry_skills::__fuzz::skill_md(text, "some-skill").is_ok()
        {
            loaded += 1;
        }
    });
    // Some inputs still load: the mutations stay near real files.
    assert!(loaded > 0);
}
