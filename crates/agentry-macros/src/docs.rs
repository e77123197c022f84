//! Reading doc comments: the description, and per-argument descriptions from
//! a rustdoc `# Arguments` list.

use std::collections::HashMap;

use syn::{Attribute, Expr, Lit, Meta};

/// The text of the `#[doc = "..."]` attributes, one line each, common indentation removed.
pub fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(expr) => match &expr.lit {
                    Lit::Str(text) => Some(text.value()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .flat_map(|chunk| chunk.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let text: Vec<&str> = lines
        .iter()
        .map(|line| {
            if line.len() >= indent {
                &line[indent..]
            } else {
                line.trim()
            }
        })
        .collect();
    text.join("\n").trim().to_owned()
}

/// Split a doc text into the description and the descriptions listed under
/// `# Arguments` (or `# Parameters`): lines such as `* `x` - The first number.`
pub fn split_arguments(doc: &str) -> (String, HashMap<String, String>) {
    let mut description = Vec::new();
    let mut arguments = HashMap::new();
    let mut in_section = false;
    let mut current: Option<String> = None;
    for line in doc.lines() {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix('#') {
            let heading = heading.trim_start_matches('#').trim().to_lowercase();
            in_section = heading == "arguments" || heading == "parameters";
            current = None;
            if in_section {
                continue;
            }
        }
        if !in_section {
            description.push(line);
            continue;
        }
        if let Some((name, text)) = argument_item(trimmed) {
            arguments.insert(name.clone(), text);
            current = Some(name);
        } else if let (Some(name), false) = (&current, trimmed.is_empty()) {
            let entry: &mut String = arguments.get_mut(name).expect("current argument");
            entry.push(' ');
            entry.push_str(trimmed);
        }
    }
    (description.join("\n").trim().to_owned(), arguments)
}

fn argument_item(line: &str) -> Option<(String, String)> {
    let rest = line
        .strip_prefix("* ")
        .or_else(|| line.strip_prefix("- "))?
        .trim_start();
    let (name, rest) = if let Some(quoted) = rest.strip_prefix('`') {
        let end = quoted.find('`')?;
        (&quoted[..end], &quoted[end + 1..])
    } else {
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
        (&rest[..end], &rest[end..])
    };
    let text = rest
        .trim_start()
        .trim_start_matches([':', '-', '—', '–'])
        .trim();
    Some((name.to_owned(), text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_rustdoc_arguments() {
        let doc = "Add two numbers.\n\n# Arguments\n\n* `x` - The first.\n* `y`: The second,\n  continued.\n\n# Errors\nNever.";
        let (description, args) = split_arguments(doc);
        assert_eq!(description, "Add two numbers.\n\n# Errors\nNever.");
        assert_eq!(args["x"], "The first.");
        assert_eq!(args["y"], "The second, continued.");
    }
}
