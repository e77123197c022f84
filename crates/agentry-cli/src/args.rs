//! The flags every command that talks to a model shares (`run`, `chat`,
//! `serve`, `mcp serve --agent`), and the evaluation harness too: which
//! provider, which model, and how the local model writes tool calls.

use clap::ValueEnum;

/// Which model answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// The in-process llama.cpp model (default; pulled on first use).
    Local,
    /// An OpenAI-compatible server (`OPENAI_API_KEY`, `OPENAI_BASE_URL`).
    Openai,
    /// Anthropic (`ANTHROPIC_API_KEY`).
    Anthropic,
    /// No model: answers `[no llm provider]`.
    Offline,
}

/// How the local model is asked to write tool calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallSyntaxArg {
    /// The `<tool_call>` JSON blocks of the model's chat template (default).
    Template,
    /// A Python-style list, `[f(x=1), f(x=2)]`: several calls to one tool
    /// come out far more often, but the model also calls tools it was not
    /// asked to (see BENCHMARKS.md).
    Python,
    /// Python-style when a request offers exactly one tool, the template's
    /// JSON otherwise.
    Auto,
}

impl From<CallSyntaxArg> for agentry_local::CallSyntax {
    fn from(syntax: CallSyntaxArg) -> Self {
        match syntax {
            CallSyntaxArg::Python => Self::Python,
            CallSyntaxArg::Template => Self::Template,
            CallSyntaxArg::Auto => Self::Auto,
        }
    }
}

/// The embedder the relevance gate compares requests and tools with.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum GateEmbedderArg {
    /// all-MiniLM-L6-v2 (91 MB, 384 dimensions; the default).
    #[default]
    Minilm,
    /// nomic-embed-text-v1.5 (274 MB, 768 dimensions, through llama.cpp).
    Nomic,
}

/// What the agent does with an answer that disagrees with the tool results
/// it rests on (a number or weekday they did not return, or nothing they did).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnswerCheckArg {
    /// Answers are taken as they are.
    Off,
    /// The results are quoted: in place of an answer that contradicts them,
    /// after one that leaves them out.
    Quote,
    /// The model is asked once more first, then the results are quoted.
    AskAgain,
}

impl From<AnswerCheckArg> for agentry::agent::AnswerCheck {
    fn from(check: AnswerCheckArg) -> Self {
        match check {
            AnswerCheckArg::Off => Self::Off,
            AnswerCheckArg::Quote => Self::Quote,
            AnswerCheckArg::AskAgain => Self::AskAgain,
        }
    }
}

/// Options shared by commands that talk to a model.
#[derive(clap::Args, Clone, Debug)]
pub struct ModelArgs {
    /// Which model answers [default: local].
    #[arg(long, value_enum)]
    pub(crate) provider: Option<ProviderKind>,
    /// Local: a GGUF path or a known model id. Remote: the model name.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// Local: let the model write tool calls freely instead of under a grammar.
    #[arg(long)]
    pub(crate) no_grammar: bool,
    /// Local: read every prompt in full instead of reusing the cached prefix
    /// an earlier step, turn or run left (kept in memory, and on disk in the
    /// model cache's `prompts` folder; same answers, slower; for comparison).
    #[arg(long)]
    pub(crate) no_prompt_cache: bool,
    /// Local: leave a call the model wrote inside its text (a fenced or bare
    /// JSON object naming an offered tool) as text instead of reading it as a call.
    #[arg(long)]
    pub(crate) no_text_calls: bool,
    /// Local: how the model is asked to write tool calls [default: template].
    #[arg(long, value_enum, value_name = "SYNTAX")]
    pub(crate) call_syntax: Option<CallSyntaxArg>,
    /// Local, with `--call-syntax template`: leave out the system-prompt
    /// note that several calls are written as one JSON list.
    #[arg(long)]
    pub(crate) no_call_lists: bool,
    /// Local, with call lists: when a request offers one tool, hold the
    /// model's calls to a JSON list (more of the calls a request asks for,
    /// and more it did not ask for: see BENCHMARKS.md).
    #[arg(long)]
    pub(crate) one_tool_lists: bool,
    /// Local, with call lists: when a request offers one tool, open a JSON
    /// list of calls where the model gives a list at least this share of
    /// the probability against one bare call; 1 leaves the choice to the
    /// model [default: 0.05].
    #[arg(long, value_name = "SHARE")]
    pub(crate) list_floor: Option<f32>,
    /// Local, template syntax: when tools are offered, open a call where the
    /// model gives calling at least this share of the probability against
    /// answering in text; 1 leaves the choice to the model [default: 1].
    #[arg(long, value_name = "SHARE")]
    pub(crate) call_floor: Option<f32>,
    /// Local: run a call the model writes twice word for word in one reply
    /// twice, instead of reading the repeats as one call.
    #[arg(long)]
    pub(crate) repeated_calls: bool,
    /// Local: run every call of a reply, instead of leaving out a later call
    /// that repeats an earlier one with its numbers in another order or
    /// brings in a number found nowhere in the conversation.
    #[arg(long)]
    pub(crate) ungrounded_calls: bool,
    /// Before the first step, answer in text when no tool's name and
    /// description is this close (cosine, all-MiniLM-L6-v2) to the request;
    /// 0 turns the gate off [default: 0.2 with the local model, off otherwise].
    #[arg(long, value_name = "COSINE")]
    pub(crate) relevance_floor: Option<f32>,
    /// With the relevance gate: answer in text when the request is not at
    /// least this much nearer (cosine) to a tool than to small talk
    /// ("hi!", "write a haiku", "who wrote Hamlet?"); -2 turns the
    /// comparison off [default: see BENCHMARKS.md, with the local model].
    #[arg(long, value_name = "COSINE", allow_negative_numbers = true)]
    pub(crate) small_talk_margin: Option<f32>,
    /// With the relevance gate: the first step must call a tool when the
    /// request is at least this much nearer (cosine) to a tool than to small
    /// talk; 2 leaves that choice to the model [default: see BENCHMARKS.md,
    /// with the local model].
    #[arg(long, value_name = "COSINE", allow_negative_numbers = true)]
    pub(crate) relevance_call_floor: Option<f32>,
    /// Read each answer that follows tool calls against their results; where
    /// it disagrees (a number or weekday the tools did not return, or
    /// nothing they did), quote them, or ask the model again first
    /// [default: quote with the local model, off otherwise].
    #[arg(long, value_enum)]
    pub(crate) check_answers: Option<AnswerCheckArg>,
    /// The embedder the relevance gate compares requests and tools with
    /// [default: minilm].
    #[arg(long, value_enum)]
    pub(crate) gate_embedder: Option<GateEmbedderArg>,
}
