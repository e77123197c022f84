//! A report against a saved one: which cases got worse, which better, which
//! are new and which are gone.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::report::Report;

/// How a report compares with a baseline (an earlier report of the same
/// suite), case by case, on pass rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Cases whose pass rate fell.
    pub regressions: Vec<Change>,
    /// Cases whose pass rate rose.
    pub improvements: Vec<Change>,
    /// Cases the baseline does not have.
    pub added: Vec<String>,
    /// Cases of the baseline this report does not have.
    pub removed: Vec<String>,
    /// The suite's pass rate in the baseline.
    pub baseline_pass_rate: f64,
    /// The suite's pass rate now.
    pub pass_rate: f64,
}

/// One case's pass rate, then and now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The case.
    pub case: String,
    /// Its pass rate in the baseline.
    pub before: f64,
    /// Its pass rate now.
    pub after: f64,
}

impl Report {
    /// Compare with `baseline`, case by case (cases are matched by name).
    ///
    /// ```
    /// # use agentry_evals::{CaseReport, Report};
    /// # fn report(rates: &[(&str, f64)]) -> Report {
    /// #     Report { suite: "s".into(), model: "m".into(), threshold: 1.0, repeats: 1,
    /// #         trials: rates.len(), passed: 0, pass_rate: 0.0, tokens: 0, seconds: 0.0,
    /// #         cases: rates.iter().map(|(name, rate)| CaseReport { name: name.to_string(),
    /// #             tags: vec![], passed: 0, pass_rate: *rate, trials: vec![] }).collect() }
    /// # }
    /// let baseline = report(&[("sum", 1.0), ("time", 0.5), ("old", 1.0)]);
    /// let now = report(&[("sum", 0.0), ("time", 1.0), ("new", 1.0)]);
    /// let comparison = now.compare(&baseline);
    /// assert_eq!(comparison.regressions[0].case, "sum");
    /// assert_eq!(comparison.improvements[0].case, "time");
    /// assert_eq!((comparison.added.as_slice(), comparison.removed.as_slice()), (&["new".to_owned()][..], &["old".to_owned()][..]));
    /// assert_eq!(comparison.to_string().lines().next(), Some("regressed: sum (100% → 0%)"));
    /// ```
    pub fn compare(&self, baseline: &Report) -> Comparison {
        let mut comparison = Comparison {
            baseline_pass_rate: baseline.pass_rate,
            pass_rate: self.pass_rate,
            ..Comparison::default()
        };
        for case in &self.cases {
            let Some(before) = baseline.cases.iter().find(|b| b.name == case.name) else {
                comparison.added.push(case.name.clone());
                continue;
            };
            let change = Change {
                case: case.name.clone(),
                before: before.pass_rate,
                after: case.pass_rate,
            };
            if case.pass_rate + 1e-12 < before.pass_rate {
                comparison.regressions.push(change);
            } else if case.pass_rate > before.pass_rate + 1e-12 {
                comparison.improvements.push(change);
            }
        }
        comparison.removed = baseline
            .cases
            .iter()
            .filter(|b| !self.cases.iter().any(|case| case.name == b.name))
            .map(|b| b.name.clone())
            .collect();
        comparison
    }
}

impl Report {
    /// Read a saved report (the JSON `agentry eval run --out` writes) to
    /// compare with, checking that it reads as one: rates from 0 to 1,
    /// counts that agree with them, one entry per case.
    pub fn read_baseline(path: &std::path::Path) -> Result<Report, crate::SuiteError> {
        let invalid = |why: String| {
            crate::SuiteError::Invalid(format!(
                "the baseline {} is not a report: {why}",
                path.display()
            ))
        };
        let text = crate::suite::read_bounded(path)?;
        let report: Report = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let mut names = std::collections::HashSet::new();
        for case in &report.cases {
            if !names.insert(case.name.as_str()) {
                return Err(invalid(format!("case `{}` is there twice", case.name)));
            }
            let counted = case.passed as f64 / case.trials.len().max(1) as f64;
            if !(0.0..=1.0).contains(&case.pass_rate)
                || (!case.trials.is_empty() && (counted - case.pass_rate).abs() > 1e-9)
            {
                return Err(invalid(format!(
                    "case `{}` has a pass rate of {} for {} of {} trials passed",
                    case.name,
                    case.pass_rate,
                    case.passed,
                    case.trials.len()
                )));
            }
        }
        if !(0.0..=1.0).contains(&report.pass_rate) {
            return Err(invalid(format!("a pass rate of {}", report.pass_rate)));
        }
        Ok(report)
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = |r: f64| format!("{:.0}%", 100.0 * r);
        for (label, changes) in [
            ("regressed", &self.regressions),
            ("improved", &self.improvements),
        ] {
            for change in changes {
                writeln!(
                    f,
                    "{label}: {} ({} → {})",
                    change.case,
                    rate(change.before),
                    rate(change.after)
                )?;
            }
        }
        for case in &self.added {
            writeln!(f, "new: {case}")?;
        }
        for case in &self.removed {
            writeln!(f, "gone: {case}")?;
        }
        write!(
            f,
            "pass rate {} → {}; {} regressed, {} improved",
            rate(self.baseline_pass_rate),
            rate(self.pass_rate),
            self.regressions.len(),
            self.improvements.len()
        )
    }
}
