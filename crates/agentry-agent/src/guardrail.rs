//! Guardrails: checks a run applies to what comes in and what goes out.
//!
//! - **Input** guardrails read the user's message before the first model
//!   step ([`AgentBuilder::input_guardrail`](crate::AgentBuilder::input_guardrail)).
//! - **Output** guardrails read the final answer before it is given
//!   ([`AgentBuilder::output_guardrail`](crate::AgentBuilder::output_guardrail));
//!   one may ask the model to try again, with feedback, a set number of times.
//! - **Tool-result** guardrails read what comes back from tools the agent
//!   does not control: tools from a tool source (MCP servers), tools marked
//!   `open_world` (OpenAPI operations, A2A agents, untrusted MCP tools) and
//!   tools that declare a network capability
//!   ([`AgentBuilder::tool_result_guardrail`](crate::AgentBuilder::tool_result_guardrail)).
//!
//! Each answers with a [`Verdict`]: pass, rewrite the text (redaction), ask
//! again (output only), or trip: the run ends with
//! [`Outcome::GuardrailTripped`](crate::Outcome::GuardrailTripped), naming
//! the guardrail, where it stood and why. Guardrails run in the order they
//! were added; a rewrite is what the next one reads. In a durable run the
//! input guardrails run before the journal is written (it keeps what they
//! let through; a run they stop is never written). Runs an engine drives
//! step by step ([`stepwise`](crate::stepwise), Temporal's) do not apply
//! guardrails yet.
//!
//! ```
//! use agentry_agent::{Agent, Guardrail, GuardrailStage, Outcome, Verdict};
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let no_passwords = Guardrail::new("no-passwords", |text: String, _stage| async move {
//!     if text.to_lowercase().contains("password") {
//!         Verdict::Trip("asks about passwords".into())
//!     } else {
//!         Verdict::Pass
//!     }
//! });
//! let model = ScriptedModel::new().reply(Step::Final { text: "never called".into(), tokens: Usage::new(1, 1) });
//! let agent = Agent::builder(model).input_guardrail(no_passwords).build().unwrap();
//! let outcome = agent.run("What is the admin password?").await;
//! let Outcome::GuardrailTripped(tripped) = outcome.outcome else { panic!() };
//! assert_eq!((tripped.guardrail.as_str(), tripped.stage), ("no-passwords", GuardrailStage::Input));
//! assert_eq!(tripped.reason, "asks about passwords");
//! assert!(outcome.steps.is_empty(), "the model was never asked");
//! # }
//! ```

use std::sync::Arc;

use agentry_core::BoxFuture;
use serde::{Deserialize, Serialize};

/// Where a guardrail stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardrailStage {
    /// The user's message, before the first model step.
    Input,
    /// The final answer, before it is given.
    Output,
    /// A result from a tool the agent does not control.
    ToolResult,
}

impl std::fmt::Display for GuardrailStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Input => "input",
            Self::Output => "output",
            Self::ToolResult => "tool result",
        })
    }
}

/// What a guardrail makes of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Let it through as it is.
    Pass,
    /// Let this through instead (a redaction, say).
    Rewrite(String),
    /// Ask the model again, telling it this (output guardrails; elsewhere
    /// it trips). Past the guardrail's retries, it trips.
    Retry(String),
    /// Stop the run: this is why.
    Trip(String),
}

/// A run stopped by a guardrail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("the {stage} guardrail {guardrail} tripped: {reason}")]
pub struct GuardrailTripped {
    /// The guardrail's name.
    pub guardrail: String,
    /// Where it stood.
    pub stage: GuardrailStage,
    /// Why.
    pub reason: String,
}

type Check = dyn Fn(String, GuardrailStage) -> BoxFuture<'static, Verdict> + Send + Sync;

/// One guardrail: a name and a check of a text.
#[derive(Clone)]
pub struct Guardrail {
    name: String,
    check: Arc<Check>,
    retries: u32,
}

