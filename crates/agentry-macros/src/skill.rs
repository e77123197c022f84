//! Expansion of `#[skill]`: the function stays, and a companion module of the
//! same name gains `NAME` and `skill()`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Expr, ExprArray, FnArg, ItemFn, Lit, LitStr, Pat, parse2, spanned::Spanned};

use crate::docs::doc_text;

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    when: Vec<LitStr>,
    modalities: Option<Vec<LitStr>>,
    requires: Vec<LitStr>,
    body: Option<LitStr>,
    krate: Option<syn::Path>,
}

fn strings(array: ExprArray) -> syn::Result<Vec<LitStr>> {
    array
        .elems
        .into_iter()
        .map(|elem| match elem {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(text),
                ..
            }) => Ok(text),
            other => Err(syn::Error::new(
                other.span(),
                "expected a string literal, e.g. when = [\"refund\", \"angry customer\"]",
            )),
        })
        .collect()
}

fn parse_options(attr: TokenStream) -> syn::Result<Options> {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("description") {
            options.description = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("body") {
            options.body = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("when") {
            options.when = strings(meta.value()?.parse()?)?;
        } else if meta.path.is_ident("modalities") {
            options.modalities = Some(strings(meta.value()?.parse()?)?);
        } else if meta.path.is_ident("requires") {
            options.requires = strings(meta.value()?.parse()?)?;
        } else if meta.path.is_ident("crate") {
            let path: LitStr = meta.value()?.parse()?;
            options.krate = Some(path.parse().map_err(|_| {
                syn::Error::new(
                    path.span(),
                    "`crate` must name the agentry crate as a path, e.g. crate = \"my_agentry\"",
                )
            })?);
        } else {
            return Err(meta.error(
                "unknown #[skill] option; expected one of: name, description, when, modalities, \
                 body, requires, crate",
            ));
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(options)
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let options = parse_options(attr)?;
    let function: ItemFn =
        parse2(item).map_err(|error| syn::Error::new(error.span(), "#[skill] goes on a `fn`"))?;
    let sig = &function.sig;
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "#[skill] functions cannot be generic",
        ));
    }
    let krate = options
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::agentry));
    let fn_ident = sig.ident.clone();

    let body = match &options.body {
        Some(body) => {
            quote!(skill.body = ::core::option::Option::Some(::std::string::String::from(#body));)
        }
        None => {
            if sig.asyncness.is_some() {
                return Err(syn::Error::new(
                    sig.asyncness.span(),
                    "a #[skill] body function must be synchronous (or give `body = \"...\"`)",
                ));
            }
            let mut takes = Vec::new();
            let mut args = Vec::new();
            for (index, input) in sig.inputs.iter().enumerate() {
                let FnArg::Typed(typed) = input else {
                    return Err(syn::Error::new(
                        input.span(),
                        "#[skill] works on free functions, not methods",
                    ));
                };
                let Pat::Ident(pat) = &*typed.pat else {
                    return Err(syn::Error::new(
                        typed.pat.span(),
                        "#[skill] parameters must be plain names (they are filled from ctx by name)",
                    ));
                };
                let key = pat.ident.to_string().trim_start_matches("r#").to_owned();
                let ident = format_ident!("__agentry_arg_{}", index);
                let ty = &typed.ty;
                takes.push(quote!(let #ident: #ty = #krate::skill::ctx_arg(__agentry_ctx, #key)?;));
                args.push(ident);
            }
            quote!(
                skill.body_fn = ::core::option::Option::Some(#krate::skill::BodyFn::new(
                    |__agentry_ctx: &#krate::skill::SkillContext| {
                        #(#takes)*
                        #krate::skill::IntoBody::into_body(super::#fn_ident(#(#args),*))
                    }
                ));
            )
        }
    };

    let description = options
        .description
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| doc_text(&function.attrs));
    let name = match &options.name {
        Some(name) => quote!(#name),
        None => quote!(::core::module_path!()),
    };
    let when = &options.when;
    let requires = &options.requires;
    let modalities = match &options.modalities {
        Some(kinds) => {
            quote!(::core::option::Option::Some(
                ::std::vec![#(::std::string::String::from(#kinds)),*]
            ))
        }
        None => quote!(::core::option::Option::None),
    };
    let vis = &function.vis;
    let companion_doc = format!("Skill companion of `{fn_ident}`: its `NAME` and `skill()`.");

    Ok(quote! {
        #function

        #[doc = #companion_doc]
        #[allow(non_snake_case, clippy::module_name_repetitions)]
        #vis mod #fn_ident {
            #[allow(unused_imports)]
            use super::*;

            /// The skill's name.
            pub const NAME: &str = #name;

            /// The function as a `Skill`, ready for `Agent::skills` or `for_agent`.
            pub fn skill() -> #krate::skill::Skill {
                let mut skill = #krate::skill::Skill::new(NAME, #description);
                skill.when = ::std::vec![#(::std::string::String::from(#when)),*];
                skill.modalities = #modalities;
                skill.requires = ::std::vec![#(::std::string::String::from(#requires)),*];
                skill.function = ::core::option::Option::Some(::core::module_path!());
                #body
                skill
            }
        }
    })
}
