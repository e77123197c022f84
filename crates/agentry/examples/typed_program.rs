//! A typed program with tools: one structured request from the
//! signature `question:string -> answer:string`, with a `search`
//! function, answered by the local model (Qwen2.5-Coder-0.5B through
//! llama.cpp). The answer is decoded under a grammar made from the output
//! schema, checked against it, and asked for again with the problems if it
//! did not fit. Prints the tool calls, the output, the attempts and tokens.
//!
//! ```go
//! search := axllm.Fn("search").WithHandler(func(args map[string]axllm.Value) (axllm.Value, error) {
//!     return axllm.Object("title", "Ax docs"), nil
//! })
//! answer := axllm.NewAx("question:string -> answer:string", nil)
//! answer.Functions = []axllm.Tool{search}
//! out, err := answer.Forward(context.Background(), client, map[string]axllm.Value{
//!     "question": "Can this customer get a refund?",
//! }, nil)
//! ```
//!
//! Run: `cargo run -p agentry --example typed_program` (after `agentry model
//! pull`; without the model the offline model answers, which is no JSON, and
//! the program says so).

mod support;

use agentry::model::{ChatModel, ToolChoice};
use agentry::program::{Program, ProgramError, ProgramRun};
use serde_json::{Value, json};
use support::{local_or_offline, search};

/// The program: the signature plus `search`. Small local models
/// answer before searching unless the first step must call it.
fn answer_program() -> Program {
    Program::new("question:string -> answer:string")
        .expect("a valid signature")
        .tool(search())
        .configure(|agent| {
            agent
                .first_tool_choice(ToolChoice::Tool("utils.search".into()))
                .max_tool_rounds(1)
                .max_steps(4)
                .max_tokens(160)
        })
}

async fn run(model: &dyn ChatModel) -> Result<ProgramRun<Value>, ProgramError> {
    let program = answer_program();
    println!("signature: question:string -> answer:string");
    println!("system prompt:\n{}\n", program.system_prompt());
    let run = program
        .run(
            model,
            json!({"question": "Can this customer get a refund?"}),
        )
        .await?;
    support::print_calls(&run.steps);
    println!("output: {}", run.output);
    println!(
        "attempts: {}, tokens: {} in, {} out",
        run.attempts, run.usage.input_tokens, run.usage.output_tokens
    );
    Ok(run)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if let Err(error) = run(local_or_offline().await.as_ref()).await {
        println!("error: {error}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_program_searches_then_answers_in_its_output_schema() {
    if !support::local_model_present() {
        return;
    }
    let model = local_or_offline().await;
    let run = run(model.as_ref()).await.expect("a valid output");
    let first = &run.steps[0].calls[0];
    assert_eq!(first.call.name, "utils.search");
    assert_eq!(first.result.output, json!({"title": "Ax docs"}));
    let answer = run.output["answer"].as_str().expect("a string answer");
    assert!(!answer.trim().is_empty(), "{run:?}");
    assert_eq!(
        run.output.as_object().unwrap().len(),
        1,
        "only the output field"
    );
    assert!(run.usage.total() > 0);
}
