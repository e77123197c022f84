//! Settings of a [`LocalModel`](crate::LocalModel): [`LocalConfig`] and its defaults.

use std::path::PathBuf;

use super::CallSyntax;

/// Settings of a [`LocalModel`](crate::LocalModel).
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// Smallest context window per sequence, in tokens; grown (when the
    /// model is idle) to fit a longer prompt.
    pub context_size: u32,
    /// Most tokens generated per reply unless the request says otherwise.
    pub max_tokens: u32,
    /// CPU threads; `None` uses every available core.
    pub threads: Option<usize>,
    /// Constrain replies with a grammar when tools are offered (on by default).
    pub constrained: bool,
    /// Seed for sampling when a temperature above zero is requested.
    pub seed: u32,
    /// Requests decoded together in one batch, and prompts kept in the KV
    /// cache for reuse (each sequence holds one). Each takes `context_size`
    /// tokens of cache memory. Between 1 and 256.
    pub sequences: u32,
    /// Evaluate only the tokens after the longest prefix a sequence already
    /// holds, less a last read of at least 64 tokens (the reused prefix ends
    /// at a multiple of 32, so the last read starts at one); while idle, read a
    /// finished reply again so the next turn reuses it too (on by default;
    /// greedy output is the same either way).
    pub prompt_cache: bool,
    /// A file every process using local models locks for each decode call,
    /// so that processes (and models) on the same cores take turns instead
    /// of running their threads against each other: llama.cpp's workers
    /// spin while they wait, and two processes decoding at once each went
    /// many times slower than half speed. Default: `decode.lock` in the
    /// model cache ([`cache_dir`](crate::fetch::cache_dir)); `None` decodes
    /// without taking turns.
    pub cpu_lock: Option<PathBuf>,
    /// Called when a decode call finds another process (or model) holding
    /// [`cpu_lock`](Self::cpu_lock), before it waits (at most every thirty
    /// seconds): a command-line program says so.
    pub wait_notice: Option<fn()>,
    /// A folder where evaluated prompts are also kept on disk, so that another
    /// process (the next `agentry run`) whose prompt begins the same way
    /// loads the state of that prefix instead of evaluating it again: the
    /// system prompt and tool schemas are read once, not once per run. Off
    /// (`None`) by default; [`fetch::prompt_store_dir`](crate::fetch::prompt_store_dir)
    /// is the usual place. Used only with `prompt_cache` on; entries are kept
    /// per model file, 16 at most, least recently used dropped first. The
    /// folder holds the prompts' text (as tokens): it is created private
    /// (0700) and refused when it is not. Greedy output is the same as a full
    /// evaluation (a stored prefix is reused as a cached one is).
    pub prompt_store: Option<PathBuf>,
    /// Read a call the model wrote inside its text (a fenced or bare JSON
    /// object naming an offered tool) as a call, validated like any other
    /// (on by default).
    pub text_calls: bool,
    /// How the model is asked to write tool calls: its chat template's
    /// `<tool_call>` JSON (the default) or a Python-style list.
    pub call_syntax: CallSyntax,
    /// With [`CallSyntax::Template`], tell the model, when tools are offered,
    /// that several calls are written as one JSON list ([`CALL_LIST_NOTE`], added to the system
    /// prompt; on by default). The grammar accepts a list either way.
    pub call_lists: bool,
    /// With [`CallSyntax::Template`] and [`call_lists`](Self::call_lists),
    /// hold a reply that offers one tool to a JSON list of calls (the
    /// grammar accepts no bare call). Off by default: having opened a list,
    /// the 0.5B model writes the several calls a request asks for far more
    /// often (BFCL `parallel`), but it also adds calls where one was asked
    /// for (`simple_python`): see `BENCHMARKS.md`.
    pub one_tool_lists: bool,
    /// With [`CallSyntax::Template`] and [`call_lists`](Self::call_lists),
    /// when a reply to a request offering one tool opens a call block, how
    /// likely the model must find a JSON list of calls (against one bare
    /// call) for the list to be opened
    /// ([`list_opening`](agentry_local_calls::list_opening)). The 0.5B model stops after
    /// one call where a request asks for several, and a list it gave even a
    /// small chance is then usually what was asked for. [`DEFAULT_LIST_FLOOR`]
    /// by default; `1.0` leaves the choice to the model, and `0.0` opens a
    /// list wherever the grammar allows one
    /// ([`one_tool_lists`](Self::one_tool_lists) without its grammar).
    pub list_floor: f32,
    /// With [`CallSyntax::Template`] and a grammar, when a reply to a
    /// request offering tools (and leaving the choice to the model) makes
    /// its first choice between answering in text and calling: how likely
    /// the model must find opening a call (`<tool_call>`, against every
    /// text token the grammar allows) for the call to be opened. A small
    /// model answers in text, or invents a file's content, where a call was
    /// wanted far more often than it calls where none was; a call it gave a
    /// fair chance is then usually the right one. `1.0` (the default) leaves
    /// the choice to the model; `0.0` calls wherever tools are offered.
    pub call_floor: f32,
    /// Run a call the model writes twice, word for word (same tool, same
    /// arguments), in one reply as often as it wrote it. Off by default: a
    /// small model writing a list repeats a call where one was asked for
    /// (`fetch_url` twice for one page) far more often than a request needs
    /// the same call twice at once, so identical calls in one reply are read
    /// as one.
    pub repeated_calls: bool,
    /// Run every call of a reply as written. Off by default: after a reply's
    /// first call, a call that repeats an earlier one with its numbers in
    /// another order, or brings in a number found nowhere in the
    /// conversation, is left out ([`grounded_calls`](agentry_local_calls::grounding::grounded_calls)):
    /// a small model writing a list adds such calls where one was asked for
    /// (`math.factorial(5)`, then `math.factorial(10)`); see `BENCHMARKS.md`.
    pub ungrounded_calls: bool,
}

/// The note [`LocalConfig::call_lists`] adds to the system prompt when tools
/// are offered with [`CallSyntax::Template`]. Without it the 0.5B model makes one call where a request asks
/// for several (0 of 10 BFCL `parallel` questions right; with it, 4 of 10).
/// A worked example of three calls did better on `parallel` (21 of the first
/// 40 against 16) but made the model call several times where one call was
/// asked for (`simple_python` 248 of 400 against 280): see `BENCHMARKS.md`.
pub const CALL_LIST_NOTE: &str = "To call several functions, write them as a JSON list: \
[{\"name\": ..., \"arguments\": ...}, {\"name\": ..., \"arguments\": ...}]. \
Make one call for each thing the user asks for.";

/// The default [`LocalConfig::list_floor`]: the lowest floor that kept BFCL
/// `simple_python` within 2 points of the model's own choice, while it
/// raises `parallel` most (`BENCHMARKS.md`, "A list the model finds likely
/// enough", has the figures).
pub const DEFAULT_LIST_FLOOR: f32 = 0.05;

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            context_size: 4096,
            max_tokens: 512,
            threads: None,
            constrained: true,
            seed: 42,
            sequences: 4,
            prompt_cache: true,
            cpu_lock: Some(crate::fetch::cache_dir().join("decode.lock")),
            wait_notice: None,
            prompt_store: None,
            text_calls: true,
            call_syntax: CallSyntax::default(),
            call_lists: true,
            one_tool_lists: false,
            list_floor: DEFAULT_LIST_FLOOR,
            call_floor: 1.0,
            repeated_calls: false,
            ungrounded_calls: false,
        }
    }
}
