//! [`Program`]: one structured request from a
//! signature, answered by a model (with tools if it has some) and checked
//! against the output schema, retried with the problems until it fits.

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument;

use super::prompt::{answer_json, feedback, system_prompt, user_message};
use super::signature::{Signature, SignatureError};
use crate::{Agent, AgentBuilder, AgentError, Frame, Outcome, RunError, StepRecord};
use agentry_core::model::{ChatModel, Message, OfflineModel, ResponseFormat, Usage};
use agentry_core::tool::{SchemaCheck, violation_report};
use agentry_core::tool::{Tool, schema_for_type};

/// How many times a program asks again after an answer that does not fit.
pub const DEFAULT_RETRIES: usize = 2;

/// Why a program has no output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProgramError {
    /// The inputs do not fit the input schema (the model was not called).
    #[error("{0}")]
    InvalidInput(String),
    /// The program's agent could not be put together (duplicate tool or
    /// skill names, a tool's bad schema).
    #[error("the program's tools or skills are invalid: {0}")]
    Agent(#[from] AgentError),
    /// The program's own input or output schema is not valid JSON Schema.
    #[error("the program's {which} schema is invalid: {message}")]
    InvalidSchema {
        /// `input` or `output`.
        which: &'static str,
        /// What the schema compiler said.
        message: String,
    },
    /// Every answer broke the output schema; `problems` are the last one's.
    #[error("no answer fit the output fields after {attempts} attempts; the last one:\n{problems}")]
    InvalidOutput {
        /// Answers tried.
        attempts: usize,
        /// What was wrong with the last one, a line per problem.
        problems: String,
        /// The last answer, as the model wrote it.
        answer: String,
    },
    /// The run ended without an answer (steps, budget, or the model failed).
    #[error(transparent)]
    Run(#[from] RunError),
}

/// A program's output with what it took to get it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramRun<O> {
    /// The output.
    pub output: O,
    /// Answers asked for (1 when the first fit).
    pub attempts: usize,
    /// Tokens over every attempt, tools' child agents included.
    pub usage: Usage,
    /// Every step of every attempt, in order, with its tool calls (each
    /// attempt numbers its steps from 1 again).
    pub steps: Vec<StepRecord>,
}

type Configure = Arc<dyn Fn(AgentBuilder) -> AgentBuilder + Send + Sync>;

/// A typed, one-shot request to a model: inputs and
/// outputs from a signature or from two Rust types, an answer in JSON checked
/// against the output schema, and the same gated tool loop as [`Agent`].
///
/// From a signature, with JSON values in and out:
///
/// ```
/// use agentry_core::model::{ScriptedModel, Step, Usage};
/// use agentry_agent::program::Program;
/// use serde_json::json;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let program = Program::new("question:string -> answer:string, confident:boolean")?;
/// let model = ScriptedModel::new()
///     .reply(Step::Final { text: r#"{"answer": "Yes"}"#.into(), tokens: Usage::new(50, 6) })
///     .reply(Step::Final { text: r#"{"answer": "Yes", "confident": true}"#.into(), tokens: Usage::new(90, 9) });
/// let run = program.run(&model, json!({"question": "Can I get a refund?"})).await?;
/// assert_eq!(run.output, json!({"answer": "Yes", "confident": true}));
/// assert_eq!((run.attempts, run.usage.total()), (2, 155));
/// // The first answer came back with what was wrong with it.
/// assert!(format!("{:?}", model.requests()[1].messages).contains(r#"\"confident\" is a required property"#));
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// Typed, with two structs that derive `JsonSchema` and serde:
///
/// ```
/// use agentry_core::model::{ScriptedModel, Step, Usage};
/// use agentry_agent::program::Program;
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, JsonSchema)]
/// struct Question {
///     /// What the customer asked.
///     question: String,
/// }
///
/// #[derive(Deserialize, JsonSchema, Debug, PartialEq)]
/// struct Answer {
///     /// One sentence.
///     answer: String,
/// }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let program = Program::<Question, Answer>::typed().description("Answer customer questions.");
/// let model = ScriptedModel::new()
///     .reply(Step::Final { text: r#"{"answer": "Within 30 days."}"#.into(), tokens: Usage::new(40, 8) });
/// let answer = program.forward(&model, Question { question: "Refund window?".into() }).await?;
/// assert_eq!(answer, Answer { answer: "Within 30 days.".into() });
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct Program<I = Value, O = Value> {
    description: Option<String>,
    input_schema: Value,
    output_schema: Value,
    internal: Vec<String>,
    tools: Vec<Tool>,
    retries: usize,
    configure: Vec<Configure>,
    built: OnceLock<Result<Built, ProgramError>>,
    types: PhantomData<fn(I) -> O>,
}

