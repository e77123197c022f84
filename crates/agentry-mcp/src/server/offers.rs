//! What a server offers besides tools: prompts (`prompts/list`,
//! `prompts/get`), resources and resource templates (`resources/list`,
//! `resources/templates/list`, `resources/read`, subscriptions) and
//! completions of their arguments (`completion/complete`).

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::model::{CompletionInfo, PromptArgument, PromptMessage, ResourceContents, Role};
use serde_json::{Map, Value};

use super::Caller;

/// Most values one `completion/complete` answer carries (the protocol's cap).
pub const MAX_COMPLETIONS: usize = CompletionInfo::MAX_VALUES;

type Render = dyn Fn(Map<String, Value>, Option<Caller>) -> BoxFuture<'static, Result<Vec<PromptMessage>, String>>
    + Send
    + Sync;

/// A prompt the server offers: its arguments, what completes them, and
/// what it renders to.
///
/// ```
/// use agentry_mcp::server::Prompt;
///
/// let review = Prompt::text("review", "Review a file.", "Review {path} for {concern}.")
///     .argument("path", "The file", true)
///     .argument("concern", "What to look for", false)
///     .completions("concern", ["security", "style", "speed"]);
/// assert_eq!(review.name(), "review");
/// ```
#[derive(Clone)]
pub struct Prompt {
    pub(crate) info: rmcp::model::Prompt,
    pub(crate) completions: HashMap<String, Vec<String>>,
    render: Arc<Render>,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.info.name)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt rendered by `render`, given the request's arguments and (on
    /// a live request) the [`Caller`], which may ask the client for input.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, render: F) -> Self
    where
        F: Fn(Map<String, Value>, Option<Caller>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, String>> + Send + 'static,
    {
        let info = rmcp::model::Prompt::new(name.into(), Some(description.into()), None);
        Self {
            info,
            completions: HashMap::new(),
            render: Arc::new(move |arguments, caller| Box::pin(render(arguments, caller))),
        }
    }

    /// A prompt that is one user message: `template` with each `{argument}`
    /// replaced by the argument's value, in one pass over the template (a
    /// value is never read for placeholders itself); a `{…}` that names no
    /// argument stays as written.
    pub fn text(
        name: impl Into<String>,
        description: impl Into<String>,
        template: impl Into<String>,
    ) -> Self {
        let template: String = template.into();
        Self::new(name, description, move |arguments, _| {
            let text = fill(&template, &arguments);
            std::future::ready(Ok(vec![PromptMessage::new_text(Role::User, text)]))
        })
    }

    /// An argument it takes.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        let mut argument = PromptArgument::new(name.into());
        argument.description = Some(description.into());
        argument.required = Some(required);
        self.info
            .arguments
            .get_or_insert_with(Vec::new)
            .push(argument);
        self
    }

    /// Values that complete `argument` (`completion/complete`), best first.
    pub fn completions<I, S>(mut self, argument: &str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        add_completions(&mut self.completions, argument, values);
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.info.name
    }

    /// Render it: a missing required argument, or one it does not take, is
    /// an error naming it.
    pub(crate) async fn render(
        &self,
        arguments: Map<String, Value>,
        caller: Option<Caller>,
    ) -> Result<Vec<PromptMessage>, String> {
        let declared = self.info.arguments.as_deref().unwrap_or_default();
        if let Some(unknown) = arguments
            .keys()
            .find(|name| !declared.iter().any(|argument| &argument.name == *name))
        {
            return Err(format!(
                "the prompt {} takes no argument {}",
                self.info.name,
                crate::client::escaped(unknown)
            ));
        }
        for argument in declared {
            if argument.required == Some(true) && !arguments.contains_key(&argument.name) {
                return Err(format!(
                    "the prompt {} needs the argument {}",
                    self.info.name, argument.name
                ));
            }
        }
        (self.render)(arguments, caller).await
    }
}

/// `template` with each `{name}` of `arguments` replaced by its value, in
/// one pass: what a value holds is copied, never expanded.
fn fill(template: &str, arguments: &Map<String, Value>) -> String {
    let mut text = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}').map(|close| (&after[..close], close)) {
            Some((name, close)) if arguments.contains_key(name) => {
                let value = &arguments[name];
                match value.as_str() {
                    Some(value) => text.push_str(value),
                    None => text.push_str(&value.to_string()),
                }
                rest = &after[close + 1..];
            }
            _ => {
                text.push('{');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text
}

