//! `agentry eval`: run a cases file on the agent `agentry run` would use
//! (`eval run`), or BFCL's questions through the same harness (`eval
//! bfcl`); print a table and the failed trials' trajectories, write JSON
//! and JUnit XML, compare with a baseline, and exit non-zero below the
//! threshold or on a regression.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agentry::evals::{Case, Harness, Report, Suite, Trial, bfcl};
use clap::Subcommand;

use crate::args::ModelArgs;
use crate::mcp::CliApprover;
use crate::run::RunFlags;

/// The system prompt of the agent `agentry eval bfcl` runs.
pub const BFCL_SYSTEM: &str =
    "Call the functions that answer the request. When none fits, answer directly.";

/// `agentry eval …`.
#[derive(Subcommand)]
pub enum EvalCommand {
    /// Run a cases file (TOML) on the agent `agentry run` would use
    /// (`agentry.toml` and the same flags).
    Run(EvalRunArgs),
    /// Run one category of BFCL questions through the same harness: each
    /// question's functions as the agent's tools, scored by BFCL's rule on
    /// the first step's calls.
    Bfcl(EvalBfclArgs),
}

/// Arguments of `agentry eval run`.
#[derive(clap::Args)]
pub struct EvalRunArgs {
    /// The cases file.
    cases: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    #[command(flatten)]
    report: ReportFlags,
}

/// Arguments of `agentry eval bfcl`.
#[derive(clap::Args)]
pub struct EvalBfclArgs {
    /// The category: simple_python, multiple, parallel or irrelevance.
    #[arg(long, default_value = "simple_python", value_parser = clap::builder::PossibleValuesParser::new(bfcl::CATEGORIES))]
    category: String,
    /// The folder of BFCL's files (`CATEGORY.jsonl`, `CATEGORY_answers.jsonl`).
    #[arg(long, value_name = "DIR", default_value = "datasets/bfcl")]
    data: PathBuf,
    /// Only the first N questions.
    #[arg(long)]
    limit: Option<usize>,
    #[command(flatten)]
    model: ModelArgs,
    /// Print the JSON report instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    report: ReportFlags,
}

/// How a suite runs and where its report goes: what `eval run` and `eval
/// bfcl` share.
#[derive(clap::Args)]
struct ReportFlags {
    /// Run each case this many times [default: the file's `repeats`, else 1].
    #[arg(long)]
    repeats: Option<usize>,
    /// Run this many trials at once [default: the file's `concurrency`, else 1].
    #[arg(long)]
    concurrency: Option<usize>,
    /// The share of trials that must pass, 0 to 1 [default: the file's
    /// `threshold`, else 1].
    #[arg(long, allow_negative_numbers = true)]
    threshold: Option<f64>,
    /// Only the cases with this tag (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Only the case of this name (repeatable).
    #[arg(long = "case")]
    names: Vec<String>,
    /// Write the JSON report here (it can be a later run's `--baseline`).
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
    /// Write JUnit XML here, for CI.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Compare with this earlier JSON report: a case whose pass rate fell
    /// is named, and fails the command.
    #[arg(long, value_name = "PATH")]
    baseline: Option<PathBuf>,
    /// Print every trial's trajectory, not only the failed ones'.
    #[arg(long)]
    trajectories: bool,
    /// Seconds one trial may take before it fails as timed out.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
}

/// Whether two paths name one file (as written, or once resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (a.canonicalize(), b.canonicalize()),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Run `agentry eval …`.
pub async fn run(command: EvalCommand) -> Result<ExitCode, String> {
    match command {
        EvalCommand::Run(args) => {
            let suite = Suite::load(&args.cases).map_err(|e| e.to_string())?;
            let suite = args.report.select(suite)?;
            let baseline = args.report.before_running(Some(&args.cases))?;
            // Nobody is asked in an eval: destructive calls run with --yes, and
            // are refused otherwise.
            let approver = CliApprover {
                yes: args.run.yes(),
                durable: true,
            };
            let (agent, _, model) = args.run.build_with(approver, false).await?;
            let harness = args.report.harness(Harness::new(agent), model);
            args.report
                .finish(&harness.run(&suite).await, baseline, args.run.json)
        }
        EvalCommand::Bfcl(args) => {
            let mut suite = bfcl::suite(&args.data, &args.category).map_err(|e| e.to_string())?;
            if let Some(limit) = args.limit {
                suite.cases.truncate(limit.max(1));
            }
            let suite = args.report.select(suite)?;
            let baseline = args.report.before_running(None)?;
            let choice = args.model.choose_from_flags();
            let model = crate::providers::chat_model(&choice).await?;
            let base = crate::run_agent(
                ".".into(),
                model.clone(),
                &choice,
                Some((Vec::new(), BFCL_SYSTEM)),
            )
            .await?
            .build()
            .map_err(|e| e.to_string())?;
            let harness = Harness::per_case(move |case: &Case| bfcl::agent(&base, case));
            let harness = args.report.harness(harness, model);
            args.report
                .finish(&harness.run(&suite).await, baseline, args.json)
        }
    }
}

