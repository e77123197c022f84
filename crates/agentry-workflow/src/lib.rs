//! # agentry-workflow
//!
//! Small workflows of agents and programs, for the patterns that come up
//! again and again: a **router** (one route chosen per input, by a model
//! constrained to the routes' names or by code), a **sequential pipeline**,
//! a **parallel fan-out** with a join, a **loop until a check passes** (code
//! or a judge model), and **approvals as interrupts**: a person's approval
//! step, or an agent step's destructive call (with a journal), stops the run
//! with a [`Checkpoint`]; answered, [`Workflow::resume`] goes on without
//! running finished steps again. The same workflow can be written in
//! `agentry.toml` ([`StepSpec`]).
//!
//! Where it stops: a workflow is a tree of these steps, text in and text
//! out. There are no arbitrary edges, cycles other than a loop, shared
//! state between steps, or conditions other than a route's choice and a
//! loop's check: those make a general graph engine, whose runs are hard to
//! read, resume and test. Write code around [`Workflow::run`] (or use
//! handoffs, or Temporal for long-running runs) when a task needs more.
//!
//! ```
//! use std::sync::Arc;
//! use agentry_agent::Agent;
//! use agentry_core::model::{ScriptedModel, Step as ModelStep, Usage};
//! use agentry_workflow::{Answer, Step, Workflow, WorkflowOutcome};
//!
//! let says = |text: &str| {
//!     let reply = ModelStep::Final { text: text.into(), tokens: Usage::new(10, 3) };
//!     Agent::builder(ScriptedModel::new().reply(reply)).build().unwrap()
//! };
//! let flow = Workflow::new(
//!     "brief",
//!     Step::sequence([
//!         Step::agent(says("Draft: rates rise 0.25%.")),
//!         Step::program("sign", |text: String| async move { Ok(format!("{text}\n-- the desk")) }),
//!         Step::approval("Send it?"),
//!     ]),
//! );
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let run = flow.run("run-1", "Write the rates brief").await;
//! let WorkflowOutcome::Interrupted(interrupt) = &run.outcome else { panic!() };
//! assert_eq!(interrupt.step, "3");
//!
//! // Later (the checkpoint serialises): a person edits the text, and the run goes on.
//! let mut checkpoint = run.checkpoint;
//! checkpoint.answer(Answer::Edit { text: "Rates rise by a quarter point.".into() })?;
//! let run = flow.resume(checkpoint).await;
//! assert_eq!(run.outcome, WorkflowOutcome::Done { output: "Rates rise by a quarter point.".into() });
//! assert!(run.trace[0].cached, "the agent did not run again");
//! # Ok::<_, String>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

mod choice;
mod record;
mod run;
mod spec;
mod step;

pub use record::{
    Answer, Checkpoint, Interrupt, InterruptKind, StepTrace, WorkflowOutcome, WorkflowRun,
};
pub use run::Workflow;
pub use spec::{Parts, StepSpec, UntilSpec};
pub use step::{
    DEFAULT_MAX_ROUNDS, Loop, MAX_ROUNDS, Parallel, Program, Route, RouteTo, Router, Step, Until,
};
