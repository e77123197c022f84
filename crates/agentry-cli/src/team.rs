//! Agents beside `[agent]` in `agentry.toml` (`[agents.NAME]`, each with
//! the keys of `[agent]`): the ones an agent's `handoffs` name are built as
//! `[agent]` is, from their own table, and offered as `transfer_to_NAME`.

use std::collections::HashMap;
use std::sync::Arc;

use agentry::agent::handoff::filters;
use agentry::agent::{Agent, AgentBuilder, Handoff, RelevanceGate};
use agentry::model::ChatModel;

use crate::config::{AgentSection, HistoryKind, Loaded};
use crate::definition::{AgentArgs, ModelChoice};

/// `builder` with a handoff to each agent its table's `handoffs` name.
pub async fn with_handoffs(
    args: &AgentArgs,
    loaded: &Loaded,
    mut builder: AgentBuilder,
    model: Arc<dyn ChatModel>,
    choice: &ModelChoice,
    gate: Option<Arc<RelevanceGate>>,
) -> Result<AgentBuilder, String> {
    let me = loaded.file.name.clone().unwrap_or_else(|| "agentry".into());
    let mut team = Team {
        seen: vec![me],
        built: HashMap::new(),
        gate,
    };
    let names = listed(loaded, "agent", &loaded.file.agent)?;
    for name in names {
        builder = builder.handoff(handoff(args, loaded, &name, &model, choice, &mut team).await?);
    }
    Ok(builder)
}

/// The agent `[agents.NAME]` defines, with its own handoffs and
/// `approver` and the relevance `gate` (shared), or why not.
pub async fn named_agent(
    args: &AgentArgs,
    loaded: &Loaded,
    name: &str,
    model: Arc<dyn ChatModel>,
    choice: &ModelChoice,
    approver: crate::mcp::CliApprover,
    gate: Option<Arc<RelevanceGate>>,
) -> Result<Agent, String> {
    let mut team = Team {
        seen: Vec::new(),
        built: HashMap::new(),
        gate,
    };
    let handoff = handoff(args, loaded, name, &model, choice, &mut team).await?;
    handoff
        .agent()
        .to_builder()
        .approver(approver)
        .build()
        .map_err(|e| format!("[agents.{name}]: {e}"))
}

/// The most agents one agent may hand off to.
const MAX_HANDOFFS: usize = 64;

/// Agents being built: the chain of handoffs under way (a circle is a
/// mistake), each agent once built (an agent two others hand to is built
/// once), and the relevance gate they all share.
struct Team {
    seen: Vec<String>,
    built: HashMap<String, Handoff>,
    gate: Option<Arc<RelevanceGate>>,
}

/// The names a table's `handoffs` lists, checked: at most [`MAX_HANDOFFS`],
/// none empty.
fn listed(loaded: &Loaded, table: &str, section: &AgentSection) -> Result<Vec<String>, String> {
    let names = section.handoffs.clone().unwrap_or_default();
    if names.len() > MAX_HANDOFFS {
        return Err(format!(
            "{}: [{table}] hands off to {} agents; at most {MAX_HANDOFFS}",
            loaded.label(),
            names.len()
        ));
    }
    if names.iter().any(|name| name.trim().is_empty()) {
        return Err(format!(
            "{}: [{table}] handoffs: an empty name",
            loaded.label()
        ));
    }
    Ok(names)
}

fn handoff<'a>(
    args: &'a AgentArgs,
    loaded: &'a Loaded,
    name: &'a str,
    model: &'a Arc<dyn ChatModel>,
    choice: &'a ModelChoice,
    team: &'a mut Team,
) -> agentry::BoxFuture<'a, Result<Handoff, String>> {
    Box::pin(async move {
        if team.seen.iter().any(|s| s == name) {
            return Err(format!(
                "{}: handoffs go round in a circle: {} → {name}",
                loaded.label(),
                team.seen.join(" → ")
            ));
        }
        if let Some(built) = team.built.get(name) {
            return Ok(built.clone());
        }
        let Some(section) = loaded.file.agents.get(name) else {
            return Err(format!(
                "{}: no [agents.{name}] table for the handoff to `{name}`",
                loaded.label()
            ));
        };
        team.seen.push(name.to_owned());
        let mut own = loaded.clone();
        own.file.name = Some(name.to_owned());
        own.file.agent = section.clone();
        // Handoffs are followed below, one table at a time.
        own.file.agent.handoffs = None;
        let gate = team.gate.clone();
        let mut builder =
            Box::pin(args.builder_with_gate(&own, model.clone(), choice, gate)).await?;
        for next in listed(loaded, &format!("agents.{name}"), section)? {
            builder = builder.handoff(handoff(args, loaded, &next, model, choice, team).await?);
        }
        team.seen.pop();
        let agent = builder
            .build()
            .map_err(|e| format!("[agents.{name}]: {e}"))?;
        let description = section
            .description
            .clone()
            .unwrap_or_else(|| format!("The {name} agent."));
        let handoff = Handoff::to(agent).description(description);
        let handoff = match section.history {
            None | Some(HistoryKind::All) => handoff,
            Some(HistoryKind::Text) => handoff.input_filter(filters::without_tool_calls),
            Some(HistoryKind::Last) => handoff.input_filter(filters::last_user_message),
        };
        team.built.insert(name.to_owned(), handoff.clone());
        Ok(handoff)
    })
}
