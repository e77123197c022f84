//! What a suite's run produced: a [`Report`] of cases, each with its
//! trials, each trial with its failures and its trajectory (every step's
//! calls and results). It prints as a table, writes as JSON (and reads
//! back, as a baseline) and as JUnit XML.

use std::fmt::Write as _;

use agentry_agent::{RunOutcome, StepRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::check::Failure;

/// A suite's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The suite's name.
    pub suite: String,
    /// The model that answered (its id).
    pub model: String,
    /// The share of trials that had to pass.
    pub threshold: f64,
    /// Runs per case.
    pub repeats: usize,
    /// Trials run.
    pub trials: usize,
    /// Trials passed.
    pub passed: usize,
    /// `passed / trials`.
    pub pass_rate: f64,
    /// Tokens spent by every trial (the judge's not counted).
    pub tokens: u64,
    /// Wall-clock seconds for the whole run.
    pub seconds: f64,
    /// The cases, in the suite's order.
    pub cases: Vec<CaseReport>,
}

/// One case's trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// The case's tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Trials passed.
    pub passed: usize,
    /// `passed / trials.len()`.
    pub pass_rate: f64,
    /// Each run of the case, by repeat.
    pub trials: Vec<Trial>,
}

/// One run of one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Which repeat (1-based).
    pub repeat: usize,
    /// Every expectation met.
    pub passed: bool,
    /// The expectations it failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Failure>,
    /// How the run ended ([`Outcome::kind`](agentry_agent::Outcome::kind)),
    /// or `timed_out` / `no_agent` / `panicked` when it never finished.
    pub outcome: String,
    /// The answer (or what the run said instead of one).
    pub answer: String,
    /// Steps taken.
    pub steps: usize,
    /// Tokens spent.
    pub tokens: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Each step's text, calls and results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trajectory: Vec<TrajectoryStep>,
}

/// One step of a trial's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryStep {
    /// 1-based step number.
    pub step: usize,
    /// What the model wrote.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The calls it made, with their results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<TrajectoryCall>,
}

/// One call of a step, and what came back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryCall {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// What was fed back.
    pub result: Value,
    /// The result is an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Trial {
    /// A trial of a run that finished.
    pub(crate) fn of_run(
        repeat: usize,
        run: &RunOutcome,
        failures: Vec<Failure>,
        seconds: f64,
    ) -> Self {
        Self {
            repeat,
            passed: failures.is_empty(),
            failures,
            outcome: run.outcome.kind().to_owned(),
            answer: run.text(),
            steps: run.steps.len(),
            tokens: run.usage.total(),
            seconds,
            trajectory: run.steps.iter().map(trajectory_step).collect(),
        }
    }

    /// A trial that did not finish (`outcome` says why: `timed_out`, `no_agent`, `panicked`).
    pub(crate) fn unfinished(repeat: usize, outcome: &str, why: String, seconds: f64) -> Self {
        Self {
            repeat,
            passed: false,
            failures: vec![Failure::new("run", why.clone())],
            outcome: outcome.to_owned(),
            answer: why,
            steps: 0,
            tokens: 0,
            seconds,
            trajectory: Vec::new(),
        }
    }
}

fn trajectory_step(step: &StepRecord) -> TrajectoryStep {
    TrajectoryStep {
        step: step.index,
        text: step.text.clone(),
        calls: step
            .calls
            .iter()
            .map(|record| TrajectoryCall {
                tool: record.call.name.clone(),
                args: record.call.input.clone(),
                result: record.result.output.clone(),
                is_error: record.result.is_error,
            })
            .collect(),
    }
}

impl Report {
    /// The pass rate reached the threshold.
    pub fn meets_threshold(&self) -> bool {
        self.pass_rate + 1e-12 >= self.threshold
    }

