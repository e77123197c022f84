//! The agent card an agentry agent is described by
//! (`/.well-known/agent-card.json`): its name and description, the
//! interface it answers on, streaming, and one skill per tool and per
//! Agent Skill, so a caller can see what it is good for.

use std::collections::HashMap;

use a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme,
    SecurityScheme, TRANSPORT_PROTOCOL_JSONRPC,
};
use agentry_agent::Agent;

/// What the card says beyond what the agent itself tells.
#[derive(Debug, Clone)]
pub struct CardInfo {
    /// The agent's name.
    pub name: String,
    /// What it does, for other agents.
    pub description: String,
    /// The version callers see (the card's ETag).
    pub version: String,
    /// The JSON-RPC endpoint's full URL (`http://host:port/a2a`).
    pub url: String,
    /// Whether callers must send `Authorization: Bearer <key>`.
    pub keyed: bool,
}

/// The card of `agent` as `info` describes it.
pub async fn agent_card(agent: &Agent, info: &CardInfo) -> AgentCard {
    let mut skills: Vec<AgentSkill> = agent
        .toolbox()
        .tools()
        .map(|tool| AgentSkill {
            id: tool.name.clone(),
            name: tool.name.clone(),
            description: tool
                .description
                .as_deref()
                .map(first_sentence)
                .unwrap_or_else(|| format!("The tool {}.", tool.name)),
            tags: vec!["tool".to_owned()],
            examples: None,
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        })
        .collect();
    if let Some(resolver) = agent.resolver() {
        let listed = resolver
            .list(agentry_core::skill::ListContext {
                messages: &[],
                system: agent.system(),
                model: agent.model_id(),
            })
            .await;
        for skill in listed {
            skills.push(AgentSkill {
                id: format!("skill:{}", skill.name),
                name: skill.name.clone(),
                description: first_sentence(&skill.description),
                tags: vec!["skill".to_owned()],
                examples: None,
                input_modes: None,
                output_modes: None,
                security_requirements: None,
            });
        }
    }
    let (security_schemes, security_requirements) = if info.keyed {
        let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            scheme: "Bearer".to_owned(),
            description: Some("An API key of the server, as a bearer token.".to_owned()),
            bearer_format: None,
        });
        (
            Some(HashMap::from([("bearer".to_owned(), scheme)])),
            Some(vec![HashMap::from([("bearer".to_owned(), Vec::new())])]),
        )
    } else {
        (None, None)
    };
    AgentCard {
        name: info.name.clone(),
        description: info.description.clone(),
        version: info.version.clone(),
        supported_interfaces: vec![AgentInterface::new(
            info.url.clone(),
            TRANSPORT_PROTOCOL_JSONRPC,
        )],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: Some(false),
        },
        default_input_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        default_output_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        skills,
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    }
}

/// The most of a skill's description the card gives (bytes): its first
/// sentence only, as the card is public, and what follows in a tool's
/// description (the files a reader sees, say) is for the model, not for
/// anyone who asks.
const DESCRIPTION_BYTES: usize = 200;

fn first_sentence(text: &str) -> String {
    agentry_agent::first_sentence(text, DESCRIPTION_BYTES).to_owned()
}

#[cfg(test)]
mod tests {
    use super::first_sentence;

    #[test]
    fn the_card_says_what_a_tool_does_and_no_more() {
        assert_eq!(
            first_sentence("Read a file. Files here: secrets.txt, id_rsa."),
            "Read a file."
        );
        assert_eq!(
            first_sentence("Convert units\nunits: m, ft"),
            "Convert units"
        );
        assert_eq!(first_sentence(&"x".repeat(500)).len(), 200);
    }
}
