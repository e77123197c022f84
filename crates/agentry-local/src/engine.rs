//! `LocalModel`: a GGUF model run in-process by llama.cpp, implementing
//! [`ChatModel`]. It renders the model's own chat template (tools listed the
//! way its [`CallSyntax`] asks for calls),
//! optionally constrains decoding with an llguidance grammar so tool calls are
//! always on the allow-list and schema-valid, streams text, and counts tokens exactly.
//! Decoding runs on the model's own thread ([`crate::scheduler`]), which
//! batches concurrent requests and reuses cached prompt prefixes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, OnceLock};

use agentry_core::model::{
    ChatModel, ChatRequest, EventStream, FinishReason, ModelError, StreamEvent, ToolChoice, Usage,
};
use agentry_core::tool::wire::WireNames;
use agentry_local_calls::schema_echo::unwrap_schema_echo;
use agentry_local_calls::template::{ChatTemplate, Prompt};
use agentry_local_calls::tool_calls::{ParsedReply, TagStyle, embedded_calls};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llguidance::{Matcher, ParserFactory};

mod config;
mod grammar;
mod stats;
mod syntax;

pub(crate) use stats::Counters;
pub use stats::LocalStats;

pub use config::{CALL_LIST_NOTE, DEFAULT_LIST_FLOOR, LocalConfig};
pub use syntax::CallSyntax;

use crate::call_choices::kept_calls;
use crate::prompt_store::PromptStore;
use crate::scheduler::{self, Event, Job, Settings};

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

/// The loaded model and what is derived from it, shared with the decoding thread.
pub(crate) struct Loaded {
    pub(crate) model: LlamaModel,
    template: ChatTemplate,
    name: String,
    path: PathBuf,
    tags: TagStyle,
    factory: OnceLock<Result<ParserFactory, String>>,
    config: LocalConfig,
    pub(crate) stats: Counters,
    /// Turns on the cores with other processes, when the config names a lock file.
    pub(crate) turns: Option<crate::cpu_turns::CpuTurns>,
}

struct Inner {
    loaded: Arc<Loaded>,
    /// The decoding thread, started on the first request; it stops when this
    /// is dropped with the last clone of the model.
    decoder: Mutex<Option<Decoder>>,
}

/// The decoding thread and its queue.
struct Decoder {
    jobs: Sender<Job>,
    thread: std::thread::JoinHandle<()>,
}

impl Drop for Inner {
    /// Stop the decoding thread and wait for it: it finishes the work in
    /// progress (a reply it reads again while idle, at most one decode
    /// call's worth) and frees the context, so nothing of the model's is
    /// still running when the last handle is gone.
    fn drop(&mut self) {
        let decoder = self
            .decoder
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(Decoder { jobs, thread }) = decoder {
            drop(jobs);
            // (Never from the decoding thread itself, should a job own a handle.)
            if thread.thread().id() != std::thread::current().id() {
                thread.join().ok();
            }
        }
    }
}

/// A local GGUF chat model.
#[derive(Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.inner.loaded.path)
            .finish()
    }
}

