//! The built-in tools of `agentry run`: a calculator, the time in any time
//! zone, unit conversion, and a file reader confined to one granted directory.

use std::path::Path;

use agentry::tool::{Capability, Tool, ToolContext, function};
use serde::Deserialize;

/// Evaluate an arithmetic expression.
///
/// # Arguments
/// * `expression` - Arithmetic such as `(2 + 3) * 4.5` or `2^10`.
#[agentry::tool(name = "calculator", read_only, concurrency_safe)]
pub fn calculator(expression: String) -> Result<f64, String> {
    let length = expression.chars().count();
    if length > MAX_EXPRESSION_CHARS {
        return Err(format!(
            "the expression is {length} characters long; the calculator reads at most {MAX_EXPRESSION_CHARS}"
        ));
    }
    let value = evalexpr::eval(&float_literals(&expression))
        .map_err(|e| format!("cannot evaluate {expression:?}: {e}"))?;
    match value {
        evalexpr::Value::Int(i) => Ok(i as f64),
        evalexpr::Value::Float(f) => Ok(f),
        other => Err(format!("{expression:?} is not a number: {other}")),
    }
}

/// The longest expression [`calculator`] reads. evalexpr parses and
/// evaluates by recursion, a level for each parenthesis, operator or unary
/// sign, and a stack overflow aborts the whole process (no panic to catch).
/// Measured in a debug build on a 2 MiB thread (a tokio worker's stack):
/// 1,400 nested unary minus signs pass and 1,500 overflow (one level a
/// character, the worst shape); 3,500 parentheses or `+` terms pass, 4,000
/// overflow. 500 characters keeps the worst case near a third of that.
const MAX_EXPRESSION_CHARS: usize = 500;

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
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || chars[i] == '.'
                    || chars[i] == 'e'
                    || chars[i] == 'E')
            {
                i += 1;
            }
            let literal: String = chars[start..i].iter().collect();
            out.push_str(&literal);
            if !literal.contains(['.', 'e', 'E']) {
                out.push_str(".0");
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The current date and time in a time zone.
///
/// # Arguments
/// * `timezone` - IANA time zone such as `Europe/Paris` or `Asia/Tokyo`; UTC when omitted.
#[agentry::tool(name = "current_time", read_only, concurrency_safe)]
pub fn current_time(timezone: Option<String>) -> Result<String, String> {
    let zone = timezone.unwrap_or_else(|| "UTC".into());
    let now = jiff::Timestamp::now()
        .in_tz(&zone)
        .map_err(|e| format!("unknown time zone {zone:?}: {e}"))?;
    Ok(now.strftime("%Y-%m-%d %H:%M:%S %Z (%:z)").to_string())
}

/// Convert a quantity between units of length, mass, volume or temperature.
///
/// # Arguments
/// * `value` - The quantity to convert.
/// * `from` - Unit of `value`, as a word: miles, kilometers, meters, feet, inches, pounds, kilograms, grams, liters, gallons, celsius, fahrenheit.
/// * `to` - Unit to convert to, of the same kind, as a word.
#[agentry::tool(name = "convert_units", read_only, concurrency_safe)]
pub fn convert_units(value: f64, from: String, to: String) -> Result<f64, String> {
    let (from, to) = (from.trim().to_lowercase(), to.trim().to_lowercase());
    if let (Some(kelvin), Some(_)) = (to_kelvin(value, &from), to_kelvin(0.0, &to)) {
        return Ok(from_kelvin(kelvin, &to));
    }
    let (Some((kind_from, scale_from)), Some((kind_to, scale_to))) =
        (linear_unit(&from), linear_unit(&to))
    else {
        return Err(format!(
            "unknown unit: {}",
            if linear_unit(&from).is_none() {
                &from
            } else {
                &to
            }
        ));
    };
    if kind_from != kind_to {
        return Err(format!(
            "cannot convert {kind_from} ({from}) to {kind_to} ({to})"
        ));
    }
    Ok(value * scale_from / scale_to)
}

/// Units with a linear conversion: kind and size in the kind's base unit.
fn linear_unit(unit: &str) -> Option<(&'static str, f64)> {
    Some(match unit {
        "m" | "meter" | "meters" | "metre" | "metres" => ("length", 1.0),
        "km" | "kilometer" | "kilometers" => ("length", 1000.0),
        "cm" | "centimeter" | "centimeters" => ("length", 0.01),
        "mm" | "millimeter" | "millimeters" => ("length", 0.001),
        "mi" | "mile" | "miles" => ("length", 1609.344),
        "ft" | "foot" | "feet" => ("length", 0.3048),
        "in" | "inch" | "inches" => ("length", 0.0254),
        "yd" | "yard" | "yards" => ("length", 0.9144),
        "kg" | "kilogram" | "kilograms" => ("mass", 1.0),
        "g" | "gram" | "grams" => ("mass", 0.001),
        "lb" | "lbs" | "pound" | "pounds" => ("mass", 0.453_592_37),
        "oz" | "ounce" | "ounces" => ("mass", 0.028_349_523_125),
        "l" | "liter" | "liters" | "litre" | "litres" => ("volume", 1.0),
        "ml" | "milliliter" | "milliliters" => ("volume", 0.001),
        "gal" | "gallon" | "gallons" => ("volume", 3.785_411_784),
        _ => return None,
    })
}

fn to_kelvin(value: f64, unit: &str) -> Option<f64> {
    match unit {
        "c" | "celsius" | "°c" => Some(value + 273.15),
        "f" | "fahrenheit" | "°f" => Some((value - 32.0) * 5.0 / 9.0 + 273.15),
        "k" | "kelvin" => Some(value),
        _ => None,
    }
}

fn from_kelvin(kelvin: f64, unit: &str) -> f64 {
    match unit {
        "c" | "celsius" | "°c" => kelvin - 273.15,
        "f" | "fahrenheit" | "°f" => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
        _ => kelvin,
    }
}

#[derive(Deserialize)]
struct ReadFile {
    path: String,
}

/// The most of a file `read_file` gives the model, in bytes.
const READ_LIMIT: usize = 20_000;

/// A granted regular file's text, at most `limit` bytes of it (cut at a
/// character boundary and marked with the file's size). Only `limit` + 4
/// bytes are read (enough to end the last character), never the whole
/// file; a FIFO, device or directory is refused without waiting.
fn read_text(ctx: &ToolContext, path: &str, limit: usize) -> Result<String, ReadError> {
    use std::io::Read;
    let file = ctx.fs().open_file(path)?;
    let size = file.metadata().map_err(ReadError::Io)?.len();
    let mut bytes = Vec::with_capacity(limit.min(size as usize) + 4);
    file.take(limit as u64 + 4)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() <= limit {
        return String::from_utf8(bytes).map_err(|_| ReadError::NotText);
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        // The read may end inside a character; what comes before must be text.
        Err(e) if e.error_len().is_none() && e.valid_up_to() > limit => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("valid up to there")
        }
        Err(_) => return Err(ReadError::NotText),
    };
    let cut = (0..=limit)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    // The file may have grown since its size was taken.
    let size = size.max(bytes.len() as u64);
    Ok(format!(
        "{}\n[… cut at {limit} bytes of {size}]",
        &text[..cut]
    ))
}

