//! Running a suite: each case's trials on the agent, several at once, each
//! scored and recorded in a [`Report`].

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentry_agent::Agent;
use agentry_core::model::{ChatModel, Message};
use futures_util::{FutureExt, StreamExt};

use crate::case::{AnswerCheck, Case, Role};
use crate::check::{Failure, failures};
use crate::report::{CaseReport, Report, Trial};
use crate::suite::Suite;

/// How long one trial may run before it fails as `timed_out`, by default.
pub const DEFAULT_TRIAL_TIMEOUT: Duration = Duration::from_secs(300);

type MakeAgent = dyn Fn(&Case) -> Result<Agent, String> + Send + Sync;
type OnTrial = dyn Fn(&Case, &Trial) + Send + Sync;

/// Runs suites on an agent.
///
/// Each trial runs the case's conversation and input on the agent (a case's
/// [`context`](Case::context) is added to its system prompt), then scores the
/// run. A trial that does not finish within the timeout fails as
/// `timed_out`; an agent that cannot be built fails its trials as
/// `no_agent`; one that panics (a check written in code, say) fails as
/// `panicked`. Nothing stops the other trials.
pub struct Harness {
    agents: Arc<MakeAgent>,
    judge: Option<Arc<dyn ChatModel>>,
    repeats: Option<usize>,
    concurrency: Option<usize>,
    timeout: Duration,
    on_trial: Option<Arc<OnTrial>>,
}

impl Harness {
    /// Run every case on `agent`.
    pub fn new(agent: Agent) -> Self {
        Self::per_case(move |_: &Case| Ok(agent.clone()))
    }

    /// Build each case's agent with `make` (a dataset whose cases bring
    /// their own tools, for one: [`bfcl::agent`](crate::bfcl::agent)).
    pub fn per_case(make: impl Fn(&Case) -> Result<Agent, String> + Send + Sync + 'static) -> Self {
        Self {
            agents: Arc::new(make),
            judge: None,
            repeats: None,
            concurrency: None,
            timeout: DEFAULT_TRIAL_TIMEOUT,
            on_trial: None,
        }
    }

    /// The model that scores `judge` rubrics (without one they fail, saying so).
    pub fn judge(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.judge = Some(model);
        self
    }

    /// Run each case this many times, whatever the suite says.
    pub fn repeats(mut self, repeats: usize) -> Self {
        self.repeats = Some(repeats.max(1));
        self
    }

