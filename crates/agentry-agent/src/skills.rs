//! Per-run skill wiring: the skill index joins the system prompt, the skill
//! built-ins join the toolbox, and a skill's bundled tools (and those of the
//! skills it requires) become callable once the model has read it — only a
//! skill the model was offered (listed in the index, or found by
//! `search_skills`), and only tools the allow-list names, unless the skill
//! was trusted with [`Skill::trust_tools`](agentry_core::skill::Skill::trust_tools).

use crate::outcome::CallRecord;
use crate::run_tools::RunTools;
use agentry_core::skill::{APPLY_SKILL, READ_SKILL, SEARCH_SKILLS};

impl RunTools {
    /// `read_skill`'s and `apply_skill`'s `name` as an `enum` of the skills
    /// offered so far (listed, or found by search), sorted, and
    /// `read_skill`'s `path` as an `enum` of the files of the skills read so
    /// far (none before a skill is read: small models fill `path` eagerly
    /// with invented files), so that a grammar-constrained model can only
    /// name what exists.
    pub(crate) fn constrain_skill_names(&mut self) {
        if self.offered.is_empty() || !self.name_enums {
            return;
        }
        let mut names: Vec<&str> = self.offered.iter().map(String::as_str).collect();
        names.sort_unstable();
        let names = serde_json::json!(names);
        let files = (!self.skill_files.is_empty()).then(|| serde_json::json!(self.skill_files));
        for builtin in [READ_SKILL, APPLY_SKILL] {
            self.readvertise(builtin, |schema| {
                let properties = &mut schema.input_schema["properties"];
                properties["name"]["enum"] = names.clone();
                if let Some(properties) = properties.as_object_mut()
                    && properties.contains_key("path")
                {
                    match &files {
                        Some(files) => properties["path"]["enum"] = files.clone(),
                        None => _ = properties.remove("path"),
                    }
                }
            });
        }
    }

    /// After a step: note the skills `search_skills` offered; then for each
    /// offered skill the model read or applied successfully, make its bundled
    /// tools and those of the skills it requires callable.
    pub(crate) async fn activate(&mut self, records: &[CallRecord]) {
        let Some(resolver) = self.resolver.clone() else {
            return;
        };
        let succeeded = |record: &&CallRecord, name: &str| {
            !record.result.is_error
                && self
                    .toolbox
                    .find_for_call(&record.call.name)
                    .is_some_and(|tool| tool.name == name)
        };
        let found: Vec<String> = records
            .iter()
            .filter(|record| succeeded(record, SEARCH_SKILLS))
            .filter_map(|record| record.result.output.as_array())
            .flatten()
            .filter_map(|summary| summary["name"].as_str().map(str::to_owned))
            .collect();
        let newly_found: Vec<String> = found
            .into_iter()
            .filter(|name| !self.offered.contains(name))
            .collect();
        self.offered.extend(newly_found.iter().cloned());
        let mut queue: Vec<String> = records
            .iter()
            .filter(|record| succeeded(record, READ_SKILL) || succeeded(record, APPLY_SKILL))
            .filter_map(|record| record.call.input.get("name")?.as_str().map(str::to_owned))
            .filter(|name| {
                let offered = self.offered.contains(name);
                if !offered {
                    tracing::warn!(skill = %name, "a skill the model was not offered is not activated");
                }
                offered
            })
            .collect();
        let mut constrain = !newly_found.is_empty();
        let (mut trusted, mut others) = (Vec::new(), Vec::new());
        while let Some(name) = queue.pop() {
            if !self.activated.insert(name.clone()) {
                continue;
            }
            if let Some(skill) = resolver.read(&name).await {
                let files = files_to_read(&skill);
                constrain |= !files.is_empty();
                self.skill_files.extend(files);
                let tools = skill.tools.iter().cloned();
                if skill.tools_bypass_allow_list {
                    trusted.extend(tools);
                } else {
                    others.extend(tools);
                }
                queue.extend(skill.requires.iter().cloned());
            }
        }
        self.add(trusted, true);
        self.add(others, false);
        if constrain {
            self.constrain_skill_names();
        }
    }
}

/// The files of `skill` that `read_skill`'s `path` may name: all but its
/// `SKILL.md` (the instructions, read without a path).
fn files_to_read(skill: &agentry_core::skill::Skill) -> Vec<String> {
    agentry_core::skill::skill_files(skill)
        .into_iter()
        .filter(|file| file != "SKILL.md")
        .collect()
}
