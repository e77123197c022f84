//! Seed 002's memory-grounded chat turn: [`ChatTurn::run`] over a
//! [`TurnConfig`] and a [`TurnInput`], reporting [`TurnEvent`]s.

mod events;
mod input;
mod run;

pub use events::{TurnEvent, TurnEvents};
pub use input::{
    Attachment, Replier, TurnConfig, TurnInput, bool_default, reply_payload, user_body, user_prompt,
};
pub use run::{
    ChatTurn, STOPPED, TurnOutput, build_system, persist_assistant_turn, persist_user_turn,
    stream_llm, turn_run_id,
};
