//! The everyday report's totals: right answers and calls, the gate's
//! refusals, requests no tool fits, file answers, time; and the table
//! `agentry-eval everyday` prints.

use serde::Serialize;

use super::{Outcome1, Request};

/// Totals for a set of outcomes.
#[derive(Serialize, Default)]
pub(super) struct Totals {
    pub(super) requests: usize,
    right_answer: usize,
    /// Requests whose calls are scored, and how many of them were right.
    calls_scored: usize,
    right_call: usize,
    /// Requests a tool fits that the gate turned away.
    tool_fits: usize,
    tool_fits_gate_refused: usize,
    /// Requests no tool fits, and how many were answered without a call.
    no_fit: usize,
    no_fit_no_call: usize,
    /// Requests about a file, and how many answers were wrong.
    file_requests: usize,
    file_wrong: usize,
    seconds: f64,
}

pub(super) fn totals(
    requests: &[&Request],
    outcomes: &[Outcome1],
    keep: impl Fn(&Request) -> bool,
) -> Totals {
    let mut t = Totals::default();
    for (request, outcome) in requests.iter().zip(outcomes) {
        if !keep(request) {
            continue;
        }
        t.requests += 1;
        t.right_answer += usize::from(outcome.answer_ok);
        t.seconds += outcome.seconds;
        if let Some(ok) = outcome.call_ok {
            t.calls_scored += 1;
            t.right_call += usize::from(ok);
        }
        match &request.calls {
            Some(calls) if calls.is_empty() => {
                t.no_fit += 1;
                t.no_fit_no_call += usize::from(outcome.calls.is_empty());
            }
            _ => {
                t.tool_fits += 1;
                t.tool_fits_gate_refused += usize::from(outcome.gate_refused);
            }
        }
        let about_a_file = request
            .calls
            .as_ref()
            .is_some_and(|calls| calls.iter().any(|c| c.name == "read_file"))
            || (request.agent == "demo" && request.turns.iter().any(|t| mentions_a_file(t)));
        if about_a_file {
            t.file_requests += 1;
            t.file_wrong += usize::from(!outcome.answer_ok);
        }
    }
    t
}

/// A turn that names a file of the demo's folder (or one that is not there).
fn mentions_a_file(turn: &str) -> bool {
    [".txt", ".md", ".json", ".csv"]
        .iter()
        .any(|ext| turn.contains(ext))
}

pub(super) fn print_table(totals: &Totals, groups: &[(String, Totals)]) {
    eprintln!(
        "\n| agent, half | requests | right answer | right call | tool fits, gate refused | none fits, no call | file answers wrong | s/request |"
    );
    eprintln!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let row = |name: &str, t: &Totals| {
        let share = |n: usize, of: usize| {
            if of == 0 {
                "-".to_owned()
            } else {
                format!("{n}/{of} ({:.0}%)", 100.0 * n as f64 / of as f64)
            }
        };
        eprintln!(
            "| {name} | {} | {} | {} | {} | {} | {} | {:.1} |",
            t.requests,
            share(t.right_answer, t.requests),
            share(t.right_call, t.calls_scored),
            share(t.tool_fits_gate_refused, t.tool_fits),
            share(t.no_fit_no_call, t.no_fit),
            share(t.file_wrong, t.file_requests),
            t.seconds / t.requests.max(1) as f64,
        );
    };
    for (name, t) in groups {
        row(name, t);
    }
    row("all", totals);
}
