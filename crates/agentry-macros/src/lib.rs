//! Procedural macros for agentry.
//!
//! [`macro@tool`] turns a plain `fn` or `async fn` into a model-callable tool
//! while leaving it callable as an ordinary function. Use it through the
//! `agentry` facade: `#[agentry::tool]`. [`macro@skill`] turns a function
//! into a skill: `#[agentry::skill]`.

mod docs;
mod skill;
mod tool;

use proc_macro::TokenStream;

/// Turn a function into a tool.
///
/// The function stays as written. Beside it, a companion module of the same
/// name holds:
///
/// - `NAME`: the tool name, the function's Rust path (`myapp::add`) unless overridden;
/// - `schema()`: `&'static ToolSchema` (`{name, input_schema, output_schema?, description?}`),
///   computed once for this function alone and listed in the process-global
///   registry (two functions given one name keep their own schemas; the
///   registry reports the clash);
/// - `tool()`: a fresh [`Tool`] for `Toolbox::for_agent`.
///
/// What maps to what:
///
/// - the doc comment becomes the description; a `# Arguments` list in it
///   (`* `x` - what x is`) or doc comments on the parameters become property descriptions;
/// - each parameter becomes a property of the input schema, required unless its type is `Option<_>`;
/// - a `&ToolContext` parameter is injected by dispatch and left out of the schema;
/// - a `State<T>` parameter receives the shared state of type `T` the program
///   attached (`AgentBuilder::state`, `ToolContext::with_state`), as axum's
///   `State` does, and is left out of the schema; `State(db): State<Db>` works;
/// - the return type becomes the output schema; for `Result<T, E>` it is `T`'s,
///   and an `Err` becomes an error result carrying `E`'s `Display`.
///
/// Put `#[tool]` on a module-level function: the companion module refers to
/// the function and its parameter types through `super::`, which does not
/// reach items declared inside a function body.
///
/// Options: `name = "..."`, `description = "..."`, `read_only`, `destructive`,
/// `idempotent`, `concurrency_safe`, `inline` (a cheap sync function that never
/// blocks runs inline, with no deadline; others run on the bounded tool pool
/// under one), `sandbox` (each call runs in a confined child process: see
/// `agentry::sandbox`), `timeout_ms = N`, the capabilities the tool
/// needs — `net = "[scheme://]host[:port]"` (https on 443 when left out), `fs_read = "dir"`, `fs_write = "dir"`, `env = "NAME"`,
/// each repeatable — `pass_input` (the one
/// parameter receives the whole input object), and `crate = "path"` when the
/// facade is not reachable as `::agentry`.
///
/// [`Tool`]: https://docs.rs/agentry/latest/agentry/tool/struct.Tool.html
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turn a function into a skill: named instructions a model can pull in on demand.
///
/// Beside the function, a companion module of the same name holds `NAME`
/// (the skill name: the function's Rust path unless `name = "..."` is given)
/// and `skill()`, a fresh [`Skill`].
///
/// Options: `description = "..."` (default: the doc comment),
/// `when = ["...", ...]`, `modalities = ["image", "pdf"]`,
/// `requires = ["other-skill"]`, `body = "..."`, `name = "..."` and
/// `crate = "path"`.
///
/// Without `body`, the function is the skill's body function: each parameter
/// is filled from the `ctx` key of the same name (a missing key is `null`,
/// so use `Option` for optional ones), and it returns `String`, `&str` or a
/// `Result` of text whose `Err` propagates.
///
/// [`Skill`]: https://docs.rs/agentry/latest/agentry/skill/struct.Skill.html
#[proc_macro_attribute]
pub fn skill(attr: TokenStream, item: TokenStream) -> TokenStream {
    skill::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
