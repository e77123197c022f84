//! Running a workflow: each step on its input, each finished step's output
//! kept in a [`Checkpoint`] by its place in the workflow, and an interrupt
//! (a person's approval, or an agent's destructive call) ending the run
//! with the checkpoint that [`Workflow::resume`] carries on from.

use std::sync::{Arc, Mutex};

use agentry_agent::durable::{Decision, JournalError, RunJournal, decide};
use agentry_agent::{Agent, Outcome, RunOutcome};
use agentry_core::BoxFuture;
use agentry_core::model::{Message, Usage};

use crate::choice::{FAIL, PASS, check, choose};
use crate::record::{
    Answer, Checkpoint, Interrupt, InterruptKind, StepTrace, WorkflowOutcome, WorkflowRun,
};
use crate::step::{Loop, Parallel, Route, Step};

/// A workflow: a named tree of steps.
#[derive(Clone)]
pub struct Workflow {
    name: String,
    root: Step,
    journal: Option<Arc<dyn RunJournal>>,
}

/// Why a step did not give an output.
enum Stop {
    Interrupted(Interrupt),
    Rejected { step: String, reason: String },
    Failed { step: String, error: String },
}

fn failed(step: &str, error: impl Into<String>) -> Stop {
    Stop::Failed {
        step: shown(step),
        error: error.into(),
    }
}

/// A place as reports show it: the whole workflow is `workflow`.
fn shown(place: &str) -> String {
    if place.is_empty() {
        "workflow".into()
    } else {
        place.to_owned()
    }
}

/// What a branch's or route's name may be.
pub(crate) const NAMES: &str = "names are not empty and have no `/`, `#` or control characters (`#` marks the workflow's own places)";

/// Whether `name` can be a branch's or route's: its place must not be
/// mistaken for another (the workflow's own places start with `#`).
pub(crate) fn usable(name: &str) -> bool {
    !name.trim().is_empty() && !name.contains(['/', '#']) && !name.chars().any(char::is_control)
}

fn child(place: &str, segment: &str) -> String {
    if place.is_empty() {
        segment.to_owned()
    } else {
        format!("{place}/{segment}")
    }
}

/// What a run keeps as it goes.
struct State {
    checkpoint: Mutex<Checkpoint>,
    trace: Mutex<Vec<StepTrace>>,
    usage: Mutex<Usage>,
}

impl State {
    fn cached(&self, place: &str) -> Option<String> {
        self.checkpoint.lock().ok()?.outputs.get(place).cloned()
    }

    fn finished(
        &self,
        place: &str,
        kind: &'static str,
        output: &str,
        agent: Option<String>,
        usage: Usage,
        cached: bool,
    ) {
        if let Ok(mut checkpoint) = self.checkpoint.lock() {
            checkpoint
                .outputs
                .insert(place.to_owned(), output.to_owned());
        }
        if let Ok(mut total) = self.usage.lock() {
            *total += usage;
        }
        if let Ok(mut trace) = self.trace.lock() {
            trace.push(StepTrace {
                step: shown(place),
                kind,
                output: output.to_owned(),
                agent,
                usage,
                cached,
            });
        }
    }
}

impl Workflow {
    /// A workflow named `name` whose steps are `root`.
    pub fn new(name: impl Into<String>, root: impl Into<Step>) -> Self {
        Self {
            name: name.into(),
            root: root.into(),
            journal: None,
        }
    }

    /// Run agent steps as durable runs in `journal`: a destructive call
    /// interrupts the workflow (instead of going to the agent's approver)
    /// until [`decide`](Self::decide) and [`resume`](Self::resume).
    pub fn journal(mut self, journal: impl RunJournal + 'static) -> Self {
        self.journal = Some(Arc::new(journal));
        self
    }

    /// The workflow's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run the workflow on `input`, as run `id` (agent steps' durable runs
    /// are `ID/PLACE`: give each run its own id).
    pub async fn run(&self, id: impl Into<String>, input: impl Into<String>) -> WorkflowRun {
        self.resume(Checkpoint {
            id: id.into(),
            input: input.into(),
            ..Checkpoint::default()
        })
        .await
    }