/// What a program compiles to once: its agent and its schema checkers.
struct Built {
    agent: Agent,
    inputs: SchemaCheck,
    outputs: SchemaCheck,
}

impl<I, O> Clone for Program<I, O> {
    fn clone(&self) -> Self {
        Self {
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone(),
            internal: self.internal.clone(),
            tools: self.tools.clone(),
            retries: self.retries,
            configure: self.configure.clone(),
            built: OnceLock::new(),
            types: PhantomData,
        }
    }
}

impl<I, O> std::fmt::Debug for Program<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("description", &self.description)
            .field("input_schema", &self.input_schema)
            .field("output_schema", &self.output_schema)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl Program {
    /// A program from a signature such as `question:string -> answer:string`,
    /// taking and giving JSON objects.
    pub fn new(signature: &str) -> Result<Self, SignatureError> {
        Ok(Self::from_signature(&Signature::parse(signature)?))
    }

    /// A program from a parsed [`Signature`].
    pub(crate) fn from_signature(signature: &Signature) -> Self {
        let internal = signature
            .outputs
            .iter()
            .filter(|field| field.internal)
            .map(|field| field.name.clone())
            .collect();
        Self::with_schemas(
            signature.description.clone(),
            signature.input_schema(),
            signature.output_schema(),
            internal,
        )
    }
}

impl<I: JsonSchema, O: JsonSchema> Program<I, O> {
    /// A program whose inputs are an `I` and whose output is an `O`, both
    /// structs deriving `JsonSchema` and serde; doc comments on their fields
    /// become the fields' descriptions.
    pub fn typed() -> Self {
        Self::with_schemas(
            None,
            schema_for_type::<I>(),
            schema_for_type::<O>(),
            Vec::new(),
        )
    }
}

impl<I, O> Program<I, O> {
    fn with_schemas(
        description: Option<String>,
        input_schema: Value,
        output_schema: Value,
        internal: Vec<String>,
    ) -> Self {
        Self {
            description,
            input_schema,
            output_schema,
            internal,
            tools: Vec::new(),
            retries: DEFAULT_RETRIES,
            configure: Vec::new(),
            built: OnceLock::new(),
            types: PhantomData,
        }
    }

    fn changed(mut self) -> Self {
        self.built = OnceLock::new();
        self
    }

    /// The task, told to the model first (replaces a signature's description).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self.changed()
    }

    /// A tool the model may call before it answers.
    pub fn tool(mut self, tool: impl Into<Tool>) -> Self {
        self.tools.push(tool.into());
        self.changed()
    }

    /// Several tools.
    pub fn tools<T>(mut self, tools: T) -> Self
    where
        T: IntoIterator,
        T::Item: Into<Tool>,
    {
        self.tools.extend(tools.into_iter().map(Into::into));
        self.changed()
    }

    /// How many times to ask again after an answer that does not fit the
    /// output schema (default [`DEFAULT_RETRIES`]).
    pub fn retries(mut self, retries: usize) -> Self {
        self.retries = retries;
        self.changed()
    }

    /// Set anything else of the loop the program runs (step limit, token
    /// budget, grants, state, approver, audit, sampling) on its [`AgentBuilder`].
    pub fn configure(
        mut self,
        configure: impl Fn(AgentBuilder) -> AgentBuilder + Send + Sync + 'static,
    ) -> Self {
        self.configure.push(Arc::new(configure));
        self.changed()
    }

    /// The JSON Schema of the inputs.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The JSON Schema of the output the model writes.
    pub fn output_schema(&self) -> &Value {
        &self.output_schema
    }

    /// The system prompt the model gets.
    pub fn system_prompt(&self) -> String {
        system_prompt(
            self.description.as_deref(),
            &self.input_schema,
            &self.output_schema,
            !self.tools.is_empty(),
        )
    }

    fn built(&self) -> Result<&Built, ProgramError> {
        let built = self.built.get_or_init(|| {
            let mut builder = Agent::builder(OfflineModel)
                .system(self.system_prompt())
                .response_format(ResponseFormat::new("output", self.output_schema.clone()))
                .tools(self.tools.iter().cloned());
            for configure in &self.configure {
                builder = configure(builder);
            }
            let invalid = |which, message| ProgramError::InvalidSchema { which, message };
            Ok(Built {
                agent: builder.build()?,
                inputs: SchemaCheck::new(&self.input_schema).map_err(|m| invalid("input", m))?,
                outputs: SchemaCheck::new(&self.output_schema).map_err(|m| invalid("output", m))?,
            })
        });
        built.as_ref().map_err(Clone::clone)
    }
}