/// Why `read_file` read nothing.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// Outside the grant, missing, or not a regular file.
    #[error(transparent)]
    Refused(#[from] agentry::tool::CapabilityError),
    /// Reading the opened file failed.
    #[error("cannot read the file: {0}")]
    Io(#[source] std::io::Error),
    /// The bytes are not UTF-8.
    #[error("the file is not UTF-8 text")]
    NotText,
}

/// `read_file`: reads text files under `dir`, and nowhere else.
pub fn read_file(dir: &Path) -> Tool {
    let tool = function("read_file")
        .namespace("files")
        .description(
            "Read a text file and return its contents. Use it whenever the user mentions a file.",
        )
        .arg::<String>("path", "File path relative to the granted directory")
        .capability(Capability::fs_read(dir))
        .hints(agentry::tool::ToolHints {
            read_only: true,
            concurrency_safe: true,
            ..Default::default()
        })
        .handler(|args: ReadFile, ctx: &ToolContext| {
            read_text(ctx, &args.path, READ_LIMIT).map_err(|e| e.to_string())
        })
        .build()
        .expect("a valid tool");
    // A bare name reads better to a small model than `files.read_file`.
    tool.with_name("read_file")
}

/// Every demo tool, with files readable under `dir`.
pub fn all(dir: &Path) -> Vec<Tool> {
    vec![
        calculator::tool(),
        current_time::tool(),
        convert_units::tool(),
        read_file(dir),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calculator_evaluates() {
        assert_eq!(calculator("(2 + 3) * 4.5".into()), Ok(22.5));
        assert_eq!(calculator("7 / 2".into()), Ok(3.5));
        assert_eq!(calculator("2^10".into()), Ok(1024.0));
        assert!(calculator("2 +".into()).is_err());
    }

    #[test]
    fn conversions() {
        assert_eq!(convert_units(1.0, "km".into(), "m".into()), Ok(1000.0));
        assert!((convert_units(100.0, "C".into(), "F".into()).unwrap() - 212.0).abs() < 1e-9);
        assert!((convert_units(1.0, "mi".into(), "km".into()).unwrap() - 1.609344).abs() < 1e-9);
        assert_eq!(
            convert_units(1.0, "kg".into(), "m".into()),
            Err("cannot convert mass (kg) to length (m)".into())
        );
        assert_eq!(
            convert_units(1.0, "parsec".into(), "m".into()),
            Err("unknown unit: parsec".into())
        );
    }

    #[test]
    fn time_zones() {
        assert!(
            current_time(Some("Asia/Tokyo".into()))
                .unwrap()
                .contains("JST")
        );
        assert!(
            current_time(Some("Mars/Base".into()))
                .unwrap_err()
                .starts_with("unknown time zone \"Mars/Base\"")
        );
    }
}