    /// Carry a run on from its checkpoint: finished steps are not run
    /// again; the step it stopped at runs with the answers given since
    /// ([`Checkpoint::answer`], [`decide`](Self::decide)).
    pub async fn resume(&self, mut checkpoint: Checkpoint) -> WorkflowRun {
        let digest = self.digest();
        if checkpoint.workflow.is_empty() && checkpoint.outputs.is_empty() {
            checkpoint.workflow = digest.clone();
        }
        if checkpoint.workflow != digest {
            return WorkflowRun {
                outcome: WorkflowOutcome::Failed {
                    step: "workflow".into(),
                    error:
                        "the checkpoint was made by another workflow (its steps have changed since)"
                            .into(),
                },
                checkpoint,
                trace: Vec::new(),
                usage: Usage::default(),
            };
        }
        checkpoint.interrupt = None;
        let input = checkpoint.input.clone();
        let state = State {
            checkpoint: Mutex::new(checkpoint),
            trace: Mutex::new(Vec::new()),
            usage: Mutex::new(Usage::default()),
        };
        let result = self.exec(&self.root, String::new(), input, &state).await;
        let mut checkpoint = state.checkpoint.into_inner().unwrap_or_default();
        let outcome = match result {
            Ok(output) => WorkflowOutcome::Done { output },
            Err(Stop::Interrupted(interrupt)) => {
                checkpoint.interrupt = Some(interrupt.clone());
                WorkflowOutcome::Interrupted(interrupt)
            }
            Err(Stop::Rejected { step, reason }) => WorkflowOutcome::Rejected { step, reason },
            Err(Stop::Failed { step, error }) => WorkflowOutcome::Failed { step, error },
        };
        WorkflowRun {
            outcome,
            checkpoint,
            trace: state.trace.into_inner().unwrap_or_default(),
            usage: state.usage.into_inner().unwrap_or_default(),
        }
    }

