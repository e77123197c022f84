//! A workflow written as data (the `[workflow]` table of `agentry.toml`):
//! each step is a table with one of `agent`, `program`, `sequence`,
//! `parallel`, `route`, `repeat` or `approval`, naming agents and programs
//! that code supplies ([`Parts`]).

use std::collections::HashMap;
use std::sync::Arc;

use agentry_agent::Agent;
use agentry_core::model::ChatModel;
use serde::{Deserialize, Serialize};

use crate::step::{DEFAULT_MAX_ROUNDS, Loop, MAX_ROUNDS, Route, Step};

/// One step, as written.
///
/// ```
/// use agentry_workflow::{Parts, StepSpec};
///
/// let spec: StepSpec = serde_json::from_value(serde_json::json!({
///     "sequence": [
///         {"agent": "researcher"},
///         {"parallel": [{"name": "risks", "agent": "critic"}, {"name": "draft", "agent": "writer"}]},
///         {"approval": "Send this brief?"}
///     ]
/// }))?;
/// let error = spec.build(&Parts::default()).unwrap_err();
/// assert_eq!(error, "sequence[1]: no agent is named `researcher`");
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// A branch's or route's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A route's description, for the router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An agent step: the agent's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A program step: the program's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Steps in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<Vec<StepSpec>>,
    /// Named branches at once (each with a `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<Vec<StepSpec>>,
    /// With `parallel`: the step that joins the branches' outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<Box<StepSpec>>,
    /// Routes (each with a `name` and a `description`), one chosen by the
    /// model for the input, or by the program `router` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<StepSpec>>,
    /// With `route`: a program that names the route (the model chooses without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
    /// A step repeated until `until` passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<Box<StepSpec>>,
    /// With `repeat`: the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<UntilSpec>,
    /// With `repeat`: most rounds (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<usize>,
    /// A person's approval, asked with this question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

/// A loop's check, as written: a judge's rubric or a program's name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum UntilSpec {
    /// The model judges the output against this rubric.
    Judge(String),
    /// A check program (registered with [`Parts::check`]).
    Program(String),
}

type CheckFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;
type RouteFn = dyn Fn(&str) -> Option<String> + Send + Sync;

/// What a written workflow names: agents, programs, checks, routers, and
/// the model that routes and judges.
#[derive(Clone, Default)]
pub struct Parts {
    agents: HashMap<String, Agent>,
    programs: HashMap<String, Step>,
    checks: HashMap<String, Arc<CheckFn>>,
    routers: HashMap<String, Arc<RouteFn>>,
    model: Option<Arc<dyn ChatModel>>,
}

impl Parts {
    /// An agent, by name (builder style).
    pub fn agent(mut self, name: impl Into<String>, agent: Agent) -> Self {
        self.agents.insert(name.into(), agent);
        self
    }

    /// A program step ([`Step::program`]), by name.
    pub fn program(mut self, name: impl Into<String>, step: Step) -> Self {
        self.programs.insert(name.into(), step);
        self
    }

    /// A loop check, by name.
    pub fn check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&str) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.insert(name.into(), Arc::new(check));
        self
    }

    /// A router program, by name.
    pub fn router(
        mut self,
        name: impl Into<String>,
        choose: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.routers.insert(name.into(), Arc::new(choose));
        self
    }

    /// The model that routes and judges.
    pub fn model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.model = Some(model);
        self
    }
}

impl StepSpec {
    /// The step this spec writes, its names found in `parts`; `Err` names
    /// where the spec is wrong (`sequence[2]/parallel[risks]: …`).
    pub fn build(&self, parts: &Parts) -> Result<Step, String> {
        self.build_step("", parts, false)
    }

    fn build_at(&self, at: &str, parts: &Parts) -> Result<Step, String> {
        self.build_step(at, parts, false)
    }

    fn build_named(&self, at: &str, parts: &Parts) -> Result<Step, String> {
        self.build_step(at, parts, true)
    }

