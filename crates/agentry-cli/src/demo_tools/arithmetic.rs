//! The demo's calculator: arithmetic as people and models write it, read
//! into evalexpr's syntax and evaluated there with the common functions.
//!
//! What is read: `**` and `^` (powers), `×`, `÷`, `x` between numbers,
//! thousands separators (`1,245.50`), `%` as a percentage (`15% * 80`) or,
//! between two operands, the remainder (`45 % 7`), `n!` (factorial), the
//! constants `pi` and `e`, and functions with or without Python's `math.`
//! prefix: sqrt, cbrt, abs, exp, ln, log (base 10, or `log(x, base)`),
//! log10, log2, sin, cos, tan, asin, acos, atan, floor, ceil, round, min,
//! max, pow, hypot, factorial.

use evalexpr::{
    ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes, EvalexprError,
    Function, HashMapContext, Value,
};

/// The longest expression [`evaluate`] reads. evalexpr parses and
/// evaluates by recursion, a level for each parenthesis, operator or unary
/// sign, and a stack overflow aborts the whole process (no panic to catch).
/// Measured in a debug build on a 2 MiB thread (a tokio worker's stack):
/// 1,400 nested unary minus signs pass and 1,500 overflow (one level a
/// character, the worst shape); 3,500 parentheses or `+` terms pass, 4,000
/// overflow. 500 characters keeps the worst case near a third of that.
pub(super) const MAX_EXPRESSION_CHARS: usize = 500;

type Context = HashMapContext<DefaultNumericTypes>;

/// A one-argument function the calculator knows, by name.
type Unary = (&'static str, fn(f64) -> f64);

/// The value of `expression`, or why there is none (in words a model can act on).
pub(super) fn evaluate(expression: &str) -> Result<f64, String> {
    let length = expression.chars().count();
    if length > MAX_EXPRESSION_CHARS {
        return Err(format!(
            "the expression is {length} characters long; the calculator reads at most {MAX_EXPRESSION_CHARS}"
        ));
    }
    if let Some(hex) = hexadecimal(expression) {
        return Err(format!(
            "hexadecimal numbers such as {hex} are not read; write the number in decimal"
        ));
    }
    let plain = plain_syntax(expression);
    if chained_powers(&plain) {
        return Err(format!(
            "{expression:?} raises a power to a power without parentheses; write a^(b^c) or (a^b)^c"
        ));
    }
    let read = float_literals(&postfix_factorials(&percentages(&plain)));
    let value = evalexpr::eval_with_context(&read, &context())
        .map_err(|e| format!("cannot evaluate {expression:?}: {e}"))?;
    match value {
        Value::Int(i) => Ok(i as f64),
        Value::Float(f) if f.is_finite() => Ok(f),
        Value::Float(f) => Err(format!("{expression:?} is not a finite number ({f})")),
        other => Err(format!("{expression:?} is not a number: {other}")),
    }
}

/// The operators, separators and names evalexpr does not read, in its
/// syntax: powers, `×`/`÷`/`x`, the `math.` prefix, thousands separators
/// (outside a function's arguments, where a comma separates them).
fn plain_syntax(expression: &str) -> String {
    let text = expression
        .replace("**", "^")
        .replace(['×', '⋅', '·'], "*")
        .replace('÷', "/")
        .replace('−', "-")
        .replace("math.", "");
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // For each open parenthesis: whether it opens a function's arguments.
    let mut calls: Vec<bool> = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        let before = chars[..i].iter().rev().find(|c| !c.is_whitespace());
        let after = chars[i + 1..].iter().find(|c| !c.is_whitespace());
        match c {
            '(' => {
                calls.push(
                    chars[..i]
                        .last()
                        .is_some_and(|c| c.is_alphanumeric() || *c == '_'),
                );
                out.push(c);
            }
            ')' => {
                calls.pop();
                out.push(c);
            }
            ',' if !calls.last().copied().unwrap_or(false)
                && chars[..i].last().is_some_and(char::is_ascii_digit)
                && chars[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count()
                    == 3 => {}
            'x' | 'X'
                if before.is_some_and(|b| b.is_ascii_digit() || *b == ')' || *b == '.')
                    && after.is_some_and(|a| a.is_ascii_digit() || *a == '(' || *a == '.')
                    && !chars.get(i + 1).is_some_and(|n| n.is_alphabetic())
                    && !chars[..i].last().is_some_and(|p| p.is_alphabetic()) =>
            {
                out.push('*')
            }
            _ => out.push(c),
        }
    }
    out
}

/// The first `0x…` number in `expression` (read as `0 × …` otherwise).
fn hexadecimal(expression: &str) -> Option<String> {
    let chars: Vec<char> = expression.chars().collect();
    (0..chars.len().saturating_sub(2)).find_map(|i| {
        let starts = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.');
        (starts
            && chars[i] == '0'
            && matches!(chars[i + 1], 'x' | 'X')
            && chars[i + 2].is_ascii_hexdigit())
        .then(|| {
            chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect()
        })
    })
}

/// Whether a `^` follows another at the same depth of parentheses, the
/// right operand of the first between them (`2^3^2`): people and programs
/// read that differently (512 or 64), so it is refused rather than guessed.
fn chained_powers(expression: &str) -> bool {
    // For each depth: whether the last binary operator there was `^`.
    let mut last_was_power = vec![false];
    let mut previous: Option<char> = None;
    for c in expression.chars().filter(|c| !c.is_whitespace()) {
        match c {
            '(' => last_was_power.push(false),
            ')' if last_was_power.len() > 1 => {
                last_was_power.pop();
            }
            '^' => {
                let here = last_was_power.last_mut().expect("a depth");
                if *here {
                    return true;
                }
                *here = true;
            }
            // A sign right after an operator or an opening is no operator.
            '+' | '-'
                if previous
                    .is_none_or(|p| matches!(p, '(' | '^' | '*' | '/' | '%' | '+' | '-' | ',')) => {
            }
            '+' | '-' | '*' | '/' | '%' | ',' => {
                *last_was_power.last_mut().expect("a depth") = false;
            }
            _ => {}
        }
        previous = Some(c);
    }
    false
}

/// `%` before an operand is the remainder (`45 % 7`); anywhere else it
/// makes a percentage (`15% * 80`, `80 * 15%`): `/100`.
fn percentages(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
        if next.is_some_and(|n| n.is_alphanumeric() || matches!(n, '(' | '.' | '_')) {
            out.push('%');
        } else {
            out.push_str("/100");
        }
    }
    out
}