    /// A digest of the steps: their kinds, names, agents and questions.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("{}\n{:?}", self.name, self.root).as_bytes());
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
    }

    /// Decide on a call an agent step waits on (the checkpoint's
    /// [`InterruptKind::Calls`]), in the workflow's journal; then
    /// [`resume`](Self::resume).
    pub async fn decide(
        &self,
        checkpoint: &Checkpoint,
        call_id: &str,
        decision: Decision,
    ) -> Result<(), String> {
        let Some(Interrupt {
            step,
            kind: InterruptKind::Calls { run, .. },
        }) = &checkpoint.interrupt
        else {
            return Err("the run does not wait on an agent's calls".into());
        };
        if *run != format!("{}/{step}", checkpoint.id) {
            return Err(format!(
                "the checkpoint's waiting run `{run}` is not its step {step}'s"
            ));
        }
        let journal = self
            .journal
            .as_deref()
            .ok_or("the workflow has no journal")?;
        decide(journal, run, call_id, decision, false)
            .await
            .map_err(|error| error.to_string())
    }

    fn exec<'a>(
        &'a self,
        step: &'a Step,
        place: String,
        input: String,
        state: &'a State,
    ) -> BoxFuture<'a, Result<String, Stop>> {
        Box::pin(async move {
            let kind = match step {
                Step::Agent(_) => "agent",
                Step::Program(_) => "program",
                Step::Approval(_) => "approval",
                _ => "",
            };
            if !kind.is_empty()
                && let Some(output) = state.cached(&place)
            {
                state.finished(&place, kind, &output, None, Usage::default(), true);
                return Ok(output);
            }
            match step {
                Step::Agent(agent) => self.agent_step(agent, &place, input, state).await,
                Step::Program(program) => {
                    let output = (program.run)(input)
                        .await
                        .map_err(|error| failed(&place, format!("{}: {error}", program.name)))?;
                    state.finished(&place, "program", &output, None, Usage::default(), false);
                    Ok(output)
                }
                Step::Sequence(steps) => {
                    let mut text = input;
                    for (n, step) in steps.iter().enumerate() {
                        text = self
                            .exec(step, child(&place, &(n + 1).to_string()), text, state)
                            .await?;
                    }
                    Ok(text)
                }
                Step::Parallel(parallel) => self.parallel(parallel, &place, input, state).await,
                Step::Route(route) => self.route(route, &place, input, state).await,
                Step::Loop(body) => self.repeat(body, &place, input, state).await,
                Step::Approval(question) => approval(question, &place, input, state),
            }
        })
    }

    async fn agent_step(
        &self,
        agent: &Agent,
        place: &str,
        input: String,
        state: &State,
    ) -> Result<String, Stop> {
        let run: RunOutcome = match &self.journal {
            None => agent.run(input).await,
            Some(journal) => {
                let id = {
                    let checkpoint = state
                        .checkpoint
                        .lock()
                        .map_err(|_| failed(place, "poisoned"))?;
                    format!("{}/{}", checkpoint.id, shown(place))
                };
                let runs = agent.durable(journal.clone());
                let fresh = match journal.entries(&id).await {
                    Ok(entries) => entries.is_empty(),
                    Err(JournalError::NotFound(_)) => true,
                    Err(error) => return Err(failed(place, error.to_string())),
                };
                let run = if fresh {
                    runs.start_messages(id.clone(), vec![Message::user(input)])
                        .await
                } else {
                    runs.resume(&id).await
                };
                let run = run.map_err(|error| failed(place, error.to_string()))?;
                if let Outcome::AwaitingDecision(calls) = &run.outcome.outcome {
                    return Err(Stop::Interrupted(Interrupt {
                        step: shown(place),
                        kind: InterruptKind::Calls {
                            run: id,
                            calls: calls.clone(),
                        },
                    }));
                }
                run.outcome
            }
        };
        match &run.outcome {
            Outcome::Final(text) => {
                state.finished(place, "agent", text, run.agent.clone(), run.usage, false);
                Ok(text.clone())
            }
            _ => {
                if let Ok(mut total) = state.usage.lock() {
                    *total += run.usage;
                }
                Err(failed(
                    place,
                    format!(
                        "agent {} did not answer: {}",
                        agent.name().unwrap_or("(unnamed)"),
                        run.text()
                    ),
                ))
            }
        }
    }

    async fn parallel(
        &self,
        parallel: &Parallel,
        place: &str,
        input: String,
        state: &State,
    ) -> Result<String, Stop> {
        if let Some(name) = parallel
            .branches
            .iter()
            .map(|(name, _)| name)
            .find(|name| !usable(name))
        {
            return Err(failed(place, format!("branch name `{name}`: {NAMES}")));
        }
        let branches = parallel
            .branches
            .iter()
            .map(|(name, step)| self.exec(step, child(place, name), input.clone(), state));
        let outputs = futures_util::future::join_all(branches).await;
        let mut sections = Vec::new();
        for ((name, _), output) in parallel.branches.iter().zip(outputs) {
            sections.push(format!("## {name}\n{}", output?));
        }
        let joined = sections.join("\n\n");
        match &parallel.join {
            Some(join) => self.exec(join, child(place, "#join"), joined, state).await,
            None => {
                state.finished(
                    &child(place, "#join"),
                    "join",
                    &joined,
                    None,
                    Usage::default(),
                    false,
                );
                Ok(joined)
            }
        }
    }

    async fn route(
        &self,
        route: &Route,
        place: &str,
        input: String,
        state: &State,
    ) -> Result<String, Stop> {
        let at = child(place, "#route");
        let name = match state.cached(&at) {
            Some(name) => name,
            None => {
                let (name, usage) = choose(route, &input)
                    .await
                    .map_err(|error| failed(&at, error))?;
                state.finished(&at, "route", &name, None, usage, false);
                name
            }
        };
        if let Some(bad) = route.routes.iter().find(|to| !usable(&to.name)) {
            return Err(failed(place, format!("route name `{}`: {NAMES}", bad.name)));
        }
        let Some(to) = route.routes.iter().find(|to| to.name == name) else {
            return Err(failed(&at, format!("no route is named `{name}`")));
        };
        self.exec(&to.step, child(place, &name), input, state).await
    }

    async fn repeat(
        &self,
        body: &Loop,
        place: &str,
        input: String,
        state: &State,
    ) -> Result<String, Stop> {
        let mut text = input.clone();
        let mut why = String::new();
        for round in 1..=body.max_rounds {
            let at = child(place, &format!("#round-{round}"));
            let output = self
                .exec(&body.body, at.clone(), text.clone(), state)
                .await?;
            let check_at = child(&at, "#check");
            let verdict = match state.cached(&check_at) {
                Some(verdict) => verdict,
                None => {
                    let (verdict, usage) = check(&body.until, &output).await;
                    state.finished(&check_at, "check", &verdict, None, usage, false);
                    verdict
                }
            };
            if verdict == PASS {
                return Ok(output);
            }
            why = verdict.strip_prefix(FAIL).unwrap_or(&verdict).to_owned();
            text = format!(
                "{input}\n\nYour last answer:\n{output}\n\nIt did not pass the check: {why}\nAnswer again."
            );
        }
        Err(failed(
            place,
            format!(
                "the check did not pass in {} rounds: {why}",
                body.max_rounds
            ),
        ))
    }
}

fn approval(question: &str, place: &str, input: String, state: &State) -> Result<String, Stop> {
    let answer = state
        .checkpoint
        .lock()
        .ok()
        .and_then(|checkpoint| checkpoint.answers.get(place).cloned());
    let output = match answer {
        None => {
            return Err(Stop::Interrupted(Interrupt {
                step: shown(place),
                kind: InterruptKind::Approval {
                    question: question.to_owned(),
                    text: input,
                },
            }));
        }
        Some(Answer::Approve) => {
            let shown = state
                .checkpoint
                .lock()
                .ok()
                .and_then(|checkpoint| checkpoint.shown.get(place).cloned());
            if shown.is_some_and(|shown| shown != input) {
                return Err(failed(
                    place,
                    "the text to approve is not the one that was shown; run the workflow again",
                ));
            }
            input
        }
        Some(Answer::Edit { text }) => text,
        Some(Answer::Reject { reason }) => {
            return Err(Stop::Rejected {
                step: shown(place),
                reason,
            });
        }
    };
    state.finished(place, "approval", &output, None, Usage::default(), false);
    Ok(output)
}
