//! Personal data and secrets in text: emails, phone numbers, payment card
//! numbers (Luhn-checked), IBANs (checked by `iban_validate`: country
//! length and check digits) and the shapes of API keys and private keys.
//! [`find`] says where; [`Pii`] is a guardrail that redacts or refuses.

use std::ops::Range;
use std::sync::LazyLock;

use agentry_agent::{Guardrail, GuardrailStage, Verdict};
use regex::Regex;

/// A kind of personal data or secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PiiKind {
    /// An email address.
    Email,
    /// A phone number (9 to 15 digits, written as phone numbers are).
    Phone,
    /// A payment card number that passes the Luhn check.
    Card,
    /// An IBAN with a valid country length and check digits.
    Iban,
    /// An API key or token of a known shape, or a private key block.
    ApiKey,
}

impl PiiKind {
    /// Every kind.
    pub const ALL: [PiiKind; 5] = [
        PiiKind::Email,
        PiiKind::Phone,
        PiiKind::Card,
        PiiKind::Iban,
        PiiKind::ApiKey,
    ];

    /// What a redaction writes in its place: `[EMAIL]`, `[PHONE]`, `[CARD]`,
    /// `[IBAN]`, `[API_KEY]`.
    pub fn placeholder(self) -> &'static str {
        match self {
            PiiKind::Email => "[EMAIL]",
            PiiKind::Phone => "[PHONE]",
            PiiKind::Card => "[CARD]",
            PiiKind::Iban => "[IBAN]",
            PiiKind::ApiKey => "[API_KEY]",
        }
    }

    /// Its name in lower case: `email`, `phone`, `card`, `iban`, `api_key`.
    pub fn name(self) -> &'static str {
        match self {
            PiiKind::Email => "email",
            PiiKind::Phone => "phone",
            PiiKind::Card => "card",
            PiiKind::Iban => "iban",
            PiiKind::ApiKey => "api_key",
        }
    }
}

/// One finding: what, and where in the text (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What it is.
    pub kind: PiiKind,
    /// Where it is.
    pub range: Range<usize>,
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid pattern")
}

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b[a-z0-9][a-z0-9._%+-]*@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.[a-z]{2,}\b",
    )
});
static API_KEY: LazyLock<Regex> = LazyLock::new(|| {
    regex(concat!(
        r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{22,}",
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bxox[abprs]-[A-Za-z0-9-]{10,}",
        r"|\bAIza[0-9A-Za-z_-]{35}",
        r"|\bglpat-[A-Za-z0-9_-]{20,}",
        r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
        r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    ))
});
static IBAN: LazyLock<Regex> =
    LazyLock::new(|| regex(r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b"));
// Digits in groups as cards are written: 13 to 19 of them.
static CARD: LazyLock<Regex> = LazyLock::new(|| regex(r"\b\d(?:[ -]?\d){12,18}\b"));
static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    regex(r"(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,5}\)[ .-]?)?\d{1,5}(?:[ .-]\d{1,8}){1,5}\b|\+\d{8,15}\b")
});
static NANP: LazyLock<Regex> = LazyLock::new(|| regex(r"^\d{3}[ .-]\d{3}[ .-]\d{4}$"));
static IPV4: LazyLock<Regex> = LazyLock::new(|| regex(r"^\d{1,3}(?:\.\d{1,3}){3}$"));
static DATE: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$"));

/// The Luhn check of a card number's digits.
fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn digits(text: &str) -> Vec<u8> {
    text.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

fn overlaps(found: &[Found], range: &Range<usize>) -> bool {
    found
        .iter()
        .any(|f| f.range.start < range.end && range.start < f.range.end)
}

/// Where `text` holds personal data or secrets of `kinds`, in text order
/// (a span is given one kind: keys first, then emails, IBANs, cards and
/// phone numbers).
pub fn find(text: &str, kinds: &[PiiKind]) -> Vec<Found> {
    let wants = |kind| kinds.contains(&kind);
    let mut found: Vec<Found> = Vec::new();
    let add = |found: &mut Vec<Found>, kind, range: Range<usize>| {
        if !overlaps(found, &range) {
            found.push(Found { kind, range });
        }
    };
    if wants(PiiKind::ApiKey) {
        for m in API_KEY.find_iter(text) {
            add(&mut found, PiiKind::ApiKey, m.range());
        }
    }
    if wants(PiiKind::Email) {
        for m in EMAIL.find_iter(text) {
            add(&mut found, PiiKind::Email, m.range());
        }
    }
    if wants(PiiKind::Iban) {
        for m in IBAN.find_iter(text) {
            let compact: String = m.as_str().chars().filter(|c| *c != ' ').collect();
            if compact.parse::<iban::Iban>().is_ok() {
                add(&mut found, PiiKind::Iban, m.range());
            }
        }
    }
    if wants(PiiKind::Card) {
        for m in CARD.find_iter(text) {
            let digits = digits(m.as_str());
            if (13..=19).contains(&digits.len()) && luhn(&digits) {
                add(&mut found, PiiKind::Card, m.range());
            }
        }
    }
    if wants(PiiKind::Phone) {
        for m in PHONE.find_iter(text) {
            let shown = m.as_str();
            let count = digits(shown).len();
            // Without a country code or an area code in brackets, a phone
            // number starts with a trunk 0 or is the North American 3-3-4.
            let prefixed = shown.starts_with('+') || shown.starts_with('(');
            let national = shown.starts_with('0') || NANP.is_match(shown);
            let looks = (9..=15).contains(&count)
                && (prefixed || national)
                && !IPV4.is_match(shown)
                && !DATE.is_match(shown)
                // A plain decimal or a number with thousands separators is not a phone.
                && !shown.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',');
            if looks {
                add(&mut found, PiiKind::Phone, m.range());
            }
        }
    }
    found.sort_by_key(|f| f.range.start);
    found
}

