//! The sequences (slots) of the decoding context: what each one's KV cache
//! holds, and which idle one a new prompt takes.

use llama_cpp_2::token::LlamaToken;

use super::MIN_PROMPT_READ;
use crate::prompt_store;

/// A sequence of the context and the tokens its KV cache holds.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) tokens: Vec<LlamaToken>,
    /// How many leading `tokens` prompt reads computed, the most a later
    /// prompt may reuse (generated tokens follow them).
    pub(super) clean: usize,
    pub(super) last_used: u64,
    pub(super) busy: bool,
}

/// The most recently used idle slot holding tokens that no prompt read
/// computed, when they are enough for a read ([`MIN_PROMPT_READ`]).
pub(super) fn stale(slots: &[Slot]) -> Option<usize> {
    slots
        .iter()
        .enumerate()
        .filter(|(_, slot)| {
            !slot.busy && slot.tokens.len() > slot.clean && slot.tokens.len() >= MIN_PROMPT_READ
        })
        .max_by_key(|(_, slot)| slot.last_used)
        .map(|(index, _)| index)
}

/// The idle slot for `tokens` and how many leading tokens it already holds.
///
/// In order: the slot sharing the longest prefix, when that is at least half
/// of what the slot holds (the same conversation, grown); an empty slot
/// (beside a busy one if there is one, else the first); the
/// slot sharing the longest prefix, when that is at least half of the new
/// prompt; the least recently used slot, of those beside a busy one if any
/// is. llama.cpp decodes a run of consecutive sequences in one pass, so
/// while other requests run, a slot that extends their run is worth more
/// than the older of two cached prompts; alone, the choice is plain LRU.
pub(super) fn choose_slot(
    slots: &[Slot],
    tokens: &[LlamaToken],
    prompt_cache: bool,
) -> Option<(usize, usize)> {
    let shared = |slot: &Slot| {
        if !prompt_cache {
            return 0;
        }
        prompt_store::shared_prefix(&slot.tokens, tokens)
    };
    let idle: Vec<(usize, &Slot, usize)> = slots
        .iter()
        .enumerate()
        .filter(|(_, slot)| !slot.busy)
        .map(|(index, slot)| (index, slot, shared(slot)))
        .collect();
    let best = idle
        .iter()
        .max_by_key(|(_, slot, common)| (*common, slot.last_used))?;
    if best.2 > 0 && best.2 * 2 >= best.1.tokens.len() {
        return Some((best.0, best.2));
    }
    // How many of a slot's neighbours are busy.
    let busy_beside = |index: usize| {
        let busy = |i: Option<usize>| i.and_then(|i| slots.get(i)).is_some_and(|s| s.busy);
        u8::from(busy(index.checked_sub(1))) + u8::from(busy(Some(index + 1)))
    };
    if let Some(empty) = idle
        .iter()
        .filter(|(_, slot, _)| slot.tokens.is_empty())
        .max_by_key(|(index, ..)| (busy_beside(*index), std::cmp::Reverse(*index)))
    {
        return Some((empty.0, 0));
    }
    if best.2 > 0 && best.2 * 2 >= tokens.len() {
        return Some((best.0, best.2));
    }
    idle.iter()
        .max_by_key(|(index, slot, _)| (busy_beside(*index), std::cmp::Reverse(slot.last_used)))
        .map(|(index, _, common)| (*index, *common))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(tokens: &[i32], busy: bool, last_used: u64) -> Slot {
        Slot {
            tokens: tokens.iter().map(|t| LlamaToken(*t)).collect(),
            last_used,
            busy,
            ..Slot::default()
        }
    }

    fn prompt(tokens: &[i32]) -> Vec<LlamaToken> {
        tokens.iter().map(|t| LlamaToken(*t)).collect()
    }

    #[test]
    fn an_empty_slot_beside_a_busy_one_is_taken_first() {
        // Busy 2 and 4; 1 holds an unrelated prompt; 0, 3 and 5 are empty.
        let slots = [
            slot(&[], false, 0),
            slot(&[9, 9, 9], false, 2),
            slot(&[1, 2], true, 1),
            slot(&[], false, 0),
            slot(&[5], true, 3),
            slot(&[], false, 0),
        ];
        // Slot 3 sits between the two busy slots: taking it makes one run of three.
        assert_eq!(choose_slot(&slots, &prompt(&[7, 8]), true), Some((3, 0)));
        // Beside one busy slot beats beside none.
        let mut one_side = slots;
        one_side[4].busy = false;
        assert_eq!(choose_slot(&one_side, &prompt(&[7, 8]), true), Some((3, 0)));
        one_side[2].busy = false;
        one_side[1].busy = true;
        assert_eq!(choose_slot(&one_side, &prompt(&[7, 8]), true), Some((0, 0)));
        // Nothing busy: the first empty slot.
        let idle = [
            slot(&[9], false, 1),
            slot(&[], false, 0),
            slot(&[], false, 0),
        ];
        assert_eq!(choose_slot(&idle, &prompt(&[7]), true), Some((1, 0)));
        // A slot whose prompt this one continues still wins over any empty slot.
        let grown = [
            slot(&[], false, 0),
            slot(&[7, 8], false, 1),
            slot(&[3], true, 2),
        ];
        assert_eq!(choose_slot(&grown, &prompt(&[7, 8, 9]), true), Some((1, 2)));
    }

    #[test]
    fn with_no_empty_slot_the_least_recently_used_beside_a_busy_one_is_taken() {
        let full = |busy: [bool; 4]| -> Vec<Slot> {
            // Slot 0 was used longest ago, slot 3 last.
            (0..4)
                .map(|i| slot(&[i + 10], busy[i as usize], i as u64 + 1))
                .collect()
        };
        // Nothing busy: plain LRU.
        assert_eq!(
            choose_slot(&full([false; 4]), &prompt(&[7]), true),
            Some((0, 0))
        );
        // Slot 3 busy: of 0, 1 and 2 only 2 extends its run.
        assert_eq!(
            choose_slot(&full([false, false, false, true]), &prompt(&[7]), true),
            Some((2, 0))
        );
        // Slot 2 busy: 1 and 3 both extend it; 1 was used longer ago.
        assert_eq!(
            choose_slot(&full([false, false, true, false]), &prompt(&[7]), true),
            Some((1, 0))
        );
    }
}
