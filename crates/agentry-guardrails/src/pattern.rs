//! Denied topics and patterns: a text that matches trips the run (or has
//! the matches replaced).

use agentry_agent::{Guardrail, GuardrailStage, Verdict};
use regex::{Regex, RegexBuilder};

/// A guardrail that trips on (or blanks out) what matches its patterns:
/// whole words or phrases (case-insensitive), or regular expressions.
///
/// ```
/// use agentry_guardrails::Denied;
/// use agentry_agent::{GuardrailStage, Verdict};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let topics = Denied::words("medical-advice", ["diagnosis", "prescription"]).unwrap().guardrail();
/// assert_eq!(
///     topics.check("Can you give me a Diagnosis?".into(), GuardrailStage::Input).await,
///     Verdict::Trip("mentions a denied topic: diagnosis".into())
/// );
/// assert_eq!(topics.check("Is it raining?".into(), GuardrailStage::Input).await, Verdict::Pass);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Denied {
    name: String,
    patterns: Vec<(String, Regex)>,
    replacement: Option<String>,
}

impl Denied {
    /// Words or phrases, matched whole and ignoring case.
    pub fn words<I, S>(name: impl Into<String>, words: I) -> Result<Self, regex::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::compiled(name, words, |word| {
            let pattern = format!(r"\b{}\b", regex::escape(word));
            let regex = RegexBuilder::new(&pattern).case_insensitive(true).build()?;
            Ok((word.to_lowercase(), regex))
        })
    }

    /// Regular expressions (the `regex` crate's syntax; linear time).
    pub fn patterns<I, S>(name: impl Into<String>, patterns: I) -> Result<Self, regex::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::compiled(name, patterns, |pattern| {
            Ok((pattern.to_owned(), Regex::new(pattern)?))
        })
    }

    /// Each of `items` compiled by `compile` into what a trip names and its
    /// regular expression.
    fn compiled<I, S>(
        name: impl Into<String>,
        items: I,
        compile: impl Fn(&str) -> Result<(String, Regex), regex::Error>,
    ) -> Result<Self, regex::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let patterns = items
            .into_iter()
            .map(|item| compile(&item.into()))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            name: name.into(),
            patterns,
            replacement: None,
        })
    }

    /// Replace what matches with `replacement` instead of tripping.
    pub fn replace_with(mut self, replacement: impl Into<String>) -> Self {
        self.replacement = Some(replacement.into());
        self
    }

    /// What it makes of `text`.
    pub fn verdict(&self, text: &str) -> Verdict {
        match &self.replacement {
            None => match self.patterns.iter().find(|(_, regex)| regex.is_match(text)) {
                Some((shown, _)) => Verdict::Trip(format!("mentions a denied topic: {shown}")),
                None => Verdict::Pass,
            },
            Some(replacement) => {
                let mut out = text.to_owned();
                for (_, regex) in &self.patterns {
                    out = regex.replace_all(&out, replacement.as_str()).into_owned();
                }
                if out == text {
                    Verdict::Pass
                } else {
                    Verdict::Rewrite(out)
                }
            }
        }
    }

    /// As a guardrail under its name, for any stage.
    pub fn guardrail(self) -> Guardrail {
        let name = self.name.clone();
        Guardrail::new(name, move |text: String, _: GuardrailStage| {
            std::future::ready(self.verdict(&text))
        })
    }
}
