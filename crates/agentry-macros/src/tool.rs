//! Expansion of `#[tool]`: the function stays, and a companion module of the
//! same name gains `NAME`, `schema()` and `tool()`.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{
    FnArg, ItemFn, LitInt, LitStr, Pat, PatType, ReturnType, Signature, Type, parse2,
    spanned::Spanned,
};

use crate::docs::{doc_text, split_arguments};
use types::{decodes_exactly, first_generic, is_context, is_named, is_state, is_unit};

mod types;

/// The options of `#[tool(...)]`.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    krate: Option<syn::Path>,
    pass_input: bool,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    concurrency_safe: bool,
    inline: bool,
    sandbox: bool,
    timeout_ms: Option<LitInt>,
    capabilities: Vec<(&'static str, LitStr)>,
}

fn parse_options(attr: TokenStream) -> syn::Result<Options> {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        let flag = |field: &mut bool| {
            *field = true;
            Ok(())
        };
        if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("description") {
            options.description = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("crate") {
            let path: LitStr = meta.value()?.parse()?;
            options.krate = Some(path.parse().map_err(|_| {
                syn::Error::new(
                    path.span(),
                    "`crate` must name the agentry crate as a path, e.g. crate = \"my_agentry\"",
                )
            })?);
            Ok(())
        } else if meta.path.is_ident("timeout_ms") {
            options.timeout_ms = Some(meta.value()?.parse()?);
            Ok(())
        } else if let Some(kind) = ["net", "fs_read", "fs_write", "env"]
            .into_iter()
            .find(|kind| meta.path.is_ident(kind))
        {
            options.capabilities.push((kind, meta.value()?.parse()?));
            Ok(())
        } else if meta.path.is_ident("pass_input") {
            flag(&mut options.pass_input)
        } else if meta.path.is_ident("read_only") {
            flag(&mut options.read_only)
        } else if meta.path.is_ident("destructive") {
            flag(&mut options.destructive)
        } else if meta.path.is_ident("idempotent") {
            flag(&mut options.idempotent)
        } else if meta.path.is_ident("concurrency_safe") {
            flag(&mut options.concurrency_safe)
        } else if meta.path.is_ident("inline") {
            flag(&mut options.inline)
        } else if meta.path.is_ident("sandbox") {
            flag(&mut options.sandbox)
        } else {
            Err(meta.error(
                "unknown #[tool] option; expected one of: name, description, read_only, destructive, \
                 idempotent, concurrency_safe, inline, sandbox, timeout_ms, pass_input, net, fs_read, fs_write, env, crate",
            ))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(options)
}

/// A parameter the model fills: its binding in the handler, its argument
/// name, its type and its description.
struct Param {
    ident: syn::Ident,
    name: String,
    ty: Type,
    doc: Option<String>,
}

/// A struct with one field per parameter, renamed to the argument's name,
/// that serde fills in one pass; `strict` refuses unknown arguments.
fn args_struct(krate: &syn::Path, params: &[Param], strict: bool) -> TokenStream {
    let serde_crate = format!("{}::__private::serde", quote!(#krate)).replace(' ', "");
    let deny = strict.then(|| quote!(#[serde(deny_unknown_fields)]));
    let fields = params.iter().map(
        |Param {
             ident, name, ty, ..
         }| quote!(#[serde(rename = #name)] #ident: #ty,),
    );
    quote!(
        #[derive(#krate::__private::serde::Deserialize)]
        #[serde(crate = #serde_crate)]
        #deny
        #[allow(non_camel_case_types, non_snake_case)]
        struct __AgentryArgs { #(#fields)* }
    )
}

/// Expand `#[tool(attr)]` on `item`: the function as written (less its
/// parameters' doc comments), then its companion module.
pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options = parse_options(attr)?;
    let mut function = parse_function(item)?;
    let krate = options
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::agentry));
    let (fn_description, listed) = split_arguments(&doc_text(&function.attrs));
    let inputs = Inputs::read(&mut function.sig, &krate, &listed)?;
    if options.pass_input && inputs.params.len() != 1 {
        return Err(syn::Error::new(
            function.sig.inputs.span(),
            "#[tool(pass_input)] needs exactly one parameter (besides &ToolContext and State<T>): it receives the whole input",
        ));
    }
    let input = InputCode::new(&krate, &inputs.params, options.pass_input);
    let (output_schema, convert) = output_code(&krate, &function.sig.output)?;
    let handler = handler(
        &krate,
        &function.sig,
        options.pass_input,
        &inputs,
        &input.unpack,
        &convert,
    );
    let schema = SchemaCode {
        name: name_expr(&options),
        setup: input.setup,
        input: input.schema,
        output: output_schema,
        description: description_expr(&options, fn_description),
    };
    Ok(companion(&krate, &function, &schema, &handler, &options))
}

/// The item under `#[tool]`: a function, not a generic one.
fn parse_function(item: TokenStream) -> syn::Result<ItemFn> {
    let function: ItemFn = parse2(item).map_err(|error| {
        syn::Error::new(error.span(), "#[tool] goes on a `fn` or an `async fn`")
    })?;
    let sig = &function.sig;
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "#[tool] functions cannot be generic",
        ));
    }
    Ok(function)
}

/// The function's parameters, sorted by what fills them.
#[derive(Default)]
struct Inputs {
    /// The model's arguments, in order.
    params: Vec<Param>,
    /// What the handler passes the function, one per parameter.
    call_args: Vec<TokenStream>,
    /// `State<T>` parameters taken from the context (`?` on failure).
    states: Vec<TokenStream>,
    /// The same for the JSON fast path, which answers `Some(Err(..))`.
    states_fast: Vec<TokenStream>,
}

impl Inputs {
    /// Read the parameters of `sig`, moving their doc comments into the
    /// argument descriptions (`listed`: those of the `# Arguments` list).
    fn read(
        sig: &mut Signature,
        krate: &syn::Path,
        listed: &HashMap<String, String>,
    ) -> syn::Result<Self> {
        let mut inputs = Self::default();
        for (index, input) in sig.inputs.iter_mut().enumerate() {
            let FnArg::Typed(typed) = input else {
                return Err(syn::Error::new(
                    input.span(),
                    "#[tool] works on free functions, not methods; for shared state, give a free function a `State<T>` parameter",
                ));
            };
            let param_doc = doc_text(&typed.attrs);
            typed.attrs.retain(|attr| !attr.path().is_ident("doc"));
            if is_context(&typed.ty) {
                inputs.call_args.push(quote!(__agentry_ctx));
            } else if is_state(&typed.ty) {
                inputs.add_state(krate, index, &typed.ty);
            } else {
                inputs.add_argument(typed, index, param_doc, listed)?;
            }
        }
        Ok(inputs)
    }

    /// A `State<T>` parameter: shared state from the context.
    fn add_state(&mut self, krate: &syn::Path, index: usize, ty: &Type) {
        let ident = format_ident!("__agentry_state_{}", index);
        self.states
            .push(quote!(let #ident: #ty = #krate::tool::State::from_context(__agentry_ctx)?;));
        self.states_fast.push(quote!(
            let #ident: #ty = match #krate::tool::State::from_context(__agentry_ctx) {
                ::core::result::Result::Ok(state) => state,
                ::core::result::Result::Err(error) => {
                    return ::core::option::Option::Some(::core::result::Result::Err(error));
                }
            };
        ));
        self.call_args.push(quote!(#ident));
    }

    /// A parameter the model fills: a plain name, described by its own doc
    /// comment or else by its entry in the `# Arguments` list.
    fn add_argument(
        &mut self,
        typed: &PatType,
        index: usize,
        param_doc: String,
        listed: &HashMap<String, String>,
    ) -> syn::Result<()> {
        let Pat::Ident(pat) = &*typed.pat else {
            return Err(syn::Error::new(
                typed.pat.span(),
                "#[tool] parameters must be plain names: they become the argument names the model sees",
            ));
        };
        let name = pat.ident.to_string().trim_start_matches("r#").to_owned();
        let ident = format_ident!("__agentry_arg_{}", index);
        self.call_args.push(quote!(#ident));
        let doc = if param_doc.is_empty() {
            listed.get(&name).cloned()
        } else {
            Some(param_doc)
        };
        self.params.push(Param {
            ident,
            name,
            ty: (*typed.ty).clone(),
            doc,
        });
        Ok(())
    }
}

/// How the tool reads its input: the statements that set up the input
/// schema, the schema's expression, and the statements that bind each
/// argument in the handler.
struct InputCode {
    setup: TokenStream,
    schema: TokenStream,
    unpack: TokenStream,
}

impl InputCode {
    fn new(krate: &syn::Path, params: &[Param], pass_input: bool) -> Self {
        if pass_input {
            Self::whole_input(krate, &params[0])
        } else {
            Self::arguments(krate, params)
        }
    }

    /// `pass_input`: the one parameter receives the whole input, and its
    /// type's schema is the input schema.
    fn whole_input(krate: &syn::Path, param: &Param) -> Self {
        let Param { ident, ty, .. } = param;
        Self {
            setup: quote!(),
            schema: quote!(#krate::tool::schema_for_type::<#ty>()),
            unpack: quote!(let #ident: #ty = #krate::tool::from_input(__agentry_input)?;),
        }
    }

    /// One property per parameter, and one argument taken for each.
    fn arguments(krate: &syn::Path, params: &[Param]) -> Self {
        let properties = params.iter().map(property);
        Self {
            setup: quote!(let mut __agentry_params = #krate::tool::ObjectSchemaBuilder::new(); #(#properties)*),
            schema: quote!(__agentry_params.finish()),
            unpack: unpack_arguments(krate, params),
        }
    }
}

/// The statement adding `param` to the input schema: required unless an `Option`.
fn property(param: &Param) -> TokenStream {
    let Param { name, ty, doc, .. } = param;
    let required = !is_named(ty, "Option");
    let doc = match doc {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    };
    quote!(__agentry_params.property::<#ty>(#name, #doc, #required);)
}

/// The statements binding each argument from `__agentry_input`, an object.
fn unpack_arguments(krate: &syn::Path, params: &[Param]) -> TokenStream {
    if params.is_empty() {
        return quote!(#krate::tool::Arguments::new(__agentry_input)?;);
    }
    let takes = params.iter().map(
        |Param {
             ident, name, ty, ..
         }| { quote!(let #ident: #ty = __agentry_args.take(#name)?;) },
    );
    // One pass over the arguments into a struct; only when that fails
    // are they taken one by one, to say which one is wrong.
    let args_struct = args_struct(krate, params, false);
    let fields = params.iter().map(|Param { ident, .. }| ident);
    quote!(
        #args_struct
        let __AgentryArgs { #(#fields),* } =
            match <__AgentryArgs as #krate::__private::serde::Deserialize>::deserialize(&__agentry_input) {
                ::core::result::Result::Ok(parsed) => parsed,
                ::core::result::Result::Err(__agentry_error) => {
                    #[allow(unused_mut, unused_variables)]
                    let mut __agentry_args = #krate::tool::Arguments::new(__agentry_input)?;
                    #(#takes)*
                    return ::core::result::Result::Err(#krate::tool::ToolError::InvalidArgument {
                        pointer: ::std::string::String::new(),
                        message: __agentry_error.to_string(),
                    });
                }
            };
    )
}

/// From the return type: the output schema (an `Option` expression), and
/// the expression that turns `__agentry_out` into the tool's output.
fn output_code(krate: &syn::Path, output: &ReturnType) -> syn::Result<(TokenStream, TokenStream)> {
    let (output_schema, convert) = match output {
        ReturnType::Default => (
            None,
            quote!(::core::result::Result::Ok(#krate::__private::serde_json::Value::Null)),
        ),
        ReturnType::Type(_, ty) if is_named(ty, "Result") => {
            let ok = first_generic(ty)
                .ok_or_else(|| {
                    syn::Error::new(
                        ty.span(),
                        "#[tool] cannot see the Ok type of this `Result` (a type alias?); write `Result<T, E>`",
                    )
                })?;
            let schema = (!is_unit(ok)).then(|| quote!(#krate::tool::schema_for_type::<#ok>()));
            (
                schema,
                quote!(#krate::__private::result_to_output(__agentry_out.map_err(
                    |__agentry_error| {
                        // The first of these that applies to the error's type
                        // (autoref specialisation): a ToolError as it is, an
                        // Error kept as the source, else its words.
                        #[allow(unused_imports)]
                        use #krate::__private::{
                            AsToolError as _, DisplayToToolError as _, ErrorToToolError as _,
                        };
                        // Method lookup picks the impl by the borrows' depth.
                        #[allow(clippy::needless_borrow)]
                        let __agentry_error =
                            (&&&#krate::__private::HandlerErr::new(__agentry_error)).into_tool_error();
                        __agentry_error
                    }
                ))),
            )
        }
        ReturnType::Type(_, ty) => {
            let schema = (!is_unit(ty)).then(|| quote!(#krate::tool::schema_for_type::<#ty>()));
            (schema, quote!(#krate::__private::to_output(__agentry_out)))
        }
    };
    let output_schema = match output_schema {
        Some(schema) => quote!(::core::option::Option::Some(#schema)),
        None => quote!(::core::option::Option::None),
    };
    Ok((output_schema, convert))
}

/// The tool's description: the `description` option, else the doc
/// comment's; none when empty.
fn description_expr(options: &Options, fn_description: String) -> TokenStream {
    let description = options
        .description
        .as_ref()
        .map(LitStr::value)
        .unwrap_or(fn_description);
    if description.is_empty() {
        quote!(::core::option::Option::None)
    } else {
        quote!(::core::option::Option::Some(::std::string::String::from(#description)))
    }
}

/// The tool's name: the `name` option, else the function's module path.
fn name_expr(options: &Options) -> TokenStream {
    match &options.name {
        Some(name) => quote!(#name),
        None => quote!(::core::module_path!()),
    }
}

/// The tool's handler: unpack the input (and any shared state), call the
/// function, convert what it returns. A sync function whose arguments all
/// decode exactly also gets a JSON fast path.
fn handler(
    krate: &syn::Path,
    sig: &Signature,
    pass_input: bool,
    inputs: &Inputs,
    unpack: &TokenStream,
    convert: &TokenStream,
) -> TokenStream {
    let fn_ident = &sig.ident;
    let Inputs {
        params,
        call_args,
        states,
        ..
    } = inputs;
    let unpack = quote!(#(#states)* #unpack);
    if sig.asyncness.is_some() {
        let call = quote!(super::#fn_ident(#(#call_args),*).await);
        return quote!(#krate::tool::ToolHandler::from_async(
            |__agentry_input: #krate::__private::serde_json::Value, __agentry_ctx_owned: #krate::tool::ToolContext| async move {
                #[allow(unused_variables)]
                let __agentry_ctx = &__agentry_ctx_owned;
                #unpack
                let __agentry_out = #call;
                #convert
            }
        ));
    }
    let call = quote!(super::#fn_ident(#(#call_args),*));
    let fast_path = (!pass_input
        && !params.is_empty()
        && params.iter().all(|param| decodes_exactly(&param.ty)))
    .then(|| fast_path(krate, inputs, &call, convert));
    quote!(#krate::tool::ToolHandler::sync(
        |__agentry_input: #krate::__private::serde_json::Value, __agentry_ctx: &#krate::tool::ToolContext| {
            #[allow(unused_variables)]
            let __agentry_ctx = __agentry_ctx;
            #unpack
            let __agentry_out = #call;
            #convert
        }
    ) #fast_path)
}

/// `.with_json_fast_path(..)`: the arguments read from the raw JSON text
/// into a struct that refuses unknown ones, with no `Value` between;
/// `None` sends a call the struct does not take down the ordinary path.
fn fast_path(
    krate: &syn::Path,
    inputs: &Inputs,
    call: &TokenStream,
    convert: &TokenStream,
) -> TokenStream {
    let strict = args_struct(krate, &inputs.params, true);
    let fields = inputs.params.iter().map(|Param { ident, .. }| ident);
    let fast_states = inputs.states_fast.iter();
    quote!(.with_json_fast_path(schema().input_schema.clone(), |__agentry_raw: &str, __agentry_ctx: &#krate::tool::ToolContext| {
        #strict
        let __AgentryArgs { #(#fields),* } =
            #krate::__private::serde_json::from_str::<__AgentryArgs>(__agentry_raw).ok()?;
        #(#fast_states)*
        let __agentry_out = #call;
        ::core::option::Option::Some(#convert)
    }))
}

/// The expressions of the tool's schema, for the companion module.
struct SchemaCode {
    name: TokenStream,
    setup: TokenStream,
    input: TokenStream,
    output: TokenStream,
    description: TokenStream,
}

/// The function as written, then its companion module: `NAME`, `schema()`
/// and `tool()`.
fn companion(
    krate: &syn::Path,
    function: &ItemFn,
    schema: &SchemaCode,
    handler: &TokenStream,
    options: &Options,
) -> TokenStream {
    let SchemaCode {
        name,
        setup,
        input,
        output,
        description,
    } = schema;
    let settings = tool_settings(krate, options);
    let fn_ident = &function.sig.ident;
    let vis = &function.vis;
    let companion_doc =
        format!("Tool companion of `{fn_ident}`: its `NAME`, `schema()` and `tool()`.");
    quote! {
        #function

        #[doc = #companion_doc]
        #[allow(non_snake_case, clippy::module_name_repetitions)]
        #vis mod #fn_ident {
            #[allow(unused_imports)]
            use super::*;

            /// The tool's name.
            pub const NAME: &str = #name;

            /// The tool's `{name, input_schema, output_schema?, description?}`,
            /// computed on first use, kept for this function alone, and listed
            /// in the process-global registry.
            pub fn schema() -> &'static #krate::tool::ToolSchema {
                static SCHEMA: #krate::__private::OnceLock<&'static #krate::tool::ToolSchema> =
                    #krate::__private::OnceLock::new();
                SCHEMA.get_or_init(|| {
                    #setup
                    #krate::tool::registry::register_own(#krate::tool::ToolSchema {
                        name: ::std::string::String::from(NAME),
                        input_schema: #input,
                        output_schema: #output,
                        description: #description,
                    })
                })
            }

            /// The function as a `Tool`, ready for `Toolbox::for_agent`.
            pub fn tool() -> #krate::tool::Tool {
                let mut tool = #krate::tool::Tool::from_schema(schema(), #handler);
                #settings
                tool
            }
        }
    }
}

/// The statements that set `tool`'s `pass_input`, hints and capabilities
/// from the options.
fn tool_settings(krate: &syn::Path, options: &Options) -> TokenStream {
    let Options {
        pass_input,
        read_only,
        destructive,
        idempotent,
        concurrency_safe,
        inline,
        sandbox,
        ..
    } = options;
    let timeout = match &options.timeout_ms {
        Some(ms) => quote!(::core::option::Option::Some(::std::time::Duration::from_millis(#ms))),
        None => quote!(::core::option::Option::None),
    };
    let capabilities = options.capabilities.iter().map(|(kind, value)| {
        let constructor = format_ident!("{}", kind);
        quote!(#krate::tool::Capability::#constructor(#value))
    });
    quote!(
        tool.pass_input = #pass_input;
        tool.hints = #krate::tool::ToolHints {
            read_only: #read_only,
            destructive: #destructive,
            idempotent: #idempotent,
            concurrency_safe: #concurrency_safe,
            open_world: false,
            inline: #inline,
            sandbox: #sandbox,
            timeout: #timeout,
        };
        tool.capabilities = ::std::vec![#(#capabilities),*];
    )
}
