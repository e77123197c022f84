//! Expansion of `#[tool]`: the function stays, and a companion module of the
//! same name gains `NAME`, `schema()` and `tool()`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{
    FnArg, GenericArgument, ItemFn, LitInt, LitStr, Pat, PathArguments, ReturnType, Type, parse2,
    spanned::Spanned,
};

use crate::docs::{doc_text, split_arguments};

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

struct Param {
    ident: syn::Ident,
    name: String,
    ty: Type,
    doc: Option<String>,
}

/// The last path segment of a type, e.g. `Option` for `std::option::Option<T>`.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|segment| segment.ident == name)
}

fn first_generic(ty: &Type) -> Option<&Type> {
    match &last_segment(ty)?.arguments {
        PathArguments::AngleBracketed(args) => args.args.iter().find_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        }),
        _ => None,
    }
}

fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(tuple) if tuple.elems.is_empty())
}

fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Reference(reference) if is_named(&reference.elem, "ToolContext"))
}

/// `State<T>`: shared state from the context, never part of the schema.
fn is_state(ty: &Type) -> bool {
    is_named(ty, "State") && first_generic(ty).is_some()
}

/// True for parameter types whose serde decoding from JSON accepts only
/// values their JSON Schema accepts: booleans, fixed-size integers, floats,
/// `String`, and `Option`s and `Vec`s of those. (A user type may carry
/// schema constraints serde does not check, so it is left out.)
fn decodes_exactly(ty: &Type) -> bool {
    const SCALARS: &[&str] = &[
        "bool", "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "f32",
        "f64", "String",
    ];
    let Some(segment) = last_segment(ty) else {
        return false;
    };
    let name = segment.ident.to_string();
    match (name.as_str(), &segment.arguments) {
        (scalar, PathArguments::None) => SCALARS.contains(&scalar),
        ("Option" | "Vec", PathArguments::AngleBracketed(_)) => {
            first_generic(ty).is_some_and(decodes_exactly)
        }
        _ => false,
    }
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

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options = parse_options(attr)?;
    let mut function: ItemFn = parse2(item).map_err(|error| {
        syn::Error::new(error.span(), "#[tool] goes on a `fn` or an `async fn`")
    })?;
    let sig = &function.sig;
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "#[tool] functions cannot be generic",
        ));
    }
    let krate = options
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::agentry));
    let fn_ident = sig.ident.clone();
    let is_async = sig.asyncness.is_some();

    let (fn_description, listed) = split_arguments(&doc_text(&function.attrs));
    let mut params = Vec::new();
    let mut call_args = Vec::new();
    let mut states = Vec::new();
    let mut states_fast = Vec::new();
    for (index, input) in function.sig.inputs.iter_mut().enumerate() {
        let FnArg::Typed(typed) = input else {
            return Err(syn::Error::new(
                input.span(),
                "#[tool] works on free functions, not methods; for shared state, give a free function a `State<T>` parameter",
            ));
        };
        let param_doc = doc_text(&typed.attrs);
        typed.attrs.retain(|attr| !attr.path().is_ident("doc"));
        if is_context(&typed.ty) {
            call_args.push(quote!(__agentry_ctx));
            continue;
        }
        if is_state(&typed.ty) {
            let ident = format_ident!("__agentry_state_{}", index);
            let ty = &typed.ty;
            states
                .push(quote!(let #ident: #ty = #krate::tool::State::from_context(__agentry_ctx)?;));
            states_fast.push(quote!(
                let #ident: #ty = match #krate::tool::State::from_context(__agentry_ctx) {
                    ::core::result::Result::Ok(state) => state,
                    ::core::result::Result::Err(error) => {
                        return ::core::option::Option::Some(::core::result::Result::Err(error));
                    }
                };
            ));
            call_args.push(quote!(#ident));
            continue;
        }
        let Pat::Ident(pat) = &*typed.pat else {
            return Err(syn::Error::new(
                typed.pat.span(),
                "#[tool] parameters must be plain names: they become the argument names the model sees",
            ));
        };
        let name = pat.ident.to_string().trim_start_matches("r#").to_owned();
        let ident = format_ident!("__agentry_arg_{}", index);
        call_args.push(quote!(#ident));
        let doc = if param_doc.is_empty() {
            listed.get(&name).cloned()
        } else {
            Some(param_doc)
        };
        params.push(Param {
            ident,
            name,
            ty: (*typed.ty).clone(),
            doc,
        });
    }
    if options.pass_input && params.len() != 1 {
        return Err(syn::Error::new(
            function.sig.inputs.span(),
            "#[tool(pass_input)] needs exactly one parameter (besides &ToolContext and State<T>): it receives the whole input",
        ));
    }

    // Input schema and argument unpacking.
    let (schema_setup, input_schema, unpack) = if options.pass_input {
        let Param { ident, ty, .. } = &params[0];
        (
            quote!(),
            quote!(#krate::tool::schema_for_type::<#ty>()),
            quote!(let #ident: #ty = #krate::tool::from_input(__agentry_input)?;),
        )
    } else {
        let properties = params.iter().map(|Param { name, ty, doc, .. }| {
            let required = !is_named(ty, "Option");
            let doc = match doc {
                Some(text) => quote!(::core::option::Option::Some(#text)),
                None => quote!(::core::option::Option::None),
            };
            quote!(__agentry_params.property::<#ty>(#name, #doc, #required);)
        });
        let takes = params.iter().map(
            |Param {
                 ident, name, ty, ..
             }| { quote!(let #ident: #ty = __agentry_args.take(#name)?;) },
        );
        let unpack = if params.is_empty() {
            quote!(#krate::tool::Arguments::new(__agentry_input)?;)
        } else {
            // One pass over the arguments into a struct; only when that fails
            // are they taken one by one, to say which one is wrong.
            let args_struct = args_struct(&krate, &params, false);
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
        };
        (
            quote!(let mut __agentry_params = #krate::tool::ObjectSchemaBuilder::new(); #(#properties)*),
            quote!(__agentry_params.finish()),
            unpack,
        )
    };

    // Output schema and conversion.
    let (output_schema, convert) = match &function.sig.output {
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
                quote!(#krate::__private::result_to_output(__agentry_out)),
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

    let description = options
        .description
        .as_ref()
        .map(LitStr::value)
        .unwrap_or(fn_description);
    let description = if description.is_empty() {
        quote!(::core::option::Option::None)
    } else {
        quote!(::core::option::Option::Some(::std::string::String::from(#description)))
    };
    let name = match &options.name {
        Some(name) => quote!(#name),
        None => quote!(::core::module_path!()),
    };

    let unpack = quote!(#(#states)* #unpack);
    let call = if is_async {
        quote!(super::#fn_ident(#(#call_args),*).await)
    } else {
        quote!(super::#fn_ident(#(#call_args),*))
    };
    let fast_path = (!is_async
        && !options.pass_input
        && !params.is_empty()
        && params.iter().all(|param| decodes_exactly(&param.ty)))
    .then(|| {
        let strict = args_struct(&krate, &params, true);
        let fields = params.iter().map(|Param { ident, .. }| ident);
        let fast_states = states_fast.iter();
        quote!(.with_json_fast_path(schema().input_schema.clone(), |__agentry_raw: &str, __agentry_ctx: &#krate::tool::ToolContext| {
            #strict
            let __AgentryArgs { #(#fields),* } =
                #krate::__private::serde_json::from_str::<__AgentryArgs>(__agentry_raw).ok()?;
            #(#fast_states)*
            let __agentry_out = #call;
            ::core::option::Option::Some(#convert)
        }))
    });
    let handler = if is_async {
        quote!(#krate::tool::ToolHandler::from_async(
            |__agentry_input: #krate::__private::serde_json::Value, __agentry_ctx_owned: #krate::tool::ToolContext| async move {
                #[allow(unused_variables)]
                let __agentry_ctx = &__agentry_ctx_owned;
                #unpack
                let __agentry_out = #call;
                #convert
            }
        ))
    } else {
        quote!(#krate::tool::ToolHandler::sync(
            |__agentry_input: #krate::__private::serde_json::Value, __agentry_ctx: &#krate::tool::ToolContext| {
                #[allow(unused_variables)]
                let __agentry_ctx = __agentry_ctx;
                #unpack
                let __agentry_out = #call;
                #convert
            }
        ) #fast_path)
    };

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
    let vis = &function.vis;
    let companion_doc =
        format!("Tool companion of `{fn_ident}`: its `NAME`, `schema()` and `tool()`.");

    Ok(quote! {
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
                    #schema_setup
                    #krate::tool::registry::register_own(#krate::tool::ToolSchema {
                        name: ::std::string::String::from(NAME),
                        input_schema: #input_schema,
                        output_schema: #output_schema,
                        description: #description,
                    })
                })
            }

            /// The function as a `Tool`, ready for `Toolbox::for_agent`.
            pub fn tool() -> #krate::tool::Tool {
                let mut tool = #krate::tool::Tool::from_schema(schema(), #handler);
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
                tool
            }
        }
    })
}