impl<I: Serialize, O: DeserializeOwned> Program<I, O> {
    /// Run the program and return its output.
    pub async fn forward(&self, model: &dyn ChatModel, inputs: I) -> Result<O, ProgramError> {
        Ok(self.run(model, inputs).await?.output)
    }

    /// Run the program and return its output with the attempts, tokens and
    /// steps it took. Traced as an `invoke_program` span.
    pub async fn run(
        &self,
        model: &dyn ChatModel,
        inputs: I,
    ) -> Result<ProgramRun<O>, ProgramError> {
        let span = tracing::info_span!(
            "invoke_program",
            gen_ai.operation.name = "invoke_program",
            gen_ai.request.model = model.model_id(),
        );
        self.run_inner(model, inputs).instrument(span).await
    }

    async fn run_inner(
        &self,
        model: &dyn ChatModel,
        inputs: I,
    ) -> Result<ProgramRun<O>, ProgramError> {
        let built = self.built()?;
        let inputs = serde_json::to_value(inputs).map_err(|error| {
            ProgramError::InvalidInput(format!("the inputs could not be serialised: {error}"))
        })?;
        if let Some(lines) = built.inputs.violations(&inputs) {
            return Err(ProgramError::InvalidInput(violation_report(
                "invalid inputs for the program:",
                &lines,
            )));
        }
        let Value::Object(fields) = &inputs else {
            return Err(ProgramError::InvalidInput(
                "the inputs must be an object of named fields".into(),
            ));
        };
        let agent = &built.agent;
        // One frame for every attempt: the token budget covers them all.
        let frame = Frame::root(agent);
        let mut messages = vec![Message::user(user_message(fields))];
        let mut steps = Vec::new();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let run = agent.run_frame(model, &frame, messages, None).await;
            steps.extend(run.steps.iter().cloned());
            let Outcome::Final(answer) = &run.outcome else {
                let error = agent
                    .answer_of(run)
                    .expect_err("a run without a final answer");
                return Err(ProgramError::Run(error));
            };
            match self.read_answer(built, answer) {
                Ok(output) => {
                    return Ok(ProgramRun {
                        output,
                        attempts,
                        usage: frame.spend.usage(),
                        steps,
                    });
                }
                Err(problems) if attempts > self.retries => {
                    return Err(ProgramError::InvalidOutput {
                        attempts,
                        problems,
                        answer: answer.clone(),
                    });
                }
                Err(problems) => {
                    tracing::debug!(attempts, %problems, "the answer does not fit; asking again");
                    messages = run.messages;
                    messages.push(Message::user(feedback(&problems)));
                }
            }
        }
    }

    /// The output in `answer`, or what is wrong with it (a line per problem):
    /// not JSON, against the output schema, or not decodable as `O` (a
    /// schema can be looser than the type, e.g. `3.5` for an integer field).
    fn read_answer(&self, built: &Built, answer: &str) -> Result<O, String> {
        let mut value = answer_json(answer)?;
        if let Some(lines) = built.outputs.violations(&value) {
            return Err(lines.join("\n"));
        }
        if let Value::Object(map) = &mut value {
            map.retain(|name, _| !self.internal.contains(name));
        }
        serde_json::from_value(value).map_err(|error| format!("- (root): {error}"))
    }
}
