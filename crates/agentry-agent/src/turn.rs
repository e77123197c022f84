//! The memory-grounded chat turn: [`TurnConfig::run`] over a [`TurnInput`],
//! reporting [`TurnEvent`]s, answering with a [`Reply`] or a [`TurnError`].

mod events;
mod input;
mod remote;
mod run;

pub use events::{TurnEvent, TurnEvents};
pub use input::{Attachment, Replier, TurnConfig, TurnInput};
pub use remote::{RemoteRunError, TurnContext, TurnRun, TurnRunner};
pub use run::{FLOOR_KEY, Reply, TurnError, turn_run_id};
