//! `LocalModel`: a GGUF model run in-process by llama.cpp, implementing
//! [`ChatModel`]. It renders the model's own chat template (tools included),
//! optionally constrains decoding with an llguidance grammar so tool calls are
//! always on the allow-list and schema-valid, streams text, and counts tokens exactly.
//! Generation runs on Tokio's blocking pool, one request at a time per model.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use agentry_core::model::{
    ChatModel, ChatRequest, EventStream, FinishReason, ModelError, StreamEvent, ToolChoice, Usage,
};
use agentry_core::tool::wire::WireNames;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};

use crate::template::{ChatTemplate, Prompt};
use crate::tool_calls::{
    GrammarTool, ParsedReply, TagStyle, json_answer_grammar, parse_reply, tool_call_grammar,
};

/// Settings of a [`LocalModel`].
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// Smallest context window; grown to fit long prompts.
    pub context_size: u32,
    /// Most tokens generated per reply unless the request says otherwise.
    pub max_tokens: u32,
    /// CPU threads; `None` uses every available core.
    pub threads: Option<usize>,
    /// Constrain replies with a grammar when tools are offered (on by default).
    pub constrained: bool,
    /// Seed for sampling when a temperature above zero is requested.
    pub seed: u32,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            context_size: 4096,
            max_tokens: 512,
            threads: None,
            constrained: true,
            seed: 42,
        }
    }
}

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

/// The process-wide llama.cpp backend (initialised once; logs go to `tracing`).
pub fn backend() -> Result<&'static LlamaBackend, ModelError> {
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| ModelError::Local(format!("llama.cpp backend: {error}")))
}

struct Inner {
    model: LlamaModel,
    template: ChatTemplate,
    name: String,
    path: PathBuf,
    tags: TagStyle,
    factory: OnceLock<Result<ParserFactory, String>>,
    config: LocalConfig,
    busy: Mutex<()>,
}

/// A local GGUF chat model.
#[derive(Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// How a raw generation ended: token counts and the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The generated text.
    pub text: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens (end-of-generation token excluded).
    pub output_tokens: u64,
    /// Seconds spent on the prompt.
    pub prompt_seconds: f64,
    /// Seconds spent generating.
    pub generation_seconds: f64,
}