type Read = dyn Fn(String, Map<String, Value>) -> BoxFuture<'static, Result<Vec<ResourceContents>, String>>
    + Send
    + Sync;

/// A resource the server offers at one URI.
///
/// ```
/// use agentry_mcp::server::Resource;
///
/// let readme = Resource::text("file:///README.md", "README", "The project's readme.", "text/markdown", "# Hello");
/// assert_eq!(readme.uri(), "file:///README.md");
/// ```
#[derive(Clone)]
pub struct Resource {
    pub(crate) info: rmcp::model::Resource,
    read: Arc<Read>,
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.info.uri)
            .finish_non_exhaustive()
    }
}

fn described(
    uri: String,
    name: String,
    description: String,
    mime_type: String,
) -> rmcp::model::Resource {
    rmcp::model::Resource::new(uri, name)
        .with_description(description)
        .with_mime_type(mime_type)
}

impl Resource {
    /// A resource read by `read` each time it is asked for.
    pub fn new<F, Fut>(
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        read: F,
    ) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, String>> + Send + 'static,
    {
        Self {
            info: described(
                uri.into(),
                name.into(),
                description.into(),
                mime_type.into(),
            ),
            read: Arc::new(move |_, _| Box::pin(read())),
        }
    }

    /// A resource whose content is this text.
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let (uri, mime_type, text) = (uri.into(), mime_type.into(), text.into());
        let contents = ResourceContents::text(text, uri.clone()).with_mime_type(mime_type.clone());
        Self::new(uri, name, description, mime_type, move || {
            std::future::ready(Ok(vec![contents.clone()]))
        })
    }

    /// A resource whose content is these bytes (sent base64-encoded).
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        let (uri, mime_type) = (uri.into(), mime_type.into());
        let contents =
            ResourceContents::blob(base64.into(), uri.clone()).with_mime_type(mime_type.clone());
        Self::new(uri, name, description, mime_type, move || {
            std::future::ready(Ok(vec![contents.clone()]))
        })
    }

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.info.uri
    }

    pub(crate) async fn read(&self) -> Result<Vec<ResourceContents>, String> {
        (self.read)(self.info.uri.clone(), Map::new()).await
    }
}

/// Resources the server offers at every URI a template (RFC 6570, simple
/// `{variable}` expansions, each one path segment) matches.
///
/// A variable is what the client wrote, not decoded and not checked
/// beyond holding no `/`: it may be `..` or `%2e%2e`. A reader that joins a
/// variable onto a path must check it.
///
/// ```
/// use agentry_mcp::server::ResourceTemplate;
/// use rmcp::model::ResourceContents;
///
/// let notes = ResourceTemplate::new("notes://{day}/summary", "notes", "A day's notes.", "text/plain", |uri, vars| async move {
///     let day = vars["day"].as_str().unwrap_or_default().to_owned();
///     Ok(vec![ResourceContents::text(format!("Notes for {day}"), uri)])
/// })
/// .completions("day", ["monday", "tuesday"]);
/// assert_eq!(notes.matches("notes://monday/summary").unwrap()["day"], "monday");
/// assert!(notes.matches("notes://monday/other").is_none());
/// ```
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) info: rmcp::model::ResourceTemplate,
    pub(crate) completions: HashMap<String, Vec<String>>,
    read: Arc<Read>,
}

impl std::fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("uri_template", &self.info.uri_template)
            .finish_non_exhaustive()
    }
}

