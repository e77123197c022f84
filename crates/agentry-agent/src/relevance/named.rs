//! A request that names what a tool lists: a file of the files a reader
//! offers (`"examples": ["notes.txt", …]`), an identifier among an
//! argument's `enum` values. Such a request is the tool's, whatever the
//! embeddings say ("port in config.json?" is far from "Read a text file"
//! by cosine): the first step calls it.

use agentry_core::tool::ToolSchema;

/// The first tool (in offered order) one of whose listed names the request
/// names, with that name.
pub(super) fn named_tool<'a>(request: &str, tools: &'a [ToolSchema]) -> Option<(&'a str, String)> {
    let request = request.to_lowercase();
    tools.iter().find_map(|tool| {
        listed_names(tool)
            .find(|name| names(&request, &name.to_lowercase()))
            .map(|name| (tool.name.as_str(), name.to_owned()))
    })
}

/// The `enum` and `examples` strings of a tool's arguments that look like
/// names: three characters or more, holding a `.`, `/`, `_` or a digit
/// (`notes.txt`, `src/main.rs`, `AF007`). Plain words ("celsius", "yes")
/// are left out: a request can use them without meaning the tool.
fn listed_names(tool: &ToolSchema) -> impl Iterator<Item = &str> {
    tool.input_schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flat_map(|properties| properties.values())
        .flat_map(|property| {
            ["enum", "examples"]
                .into_iter()
                .filter_map(|key| property.get(key).and_then(serde_json::Value::as_array))
                .flatten()
        })
        .filter_map(serde_json::Value::as_str)
        .filter(|name| {
            name.chars().count() >= 3
                && name
                    .chars()
                    .any(|c| matches!(c, '.' | '/' | '_') || c.is_ascii_digit())
        })
}

/// Whether `text` holds `name` as a whole word: not inside a longer name
/// (`notes.txt` is not named by `old-notes.txt` or `notes.txt.bak`).
fn names(text: &str, name: &str) -> bool {
    let part_of_a_name = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '/' | '-');
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        // A sentence's full stop after the name still ends it.
        let after_ends = match after {
            Some('.') => text[at + name.len() + 1..]
                .chars()
                .next()
                .is_none_or(|c| !part_of_a_name(c)),
            Some(c) => !part_of_a_name(c),
            None => true,
        };
        before.is_none_or(|c| !part_of_a_name(c)) && after_ends
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reader() -> ToolSchema {
        ToolSchema {
            name: "read_file".into(),
            description: Some("Read a file.".into()),
            input_schema: json!({"type": "object", "properties": {
                "path": {"type": "string", "examples": ["notes.txt", "todo.md", "a"]},
                "unit": {"enum": ["celsius", "fahrenheit"]},
            }}),
            output_schema: None,
        }
    }

    #[test]
    fn a_listed_name_the_request_names_picks_its_tool() {
        let tools = [reader()];
        let named =
            |request: &str| named_tool(request, &tools).map(|(tool, name)| (tool.to_owned(), name));
        assert_eq!(
            named("port in NOTES.TXT?"),
            Some(("read_file".into(), "notes.txt".into()))
        );
        assert_eq!(
            named("Read notes.txt."),
            Some(("read_file".into(), "notes.txt".into()))
        );
        assert_eq!(
            named("what's in the todo file todo.md"),
            Some(("read_file".into(), "todo.md".into()))
        );
        // Inside a longer name, or a plain word: not named.
        assert_eq!(named("open old-notes.txt"), None);
        assert_eq!(named("open notes.txt.bak"), None);
        assert_eq!(named("is it 20 celsius?"), None);
        assert_eq!(named("a"), None);
        assert_eq!(named_tool("notes.txt", &[]), None);
    }
}