impl LocalModel {
    /// Load a GGUF file with default settings.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        Self::load_with(path, LocalConfig::default())
    }

    /// Load a GGUF file.
    pub fn load_with(path: impl AsRef<Path>, config: LocalConfig) -> Result<Self, ModelError> {
        let path = path.as_ref().to_path_buf();
        if !path.is_file() {
            return Err(ModelError::Config(format!(
                "no model file at {}",
                path.display()
            )));
        }
        let model = LlamaModel::load_from_file(backend()?, &path, &LlamaModelParams::default())
            .map_err(|error| ModelError::Local(format!("loading {}: {error}", path.display())))?;
        let source = model.meta_val_str("tokenizer.chat_template").map_err(|_| {
            ModelError::Config(format!(
                "{} has no chat template in its metadata",
                path.display()
            ))
        })?;
        let vocab = model.vocab();
        let piece =
            |token| String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned();
        let template = ChatTemplate::new(&source, &piece(vocab.bos()), &piece(vocab.eos()))
            .map_err(|error| ModelError::Config(error.to_string()))?;
        let tags = match (
            vocab.tokenize(b"<tool_call>", false, true).as_slice(),
            vocab.tokenize(b"</tool_call>", false, true).as_slice(),
        ) {
            ([open], [close]) => TagStyle::Tokens {
                open: open.0 as u32,
                close: close.0 as u32,
            },
            _ => TagStyle::Text,
        };
        let name = model.meta_val_str("general.name").unwrap_or_else(|_| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        Ok(Self {
            inner: Arc::new(Inner {
                model,
                template,
                name,
                path,
                tags,
                factory: OnceLock::new(),
                config,
                busy: Mutex::new(()),
            }),
        })
    }

    /// The model's name from its metadata.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The prompt the model would see for `request` (wire names for tools).
    /// With `ToolChoice::None` the tools are left out of the prompt, so a small
    /// model is not invited to call one.
    pub fn render_prompt(&self, request: &ChatRequest) -> Result<Prompt, ModelError> {
        self.render_with(request, &wire_names(request)?)
    }

    fn render_with(&self, request: &ChatRequest, names: &WireNames) -> Result<Prompt, ModelError> {
        if request.tool_choice == ToolChoice::None && !request.tools.is_empty() {
            let without_tools = ChatRequest {
                tools: Vec::new(),
                ..request.clone()
            };
            return self.render_with(&without_tools, names);
        }
        self.inner
            .template
            .render_prompt(request, &|name| names.wire_of(name))
            .map_err(|e| ModelError::Config(e.to_string()))
    }

    /// How many tokens `request`'s prompt takes for this model: its chat
    /// template rendered (tools included) and run through its tokenizer.
    pub fn count_tokens(&self, request: &ChatRequest) -> Result<usize, ModelError> {
        let prompt = self.render_prompt(request)?;
        let vocab = self.inner.model.vocab();
        Ok(prompt
            .segments
            .iter()
            .map(|(text, markers)| vocab.tokenize(text.as_bytes(), false, *markers).len())
            .sum())
    }

    /// The grammar a request's reply is constrained by, if any.
    pub fn grammar_for(&self, request: &ChatRequest) -> Result<Option<String>, ModelError> {
        self.grammar_with(request, &wire_names(request)?)
    }

    fn grammar_with(
        &self,
        request: &ChatRequest,
        names: &WireNames,
    ) -> Result<Option<String>, ModelError> {
        if !self.inner.config.constrained {
            return Ok(None);
        }
        let answer = request
            .response_format
            .as_ref()
            .map(|format| &format.schema);
        if request.tools.is_empty() || request.tool_choice == ToolChoice::None {
            return Ok(match answer {
                Some(schema) => Some(json_answer_grammar(schema)),
                None if request.tools.is_empty() => None,
                None => Some(crate::tool_calls::text_only_grammar()),
            });
        }
        let offered: Vec<(String, &serde_json::Value)> = request
            .tools
            .iter()
            .filter(|tool| match &request.tool_choice {
                ToolChoice::Tool(only) => &tool.name == only,
                _ => true,
            })
            .map(|tool| (names.wire_of(&tool.name), &tool.input_schema))
            .collect();
        let tools: Vec<GrammarTool<'_>> = offered
            .iter()
            .map(|(name, schema)| GrammarTool { name, schema })
            .collect();
        let allow_text = matches!(request.tool_choice, ToolChoice::Auto);
        Ok(Some(tool_call_grammar(
            &tools,
            allow_text,
            self.inner.tags,
            answer,
        )))
    }

    fn sampler(
        &self,
        grammar: Option<&str>,
        temperature: Option<f64>,
    ) -> Result<LlamaSampler, ModelError> {
        let mut chain = Vec::new();
        if let Some(grammar) = grammar {
            let factory = self
                .inner
                .factory
                .get_or_init(|| {
                    let env = LlamaSampler::llguidance_tok_env(&self.inner.model);
                    ParserFactory::new_simple(&env).map_err(|e| e.to_string())
                })
                .as_ref()
                .map_err(|e| ModelError::Local(format!("grammar engine: {e}")))?;
            let matcher =
                Matcher::new(factory.create_parser(TopLevelGrammar::from_lark(grammar.to_owned())));
            if let Some(error) = matcher.get_error() {
                return Err(ModelError::Local(format!("tool-call grammar: {error}")));
            }
            chain.push(LlamaSampler::from(matcher));
        }
        match temperature.filter(|t| *t > 0.0) {
            Some(t) => {
                chain.push(LlamaSampler::temp(t as f32));
                chain.push(LlamaSampler::dist(self.inner.config.seed));
            }
            None => chain.push(LlamaSampler::greedy()),
        }
        Ok(LlamaSampler::chain_simple(chain))
    }

    /// Generate from a prompt, calling `on_text` with each decoded piece
    /// (return `false` to stop). Special-token markers count only in the
    /// prompt's template text ([`Prompt::trusted`] for a raw prompt).
    /// Blocking: call it off the async runtime.
    pub fn generate(
        &self,
        prompt: &Prompt,
        grammar: Option<&str>,
        max_tokens: u32,
        temperature: Option<f64>,
        stop: &[String],
        mut on_text: impl FnMut(&str) -> bool,
    ) -> Result<Generation, ModelError> {
        let inner = &self.inner;
        let _one_at_a_time = inner.busy.lock().unwrap_or_else(|p| p.into_inner());
        let local = |what: &str, error: &dyn std::fmt::Display| {
            ModelError::Local(format!("{what}: {error}"))
        };
        let vocab = inner.model.vocab();
        let tokens: Vec<_> = prompt
            .segments
            .iter()
            .flat_map(|(text, markers)| vocab.tokenize(text.as_bytes(), false, *markers))
            .collect();
        let n_ctx = (tokens.len() as u32 + max_tokens + 8).max(inner.config.context_size);
        let threads = inner
            .config
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
            as i32;
        let batch_size = 512usize;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(batch_size as u32)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let mut ctx = inner
            .model
            .new_context(backend()?, params)
            .map_err(|e| local("context", &e))?;
        let mut sampler = self.sampler(grammar, temperature)?;

        let started = std::time::Instant::now();
        let mut batch = LlamaBatch::new(batch_size, 1);
        for (chunk_index, chunk) in tokens.chunks(batch_size).enumerate() {
            batch.clear();
            for (i, token) in chunk.iter().enumerate() {
                let position = (chunk_index * batch_size + i) as i32;
                let last = chunk_index * batch_size + i == tokens.len() - 1;
                batch
                    .add(*token, position, &[0], last)
                    .map_err(|e| local("batch", &e))?;
            }
            ctx.decode(&mut batch)
                .map_err(|e| local("prompt decode", &e))?;
        }
        let prompt_seconds = started.elapsed().as_secs_f64();

        let started = std::time::Instant::now();
        let mut text = String::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut position = tokens.len() as i32;
        let mut produced = 0u64;
        while produced < u64::from(max_tokens) {
            let token = sampler.sample(&ctx, batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                break;
            }
            produced += 1;
            pending.extend(vocab.token_to_piece(token, true, None));
            let valid = match std::str::from_utf8(&pending) {
                Ok(all) => all.len(),
                Err(error) => error.valid_up_to(),
            };
            if valid > 0 {
                let piece = String::from_utf8_lossy(&pending[..valid]).into_owned();
                pending.drain(..valid);
                text.push_str(&piece);
                if !on_text(&piece) {
                    break;
                }
                if let Some(stop_at) = stop.iter().find_map(|s| text.find(s.as_str())) {
                    text.truncate(stop_at);
                    break;
                }
            }
            batch.clear();
            batch
                .add(token, position, &[0], true)
                .map_err(|e| local("batch", &e))?;
            position += 1;
            ctx.decode(&mut batch).map_err(|e| local("decode", &e))?;
        }
        Ok(Generation {
            text,
            prompt_tokens: tokens.len() as u64,
            output_tokens: produced,
            prompt_seconds,
            generation_seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// The wire-name mapping for the tools of `request`.
fn wire_names(request: &ChatRequest) -> Result<WireNames, ModelError> {
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    WireNames::new(&names).map_err(|e| ModelError::Config(e.to_string()))
}

static CALL_COUNTER: AtomicU64 = AtomicU64::new(1);

enum Progress {
    Text(String),
    Done(Result<Generation, ModelError>),
}

impl ChatModel for LocalModel {
    fn model_id(&self) -> &str {
        &self.inner.name
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a> {
        Box::pin(async_stream::try_stream! {
            let names = wire_names(request)?;
            let prompt = self.render_with(request, &names)?;
            let grammar = self.grammar_with(request, &names)?;
            let max_tokens = request.max_tokens.unwrap_or(self.inner.config.max_tokens);
            let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
            let model = self.clone();
            let (temperature, stop) = (request.temperature, request.stop.clone());
            let worker = tokio::task::spawn_blocking(move || {
                let text_sender = sender.clone();
                let result = model.generate(&prompt, grammar.as_deref(), max_tokens, temperature, &stop, |piece| {
                    text_sender.send(Progress::Text(piece.to_owned())).is_ok()
                });
                let _ = sender.send(Progress::Done(result));
            });
            let mut output = String::new();
            let mut streamed = 0usize;
            let mut text_mode = request.tools.is_empty();
            // With a structured answer under the grammar, a reply opening with
            // `{` is the answer (JSON), never a call: calls open with a tag or
            // a fence. Unconstrained, a bare JSON call stays a call.
            let structured = request.response_format.is_some() && self.inner.config.constrained;
            let generation = loop {
                match receiver.recv().await {
                    Some(Progress::Text(piece)) => {
                        output.push_str(&piece);
                        if !text_mode {
                            let start = output.trim_start();
                            text_mode = start.chars().next().is_some_and(|c| match c {
                                '<' | '`' => false,
                                '{' | '[' => structured,
                                _ => true,
                            });
                        }
                        if text_mode {
                            let end = output.find("<tool_call>").unwrap_or(output.len());
                            if end > streamed {
                                yield StreamEvent::TextDelta { text: output[streamed..end].to_owned() };
                                streamed = end;
                            }
                        }
                    }
                    Some(Progress::Done(result)) => break result?,
                    None => Err(ModelError::Local("the generation thread stopped unexpectedly".into()))?,
                }
            };
            let _ = worker.await;
            // A structured answer streamed whole as text; there are no calls in it.
            let parsed = if structured && text_mode {
                ParsedReply::default()
            } else {
                parse_reply(&generation.text)
            };
            if !text_mode && !parsed.text.is_empty() && parsed.calls.is_empty() {
                yield StreamEvent::TextDelta { text: parsed.text.clone() };
            }
            let has_calls = !parsed.calls.is_empty();
            for (index, (wire, arguments)) in parsed.calls.into_iter().enumerate() {
                let name = names.name_of(&wire);
                let id = format!("call_{}", CALL_COUNTER.fetch_add(1, Ordering::Relaxed));
                yield StreamEvent::ToolCallStart { index, id, name };
                yield StreamEvent::ToolCallDelta { index, arguments: arguments.to_string() };
            }
            yield StreamEvent::Usage { usage: Usage::new(generation.prompt_tokens, generation.output_tokens) };
            let reason = if has_calls {
                FinishReason::ToolCalls
            } else if generation.output_tokens >= u64::from(max_tokens) {
                FinishReason::Length
            } else {
                FinishReason::Stop
            };
            yield StreamEvent::Finish { reason };
        })
    }
}
