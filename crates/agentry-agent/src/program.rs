//! Typed programs ([`Program::new`]): one structured request from a
//! signature such as `question:string -> answer:string`, or from two Rust
//! types, answered in JSON that is checked against the output schema and
//! asked for again, with the problems, until it fits. Tools run through the
//! same gate as an [`Agent`](crate::Agent)'s.

mod parser;
#[allow(clippy::module_inception)]
mod program;
mod prompt;
mod signature;

pub use program::{DEFAULT_RETRIES, Program, ProgramError, ProgramRun};
pub use signature::{Field, FieldType, Signature, SignatureError};
