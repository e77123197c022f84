//! The Agent Skills front-matter rules, with one precise [`Problem`] per
//! violation: name syntax and length, name equal to the folder, description
//! and compatibility lengths, metadata types, and unknown fields.

use std::collections::BTreeMap;

use serde_yaml_ng::Value;

use crate::yaml::{Nesting, Refusal};

/// Longest `name`, in characters.
pub const MAX_NAME: usize = 64;
/// Longest `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1024;
/// Longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY: usize = 500;
/// Most YAML nodes a front matter may make, each use of an alias counted
/// again. Real front matter makes a few dozen; this stops an alias bomb
/// (nested, or one wide anchor used many times) before it is read.
pub const MAX_FRONT_MATTER_NODES: usize = 100_000;
/// The deepest a front matter's collections may nest: `serde_yaml_ng`'s
/// recursion limit, so no front matter it reads is refused. Checked first,
/// in linear time: that parser spends time quadratic in the depth before
/// its own limit refuses a deeper one (20,000 levels: 20 s).
pub const MAX_FRONT_MATTER_DEPTH: usize = 128;
/// The most `[` and `{` a front matter the nesting check cannot read may
/// hold: however deep they nest, `serde_yaml_ng` then parses it quickly.
const MAX_UNCHECKED_FLOW_OPENERS: usize = 2_000;
/// The front-matter fields the specification defines.
pub const FIELDS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// One thing wrong with a skill folder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// `SKILL.md` could not be read.
    #[error("cannot read SKILL.md: {0}")]
    Unreadable(String),
    /// `SKILL.md` is not a regular file (a FIFO, a device, a directory).
    #[error("SKILL.md is not a regular file")]
    NotAFile,
    /// `SKILL.md` is larger than [`MAX_SKILL_FILE`](crate::MAX_SKILL_FILE).
    #[error("SKILL.md is {len} bytes, over the {max}-byte limit")]
    TooLarge {
        /// Its size.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// `SKILL.md` does not start with `---`.
    #[error("SKILL.md must start with YAML front matter between '---' lines")]
    NoFrontMatter,
    /// The closing `---` is missing.
    #[error("the front matter is not closed by a '---' line")]
    UnclosedFrontMatter,
    /// The front matter is not a YAML mapping.
    #[error("the front matter is not valid YAML: {0}")]
    Yaml(String),
    /// The front matter makes more YAML nodes than
    /// [`MAX_FRONT_MATTER_NODES`] (an alias bomb); it was not read.
    #[error(
        "the front matter makes more than {max} YAML nodes (each use of an alias counted again); it was not read"
    )]
    TooManyNodes {
        /// The limit.
        max: usize,
    },
    /// The front matter nests deeper than [`MAX_FRONT_MATTER_DEPTH`]; it
    /// was not read.
    #[error("the front matter nests deeper than {max} levels; it was not read")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// A required field is absent.
    #[error("missing required field `{0}`")]
    Missing(&'static str),
    /// A field has the wrong type.
    #[error("field `{field}` must be {expected}")]
    WrongType {
        /// The field.
        field: String,
        /// What it must be.
        expected: &'static str,
    },
    /// A field is empty or too long.
    #[error("field `{field}` must be 1-{max} characters, got {len}")]
    Length {
        /// The field.
        field: &'static str,
        /// Its limit.
        max: usize,
        /// Its length.
        len: usize,
    },
    /// The name breaks the naming rules.
    #[error("name {name:?} {rule}")]
    Name {
        /// The name.
        name: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// The name differs from the folder's name.
    #[error("name {name:?} must match the folder name {folder:?}")]
    FolderMismatch {
        /// The name.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// Another folder already holds a skill of this name (possible once names
    /// may differ from folder names); the first folder, by path, keeps it.
    #[error("another folder, {first}, already holds a skill named {name:?}")]
    Duplicate {
        /// The name.
        name: String,
        /// The folder that keeps it.
        first: String,
    },
    /// A field the specification does not define.
    #[error(
        "unknown field `{0}` (allowed: name, description, license, compatibility, metadata, allowed-tools)"
    )]
    UnknownField(String),
}