impl ReportFlags {
    /// The suite with the flags' threshold, repeats and concurrency, and
    /// only the cases they pick.
    fn select(&self, mut suite: Suite) -> Result<Suite, String> {
        if let Some(threshold) = self.threshold {
            suite.threshold = threshold;
        }
        if let Some(repeats) = self.repeats {
            suite.repeats = repeats;
        }
        if let Some(concurrency) = self.concurrency {
            suite.concurrency = concurrency;
        }
        if let Some(missing) = self
            .names
            .iter()
            .find(|name| !suite.cases.iter().any(|case| &case.name == *name))
        {
            return Err(format!("no case is named `{missing}`"));
        }
        if let Some(missing) = self
            .tags
            .iter()
            .find(|tag| !suite.cases.iter().any(|case| case.tags.contains(tag)))
        {
            return Err(format!("no case has the tag `{missing}`"));
        }
        if !self.tags.is_empty() {
            suite
                .cases
                .retain(|case| case.tags.iter().any(|tag| self.tags.contains(tag)));
        }
        if !self.names.is_empty() {
            suite.cases.retain(|case| self.names.contains(&case.name));
            if suite.cases.is_empty() {
                return Err("no case has both a name and a tag given".into());
            }
        }
        suite.validate().map_err(|e| e.to_string())?;
        Ok(suite)
    }

    /// The harness with a judge, a timeout and progress on stderr.
    fn harness(&self, harness: Harness, judge: Arc<dyn agentry::model::ChatModel>) -> Harness {
        harness
            .judge(judge)
            .timeout(Duration::from_secs(self.timeout.max(1)))
            .on_trial(|case: &Case, trial: &Trial| {
                eprintln!(
                    "{} {} #{} ({:.1} s)",
                    if trial.passed { "pass" } else { "FAIL" },
                    case.name,
                    trial.repeat,
                    trial.seconds
                );
            })
    }

    /// What can fail after the run, found before it: the baseline is read
    /// (and checked), and the reports' paths are ones that can be written
    /// and do not clash with the cases file or each other.
    fn before_running(&self, cases: Option<&Path>) -> Result<Option<Report>, String> {
        let outputs: Vec<&PathBuf> = self.out.iter().chain(&self.junit).collect();
        for path in &outputs {
            if path.is_dir() {
                return Err(format!("{}: is a directory", path.display()));
            }
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if parent.is_some_and(|parent| !parent.is_dir()) {
                return Err(format!("{}: its folder does not exist", path.display()));
            }
            if cases.is_some_and(|cases| same_file(cases, path)) {
                return Err(format!(
                    "{}: that is the cases file; write the report elsewhere",
                    path.display()
                ));
            }
        }
        if let [out, junit] = outputs[..]
            && same_file(out, junit)
        {
            return Err(format!(
                "--out and --junit are both {}: give each its own file",
                out.display()
            ));
        }
        self.baseline
            .as_deref()
            .map(|path| Report::read_baseline(path).map_err(|e| e.to_string()))
            .transpose()
    }

    /// Print and write the report; compare with the baseline; the exit code.
    fn finish(
        &self,
        report: &Report,
        baseline: Option<Report>,
        json: bool,
    ) -> Result<ExitCode, String> {
        let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        if json {
            println!("{text}");
        } else {
            print!("{}", report.trajectories(self.trajectories));
            print!("{}", report.table());
        }
        if let Some(path) = &self.out {
            std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        }
        if let Some(path) = &self.junit {
            let xml = report.junit().map_err(|e| e.to_string())?;
            std::fs::write(path, xml).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let mut ok = report.meets_threshold();
        if let (Some(baseline), Some(path)) = (baseline, &self.baseline) {
            let comparison = report.compare(&baseline);
            eprintln!("against {}:\n{comparison}", path.display());
            ok &= comparison.regressions.is_empty();
        }
        Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
}
