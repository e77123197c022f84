//! # agentry-guardrails
//!
//! Ready guardrails for agentry agents (the contracts, and where a run
//! applies them, are `agentry_agent::guardrail`'s):
//!
//! - [`Pii`]: emails, phone numbers, payment card numbers (Luhn-checked),
//!   IBANs (checked by `iban_validate`) and API-key shapes, redacted or
//!   refused; [`find`] says where.
//! - [`Denied`]: denied topics (words, phrases) or patterns.
//! - [`json_schema`]: an answer must be JSON of a schema; the model is told
//!   what is wrong and asked again.
//! - [`judge`]: a model (the local one too) reads the text against a rule,
//!   its verdict constrained to a JSON schema.
//!
//! An agent that redacts personal data from its answers and refuses
//! requests about a denied topic:
//!
//! ```
//! use agentry_agent::{Agent, Outcome};
//! use agentry_core::model::{ScriptedModel, Step, Usage};
//! use agentry_guardrails::{Denied, Pii};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let model = ScriptedModel::new().reply(Step::Final {
//!     text: "Write to ana@example.com.".into(),
//!     tokens: Usage::new(1, 1),
//! });
//! let agent = Agent::builder(model)
//!     .input_guardrail(Denied::words("no-weapons", ["weapon"]).unwrap().guardrail())
//!     .output_guardrail(Pii::redact().guardrail())
//!     .build()
//!     .unwrap();
//! let run = agent.run("Who do I write to?").await;
//! assert_eq!(run.outcome, Outcome::Final("Write to [EMAIL].".into()));
//! # }
//! ```

mod judge;
mod pattern;
mod pii;
mod schema;

pub use judge::{judge, verdict_schema};
pub use pattern::Denied;
pub use pii::{Found, Pii, PiiKind, find, redact};
pub use schema::json_schema;
