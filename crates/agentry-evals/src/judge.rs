//! Model as judge: a `ChatModel` (the local one too) reads the request, the
//! answer and a rubric, and gives a verdict constrained to a JSON schema (a
//! grammar, for llama.cpp): `{"pass": bool, "reason": string}`
//! ([`agentry_agent::verdict`]).

use agentry_agent::verdict::Verdict;
use agentry_core::model::ChatModel;

pub use agentry_agent::verdict::schema as verdict_schema;

/// Ask `model` whether `answer` to `request` meets `rubric`: `Err(reason)`
/// when it does not, when the judge fails, or when its verdict is not
/// readable (a judge that cannot say the answer is good fails it).
pub async fn judge(
    model: &dyn ChatModel,
    rubric: &str,
    request: &str,
    answer: &str,
) -> Result<(), String> {
    let verdict = agentry_agent::verdict::ask(
        model,
        "You grade an assistant's answer against a rubric.",
        format!(
            "Rubric: {rubric}\n\nThe user asked:\n{request}\n\nThe assistant answered:\n{answer}"
        ),
    )
    .await;
    match verdict {
        Verdict { pass: true, .. } => Ok(()),
        Verdict {
            judged: true,
            reason,
            ..
        } => Err(format!("the judge: {reason}")),
        Verdict { reason, .. } => Err(reason),
    }
}