impl Problem {
    /// True when the problem makes the skill unusable (no front matter, no
    /// name or description); loading refuses it. Any other problem breaks
    /// the specification but not the skill: it loads with a warning, as
    /// hosts that run such skills do, and `agentry skills validate` reports it.
    pub fn is_fatal(&self) -> bool {
        match self {
            Problem::Unreadable(_)
            | Problem::NotAFile
            | Problem::TooLarge { .. }
            | Problem::NoFrontMatter
            | Problem::UnclosedFrontMatter
            | Problem::Yaml(_)
            | Problem::TooManyNodes { .. }
            | Problem::TooDeep { .. }
            | Problem::Missing(_)
            | Problem::Duplicate { .. } => true,
            Problem::WrongType { field, .. } => field == "name" || field == "description",
            Problem::Length { field, len, .. } => {
                *len == 0 && (*field == "name" || *field == "description")
            }
            Problem::Name { .. } | Problem::FolderMismatch { .. } | Problem::UnknownField(_) => {
                false
            }
        }
    }
}

/// The checked front matter.
pub(crate) struct FrontMatter {
    pub name: String,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub allowed_tools: Vec<String>,
}

/// Every way `name` breaks the naming rules (empty when it is valid).
pub fn name_problems(name: &str) -> Vec<Problem> {
    let mut problems = Vec::new();
    let rule = |rule| Problem::Name {
        name: name.to_owned(),
        rule,
    };
    let len = name.chars().count();
    if len == 0 || len > MAX_NAME {
        problems.push(Problem::Length {
            field: "name",
            max: MAX_NAME,
            len,
        });
    }
    if name.to_lowercase() != name {
        problems.push(rule("must be lowercase"));
    }
    if !name.chars().all(|c| c.is_alphanumeric() || c == '-') {
        problems.push(rule("may contain only letters, digits and hyphens"));
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push(rule("must not start or end with a hyphen"));
    }
    if name.contains("--") {
        problems.push(rule("must not contain consecutive hyphens"));
    }
    problems
}

fn text_field(
    map: &serde_yaml_ng::Mapping,
    field: &'static str,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    match map.get(field)? {
        Value::String(text) => Some(text.clone()),
        Value::Null => None,
        _ => {
            problems.push(Problem::WrongType {
                field: field.into(),
                expected: "a string",
            });
            None
        }
    }
}

fn check_length(field: &'static str, text: &str, max: usize, problems: &mut Vec<Problem>) {
    let len = text.chars().count();
    if len == 0 || len > max {
        problems.push(Problem::Length { field, max, len });
    }
}