    /// One line per case (passed trials, mean steps and tokens, seconds,
    /// the first failure), then the totals.
    ///
    /// ```text
    /// case                    passed  steps  tokens  seconds  first failure
    /// product                 1/1     2.0    412     1.9
    /// ```
    pub fn table(&self) -> String {
        let width = self
            .cases
            .iter()
            .map(|case| case.name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 40);
        let mut out = format!(
            "{:<width$}  passed  steps  tokens  seconds  first failure\n",
            "case"
        );
        for case in &self.cases {
            let n = case.trials.len().max(1) as f64;
            let mean = |f: &dyn Fn(&Trial) -> f64| case.trials.iter().map(f).sum::<f64>() / n;
            let failure = case
                .trials
                .iter()
                .flat_map(|trial| trial.failures.first())
                .next()
                .map(|f| format!("{}: {}", f.check, one_line(&f.why, 80)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<width$}  {:<6}  {:<5.1}  {:<6.0}  {:<7.1}  {}",
                one_line(&case.name, width),
                format!("{}/{}", case.passed, case.trials.len()),
                mean(&|t| t.steps as f64),
                mean(&|t| t.tokens as f64),
                mean(&|t| t.seconds),
                failure
            );
        }
        let _ = writeln!(
            out,
            "\n{}: {}/{} trials passed ({:.2}%), threshold {:.2}%: {}; {} tokens, {:.1} s",
            self.suite,
            self.passed,
            self.trials,
            100.0 * self.pass_rate,
            100.0 * self.threshold,
            if self.meets_threshold() {
                "met"
            } else {
                "NOT met"
            },
            self.tokens,
            self.seconds
        );
        out
    }

    /// Each failed trial's failures and trajectory (every trial's with
    /// `all`), as text.
    pub fn trajectories(&self, all: bool) -> String {
        let mut out = String::new();
        for case in &self.cases {
            for trial in case.trials.iter().filter(|t| all || !t.passed) {
                write_trial(&mut out, &case.name, trial);
            }
        }
        out
    }

    /// The report as JUnit XML: a test suite named after the suite, a test
    /// case per trial (`name` or `name #repeat`), each failure's checks in
    /// its message and its trajectory in `system-out`.
    pub fn junit(&self) -> Result<String, quick_junit::SerializeError> {
        use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
        let suite_name = xml_safe(&self.suite);
        let mut suite = TestSuite::new(suite_name.as_str());
        for case in &self.cases {
            for trial in &case.trials {
                let name = if self.repeats > 1 {
                    format!("{} #{}", case.name, trial.repeat)
                } else {
                    case.name.clone()
                };
                let status = if trial.passed {
                    TestCaseStatus::success()
                } else {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    let message = trial
                        .failures
                        .iter()
                        .map(|f| format!("{}: {}", f.check, f.why))
                        .collect::<Vec<_>>()
                        .join("; ");
                    status
                        .set_message(xml_safe(&message))
                        .set_type(trial.outcome.as_str());
                    status
                };
                let mut test = TestCase::new(xml_safe(&name), status);
                test.set_classname(suite_name.as_str())
                    .set_time(std::time::Duration::from_secs_f64(trial.seconds.max(0.0)));
                let mut trajectory = String::new();
                write_trial(&mut trajectory, &case.name, trial);
                test.set_system_out(xml_safe(&trajectory));
                suite.add_test_case(test);
            }
        }
        let mut report = quick_junit::Report::new(format!("agentry eval: {suite_name}"));
        report.add_test_suite(suite);
        report.to_string()
    }
}

/// `text` without the two characters XML 1.0 cannot hold that quick-junit
/// lets through (U+FFFE, U+FFFF), each made U+FFFD.
fn xml_safe(text: &str) -> String {
    text.replace(['\u{FFFE}', '\u{FFFF}'], "\u{FFFD}")
}

/// A trial's failures and trajectory, as text.
fn write_trial(out: &mut String, case: &str, trial: &Trial) {
    let _ = writeln!(
        out,
        "── {case} (repeat {}): {} ──",
        trial.repeat,
        if trial.passed { "passed" } else { "FAILED" }
    );
    for failure in &trial.failures {
        let _ = writeln!(out, "  ✗ {}: {}", failure.check, failure.why);
    }
    for step in &trial.trajectory {
        let _ = writeln!(out, "  step {}", step.step);
        for call in &step.calls {
            let _ = writeln!(
                out,
                "    → {}({})\n    {} {}",
                call.tool,
                one_line(&call.args.to_string(), 200),
                if call.is_error { "✗" } else { "←" },
                one_line(&call.result.to_string(), 200)
            );
        }
        if !step.text.is_empty() && step.calls.is_empty() {
            let _ = writeln!(out, "    {}", one_line(&step.text, 300));
        }
    }
    let _ = writeln!(
        out,
        "  = {} ({})",
        one_line(&trial.answer, 300),
        trial.outcome
    );
}

/// `text` on one line, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}