/// `n!` and `(…)!` as `factorial(…)` (`!=` is left alone).
fn postfix_factorials(text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '!' || chars.get(i + 1) == Some(&'=') || i == 0 {
            i += 1;
            continue;
        }
        let end = i; // the operand is chars[start..end]
        let start = if chars[end - 1] == ')' {
            let mut depth = 0;
            let mut j = end;
            loop {
                if j == 0 {
                    break None;
                }
                j -= 1;
                match chars[j] {
                    ')' => depth += 1,
                    '(' => {
                        depth -= 1;
                        if depth == 0 {
                            break Some(j);
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let digits = chars[..end]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit() || **c == '.')
                .count();
            (digits > 0).then(|| end - digits)
        };
        let Some(start) = start else {
            i += 1;
            continue;
        };
        let operand: String = chars[start..end].iter().collect();
        let call: Vec<char> = format!("factorial({operand})").chars().collect();
        let width = call.len();
        chars.splice(start..=end, call);
        i = start + width;
    }
    chars.into_iter().collect()
}

/// Write every integer literal as a float (`7/2` → `7.0/2.0`) so division is exact.
fn float_literals(expression: &str) -> String {
    let mut out = String::with_capacity(expression.len() + 8);
    let chars: Vec<char> = expression.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit()
            && (i == 0
                || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '.' || chars[i - 1] == '_'))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            // An exponent: `e`, an optional sign, digits (`1e-5`, `2.5E+3`).
            let sign = usize::from(chars.get(i + 1).is_some_and(|c| matches!(c, '+' | '-')));
            if chars.get(i).is_some_and(|c| matches!(c, 'e' | 'E'))
                && chars.get(i + 1 + sign).is_some_and(char::is_ascii_digit)
            {
                i += 1 + sign;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let literal: String = chars[start..i].iter().collect();
            match literal.parse::<f64>() {
                // Written out in full: evalexpr reads no exponent with a sign.
                Ok(value) if literal.contains(['e', 'E']) => {
                    let written = value.to_string(); // never with an exponent
                    let point = if written.contains('.') { "" } else { ".0" };
                    out.push_str(&format!("({written}{point})"));
                }
                _ => {
                    out.push_str(&literal);
                    if !literal.contains('.') {
                        out.push_str(".0");
                    }
                }
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The constants and functions the calculator knows beyond evalexpr's own.
fn context() -> Context {
    let mut context = Context::new();
    let constants = [("pi", std::f64::consts::PI), ("e", std::f64::consts::E)];
    for (name, value) in constants {
        context
            .set_value(name.into(), Value::Float(value))
            .expect("a new context takes values");
    }
    let unary: [Unary; 17] = [
        ("sqrt", f64::sqrt),
        ("cbrt", f64::cbrt),
        ("abs", f64::abs),
        ("exp", f64::exp),
        ("ln", f64::ln),
        ("log10", f64::log10),
        ("log2", f64::log2),
        ("sin", f64::sin),
        ("cos", f64::cos),
        ("tan", f64::tan),
        ("asin", f64::asin),
        ("acos", f64::acos),
        ("atan", f64::atan),
        ("floor", f64::floor),
        ("ceil", f64::ceil),
        ("round", f64::round),
        ("factorial", factorial),
    ];
    for (name, f) in unary {
        let function = Function::new(move |argument| Ok(Value::Float(f(argument.as_number()?))));
        context
            .set_function(name.into(), function)
            .expect("a new context takes functions");
    }
    let functions = [
        ("log", Function::new(log)),
        ("pow", Function::new(|a| binary(a, f64::powf))),
        ("hypot", Function::new(|a| binary(a, f64::hypot))),
        ("min", Function::new(|a| fold(a, f64::min))),
        ("max", Function::new(|a| fold(a, f64::max))),
    ];
    for (name, function) in functions {
        context
            .set_function(name.into(), function)
            .expect("a new context takes functions");
    }
    context
}

type Outcome = Result<Value<DefaultNumericTypes>, EvalexprError<DefaultNumericTypes>>;

/// `log(x)` is base 10 (a calculator's log); `log(x, base)` any base.
fn log(argument: &Value<DefaultNumericTypes>) -> Outcome {
    match argument {
        Value::Tuple(_) => binary(argument, f64::log),
        single => Ok(Value::Float(single.as_number()?.log10())),
    }
}

fn binary(argument: &Value<DefaultNumericTypes>, f: fn(f64, f64) -> f64) -> Outcome {
    let pair = argument.as_fixed_len_tuple(2)?;
    Ok(Value::Float(f(pair[0].as_number()?, pair[1].as_number()?)))
}

fn fold(argument: &Value<DefaultNumericTypes>, f: fn(f64, f64) -> f64) -> Outcome {
    let values = match argument {
        Value::Tuple(values) => values.clone(),
        single => vec![single.clone()],
    };
    let mut numbers = values.iter().map(Value::as_number);
    let first = numbers
        .next()
        .ok_or_else(|| EvalexprError::CustomMessage("no numbers given".into()))??;
    let mut result = first;
    for number in numbers {
        result = f(result, number?);
    }
    Ok(Value::Float(result))
}

/// n! for a whole n from 0 to 170 (171! is past f64); NaN otherwise.
fn factorial(n: f64) -> f64 {
    if n.fract() != 0.0 || !(0.0..=170.0).contains(&n) {
        return f64::NAN;
    }
    (1..=n as u32).map(f64::from).product()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str) -> f64 {
        evaluate(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn what_models_write() {
        assert_eq!(eval("(1764 + 8) ** 0.5"), (1772f64).sqrt());
        assert_eq!(eval("sqrt(1764) + 8"), 50.0);
        assert_eq!(eval("math.sqrt(2025) + 11"), 56.0);
        assert_eq!(eval("2^10 + 3**5"), 1267.0);
        assert_eq!(eval("15% * 80"), 12.0);
        assert_eq!(eval("80 * 15%"), 12.0);
        assert_eq!(eval("45 % 7"), 3.0);
        assert_eq!(eval("1,245.50 + 3,870.25 + 612.80"), 5728.55);
        assert_eq!(eval("45 x 12"), 540.0);
        assert_eq!(eval("6 × 7 ÷ 2"), 21.0);
        assert_eq!(eval("7!"), 5040.0);
        assert_eq!(eval("factorial(5) + (2+1)!"), 126.0);
        assert_eq!(eval("max(100,200) + min(3, 4, 1)"), 201.0);
        assert_eq!(eval("log(1000)"), 3.0);
        assert_eq!(eval("round(log(8, 2))"), 3.0);
        assert_eq!(eval("ln(e)"), 1.0);
        assert_eq!(eval("round(pi * 100)"), 314.0);
        assert_eq!(eval("7 / 2"), 3.5);
        assert_eq!(eval("abs(-3) + pow(2, 3) + hypot(3, 4)"), 16.0);
    }

    #[test]
    fn odd_input_is_refused_or_read_never_a_panic() {
        let odd = [
            "!",
            "(!",
            ")!",
            "()!",
            "5!!",
            "1 != 2",
            "!5",
            "%",
            "%%",
            "5%%",
            "x",
            "2x3",
            "x2",
            "max(1,000, 2)",
            "1,000,000",
            ",",
            "1,",
            ",123",
            "**",
            "2***3",
            "(((",
            ")))!",
            "1.2.3!",
            "e",
            "1e5",
            "1e",
            "pi!",
            "sqrt()",
            "log(1, 2, 3)",
            "min()",
            "factorial(-1)",
            "×÷",
            "math.",
            "math.math.sqrt(4)",
            "é!",
            "²",
            "💥!",
            "1/0!",
            "0!",
            "170!",
        ];
        for text in odd {
            let _ = evaluate(text);
        }
        assert_eq!(eval("0!"), 1.0);
        // `!=` stays a comparison, whose answer is not a number.
        assert_eq!(
            evaluate("1 != 2").unwrap_err(),
            "\"1 != 2\" is not a number: true"
        );
        // Each rewrite keeps the length the recursion limit was measured on
        // within reach: 500 of the widest rewrite still evaluates or refuses.
        for unit in ["1%", "1!", "%", "x1"] {
            let _ = evaluate(&unit.repeat(MAX_EXPRESSION_CHARS / unit.len()));
        }
    }

    #[test]
    fn powers_hex_and_exponents() {
        assert_eq!(eval("2^(3^2)"), 512.0);
        assert_eq!(eval("(2^3)^2"), 64.0);
        assert_eq!(eval("2^3 * 2^2"), 32.0);
        assert_eq!(eval("2^-1 + 1"), 1.5);
        for chained in ["2^3^2", "2 ** 3 ** 2", "9^9^9"] {
            let error = evaluate(chained).unwrap_err();
            assert!(error.contains("a^(b^c) or (a^b)^c"), "{chained}: {error}");
        }
        let hex = evaluate("0x10 + 1").unwrap_err();
        assert!(hex.starts_with("hexadecimal numbers such as 0x10"), "{hex}");
        assert_eq!(eval("3x4"), 12.0);
        assert_eq!(eval("1e-5 * 2"), 2e-5);
        assert_eq!(eval("2.5E+3"), 2500.0);
        assert_eq!(eval("1e3 / 4"), 250.0);
        assert_eq!(eval("1e3 / 3"), 1000.0 / 3.0);
    }

    #[test]
    fn refusals_say_why() {
        assert!(
            evaluate("2 +")
                .unwrap_err()
                .starts_with("cannot evaluate \"2 +\"")
        );
        assert_eq!(
            evaluate("1/0").unwrap_err(),
            "\"1/0\" is not a finite number (inf)"
        );
        assert_eq!(
            evaluate("171!").unwrap_err(),
            "\"171!\" is not a finite number (NaN)"
        );
        let long = "1+".repeat(300);
        assert!(evaluate(&long).unwrap_err().contains("reads at most 500"));
    }
}
