//! Wire names: provider-safe aliases for tool names.
//!
//! OpenAI and Anthropic accept tool names matching `^[a-zA-Z0-9_-]{1,64}$`.
//! Names such as `myapp::add` or `kb.find_policy` are mapped to safe,
//! collision-free aliases when a toolbox is built, and mapped back when a
//! model calls them. A name that is already safe is kept as it is.

use std::collections::HashMap;

/// Longest name providers accept.
pub(crate) const MAX_WIRE_NAME_LEN: usize = 64;
const HASH_SUFFIX_LEN: usize = 9; // '_' + 8 hex digits

/// True when `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn is_wire_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_WIRE_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The deterministic sanitised form of `name`, before collision handling:
/// `::`, `.` and `/` become `__`, any other unsafe character becomes `_`, and
/// names longer than 64 characters are cut and given a hash suffix.
pub(crate) fn sanitize(name: &str) -> String {
    if is_wire_safe(name) {
        return name.to_owned();
    }
    let mut out = String::with_capacity(name.len() + 4);
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ':' if chars.peek() == Some(&':') => {
                chars.next();
                out.push_str("__");
            }
            '.' | '/' => out.push_str("__"),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => out.push(c),
            _ => out.push('_'),
        }
    }
    if out.is_empty() {
        out.push_str("tool");
    }
    if out.len() > MAX_WIRE_NAME_LEN {
        return with_hash_suffix(&out, name);
    }
    out
}

fn with_hash_suffix(base: &str, original: &str) -> String {
    let keep = MAX_WIRE_NAME_LEN - HASH_SUFFIX_LEN;
    let cut = &base[..base.len().min(keep)];
    format!("{cut}_{:08x}", fnv1a(original))
}

/// 32-bit FNV-1a: stable across runs and platforms, unlike std's hasher.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// Two tools ended up with the same wire name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tools {first:?} and {second:?} both map to the wire name {wire:?}")]
pub struct WireNameCollision {
    /// One tool name.
    pub first: String,
    /// The other tool name.
    pub second: String,
    /// The wire name they share.
    pub wire: String,
}

/// Assign a wire name to each of `names` (which must be distinct). The result
/// does not depend on the order of `names`: a safe name keeps itself, and a
/// sanitised name that clashes with any other gets a hash of its original suffixed.
pub fn assign_wire_names(names: &[&str]) -> Result<Vec<String>, WireNameCollision> {
    let mut wires: Vec<String> = names.iter().map(|name| sanitize(name)).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for wire in &wires {
        *counts.entry(wire.as_str()).or_default() += 1;
    }
    let clashing: Vec<usize> = (0..names.len())
        .filter(|&i| counts[wires[i].as_str()] > 1 && !is_wire_safe(names[i]))
        .collect();
    for i in clashing {
        wires[i] = with_hash_suffix(&wires[i], names[i]);
    }
    let mut owner: HashMap<&str, usize> = HashMap::new();
    for (i, wire) in wires.iter().enumerate() {
        if let Some(&j) = owner.get(wire.as_str()) {
            return Err(WireNameCollision {
                first: names[j].to_owned(),
                second: names[i].to_owned(),
                wire: wire.clone(),
            });
        }
        owner.insert(wire, i);
    }
    Ok(wires)
}

/// Both directions of the mapping for one set of tool names.
#[derive(Debug, Clone, Default)]
pub struct WireNames {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
}

impl WireNames {
    /// The mapping for `names` (see [`assign_wire_names`]).
    pub fn new(names: &[&str]) -> Result<Self, WireNameCollision> {
        let wires = assign_wire_names(names)?;
        let to_wire: HashMap<String, String> = names
            .iter()
            .zip(wires)
            .map(|(name, wire)| ((*name).to_owned(), wire))
            .collect();
        let from_wire = to_wire
            .iter()
            .map(|(name, wire)| (wire.clone(), name.clone()))
            .collect();
        Ok(Self { to_wire, from_wire })
    }

    /// The wire name of a tool; names outside the set (from history, say) are sanitised.
    pub fn wire_of(&self, name: &str) -> String {
        self.to_wire
            .get(name)
            .cloned()
            .unwrap_or_else(|| sanitize(name))
    }

    /// The tool name behind a wire name; unknown names come back unchanged,
    /// so an agent can report them as not allowed.
    pub fn name_of(&self, wire: &str) -> String {
        self.from_wire
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitises_paths_and_namespaces() {
        assert_eq!(sanitize("myapp::add"), "myapp__add");
        assert_eq!(sanitize("kb.find_policy"), "kb__find_policy");
        assert_eq!(sanitize("web"), "web");
        assert_eq!(sanitize("add numbers!"), "add_numbers_");
        assert_eq!(sanitize(""), "tool");
        let long = format!("ns::{}", "x".repeat(80));
        let wire = sanitize(&long);
        assert_eq!(wire.len(), 64);
        assert!(is_wire_safe(&wire));
    }

    #[test]
    fn collisions_get_order_independent_suffixes() {
        let a = assign_wire_names(&["a::b", "a.b", "a__b"]).unwrap();
        let b = assign_wire_names(&["a__b", "a.b", "a::b"]).unwrap();
        assert_eq!(a[2], "a__b");
        assert_ne!(a[0], a[1]);
        assert_eq!(
            (a[0].as_str(), a[1].as_str()),
            (b[2].as_str(), b[1].as_str())
        );
        assert!(a.iter().all(|w| is_wire_safe(w)));
        assert!(a[0].starts_with("a__b_"));
    }

    #[test]
    fn wire_names_map_both_ways() {
        let names = WireNames::new(&["myapp::add", "web"]).unwrap();
        assert_eq!(names.wire_of("myapp::add"), "myapp__add");
        assert_eq!(names.name_of("myapp__add"), "myapp::add");
        assert_eq!(names.wire_of("other.tool"), "other__tool");
        assert_eq!(names.name_of("hallucinated"), "hallucinated");
    }

    proptest::proptest! {
        #[test]
        fn every_assignment_is_safe_and_unique(names in proptest::collection::hash_set(".{0,80}", 1..20)) {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let wires = assign_wire_names(&names).unwrap();
            let unique: std::collections::HashSet<_> = wires.iter().collect();
            proptest::prop_assert_eq!(unique.len(), wires.len());
            for wire in &wires {
                proptest::prop_assert!(is_wire_safe(wire), "{wire:?}");
            }
        }
    }
}