    fn build_step(&self, at: &str, parts: &Parts, in_list: bool) -> Result<Step, String> {
        let here = |what: &str| {
            if at.is_empty() {
                what.to_owned()
            } else {
                format!("{at}/{what}")
            }
        };
        let err = |why: String| {
            if at.is_empty() {
                why
            } else {
                format!("{at}: {why}")
            }
        };
        let kinds = [
            self.agent.is_some(),
            self.program.is_some(),
            self.sequence.is_some(),
            self.parallel.is_some(),
            self.route.is_some(),
            self.repeat.is_some(),
            self.approval.is_some(),
        ];
        if kinds.iter().filter(|on| **on).count() != 1 {
            return Err(err(
                "a step has exactly one of agent, program, sequence, parallel, route, repeat, approval"
                    .into(),
            ));
        }
        if !in_list && (self.name.is_some() || self.description.is_some()) {
            return Err(err(
                "name and description go on the steps of a parallel or a route".into(),
            ));
        }
        if self.join.is_some() && self.parallel.is_none() {
            return Err(err("join goes with parallel".into()));
        }
        if self.router.is_some() && self.route.is_none() {
            return Err(err("router goes with route".into()));
        }
        if (self.until.is_some() || self.max_rounds.is_some()) && self.repeat.is_none() {
            return Err(err("until and max_rounds go with repeat".into()));
        }
        if let Some(name) = &self.agent {
            return parts
                .agents
                .get(name)
                .cloned()
                .map(Step::agent)
                .ok_or_else(|| err(format!("no agent is named `{name}`")));
        }
        if let Some(name) = &self.program {
            return parts
                .programs
                .get(name)
                .cloned()
                .ok_or_else(|| err(format!("no program is named `{name}`")));
        }
        if let Some(question) = &self.approval {
            return Ok(Step::approval(question.clone()));
        }
        if let Some(steps) = &self.sequence {
            if steps.is_empty() {
                return Err(err("a sequence has no steps".into()));
            }
            return steps
                .iter()
                .enumerate()
                .map(|(n, step)| step.build_at(&here(&format!("sequence[{}]", n + 1)), parts))
                .collect::<Result<Vec<_>, _>>()
                .map(Step::Sequence);
        }
        if let Some(branches) = &self.parallel {
            let named = named(branches, "parallel", at)?;
            let built = named
                .iter()
                .map(|(name, spec)| {
                    spec.build_named(&here(&format!("parallel[{name}]")), parts)
                        .map(|step| (name.clone(), step))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let parallel = Step::parallel(built);
            return Ok(match &self.join {
                Some(join) => parallel.join(join.build_at(&here("join"), parts)?),
                None => parallel,
            }
            .into());
        }
        if let Some(routes) = &self.route {
            let named = named(routes, "route", at)?;
            let mut route = match &self.router {
                Some(name) => {
                    let choose = parts
                        .routers
                        .get(name)
                        .cloned()
                        .ok_or_else(|| err(format!("no router is named `{name}`")))?;
                    Route::by(move |input| choose(input))
                }
                None => Route::by_model(
                    parts
                        .model
                        .clone()
                        .ok_or_else(|| err("a route needs a model or a router".into()))?,
                ),
            };
            for (name, spec) in named {
                let description = spec.description.clone().unwrap_or_default();
                let step = spec.build_named(&here(&format!("route[{name}]")), parts)?;
                route = route.to(name, description, step);
            }
            return Ok(route.into());
        }
        let body = self.repeat.as_deref().expect("one kind is set");
        let body_step = body.build_at(&here("repeat"), parts)?;
        let rounds = self.max_rounds.unwrap_or(DEFAULT_MAX_ROUNDS);
        if !(1..=MAX_ROUNDS).contains(&rounds) {
            return Err(err(format!("max_rounds is from 1 to {MAX_ROUNDS}")));
        }
        let repeat = match &self.until {
            None => return Err(err("repeat needs until".into())),
            Some(UntilSpec::Judge(rubric)) => Loop::until_judged(
                body_step,
                parts
                    .model
                    .clone()
                    .ok_or_else(|| err("a judge needs a model".into()))?,
                rubric.clone(),
            ),
            Some(UntilSpec::Program(name)) => {
                let check = parts
                    .checks
                    .get(name)
                    .cloned()
                    .ok_or_else(|| err(format!("no check is named `{name}`")))?;
                Loop::until(body_step, move |text| check(text))
            }
        };
        Ok(repeat.max_rounds(rounds).into())
    }
}

/// The steps of a `parallel` or `route` list by their names, which must be
/// there, unique, and usable in a place (no `/`).
fn named<'a>(
    specs: &'a [StepSpec],
    what: &str,
    at: &str,
) -> Result<Vec<(String, &'a StepSpec)>, String> {
    let prefix = if at.is_empty() {
        String::new()
    } else {
        format!("{at}: ")
    };
    if specs.is_empty() {
        return Err(format!("{prefix}a {what} has no steps"));
    }
    let mut seen = std::collections::HashSet::new();
    specs
        .iter()
        .map(|spec| {
            let name = spec
                .name
                .clone()
                .filter(|name| !name.trim().is_empty())
                .ok_or_else(|| format!("{prefix}each {what} step has a name"))?;
            if !crate::run::usable(&name) {
                return Err(format!(
                    "{prefix}{what} step `{name}`: {}",
                    crate::run::NAMES
                ));
            }
            if !seen.insert(name.clone()) {
                return Err(format!("{prefix}two {what} steps are named `{name}`"));
            }
            Ok((name, spec))
        })
        .collect()
}