/// `text` with each finding replaced by its kind's placeholder.
pub fn redact(text: &str, found: &[Found]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.range.start]);
        out.push_str(f.kind.placeholder());
        at = f.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// What [`Pii`] does with what it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Redact,
    Refuse,
}

/// A guardrail for personal data and secrets: redact (each finding becomes
/// `[EMAIL]`, `[CARD]`, …) or refuse (the run trips, naming the kinds
/// found, never the values).
///
/// ```
/// use agentry_guardrails::{Pii, PiiKind};
/// use agentry_agent::{GuardrailStage, Verdict};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let redact = Pii::redact().guardrail();
/// let said = "Mail ana@example.com, card 4111 1111 1111 1111.";
/// assert_eq!(
///     redact.check(said.into(), GuardrailStage::Output).await,
///     Verdict::Rewrite("Mail [EMAIL], card [CARD].".into())
/// );
/// let refuse = Pii::refuse().kinds([PiiKind::Iban]).guardrail();
/// assert_eq!(
///     refuse.check("IBAN DE89 3704 0044 0532 0130 00".into(), GuardrailStage::Input).await,
///     Verdict::Trip("the text holds personal data: iban".into())
/// );
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Pii {
    action: Action,
    kinds: Vec<PiiKind>,
}

impl Pii {
    /// Redact every kind.
    pub fn redact() -> Self {
        Self {
            action: Action::Redact,
            kinds: PiiKind::ALL.to_vec(),
        }
    }

    /// Refuse a text that holds any kind.
    pub fn refuse() -> Self {
        Self {
            action: Action::Refuse,
            kinds: PiiKind::ALL.to_vec(),
        }
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = PiiKind>) -> Self {
        self.kinds = kinds.into_iter().collect();
        self
    }

    /// What it makes of `text`.
    pub fn verdict(&self, text: &str) -> Verdict {
        let found = find(text, &self.kinds);
        if found.is_empty() {
            return Verdict::Pass;
        }
        match self.action {
            Action::Redact => Verdict::Rewrite(redact(text, &found)),
            Action::Refuse => {
                let mut kinds: Vec<&str> = found.iter().map(|f| f.kind.name()).collect();
                kinds.sort_unstable();
                kinds.dedup();
                Verdict::Trip(format!(
                    "the text holds personal data: {}",
                    kinds.join(", ")
                ))
            }
        }
    }

    /// As a guardrail named `pii`, for any stage.
    pub fn guardrail(self) -> Guardrail {
        Guardrail::new("pii", move |text: String, _: GuardrailStage| {
            std::future::ready(self.verdict(&text))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<PiiKind> {
        find(text, &PiiKind::ALL)
            .into_iter()
            .map(|f| f.kind)
            .collect()
    }

    #[test]
    fn each_kind_is_found_and_lookalikes_are_not() {
        assert_eq!(
            kinds("write to ana.lopez+news@mail.example.org"),
            [PiiKind::Email]
        );
        assert_eq!(kinds("call +44 20 7946 0958 today"), [PiiKind::Phone]);
        assert_eq!(kinds("call (415) 555-0132"), [PiiKind::Phone]);
        assert_eq!(kinds("card 4111-1111-1111-1111"), [PiiKind::Card]);
        assert_eq!(kinds("IBAN GB82 WEST 1234 5698 7654 32"), [PiiKind::Iban]);
        assert_eq!(
            kinds("key sk-proj-abcdefghijklmnopqrstuvwx1234"),
            [PiiKind::ApiKey]
        );
        assert_eq!(kinds("AKIAIOSFODNN7EXAMPLE"), [PiiKind::ApiKey]);
        // Luhn fails, bad IBAN check digits, a date, an address, a version, an amount.
        assert!(kinds("order 4111 1111 1111 1112").is_empty());
        assert!(
            !kinds("GB00 WEST 1234 5698 7654 32").contains(&PiiKind::Iban),
            "bad check digits"
        );
        assert!(
            kinds("serial 1234 5698 7654").is_empty(),
            "not a phone shape"
        );
        assert_eq!(
            kinds("ring 020 7946 0958 or 415-555-0132"),
            [PiiKind::Phone, PiiKind::Phone]
        );
        assert!(kinds("on 2024-01-15 at 10.0.0.12").is_empty());
        assert!(kinds("version 1.2.3, total 1,234,567.89").is_empty());
    }

    #[test]
    fn redaction_keeps_the_rest() {
        let text = "a@b.io and 4111111111111111";
        assert_eq!(
            redact(text, &find(text, &PiiKind::ALL)),
            "[EMAIL] and [CARD]"
        );
    }
}
