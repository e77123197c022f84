//! A `SKILL.md` text of any bytes: its problems or its name, never a panic
//! (YAML aliases included).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = agentry_skills::__fuzz::skill_md(text, "some-skill");
    }
});