    /// Run this many trials at once, whatever the suite says.
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = Some(concurrency.max(1));
        self
    }

    /// How long one trial may run ([`DEFAULT_TRIAL_TIMEOUT`] by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Called as each trial ends (progress on a terminal, say).
    pub fn on_trial(mut self, f: impl Fn(&Case, &Trial) + Send + Sync + 'static) -> Self {
        self.on_trial = Some(Arc::new(f));
        self
    }

    /// Run every case of `suite` and report.
    pub async fn run(&self, suite: &Suite) -> Report {
        let started = Instant::now();
        let repeats = self.repeats.unwrap_or(suite.repeats).max(1);
        let concurrency = self.concurrency.unwrap_or(suite.concurrency).max(1);
        let model = Mutex::new(None::<String>);
        let jobs = suite
            .cases
            .iter()
            .enumerate()
            .flat_map(|(n, case)| (1..=repeats).map(move |repeat| (n, case, repeat)));
        let mut done: Vec<(usize, Trial)> = futures_util::stream::iter(jobs)
            .map(|(n, case, repeat)| {
                let model = &model;
                async move {
                    let started = Instant::now();
                    let trial = AssertUnwindSafe(self.trial(case, repeat, model))
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|panic| {
                            let why = panic
                                .downcast_ref::<&str>()
                                .map(|s| s.to_string())
                                .or_else(|| panic.downcast_ref::<String>().cloned())
                                .unwrap_or_default();
                            Trial::unfinished(
                                repeat,
                                "panicked",
                                format!("the trial panicked: {why}"),
                                started.elapsed().as_secs_f64(),
                            )
                        });
                    if let Some(on_trial) = &self.on_trial {
                        on_trial(case, &trial);
                    }
                    (n, trial)
                }
            })
            .buffer_unordered(concurrency)
            .collect()
            .await;
        done.sort_by_key(|(n, trial)| (*n, trial.repeat));
        let trials = done.len();
        let passed = done.iter().filter(|(_, t)| t.passed).count();
        let tokens = done.iter().map(|(_, t)| t.tokens).sum();
        let mut by_case: Vec<Vec<Trial>> = vec![Vec::new(); suite.cases.len()];
        for (n, trial) in done {
            by_case[n].push(trial);
        }
        let cases: Vec<CaseReport> = suite
            .cases
            .iter()
            .zip(by_case)
            .map(|(case, trials)| {
                let passed = trials.iter().filter(|t| t.passed).count();
                CaseReport {
                    name: case.name.clone(),
                    tags: case.tags.clone(),
                    passed,
                    pass_rate: rate(passed, trials.len()),
                    trials,
                }
            })
            .collect();
        Report {
            suite: suite.name.clone(),
            model: model.into_inner().ok().flatten().unwrap_or_default(),
            threshold: suite.threshold,
            repeats,
            trials,
            passed,
            pass_rate: rate(passed, trials),
            tokens,
            seconds: started.elapsed().as_secs_f64(),
            cases,
        }
    }

    async fn trial(&self, case: &Case, repeat: usize, model: &Mutex<Option<String>>) -> Trial {
        let started = Instant::now();
        let agent = match (self.agents)(case).and_then(|agent| with_context(agent, case)) {
            Ok(agent) => agent,
            Err(why) => {
                return Trial::unfinished(
                    repeat,
                    "no_agent",
                    format!("the agent could not be built: {why}"),
                    started.elapsed().as_secs_f64(),
                );
            }
        };
        if let Ok(mut model) = model.lock() {
            model.get_or_insert_with(|| agent.model_id().to_owned());
        }
        let run = match tokio::time::timeout(self.timeout, agent.run_messages(messages(case))).await
        {
            Ok(run) => run,
            Err(_) => {
                return Trial::unfinished(
                    repeat,
                    "timed_out",
                    format!("the run did not finish within {:?}", self.timeout),
                    started.elapsed().as_secs_f64(),
                );
            }
        };
        let mut failed = failures(case, &run);
        let answer = run.text();
        for (n, check) in case.answer.iter().enumerate() {
            let AnswerCheck::Judge(rubric) = check else {
                continue;
            };
            let verdict = match &self.judge {
                Some(judge) => {
                    crate::judge::judge(judge.as_ref(), rubric, &case.input, &answer).await
                }
                None => Err("no judge model to score the rubric with (Harness::judge)".into()),
            };
            if let Err(why) = verdict {
                failed.push(Failure::new(format!("answer[{}] judge", n + 1), why));
            }
        }
        Trial::of_run(repeat, &run, failed, started.elapsed().as_secs_f64())
    }
}

/// The agent with the case's context added to its system prompt.
fn with_context(agent: Agent, case: &Case) -> Result<Agent, String> {
    let Some(context) = &case.context else {
        return Ok(agent);
    };
    let system = match agent.system() {
        Some(system) => format!("{system}\n\n{context}"),
        None => context.clone(),
    };
    agent
        .to_builder()
        .system(system)
        .build()
        .map_err(|error| error.to_string())
}

/// The case's conversation, then its input.
fn messages(case: &Case) -> Vec<Message> {
    case.conversation
        .iter()
        .map(|turn| match turn.role {
            Role::User => Message::user(turn.content.clone()),
            Role::Assistant => Message::assistant(turn.content.clone()),
        })
        .chain([Message::user(case.input.clone())])
        .collect()
}

fn rate(passed: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        passed as f64 / of as f64
    }
}
