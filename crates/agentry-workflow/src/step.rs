//! The steps a workflow is made of: an agent, a program, and the four
//! patterns over steps (a sequence, a parallel fan-out with a join, a
//! router, a loop until a check passes), and a person's approval.

use std::fmt;
use std::sync::Arc;

use agentry_agent::Agent;
use agentry_core::BoxFuture;
use agentry_core::model::ChatModel;

type ProgramFn = dyn Fn(String) -> BoxFuture<'static, Result<String, String>> + Send + Sync;
type CheckFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;
type RouteFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// One step of a workflow. Every step takes a text and gives a text.
#[derive(Clone)]
pub enum Step {
    /// An agent's run on the text; its answer is the output.
    Agent(Box<Agent>),
    /// Host code over the text ([`Step::program`]).
    Program(Program),
    /// Each step's output is the next one's input.
    Sequence(Vec<Step>),
    /// Every branch gets the input at once; the join gets their outputs.
    Parallel(Parallel),
    /// One of several routes, chosen for the input.
    Route(Route),
    /// The body again, with the check's feedback, until the check passes.
    Loop(Loop),
    /// A person approves the text (or edits it, or rejects it): the
    /// workflow stops here until [`Workflow::resume`](crate::Workflow::resume)
    /// brings the answer.
    Approval(String),
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Agent(agent) => write!(f, "Agent({})", agent.name().unwrap_or("unnamed")),
            Step::Program(program) => write!(f, "Program({})", program.name),
            Step::Sequence(steps) => f.debug_tuple("Sequence").field(steps).finish(),
            Step::Parallel(parallel) => f
                .debug_struct("Parallel")
                .field("branches", &parallel.branches)
                .field("join", &parallel.join)
                .finish(),
            Step::Route(route) => f
                .debug_struct("Route")
                .field("routes", &route.routes)
                .finish_non_exhaustive(),
            Step::Loop(body) => f
                .debug_struct("Loop")
                .field("body", &body.body)
                .field("max_rounds", &body.max_rounds)
                .finish_non_exhaustive(),
            Step::Approval(question) => f.debug_tuple("Approval").field(question).finish(),
        }
    }
}

impl Step {
    /// An agent step.
    pub fn agent(agent: Agent) -> Self {
        Step::Agent(Box::new(agent))
    }

    /// A program step named `name`: `run` turns the text into the output,
    /// or fails with why (the workflow then fails at this step).
    pub fn program<F, Fut>(name: impl Into<String>, run: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        Step::Program(Program {
            name: name.into(),
            run: Arc::new(move |text| Box::pin(run(text))),
        })
    }

    /// The steps in order, each on the one before's output.
    pub fn sequence(steps: impl IntoIterator<Item = Step>) -> Self {
        Step::Sequence(steps.into_iter().collect())
    }

    /// The named branches at once on the same input, their outputs joined
    /// as `## name` sections in order (give [`Parallel::join`] a step to
    /// join them another way).
    pub fn parallel<S: Into<String>>(branches: impl IntoIterator<Item = (S, Step)>) -> Parallel {
        Parallel {
            branches: branches
                .into_iter()
                .map(|(name, step)| (name.into(), step))
                .collect(),
            join: None,
        }
    }

    /// A person's approval, asked with `question`.
    pub fn approval(question: impl Into<String>) -> Self {
        Step::Approval(question.into())
    }
}

/// Host code as a step.
#[derive(Clone)]
pub struct Program {
    pub(crate) name: String,
    pub(crate) run: Arc<ProgramFn>,
}

/// Branches run at once, then joined.
#[derive(Clone)]
pub struct Parallel {
    pub(crate) branches: Vec<(String, Step)>,
    pub(crate) join: Option<Box<Step>>,
}

impl Parallel {
    /// Join the branches' outputs with `step`: it gets them as `## name`
    /// sections, in the branches' order.
    pub fn join(mut self, step: Step) -> Self {
        self.join = Some(Box::new(step));
        self
    }
}

impl From<Parallel> for Step {
    fn from(parallel: Parallel) -> Self {
        Step::Parallel(parallel)
    }
}

/// How a route is chosen.
#[derive(Clone)]
pub enum Router {
    /// A model picks one route's name, its answer constrained to the names
    /// (a grammar, for the local model), from their descriptions.
    Model(Arc<dyn ChatModel>),
    /// Host code names the route (`None`: no route fits, the workflow fails).
    Program(Arc<RouteFn>),
}

/// Several routes, one chosen per input.
#[derive(Clone)]
pub struct Route {
    pub(crate) router: Router,
    pub(crate) routes: Vec<RouteTo>,
}

/// One route: its name, what it is for (the router reads it), its step.
#[derive(Clone, Debug)]
pub struct RouteTo {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) step: Step,
}

impl Route {
    /// Routes chosen by `model` from their descriptions.
    pub fn by_model(model: Arc<dyn ChatModel>) -> Self {
        Self {
            router: Router::Model(model),
            routes: Vec::new(),
        }
    }

    /// Routes chosen by host code from the input.
    pub fn by(choose: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self {
            router: Router::Program(Arc::new(choose)),
            routes: Vec::new(),
        }
    }

    /// Add a route (builder style).
    pub fn to(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        step: Step,
    ) -> Self {
        self.routes.push(RouteTo {
            name: name.into(),
            description: description.into(),
            step,
        });
        self
    }
}

impl From<Route> for Step {
    fn from(route: Route) -> Self {
        Step::Route(route)
    }
}

/// A check a loop's output must pass.
#[derive(Clone)]
pub enum Until {
    /// Host code: `Err(why)` sends the body round again with `why`.
    Program(Arc<CheckFn>),
    /// A model reads the output against a rubric, its verdict constrained
    /// to `{"pass": bool, "reason": string}`.
    Judge {
        /// The judge.
        model: Arc<dyn ChatModel>,
        /// What a passing output does.
        rubric: String,
    },
}

/// The body again until its output passes the check, at most `max_rounds` times.
#[derive(Clone)]
pub struct Loop {
    pub(crate) body: Box<Step>,
    pub(crate) until: Until,
    pub(crate) max_rounds: usize,
}

impl Loop {
    /// `body` until `check` passes (at most 3 rounds; see [`max_rounds`](Self::max_rounds)).
    /// From the second round on, the body gets the input, its last output
    /// and why it did not pass.
    pub fn until(
        body: Step,
        check: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            body: Box::new(body),
            until: Until::Program(Arc::new(check)),
            max_rounds: DEFAULT_MAX_ROUNDS,
        }
    }

    /// `body` until a judge model says its output meets `rubric`.
    pub fn until_judged(body: Step, model: Arc<dyn ChatModel>, rubric: impl Into<String>) -> Self {
        Self {
            body: Box::new(body),
            until: Until::Judge {
                model,
                rubric: rubric.into(),
            },
            max_rounds: DEFAULT_MAX_ROUNDS,
        }
    }

    /// At most this many rounds (from 1 to [`MAX_ROUNDS`]); past them the
    /// workflow fails at this step with the check's last reason.
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.clamp(1, MAX_ROUNDS);
        self
    }
}

impl From<Loop> for Step {
    fn from(body: Loop) -> Self {
        Step::Loop(body)
    }
}

/// Rounds a loop takes at most unless told otherwise.
pub const DEFAULT_MAX_ROUNDS: usize = 3;
/// The most rounds a loop may be given.
pub const MAX_ROUNDS: usize = 100;
