//! Agents beside `[agent]` in `agentry.toml` (`[agents.NAME]`, each with
//! the keys of `[agent]`): the ones an agent's `handoffs` name are built as
//! `[agent]` is, from their own table, and offered as `transfer_to_NAME`.

use std::sync::Arc;

use agentry::agent::handoff::filters;
use agentry::agent::{Agent, AgentBuilder, Handoff};
use agentry::model::ChatModel;

use crate::config::{HistoryKind, Loaded};
use crate::definition::{AgentArgs, ModelChoice};

/// `builder` with a handoff to each agent its table's `handoffs` name.
pub async fn with_handoffs(
    args: &AgentArgs,
    loaded: &Loaded,
    mut builder: AgentBuilder,
    model: Arc<dyn ChatModel>,
    choice: &ModelChoice,
) -> Result<AgentBuilder, String> {
    let me = loaded.file.name.clone().unwrap_or_else(|| "agentry".into());
    let mut seen = vec![me];
    for name in loaded.file.agent.handoffs.clone().unwrap_or_default() {
        builder = builder.handoff(handoff(args, loaded, &name, &model, choice, &mut seen).await?);
    }
    Ok(builder)
}

/// The agent `[agents.NAME]` defines, with its own handoffs and
/// `approver`, or why not.
pub async fn named_agent(
    args: &AgentArgs,
    loaded: &Loaded,
    name: &str,
    model: Arc<dyn ChatModel>,
    choice: &ModelChoice,
    approver: crate::mcp::CliApprover,
) -> Result<Agent, String> {
    let mut seen = Vec::new();
    let handoff = handoff(args, loaded, name, &model, choice, &mut seen).await?;
    handoff
        .agent()
        .to_builder()
        .approver(approver)
        .build()
        .map_err(|e| format!("[agents.{name}]: {e}"))
}

fn handoff<'a>(
    args: &'a AgentArgs,
    loaded: &'a Loaded,
    name: &'a str,
    model: &'a Arc<dyn ChatModel>,
    choice: &'a ModelChoice,
    seen: &'a mut Vec<String>,
) -> agentry::BoxFuture<'a, Result<Handoff, String>> {
    Box::pin(async move {
        let Some(section) = loaded.file.agents.get(name) else {
            return Err(format!(
                "{}: no [agents.{name}] table for the handoff to `{name}`",
                loaded.label()
            ));
        };
        if seen.iter().any(|s| s == name) {
            return Err(format!(
                "{}: handoffs go round in a circle: {} → {name}",
                loaded.label(),
                seen.join(" → ")
            ));
        }
        seen.push(name.to_owned());
        let mut own = loaded.clone();
        own.file.name = Some(name.to_owned());
        own.file.agent = section.clone();
        // Handoffs are followed below, one table at a time.
        own.file.agent.handoffs = None;
        let mut builder = Box::pin(args.builder(&own, model.clone(), choice)).await?;
        for next in section.handoffs.clone().unwrap_or_default() {
            builder = builder.handoff(handoff(args, loaded, &next, model, choice, seen).await?);
        }
        seen.pop();
        let agent = builder
            .build()
            .map_err(|e| format!("[agents.{name}]: {e}"))?;
        let description = section
            .description
            .clone()
            .unwrap_or_else(|| format!("The {name} agent."));
        let handoff = Handoff::to(agent).description(description);
        Ok(match section.history {
            None | Some(HistoryKind::All) => handoff,
            Some(HistoryKind::Text) => handoff.input_filter(filters::without_tool_calls),
            Some(HistoryKind::Last) => handoff.input_filter(filters::last_user_message),
        })
    })
}
