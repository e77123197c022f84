//! How `agentry-eval everyday` scores a request: the calls a turn should
//! make ([`calls_match`]) and the checks its answer must pass
//! ([`check_answer`]), as `benches/data/everyday/README.md` states them.

use agentry::tool::ToolCall;
use serde::Deserialize;
use serde_json::{Map, Value};

/// A call the last turn should make: the tool, and accepted values for the
/// arguments that are checked (others are free).
#[derive(Debug, Deserialize)]
pub(crate) struct ExpectedCall {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) args: Map<String, Value>,
}

/// A check of the final answer.
#[derive(Debug, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub(crate) enum Check {
    /// Some number in the answer is within `tol` of `value`.
    Number { value: f64, tol: f64 },
    /// One of `any` appears (without case).
    Text { any: Vec<String> },
    /// Each of `all` appears (without case).
    All { all: Vec<String> },
    /// Today's weekday in `zone` is named, and no other weekday.
    Weekday { zone: String },
    /// Today's date in `zone` is written (ISO, or with the month's name).
    Date { zone: String },
    /// The time now in `zone`, within ten minutes (24-hour or am/pm).
    Time { zone: String },
    /// This year in `zone`.
    Year { zone: String },
}

/// Whether every expected call was made, each by a different call (any
/// order; further calls are allowed). `[]` expects no call at all.
pub(crate) fn calls_match(expected: &[ExpectedCall], made: &[ToolCall]) -> bool {
    if expected.is_empty() {
        return made.is_empty();
    }
    agentry_evals::distinct_match(expected.len(), made.len(), |want, have| {
        call_fits(&expected[want], &made[have])
    })
}

fn call_fits(expected: &ExpectedCall, call: &ToolCall) -> bool {
    if call.name != expected.name {
        return false;
    }
    expected.args.iter().all(|(name, accepted)| {
        let accepted = accepted.as_array().map(Vec::as_slice).unwrap_or_default();
        match call.input.get(name) {
            None | Some(Value::Null) => accepted.iter().any(|a| a == ""),
            Some(given) => accepted.iter().any(|a| value_fits(a, given)),
        }
    })
}

/// Numbers by value; text without case, the accepted text a part of what
/// was given (`Paris` fits `Paris, France`).
fn value_fits(accepted: &Value, given: &Value) -> bool {
    let as_number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().replace(',', "").parse().ok(),
        _ => None,
    };
    match accepted {
        Value::Number(n) => {
            as_number(given).is_some_and(|g| (g - n.as_f64().unwrap_or(f64::NAN)).abs() < 1e-6)
        }
        Value::String(a) if !a.is_empty() => given
            .as_str()
            .is_some_and(|g| g.to_lowercase().contains(&a.to_lowercase())),
        _ => false,
    }
}

/// The checks `answer` fails, each described.
pub(crate) fn check_answer(checks: &[Check], answer: &str) -> Vec<String> {
    let now = jiff::Timestamp::now();
    checks
        .iter()
        .filter(|check| !passes(check, answer, now))
        .map(|check| format!("{check:?}"))
        .collect()
}

fn passes(check: &Check, answer: &str, now: jiff::Timestamp) -> bool {
    let lower = answer.to_lowercase();
    let zoned = |zone: &str| now.in_tz(zone).ok();
    match check {
        Check::Number { value, tol } => numbers(answer)
            .iter()
            .any(|n| (n - value).abs() <= tol + 1e-9),
        Check::Text { any } => any.iter().any(|t| lower.contains(&t.to_lowercase())),
        Check::All { all } => all.iter().all(|t| lower.contains(&t.to_lowercase())),
        Check::Weekday { zone } => zoned(zone).is_some_and(|z| {
            let today = z.strftime("%A").to_string().to_lowercase();
            WEEKDAYS
                .iter()
                .all(|day| has_word(&lower, day) == (*day == today))
        }),
        Check::Date { zone } => {
            zoned(zone).is_some_and(|z| date_forms(&z).iter().any(|f| has_word(&lower, f)))
        }
        Check::Time { zone } => zoned(zone).is_some_and(|z| {
            let minutes = i32::from(z.hour()) * 60 + i32::from(z.minute());
            times(&lower).iter().any(|t| {
                let gap = (t - minutes).rem_euclid(24 * 60);
                gap.min(24 * 60 - gap) <= 10
            })
        }),
        Check::Year { zone } => {
            zoned(zone).is_some_and(|z| has_word(&lower, &z.year().to_string()))
        }
    }
}

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// `needle` in `hay` with no letter or digit right before or after it.
fn has_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The ways an answer writes a date: `2026-11-27`, `November 27`,
/// `27 November`, `Nov 27th`, `27th of November` …
fn date_forms(z: &jiff::Zoned) -> Vec<String> {
    let day = z.day();
    let suffix = match (day % 10, day) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    let mut forms = vec![z.strftime("%Y-%m-%d").to_string()];
    for month in [z.strftime("%B").to_string(), z.strftime("%b").to_string()] {
        let month = month.to_lowercase();
        for d in [day.to_string(), format!("{day}{suffix}")] {
            forms.push(format!("{month} {d}"));
            forms.push(format!("{d} {month}"));
            forms.push(format!("{d} of {month}"));
        }
    }
    forms
}

