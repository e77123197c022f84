//! The PII guardrail on the labelled set (`datasets/guardrails/pii.jsonl`):
//! per kind, what it found right, what it found that is not there (false
//! positives) and what it missed, on the tuning half (even ids) and the
//! held-out half (odd ids); and the time one check takes.
//!
//! `cargo run --release -p agentry-guardrails --example pii_eval` (`-- --show`
//! lists the tuning half's mistakes; the held-out half's are never shown).

use std::collections::BTreeMap;
use std::time::Instant;

use agentry_guardrails::{PiiKind, find};
use serde_json::Value;

#[derive(Default)]
struct Tally {
    right: usize,
    false_positive: usize,
    missed: usize,
}

fn kind_of(name: &str) -> PiiKind {
    match name {
        "email" => PiiKind::Email,
        "phone" => PiiKind::Phone,
        "card" => PiiKind::Card,
        "iban" => PiiKind::Iban,
        _ => PiiKind::ApiKey,
    }
}

fn main() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../datasets/guardrails/pii.jsonl"
    );
    let rows: Vec<Value> = std::fs::read_to_string(path)
        .expect("the labelled set")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    for (half, parity) in [("tuning (even ids)", 0), ("held out (odd ids)", 1)] {
        let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
        let mut clean_lines = 0;
        let mut clean_flagged = 0;
        for row in rows
            .iter()
            .filter(|row| row["id"].as_u64().unwrap() % 2 == parity)
        {
            let text = row["text"].as_str().unwrap();
            let found = find(text, &PiiKind::ALL);
            let labels = row["pii"].as_array().unwrap();
            if labels.is_empty() {
                clean_lines += 1;
                clean_flagged += usize::from(!found.is_empty());
            }
            let mut used = vec![false; found.len()];
            for label in labels {
                let kind = kind_of(label["kind"].as_str().unwrap());
                let value = label["value"].as_str().unwrap();
                let at = text.find(value).unwrap();
                let span = at..at + value.len();
                let hit = found.iter().enumerate().position(|(i, f)| {
                    !used[i]
                        && f.kind == kind
                        && f.range.start <= span.start + 1
                        && f.range.end + 1 >= span.end
                });
                let tally = tallies.entry(kind.name()).or_default();
                match hit {
                    Some(i) => {
                        used[i] = true;
                        tally.right += 1;
                    }
                    None => tally.missed += 1,
                }
            }
            for (i, f) in found.iter().enumerate() {
                if !used[i] {
                    tallies.entry(f.kind.name()).or_default().false_positive += 1;
                }
            }
            // `--show` lists the tuning half's mistakes (never the held-out half's).
            let wrong =
                used.iter().any(|u| !u) || used.iter().filter(|u| **u).count() < labels.len();
            if parity == 0 && wrong && std::env::args().any(|a| a == "--show") {
                let shown: Vec<(&str, &str)> = found
                    .iter()
                    .map(|f| (f.kind.name(), &text[f.range.clone()]))
                    .collect();
                println!("  {}: {text} -> {shown:?}", row["id"]);
            }
        }
        println!(
            "{half}: {clean_lines} lines without personal data, {clean_flagged} of them flagged"
        );
        println!("  kind     right  false+  missed");
        for (kind, tally) in &tallies {
            println!(
                "  {kind:<8} {:>5}  {:>6}  {:>6}",
                tally.right, tally.false_positive, tally.missed
            );
        }
    }
    let texts: Vec<&str> = rows
        .iter()
        .map(|row| row["text"].as_str().unwrap())
        .collect();
    let rounds = 200;
    let started = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        for text in &texts {
            found += find(text, &PiiKind::ALL).len();
        }
    }
    let each = started.elapsed() / (rounds * texts.len()) as u32;
    let bytes: usize = texts.iter().map(|t| t.len()).sum::<usize>() / texts.len();
    println!("time per check: {each:?} (a line of {bytes} bytes on average; {found} findings)");
    // A long answer: every line of the set in one text.
    let long = texts.join(" ");
    let rounds = 200;
    let started = Instant::now();
    for _ in 0..rounds {
        found += find(&long, &PiiKind::ALL).len();
    }
    let each = started.elapsed() / rounds;
    println!(
        "time per check of one {} KiB text: {each:?} ({found} findings in all)",
        long.len() / 1024
    );
}