impl std::fmt::Debug for Guardrail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guardrail")
            .field("name", &self.name)
            .field("retries", &self.retries)
            .finish()
    }
}

impl Guardrail {
    /// A guardrail named `name` whose `check` reads a text at a stage.
    pub fn new<F, Fut>(name: impl Into<String>, check: F) -> Self
    where
        F: Fn(String, GuardrailStage) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict> + Send + 'static,
    {
        Self {
            name: name.into(),
            check: Arc::new(move |text, stage| Box::pin(check(text, stage))),
            retries: 0,
        }
    }

    /// How many times an output guardrail's [`Verdict::Retry`] asks the
    /// model again before it trips (0 unless set).
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its retries.
    pub fn max_retries(&self) -> u32 {
        self.retries
    }

    /// Read `text` at `stage`.
    pub async fn check(&self, text: String, stage: GuardrailStage) -> Verdict {
        (self.check)(text, stage).await
    }
}

/// What a run's guardrails made of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Guarded {
    /// The text to go on with (rewritten or not).
    Pass(String),
    /// A guardrail asks the model again: its name and what to tell it.
    Retry { guardrail: String, feedback: String },
    /// A guardrail stopped the run.
    Tripped(GuardrailTripped),
}

/// Run `guardrails` over `text` in order; a rewrite is what the next reads.
/// `retried` says how many times each (by name) asked again already: a
/// retry past its allowance trips.
pub(crate) async fn apply(
    guardrails: &[Guardrail],
    mut text: String,
    stage: GuardrailStage,
    retried: &std::collections::HashMap<String, u32>,
) -> Guarded {
    for guardrail in guardrails {
        let tripped = |reason: String| {
            Guarded::Tripped(GuardrailTripped {
                guardrail: guardrail.name.clone(),
                stage,
                reason,
            })
        };
        match guardrail.check(text.clone(), stage).await {
            Verdict::Pass => {}
            Verdict::Rewrite(rewritten) => text = rewritten,
            Verdict::Trip(reason) => return tripped(reason),
            Verdict::Retry(feedback) => {
                let used = retried.get(&guardrail.name).copied().unwrap_or(0);
                if stage != GuardrailStage::Output || used >= guardrail.retries {
                    return tripped(feedback);
                }
                return Guarded::Retry {
                    guardrail: guardrail.name.clone(),
                    feedback,
                };
            }
        }
    }
    Guarded::Pass(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(from: &'static str, to: &'static str) -> Guardrail {
        Guardrail::new(format!("{from}->{to}"), move |text: String, _| {
            std::future::ready(Verdict::Rewrite(text.replace(from, to)))
        })
    }

    #[tokio::test]
    async fn rewrites_chain_and_a_retry_past_its_allowance_trips() {
        let chain = [rewrite("a", "b"), rewrite("b", "c")];
        let none = Default::default();
        let guarded = apply(&chain, "aab".into(), GuardrailStage::Input, &none).await;
        assert_eq!(guarded, Guarded::Pass("ccc".into()));
        let picky = Guardrail::new("json", |_, _| {
            std::future::ready(Verdict::Retry("answer in JSON".into()))
        })
        .retries(1);
        let once = apply(
            std::slice::from_ref(&picky),
            "x".into(),
            GuardrailStage::Output,
            &none,
        )
        .await;
        assert!(matches!(once, Guarded::Retry { .. }));
        let used = [("json".to_owned(), 1)].into_iter().collect();
        let twice = apply(
            std::slice::from_ref(&picky),
            "x".into(),
            GuardrailStage::Output,
            &used,
        )
        .await;
        assert_eq!(
            twice,
            Guarded::Tripped(GuardrailTripped {
                guardrail: "json".into(),
                stage: GuardrailStage::Output,
                reason: "answer in JSON".into()
            })
        );
        // On input a retry has no one to ask: it trips.
        let input = apply(&[picky], "x".into(), GuardrailStage::Input, &none).await;
        assert!(matches!(input, Guarded::Tripped(_)));
    }
}