/// Every number written in `text`: thousands separators read, a sign kept.
pub(crate) fn numbers(text: &str) -> Vec<f64> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() || (i > 0 && chars[i - 1].is_ascii_digit()) {
            i += 1;
            continue;
        }
        let negative = i > 0
            && matches!(chars[i - 1], '-' | '−')
            && (i < 2 || !chars[i - 2].is_alphanumeric());
        let mut digits = String::new();
        let mut j = i;
        while j < chars.len() {
            let c = chars[j];
            let next_digit = chars.get(j + 1).is_some_and(char::is_ascii_digit);
            if c.is_ascii_digit() {
                digits.push(c);
            } else if c == ','
                && next_digit
                && chars[j + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count()
                    == 3
            {
                // A thousands separator: exactly three digits follow.
            } else if c == '.' && next_digit && !digits.contains('.') {
                digits.push('.');
            } else {
                break;
            }
            j += 1;
        }
        if let Ok(value) = digits.parse::<f64>() {
            found.push(if negative { -value } else { value });
        }
        i = j.max(i + 1);
    }
    found
}

/// Times of day written in `text`, in minutes after midnight (`18:05`,
/// `6:05 pm`, `6:05PM`).
fn times(text: &str) -> Vec<i32> {
    let text = text.to_lowercase();
    let text = text.as_str();
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (at, _) in text.match_indices(':') {
        let hour_digits = bytes[..at]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let minute_digits = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let seconds = at > hour_digits && bytes[at - hour_digits - 1] == b':';
        if seconds || !(1..=2).contains(&hour_digits) || minute_digits < 2 {
            continue;
        }
        let (Ok(hour), Ok(minute)) = (
            text[at - hour_digits..at].parse::<i32>(),
            text[at + 1..at + 3].parse::<i32>(),
        ) else {
            continue;
        };
        let mut rest = text[at + 1 + minute_digits..].trim_start();
        // Seconds, as in `18:05:12`.
        if let Some(after) = rest.strip_prefix(':') {
            rest = after
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start();
        }
        let rest = rest.replace('.', "");
        let hour = match hour {
            12 if rest.starts_with("am") => 0,
            h if h < 12 && rest.starts_with("pm") => h + 12,
            h => h,
        };
        found.push(hour * 60 + minute);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_read_as_people_write_them() {
        assert_eq!(
            numbers("It is 1,772.5 or -40 °F, not 18.288."),
            vec![1772.5, -40.0, 18.288]
        );
        assert_eq!(numbers("12,5 and 1,2345"), vec![12.0, 5.0, 1.0, 2345.0]);
        assert_eq!(numbers("$12.96."), vec![12.96]);
        assert_eq!(numbers("TP-1350 at 07:05"), vec![1350.0, 7.0, 5.0]);
    }

    #[test]
    fn times_in_24_hour_and_am_pm() {
        assert_eq!(
            times("it's 18:05 (6:05 PM), 12:30 am, 9:15:02 p.m."),
            vec![1085, 1085, 30, 1275]
        );
    }

    #[test]
    fn a_number_check_rejects_a_misplaced_point() {
        let check = [Check::Number {
            value: 1.8288,
            tol: 0.01,
        }];
        assert!(check_answer(&check, "6 feet is about 1.83 meters.").is_empty());
        assert_eq!(check_answer(&check, "6 feet is 18.288 meters.").len(), 1);
    }

    #[test]
    fn the_right_weekday_and_no_other() {
        let z = jiff::Timestamp::now().in_tz("UTC").unwrap();
        let today = z.strftime("%A").to_string();
        let check = [Check::Weekday { zone: "UTC".into() }];
        assert!(check_answer(&check, &format!("Today is {today}.")).is_empty());
        let other = if today == "Monday" {
            "Tuesday"
        } else {
            "Monday"
        };
        assert_eq!(
            check_answer(&check, &format!("{today} or {other}")).len(),
            1
        );
    }

    #[test]
    fn calls_match_in_any_order_each_by_its_own_call() {
        let expected: Vec<ExpectedCall> = serde_json::from_value(json!([
            {"name": "get_weather", "args": {"city": ["Paris"]}},
            {"name": "get_weather", "args": {"city": ["Berlin"], "unit": ["", "celsius"]}}
        ]))
        .unwrap();
        let call = |city: &str| ToolCall::new("c", "get_weather", json!({"city": city}));
        assert!(calls_match(
            &expected,
            &[call("Berlin"), call("Paris, France")]
        ));
        assert!(!calls_match(&expected, &[call("Paris")]));
        assert!(!calls_match(&expected, &[call("Paris"), call("Paris")]));
        assert!(calls_match(&[], &[]));
        assert!(!calls_match(&[], &[call("Paris")]));
        let numeric: Vec<ExpectedCall> =
            serde_json::from_value(json!([{"name": "convert_units", "args": {"value": [12]}}]))
                .unwrap();
        let convert = |v: Value| ToolCall::new("c", "convert_units", json!({"value": v}));
        assert!(calls_match(&numeric, &[convert(json!(12.0))]));
        assert!(calls_match(&numeric, &[convert(json!("12"))]));
        assert!(!calls_match(&numeric, &[convert(json!(5))]));
    }
}
