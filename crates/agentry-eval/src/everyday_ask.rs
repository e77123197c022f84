//! `agentry-eval everyday --ask which|fits`: can the model itself tell a
//! request no tool fits from one a tool fits, when asked outright under a
//! grammar? (The question behind the relevance gate's design: if it could,
//! the gate would only be a prior.) No agent runs; each request's last
//! turn (with the user's earlier turns) is put to the model once:
//!
//! - `which`: "Which tool is needed …? Answer with the tool's name, or
//!   none", the answer held to the tool names and `none`;
//! - `fits`: "Can a call to this tool answer the request? yes or no" for
//!   the tool the request is labelled with (for a request no tool fits, the
//!   tool nearest it by the gate's embedder).
//!
//! A request is right when the answer is one of its labelled tools, or
//! `none` (`no`) for a request no tool fits.

use agentry::agent::RelevanceGate;
use agentry::model::{ChatModel, ChatRequest, Message, ResponseFormat, Step, ToolChoice};
use agentry::tool::ToolSchema;
use serde::Serialize;

/// What the model is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ask {
    /// Which tool, or none.
    Which,
    /// Whether the labelled (or nearest) tool fits: yes or no.
    Fits,
}

/// One request's answer.
#[derive(Serialize)]
pub(crate) struct Asked {
    pub id: String,
    /// The labelled tools, or `["none"]`.
    pub want: Vec<String>,
    /// The tool the model named, or `none`.
    pub got: String,
    pub right: bool,
}

/// The model's answer to `ask` for a request of `turns` among `tools`,
/// labelled with `want` (tool names; empty: no tool fits).
pub(crate) async fn ask(
    model: &dyn ChatModel,
    gate: &RelevanceGate,
    ask: Ask,
    tools: &[ToolSchema],
    turns: &[String],
    want: &[String],
) -> Result<String, String> {
    let (last, earlier) = turns.split_last().ok_or("a request without a turn")?;
    let earlier: String = earlier
        .iter()
        .map(|turn| format!("Earlier the user asked: {turn}\n"))
        .collect();
    let (system, question, options, tool) = match ask {
        Ask::Which => {
            let list: String = tools
                .iter()
                .map(|t| format!("- {}: {}\n", t.name, first_line(t)))
                .collect();
            let mut names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            names.push("none".into());
            let question = format!(
                "Tools:\n{list}\n{earlier}Request: {last}\n\nWhich tool is needed to answer the request? \
                 Answer with the tool's name, or none when no tool fits."
            );
            (
                "You decide which tool, if any, is needed to answer a request.",
                question,
                names,
                None,
            )
        }
        Ask::Fits => {
            let tool = match tools.iter().find(|t| want.contains(&t.name)) {
                Some(tool) => tool,
                None => nearest(gate, last, tools).await?,
            };
            let text = agentry::agent::ToolText::WithArguments.of(tool);
            let question = format!(
                "Tool: {text}\n\n{earlier}Request: {last}\n\nCan a call to this tool answer the request? Answer yes or no."
            );
            let options = vec!["yes".to_owned(), "no".to_owned()];
            (
                "You judge whether a tool can answer a request.",
                question,
                options,
                Some(tool.name.clone()),
            )
        }
    };
    let request = ChatRequest {
        system: Some(system.into()),
        messages: vec![Message::user(question)],
        tool_choice: ToolChoice::None,
        max_tokens: Some(16),
        response_format: Some(ResponseFormat {
            name: "answer".into(),
            schema: serde_json::json!({"type": "string", "enum": options}),
        }),
        ..ChatRequest::default()
    };
    let text = match model.step(&request).await.map_err(|e| e.to_string())? {
        Step::Final { text, .. } => serde_json::from_str::<String>(&text).unwrap_or(text),
        Step::Tool { .. } => return Err("a call where none was offered".into()),
    };
    Ok(match (tool, text.as_str()) {
        (Some(tool), "yes") => tool,
        (Some(_), _) => "none".into(),
        (None, _) => text,
    })
}

/// The text of the last user message (empty when there is none).
pub(crate) fn last_user(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn first_line(tool: &ToolSchema) -> &str {
    tool.description
        .as_deref()
        .and_then(|d| d.lines().next())
        .unwrap_or("")
}

/// The tool nearest `request` by the gate's embedder.
async fn nearest<'a>(
    gate: &RelevanceGate,
    request: &str,
    tools: &'a [ToolSchema],
) -> Result<&'a ToolSchema, String> {
    let mut best: Option<(f32, &ToolSchema)> = None;
    for tool in tools {
        let similarity = gate
            .best_match(request, std::slice::from_ref(tool))
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or(f32::NEG_INFINITY);
        if best.is_none_or(|(b, _)| similarity > b) {
            best = Some((similarity, tool));
        }
    }
    best.map(|(_, tool)| tool)
        .ok_or_else(|| "no tools".to_owned())
}
