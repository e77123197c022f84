//! What each caller said in each A2A context, and what the agent answered:
//! a later task in the same context continues that conversation. Bounded:
//! the oldest contexts, and the oldest turns of a long one, are forgotten.

use std::collections::{HashMap, VecDeque};

use agentry_core::model::Message;

/// Contexts remembered at once, over all callers.
const CONTEXTS: usize = 1_000;
/// Messages remembered per context (user and agent together).
const MESSAGES: usize = 40;
/// The most of one message remembered.
const MESSAGE_BYTES: usize = 16 << 10;
/// Bytes remembered over all contexts.
const BYTES: usize = 16 << 20;

/// Conversations by (caller, context id).
#[derive(Default)]
pub(crate) struct Conversations {
    by_context: HashMap<(String, String), Vec<Message>>,
    order: VecDeque<(String, String)>,
    bytes: usize,
}

fn size(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| match m {
            Message::User { text } | Message::Assistant { text, .. } => text.len(),
            Message::Tool { .. } => 0,
        })
        .sum()
}

impl Conversations {
    /// The conversation so far of `owner` in `context` (empty if none).
    pub fn of(&self, owner: &str, context: &str) -> Vec<Message> {
        self.by_context
            .get(&(owner.to_owned(), context.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    /// Remember a turn: what `owner` asked in `context` and the answer.
    pub fn remember(&mut self, owner: &str, context: &str, asked: String, answer: String) {
        let key = (owner.to_owned(), context.to_owned());
        let (asked, answer) = (
            crate::clip(asked, MESSAGE_BYTES),
            crate::clip(answer, MESSAGE_BYTES),
        );
        let adding = asked.len() + answer.len();
        // The context used last is the last to go.
        if let Some(at) = self.order.iter().position(|k| *k == key) {
            self.order.remove(at);
        }
        self.order.push_back(key.clone());
        while (self.order.len() > CONTEXTS || self.bytes + adding > BYTES) && self.order.len() > 1 {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.by_context.remove(&oldest) {
                self.bytes -= size(&gone);
            }
        }
        let messages = self.by_context.entry(key).or_default();
        let before = size(messages);
        messages.push(Message::user(asked));
        messages.push(Message::assistant(answer));
        if messages.len() > MESSAGES {
            let extra = messages.len() - MESSAGES;
            messages.drain(..extra);
        }
        self.bytes = self.bytes - before + size(messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_and_contexts_are_apart_and_bounded() {
        let mut conversations = Conversations::default();
        conversations.remember("a", "c1", "hi".into(), "hello".into());
        assert_eq!(conversations.of("a", "c1").len(), 2);
        assert!(conversations.of("b", "c1").is_empty(), "another caller's");
        assert!(conversations.of("a", "c2").is_empty());
        for turn in 0..30 {
            conversations.remember("a", "c1", format!("q{turn}"), "a".into());
        }
        let kept = conversations.of("a", "c1");
        assert_eq!(kept.len(), MESSAGES);
        assert_eq!(kept.last(), Some(&Message::assistant("a")));
        for context in 0..CONTEXTS {
            conversations.remember("b", &context.to_string(), "q".into(), "a".into());
        }
        assert!(conversations.of("a", "c1").is_empty(), "the oldest went");
        assert_eq!(conversations.by_context.len(), CONTEXTS);
        // Bytes: long turns are clipped, and the oldest contexts make room.
        for context in 0..3_000 {
            let long = "y".repeat(100 << 10);
            conversations.remember("c", &format!("long{context}"), long.clone(), long);
        }
        assert!(conversations.bytes <= BYTES);
        let last = conversations.of("c", "long2999");
        assert!(matches!(&last[0], Message::User { text } if text.len() <= MESSAGE_BYTES + 3));
    }
}