/// How a raw generation ended: token counts and the text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generation {
    /// The generated text.
    pub text: String,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Of the prompt tokens, those reused from the cache (not evaluated).
    pub cached_tokens: u64,
    /// Generated tokens (end-of-generation token excluded).
    pub output_tokens: u64,
    /// Seconds spent on the prompt (waiting for a free sequence excluded).
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
        let turns = config
            .cpu_lock
            .as_deref()
            .and_then(|path| crate::cpu_turns::CpuTurns::open(path, config.wait_notice));
        Ok(Self {
            inner: Arc::new(Inner {
                loaded: Arc::new(Loaded {
                    model,
                    template,
                    name,
                    path,
                    tags,
                    factory: OnceLock::new(),
                    config,
                    stats: Counters::default(),
                    turns,
                }),
                decoder: Mutex::new(None),
            }),
        })
    }

    /// The model's name from its metadata.
    pub fn name(&self) -> &str {
        &self.inner.loaded.name
    }

    /// The prompt the model would see for `request` (wire names for tools).
    /// With `ToolChoice::None` the tools are left out of the prompt, so a small
    /// model is not invited to call one.
    pub fn render_prompt(&self, request: &ChatRequest) -> Result<Prompt, ModelError> {
        self.render_with(request, &wire_names(request)?)
    }

    fn render_template(
        &self,
        request: &ChatRequest,
        names: &WireNames,
    ) -> Result<Prompt, ModelError> {
        self.inner
            .loaded
            .template
            .render_prompt(request, &|name| names.wire_of(name))
            .map_err(|e| ModelError::Config(e.to_string()))
    }

    /// How many tokens `request`'s prompt takes for this model: its chat
    /// template rendered (tools included) and run through its tokenizer.
    pub fn count_tokens(&self, request: &ChatRequest) -> Result<usize, ModelError> {
        let prompt = self.render_prompt(request)?;
        let vocab = self.inner.loaded.model.vocab();
        Ok(prompt
            .segments
            .iter()
            .map(|(text, markers)| vocab.tokenize(text.as_bytes(), false, *markers).len())
            .sum())
    }

    /// Generate from a prompt, calling `on_text` with each decoded piece
    /// (return `false` to stop). Special-token markers count only in the
    /// prompt's template text ([`Prompt::trusted`] for a raw prompt).
    /// Blocking: call it off the async runtime.
    ///
    /// Requests from any number of threads are decoded together (up to
    /// [`LocalConfig::sequences`] at once), and a prompt that begins like an
    /// earlier one evaluates only its new tokens ([`Generation::cached_tokens`]).
    pub fn generate(
        &self,
        prompt: &Prompt,
        grammar: Option<&str>,
        max_tokens: u32,
        temperature: Option<f64>,
        stop: &[String],
        mut on_text: impl FnMut(&str) -> bool,
    ) -> Result<Generation, ModelError> {
        let (sender, receiver) = std::sync::mpsc::channel();
        let matcher = grammar.map(|grammar| self.matcher(grammar)).transpose()?;
        let constraint = Constraint {
            grammar: matcher,
            list_floor: None,
            call_floor: None,
        };
        self.submit(
            prompt,
            constraint,
            max_tokens,
            temperature,
            stop,
            move |event| sender.send(event).is_ok(),
        )?;
        let mut collector = Collector::default();
        for event in receiver {
            if let Some(done) = collector.on(event, &mut on_text) {
                return done;
            }
        }
        Err(decoder_stopped())
    }

    /// Tokenise `prompt`, build its sampler and queue it for the decoding thread.
    fn submit(
        &self,
        prompt: &Prompt,
        constraint: Constraint,
        max_tokens: u32,
        temperature: Option<f64>,
        stop: &[String],
        sink: impl FnMut(Event) -> bool + Send + 'static,
    ) -> Result<(), ModelError> {
        let vocab = self.inner.loaded.model.vocab();
        let tokens = prompt
            .segments
            .iter()
            .flat_map(|(text, markers)| vocab.tokenize(text.as_bytes(), false, *markers))
            .collect();
        let job = Job {
            tokens,
            grammar: constraint.grammar,
            sampler: self.sampler(temperature),
            list_floor: constraint.list_floor,
            call_floor: constraint.call_floor,
            max_tokens,
            stop: stop.to_vec(),
            sink: Box::new(sink),
        };
        let mut decoder = self
            .inner
            .decoder
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A decoding thread that died (it never should) is replaced.
        let job = match decoder.as_ref() {
            Some(running) => match running.jobs.send(job) {
                Ok(()) => return Ok(()),
                Err(std::sync::mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let config = &self.inner.loaded.config;
        let settings = Settings {
            window: config.context_size,
            slots: config.sequences.max(1),
            threads: config
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
                as i32,
            prompt_cache: config.prompt_cache,
        };
        let store = match &config.prompt_store {
            Some(root) if config.prompt_cache => PromptStore::open(root, &self.inner.loaded.path),
            _ => None,
        };
        let (jobs, thread) = scheduler::spawn(self.inner.loaded.clone(), settings, store)?;
        jobs.send(job).map_err(|_| decoder_stopped())?;
        *decoder = Some(Decoder { jobs, thread });
        Ok(())
    }

    /// Counters of the work this model has done since it was loaded.
    pub fn stats(&self) -> LocalStats {
        self.inner.loaded.stats.snapshot()
    }
}

/// What holds a request's tokens besides its sampler: the grammar, and the
/// list floor at a call block's first choice ([`list_opening`](agentry_local_calls::list_opening)).
struct Constraint {
    grammar: Option<Matcher>,
    list_floor: Option<f32>,
    call_floor: Option<f32>,
}

fn decoder_stopped() -> ModelError {
    ModelError::Local("the decoding thread stopped unexpectedly".into())
}

/// Turns the decoding thread's events for one request into a [`Generation`].
#[derive(Default)]
struct Collector {
    generation: Generation,
    generating: Option<std::time::Instant>,
}

impl Collector {
    /// Take one event; `Some` when the request is over (or the caller stopped it).
    fn on(
        &mut self,
        event: Event,
        on_text: &mut impl FnMut(&str) -> bool,
    ) -> Option<Result<Generation, ModelError>> {
        match event {
            Event::Prompt {
                tokens,
                cached,
                seconds,
            } => {
                self.generation.prompt_tokens = tokens;
                self.generation.cached_tokens = cached;
                self.generation.prompt_seconds = seconds;
                self.generating = Some(std::time::Instant::now());
                None
            }
            Event::Text { piece, produced } => {
                self.generation.text.push_str(&piece);
                self.generation.output_tokens = produced;
                if on_text(&piece) {
                    return None;
                }
                self.generation.generation_seconds = self
                    .generating
                    .map_or(0.0, |started| started.elapsed().as_secs_f64());
                Some(Ok(std::mem::take(&mut self.generation)))
            }
            Event::Done(result) => Some(result.map(|finished| Generation {
                text: finished.text,
                output_tokens: finished.output_tokens,
                generation_seconds: finished.seconds,
                ..std::mem::take(&mut self.generation)
            })),
        }
    }
}

/// The wire-name mapping for the tools of `request`.
impl LocalModel {
    /// Whether a call written inside the reply's text counts for `request`.
    fn reads_text_calls(&self, request: &ChatRequest) -> bool {
        self.inner.loaded.config.text_calls
            && !request.tools.is_empty()
            && request.tool_choice != ToolChoice::None
    }
}

fn wire_names(request: &ChatRequest) -> Result<WireNames, ModelError> {
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    WireNames::new(&names).map_err(|e| ModelError::Config(e.to_string()))
}

static CALL_COUNTER: AtomicU64 = AtomicU64::new(1);

impl ChatModel for LocalModel {
    fn model_id(&self) -> &str {
        &self.inner.loaded.name
    }

    fn provider_name(&self) -> &str {
        "llama.cpp"
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> EventStream<'a> {
        Box::pin(async_stream::try_stream! {
            let names = wire_names(request)?;
            let prompt = self.render_with(request, &names)?;
            let grammar = self.grammar_with(request, &names)?;
            let max_tokens = request.max_tokens.unwrap_or(self.inner.loaded.config.max_tokens);
            let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
            // Dropping this stream drops the receiver, which cancels the request.
            let constraint = Constraint {
                grammar: grammar.map(|(_, matcher)| matcher),
                list_floor: crate::call_choices::floor_for(&self.inner.loaded.config, request),
                call_floor: crate::call_choices::call_floor_for(&self.inner.loaded.config, request),
            };
            self.submit(&prompt, constraint, max_tokens, request.temperature, &request.stop, move |event| {
                sender.send(event).is_ok()
            })?;
            let mut collector = Collector::default();
            let mut output = String::new();
            let mut streamed = 0usize;
            let mut text_mode = request.tools.is_empty();
            // With a structured answer under the grammar, a reply opening with
            // `{` is the answer (JSON), never a call: calls open with a tag or
            // a fence. Unconstrained, a bare JSON call stays a call.
            let structured = request.response_format.is_some() && self.inner.loaded.config.constrained;
            // Python-style calls open with `[`.
            let python =
                self.inner.loaded.config.call_syntax.for_request(request) == CallSyntax::Python;
            let generation = loop {
                let event = match receiver.recv().await {
                    Some(event) => event,
                    None => Err(decoder_stopped())?,
                };
                let piece = match &event {
                    Event::Text { piece, .. } => Some(piece.clone()),
                    _ => None,
                };
                if let Some(done) = collector.on(event, &mut |_| true) {
                    break done?;
                }
                let Some(piece) = piece else { continue };
                output.push_str(&piece);
                if !text_mode {
                    let start = output.trim_start();
                    text_mode = start.chars().next().is_some_and(|c| match c {
                        '<' | '`' => false,
                        '[' => structured && !python,
                        '{' => structured,
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
            };
            // A structured answer streamed whole as text; there are no calls in it.
            let mut parsed = if structured && text_mode {
                ParsedReply::default()
            } else {
                self.read_reply(request, &generation.text)
            };
            if parsed.calls.is_empty() && !structured && self.reads_text_calls(request) {
                let offered: Vec<String> = request
                    .tools
                    .iter()
                    .filter(|tool| match &request.tool_choice {
                        ToolChoice::Tool(only) => &tool.name == only,
                        _ => true,
                    })
                    .map(|tool| names.wire_of(&tool.name))
                    .collect();
                let offered: Vec<&str> = offered.iter().map(String::as_str).collect();
                parsed.calls = embedded_calls(&parsed.text, &offered);
            }
            if !text_mode && !parsed.text.is_empty() && parsed.calls.is_empty() {
                yield StreamEvent::TextDelta { text: parsed.text.clone() };
            }
            let has_calls = !parsed.calls.is_empty();
            let calls = parsed.calls.into_iter().map(|(wire, arguments)| {
                let name = names.name_of(&wire);
                let arguments = match request.tools.iter().find(|tool| tool.name == name) {
                    Some(tool) => unwrap_schema_echo(arguments, &tool.input_schema),
                    None => arguments,
                };
                (name, arguments)
            });
            let calls = kept_calls(&self.inner.loaded.config, request, calls.collect());
            for (index, (name, arguments)) in calls.into_iter().enumerate() {
                let id = format!("call_{}", CALL_COUNTER.fetch_add(1, Ordering::Relaxed));
                yield StreamEvent::ToolCallStart { index, id, name };
                yield StreamEvent::ToolCallDelta { index, arguments: arguments.to_string() };
            }
            let usage = Usage::new(generation.prompt_tokens, generation.output_tokens)
                .with_cached_input(generation.cached_tokens);
            yield StreamEvent::Usage { usage };
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