/// Parse and check front matter found in the folder named `folder`: the
/// fields and every problem, or, when a problem is fatal, all of them.
pub(crate) fn check_front_matter(
    yaml: &str,
    folder: &str,
) -> Result<(FrontMatter, Vec<Problem>), Vec<Problem>> {
    match crate::yaml::nesting_within(yaml, MAX_FRONT_MATTER_DEPTH) {
        Nesting::Within => {}
        Nesting::Unread { flow_openers } if flow_openers <= MAX_UNCHECKED_FLOW_OPENERS => {}
        Nesting::Deeper => {
            return Err(vec![Problem::TooDeep {
                max: MAX_FRONT_MATTER_DEPTH,
            }]);
        }
        Nesting::Unread { flow_openers } => {
            return Err(vec![Problem::Yaml(format!(
                "its nesting could not be checked and it holds {flow_openers} `[` and `{{`, more than {MAX_UNCHECKED_FLOW_OPENERS}; it was not read"
            ))]);
        }
    }
    match crate::yaml::within_budget(yaml, MAX_FRONT_MATTER_NODES) {
        Ok(()) => {}
        Err(Refusal::OverBudget) => {
            return Err(vec![Problem::TooManyNodes {
                max: MAX_FRONT_MATTER_NODES,
            }]);
        }
        Err(Refusal::Parse(error)) => return Err(vec![Problem::Yaml(error.to_string())]),
    }
    let value: Value =
        serde_yaml_ng::from_str(yaml).map_err(|e| vec![Problem::Yaml(e.to_string())])?;
    let Value::Mapping(map) = value else {
        return Err(vec![Problem::Yaml("expected a mapping of fields".into())]);
    };
    let mut problems = Vec::new();
    for key in map.keys() {
        let key = key
            .as_str()
            .map_or_else(|| format!("{key:?}"), str::to_owned);
        if !FIELDS.contains(&key.as_str()) {
            problems.push(Problem::UnknownField(key));
        }
    }
    let name = text_field(&map, "name", &mut problems);
    match &name {
        None if !map.contains_key("name") => problems.push(Problem::Missing("name")),
        None => {}
        Some(name) => {
            problems.extend(name_problems(name));
            if name != folder {
                problems.push(Problem::FolderMismatch {
                    name: name.clone(),
                    folder: folder.to_owned(),
                });
            }
        }
    }
    let description = text_field(&map, "description", &mut problems);
    match &description {
        None if !map.contains_key("description") => problems.push(Problem::Missing("description")),
        None => {}
        Some(text) => check_length("description", text, MAX_DESCRIPTION, &mut problems),
    }
    let license = text_field(&map, "license", &mut problems);
    let compatibility = text_field(&map, "compatibility", &mut problems);
    if let Some(text) = &compatibility {
        check_length("compatibility", text, MAX_COMPATIBILITY, &mut problems);
    }
    let mut metadata = BTreeMap::new();
    match map.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Mapping(entries)) => {
            for (key, value) in entries {
                match (key, value) {
                    (Value::String(key), Value::String(value)) => {
                        metadata.insert(key.clone(), value.clone());
                    }
                    (key, _) => problems.push(Problem::WrongType {
                        field: format!(
                            "metadata.{}",
                            key.as_str()
                                .map_or_else(|| format!("{key:?}"), str::to_owned)
                        ),
                        expected: "a string (quote numbers, e.g. version: \"1.0\")",
                    }),
                }
            }
        }
        Some(_) => problems.push(Problem::WrongType {
            field: "metadata".into(),
            expected: "a mapping from string keys to string values",
        }),
    }
    let allowed_tools = text_field(&map, "allowed-tools", &mut problems)
        .map(|text| text.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    match (name, description) {
        (Some(name), Some(description)) if !problems.iter().any(Problem::is_fatal) => Ok((
            FrontMatter {
                name,
                description,
                license,
                compatibility,
                metadata,
                allowed_tools,
            },
            problems,
        )),
        _ => Err(problems),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_spec() {
        for valid in ["pdf-processing", "data-analysis", "code-review", "a", "x1"] {
            assert!(name_problems(valid).is_empty(), "{valid}");
        }
        assert_eq!(
            name_problems("PDF-Processing"),
            [Problem::Name {
                name: "PDF-Processing".into(),
                rule: "must be lowercase"
            }]
        );
        assert_eq!(
            name_problems("-pdf"),
            [Problem::Name {
                name: "-pdf".into(),
                rule: "must not start or end with a hyphen"
            }]
        );
        assert_eq!(
            name_problems("pdf--processing"),
            [Problem::Name {
                name: "pdf--processing".into(),
                rule: "must not contain consecutive hyphens"
            }]
        );
        assert_eq!(
            name_problems(&"a".repeat(65)),
            [Problem::Length {
                field: "name",
                max: 64,
                len: 65
            }]
        );
        assert!(name_problems(&"a".repeat(64)).is_empty());
        assert_eq!(
            name_problems("pdf_processing"),
            [Problem::Name {
                name: "pdf_processing".into(),
                rule: "may contain only letters, digits and hyphens"
            }]
        );
    }
}
