//! What `#[tool]` reads from a parameter's or return type's spelling.

use syn::{GenericArgument, PathArguments, Type};

/// The last path segment of a type, e.g. `Option` for `std::option::Option<T>`.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

/// True when the type's last path segment is `name` (`Option`, `Result`, …).
pub(super) fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|segment| segment.ident == name)
}

/// The first type argument of the last path segment: `T` of `Option<T>`.
pub(super) fn first_generic(ty: &Type) -> Option<&Type> {
    match &last_segment(ty)?.arguments {
        PathArguments::AngleBracketed(args) => args.args.iter().find_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        }),
        _ => None,
    }
}

/// `()`.
pub(super) fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(tuple) if tuple.elems.is_empty())
}

/// A reference to `ToolContext`: injected by dispatch, never part of the schema.
pub(super) fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Reference(reference) if is_named(&reference.elem, "ToolContext"))
}

/// `State<T>`: shared state from the context, never part of the schema.
pub(super) fn is_state(ty: &Type) -> bool {
    is_named(ty, "State") && first_generic(ty).is_some()
}

/// True for parameter types whose serde decoding from JSON accepts only
/// values their JSON Schema accepts: booleans, fixed-size integers, floats,
/// `String`, and `Option`s and `Vec`s of those. (A user type may carry
/// schema constraints serde does not check, so it is left out.)
pub(super) fn decodes_exactly(ty: &Type) -> bool {
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
