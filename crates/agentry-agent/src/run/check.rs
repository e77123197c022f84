//! Reading a final answer against the tool results it rests on, when the
//! agent checks answers (see [`crate::answer_check`]): agree, ask again
//! once, or quote the results.

use super::{Frame, Progress, emit, text_step};
use crate::agent::Agent;
use crate::answer_check::{
    AnswerCheck, disagreement, left_out, quoted, reask_text, repaired, result_text,
};
use crate::events::{AgentEvent, EventSink};
use agentry_core::model::{Message, Usage};

/// What the loop does with a final answer.
pub(super) enum Checked {
    /// The answer disagreed with the tool results: it is recorded as a step
    /// and the model is asked again.
    Reask,
    /// The run's answer (repaired where it still disagreed).
    Final(String),
}

impl Agent {
    /// Read `text`, the model's answer at the step under way, against the
    /// results of the last step that called tools (of every such step when
    /// the request asked several things). Durable runs and agents
    /// that do not check answers take every answer as it is.
    pub(super) fn check_answer(
        &self,
        run: &mut Progress,
        frame: &Frame,
        text: String,
        tokens: Usage,
        sink: Option<&EventSink>,
    ) -> Checked {
        let check = self.settings.check_answers;
        if check == AnswerCheck::Off || frame.durable.is_some() {
            return Checked::Final(text);
        }
        // A request that asks several things has its parts answered by
        // several steps: the answer rests on all of them.
        let several = run
            .relevance
            .as_ref()
            .is_some_and(|relevance| !relevance.part_tools.is_empty())
            || run.part_calls;
        let mut with_calls = run.steps.iter().filter(|step| !step.calls.is_empty());
        let read: Vec<_> = if several {
            with_calls.collect()
        } else {
            with_calls.next_back().into_iter().collect()
        };
        let quotes: Vec<(String, String)> = read
            .into_iter()
            .flat_map(|step| &step.calls)
            .filter(|record| !record.result.is_error)
            .map(|record| (record.call.name.clone(), result_text(&record.result)))
            .collect();
        // The conversation as it was before any re-asking: the check's own
        // message repeats the results and is not what the user asked.
        let before = run.rechecked.unwrap_or(run.messages.len());
        let asked: String = run.messages[..before]
            .iter()
            .filter_map(|message| match message {
                Message::User { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let outputs: Vec<String> = quotes.iter().map(|(_, output)| output.clone()).collect();
        let found = if quotes.is_empty() {
            None
        } else {
            disagreement(&text, &outputs, &asked)
        };
        let rechecked = run.rechecked.take();
        if let Some(len) = rechecked {
            // The flagged answer and the check stay in the steps, not in the
            // conversation the run hands back.
            run.messages.truncate(len);
        }
        let Some(found) = found else {
            let missing = left_out(&text, &outputs, &asked);
            if missing.is_empty() {
                return Checked::Final(text);
            }
            // The answer states some results and leaves others out: those follow it.
            tracing::info!(
                left_out = missing.len(),
                "the answer leaves out tool results: quoted after it"
            );
            let others: Vec<(String, String)> = missing
                .into_iter()
                .map(|index| quotes[index].clone())
                .collect();
            let added = format!("\n\nThe tools returned:\n{}", quoted(&others));
            let step = run.index;
            emit(sink, || AgentEvent::TextDelta {
                step,
                text: added.clone(),
            });
            return Checked::Final(format!("{}{added}", text.trim_end()));
        };
        if check == AnswerCheck::Quote
            || rechecked.is_some()
            || run.index >= self.settings.max_steps
        {
            tracing::info!(
                ?found,
                "the answer still disagrees with the tool results: quoted"
            );
            let fixed = repaired(&text, &found, &quotes);
            let added = fixed
                .strip_prefix(text.trim_end())
                .unwrap_or(&fixed)
                .to_owned();
            let step = run.index;
            emit(sink, || AgentEvent::TextDelta {
                step,
                text: if added.starts_with('\n') {
                    added
                } else {
                    format!("\n\n{added}")
                },
            });
            return Checked::Final(fixed);
        }
        tracing::info!(
            ?found,
            "the answer disagrees with the tool results: asked again"
        );
        run.rechecked = Some(run.messages.len());
        text_step(run, text, tokens, sink);
        run.messages
            .push(Message::user(reask_text(&found, &quotes)));
        Checked::Reask
    }
}