impl ResourceTemplate {
    /// Resources read by `read`, given the URI asked for and the template's
    /// variables as found in it.
    pub fn new<F, Fut>(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        mime_type: impl Into<String>,
        read: F,
    ) -> Self
    where
        F: Fn(String, Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, String>> + Send + 'static,
    {
        Self {
            info: rmcp::model::ResourceTemplate::new(uri_template.into(), name.into())
                .with_description(description.into())
                .with_mime_type(mime_type.into()),
            completions: HashMap::new(),
            read: Arc::new(move |uri, variables| Box::pin(read(uri, variables))),
        }
    }

    /// Values that complete `variable` (`completion/complete`), best first.
    pub fn completions<I, S>(mut self, variable: &str, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        add_completions(&mut self.completions, variable, values);
        self
    }

    /// The variables of `uri` when the template matches it: each `{name}`
    /// takes one non-empty path segment (no `/`).
    pub fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut variables = Map::new();
        let mut rest = uri;
        let mut template = self.info.uri_template.as_str();
        while !template.is_empty() {
            match template.find('{') {
                Some(0) => {
                    let close = template.find('}')?;
                    let name = &template[1..close];
                    template = &template[close + 1..];
                    let end_literal = template.split('{').next().unwrap_or_default();
                    let end = if end_literal.is_empty() {
                        rest.len()
                    } else {
                        rest.find(end_literal)?
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    variables.insert(name.to_owned(), Value::String(value.to_owned()));
                    rest = &rest[end..];
                }
                found => {
                    let literal = &template[..found.unwrap_or(template.len())];
                    rest = rest.strip_prefix(literal)?;
                    template = &template[literal.len()..];
                }
            }
        }
        rest.is_empty().then_some(variables)
    }

    pub(crate) async fn read(
        &self,
        uri: String,
        variables: Map<String, Value>,
    ) -> Result<Vec<ResourceContents>, String> {
        (self.read)(uri, variables).await
    }
}

/// Set the values that complete `name`.
fn add_completions<I, S>(completions: &mut HashMap<String, Vec<String>>, name: &str, values: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    completions.insert(
        name.to_owned(),
        values.into_iter().map(Into::into).collect(),
    );
}

/// The values of `candidates` that start with `typed` (ignoring case), at
/// most [`MAX_COMPLETIONS`], with how many there are in all.
pub(crate) fn complete(candidates: &[String], typed: &str) -> CompletionInfo {
    let typed = typed.to_lowercase();
    let fitting: Vec<String> = candidates
        .iter()
        .filter(|value| value.to_lowercase().starts_with(&typed))
        .cloned()
        .collect();
    let total = fitting.len();
    let values: Vec<String> = fitting.into_iter().take(MAX_COMPLETIONS).collect();
    CompletionInfo::with_pagination(values, Some(total as u32), total > MAX_COMPLETIONS)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_fit_what_was_typed_and_are_capped() {
        let many: Vec<String> = (0..150).map(|i| format!("item{i}")).collect();
        let info = complete(&many, "ITEM1");
        assert_eq!(info.values.len(), 61, "item1, item10-19, item100-149");
        assert_eq!(info.total, Some(61));
        let capped = complete(&many, "");
        assert_eq!(capped.values.len(), MAX_COMPLETIONS);
        assert_eq!((capped.total, capped.has_more), (Some(150), Some(true)));
    }

    #[test]
    fn a_text_prompt_fills_its_template_once() {
        let arguments: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "topic": "{a}{a}", "a": "{b}{b}", "n": 3
        }))
        .unwrap();
        assert_eq!(
            fill("Hi {topic} {n} {missing} {", &arguments),
            "Hi {a}{a} 3 {missing} {"
        );
    }

    #[tokio::test]
    async fn a_prompt_refuses_arguments_it_does_not_take() {
        let prompt = Prompt::text("p", "d", "Hi {topic}").argument("topic", "t", true);
        let extra: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"topic": "x", "u01": "{topic}"})).unwrap();
        let refused = prompt.render(extra, None).await.unwrap_err();
        assert_eq!(refused, "the prompt p takes no argument u01");
        let missing = prompt.render(Map::new(), None).await.unwrap_err();
        assert_eq!(missing, "the prompt p needs the argument topic");
    }

    #[test]
    fn a_template_takes_one_segment_per_variable() {
        let template = ResourceTemplate::new(
            "test://template/{id}/data",
            "t",
            "d",
            "text/plain",
            |_, _| std::future::ready(Ok(vec![])),
        );
        assert_eq!(
            template.matches("test://template/123/data").unwrap()["id"],
            "123"
        );
        assert!(template.matches("test://template//data").is_none());
        assert!(template.matches("test://template/1/2/data").is_none());
        assert!(template.matches("test://template/123/data/more").is_none());
        let two = ResourceTemplate::new("x://{a}-{b}", "t", "d", "text/plain", |_, _| {
            std::future::ready(Ok(vec![]))
        });
        let found = two.matches("x://left-right").unwrap();
        assert_eq!(
            (found["a"].as_str(), found["b"].as_str()),
            (Some("left"), Some("right"))
        );
    }
}
