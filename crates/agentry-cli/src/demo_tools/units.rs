//! The demo's unit conversion: length, mass, volume, time, speed and
//! temperature, with units written as people and models write them (names,
//! plurals, symbols, `°F`, `degrees Celsius`).
//!
//! A table of our own rather than a units crate: `uom` converts between
//! units it is given as types and parses only its own abbreviations, so the
//! names and spellings below would be needed on top of it anyway.

/// A unit's kind and size in the kind's base unit (metre, kilogram, litre,
/// second, metre per second).
type Linear = (&'static str, f64);

/// `value` in `from` as `to`, or why not (naming the units known).
pub(super) fn convert(value: f64, from: &str, to: &str) -> Result<f64, String> {
    for unit in [from, to] {
        if is_mega(unit) {
            return Err(format!(
                "{} is a mega unit (M is 10^6), which is not known; for milli write m: mm, mg, ml",
                shown(unit)
            ));
        }
    }
    let (from_name, to_name) = (normalise(from), normalise(to));
    match (temperature(&from_name), temperature(&to_name)) {
        (Some(from_unit), Some(to_unit)) => {
            let kelvin = to_kelvin(value, from_unit);
            if kelvin < -1e-9 {
                return Err(format!(
                    "{value} {} is below absolute zero (0 K, -273.15 °C, -459.67 °F)",
                    cut(from)
                ));
            }
            return finite(from_kelvin(kelvin, to_unit));
        }
        (Some(_), None) | (None, Some(_)) => {
            let other = if temperature(&from_name).is_some() {
                to
            } else {
                from
            };
            return match linear(&normalise(other)) {
                Some((kind, _)) => Err(format!(
                    "cannot convert temperature to {kind} ({})",
                    cut(other)
                )),
                None => Err(unknown(other)),
            };
        }
        (None, None) => {}
    }
    let (kind_from, scale_from) = linear(&from_name).ok_or_else(|| unknown(from))?;
    let (kind_to, scale_to) = linear(&to_name).ok_or_else(|| unknown(to))?;
    if kind_from != kind_to {
        return Err(format!(
            "cannot convert {kind_from} ({}) to {kind_to} ({})",
            cut(from),
            cut(to)
        ));
    }
    finite(value * scale_from / scale_to)
}

/// A result that is a number, or why not.
fn finite(result: f64) -> Result<f64, String> {
    if result.is_finite() {
        Ok(result)
    } else {
        Err("the result is too large to write as a number".into())
    }
}

/// `Mm`, `Mg`, `Ml`: a capital M before a lower-case unit symbol is mega,
/// which lower-casing would read as milli (`ML`, all capitals, is read as
/// millilitres, as labels write it).
fn is_mega(unit: &str) -> bool {
    let unit = unit.trim();
    let mut chars = unit.chars();
    chars.next() == Some('M')
        && unit.len() <= 3
        && chars.clone().next().is_some()
        && chars.all(|c| c.is_ascii_lowercase())
}

/// At most the first 40 characters of a unit as written (a 1 MB argument
/// does not come back as a 1 MB error).
fn cut(unit: &str) -> String {
    let unit = unit.trim();
    if unit.chars().count() <= 40 {
        unit.to_owned()
    } else {
        let head: String = unit.chars().take(40).collect();
        format!("{head}…")
    }
}

/// [`cut`], quoted.
fn shown(unit: &str) -> String {
    format!("{:?}", cut(unit))
}

/// What a refusal lists: the units known, by kind.
pub(super) const KNOWN: &str = "length (mm, cm, m, km, in, ft, yd, mi, nautical miles), \
mass (mg, g, kg, oz, lb, stone, tonnes), volume (ml, l, tsp, tbsp, fl oz, cups, pints, quarts, gallons, m3), \
time (s, min, h, days, weeks), speed (m/s, km/h, mph, knots), temperature (°C, °F, K)";

fn unknown(unit: &str) -> String {
    format!("unknown unit {}; known: {KNOWN}", shown(unit))
}

/// Lower case, without `degrees`/`°`, a trailing full stop, or extra spaces.
fn normalise(unit: &str) -> String {
    let lower = unit.trim().trim_end_matches('.').to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let joined = words.join(" ");
    let bare = ["degrees ", "degree ", "deg "]
        .iter()
        .find_map(|prefix| joined.strip_prefix(prefix))
        .unwrap_or(&joined);
    bare.trim_start_matches('°').trim().to_owned()
}

#[derive(Clone, Copy)]
enum Temperature {
    Celsius,
    Fahrenheit,
    Kelvin,
}

fn temperature(unit: &str) -> Option<Temperature> {
    Some(match unit {
        "c" | "celsius" | "centigrade" | "℃" => Temperature::Celsius,
        "f" | "fahrenheit" | "℉" => Temperature::Fahrenheit,
        "k" | "kelvin" | "kelvins" => Temperature::Kelvin,
        _ => return None,
    })
}

fn to_kelvin(value: f64, unit: Temperature) -> f64 {
    match unit {
        Temperature::Celsius => value + 273.15,
        Temperature::Fahrenheit => (value - 32.0) * 5.0 / 9.0 + 273.15,
        Temperature::Kelvin => value,
    }
}

fn from_kelvin(kelvin: f64, unit: Temperature) -> f64 {
    match unit {
        Temperature::Celsius => kelvin - 273.15,
        Temperature::Fahrenheit => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
        Temperature::Kelvin => kelvin,
    }
}

/// Units with a linear conversion.
fn linear(unit: &str) -> Option<Linear> {
    const ML: f64 = 0.001;
    Some(match unit {
        "m" | "meter" | "meters" | "metre" | "metres" => ("length", 1.0),
        "km" | "kms" | "kilometer" | "kilometers" | "kilometre" | "kilometres" => {
            ("length", 1000.0)
        }
        "cm" | "centimeter" | "centimeters" | "centimetre" | "centimetres" => ("length", 0.01),
        "mm" | "millimeter" | "millimeters" | "millimetre" | "millimetres" => ("length", 0.001),
        "mi" | "mile" | "miles" => ("length", 1609.344),
        "ft" | "foot" | "feet" | "'" => ("length", 0.3048),
        "in" | "inch" | "inches" | "\"" => ("length", 0.0254),
        "yd" | "yds" | "yard" | "yards" => ("length", 0.9144),
        "nmi" | "nautical mile" | "nautical miles" => ("length", 1852.0),
        "kg" | "kgs" | "kilo" | "kilos" | "kilogram" | "kilograms" | "kilogramme" => ("mass", 1.0),
        "g" | "gram" | "grams" | "gramme" | "grammes" => ("mass", 0.001),
        "mg" | "milligram" | "milligrams" => ("mass", 1e-6),
        "lb" | "lbs" | "pound" | "pounds" => ("mass", 0.453_592_37),
        "oz" | "ounce" | "ounces" => ("mass", 0.028_349_523_125),
        "st" | "stone" | "stones" => ("mass", 6.350_293_18),
        "t" | "tonne" | "tonnes" | "metric ton" | "metric tons" => ("mass", 1000.0),
        "l" | "liter" | "liters" | "litre" | "litres" => ("volume", 1.0),
        "ml" | "milliliter" | "milliliters" | "millilitre" | "millilitres" => ("volume", ML),
        "gal" | "gallon" | "gallons" | "us gallon" | "us gallons" => ("volume", 3.785_411_784),
        "cup" | "cups" => ("volume", 236.588_236_5 * ML),
        "pt" | "pint" | "pints" => ("volume", 473.176_473 * ML),
        "qt" | "quart" | "quarts" => ("volume", 946.352_946 * ML),
        "fl oz" | "floz" | "fluid ounce" | "fluid ounces" => ("volume", 29.573_529_562_5 * ML),
        "tbsp" | "tablespoon" | "tablespoons" => ("volume", 14.786_764_781_25 * ML),
        "tsp" | "teaspoon" | "teaspoons" => ("volume", 4.928_921_593_75 * ML),
        "m3" | "m³" | "cubic meter" | "cubic meters" | "cubic metre" | "cubic metres" => {
            ("volume", 1000.0)
        }
        "s" | "sec" | "secs" | "second" | "seconds" => ("time", 1.0),
        "min" | "mins" | "minute" | "minutes" => ("time", 60.0),
        "h" | "hr" | "hrs" | "hour" | "hours" => ("time", 3600.0),
        "d" | "day" | "days" => ("time", 86_400.0),
        "wk" | "week" | "weeks" => ("time", 604_800.0),
        "m/s" | "meters per second" | "metres per second" => ("speed", 1.0),
        "km/h" | "kmh" | "kph" | "kilometers per hour" | "kilometres per hour" => {
            ("speed", 1000.0 / 3600.0)
        }
        "mph" | "miles per hour" => ("speed", 1609.344 / 3600.0),
        "kn" | "kt" | "knot" | "knots" => ("speed", 1852.0 / 3600.0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(value: f64, from: &str, to: &str, expected: f64) {
        let got = convert(value, from, to).unwrap_or_else(|e| panic!("{from} → {to}: {e}"));
        assert!(
            (got - expected).abs() < 1e-6,
            "{value} {from} → {to}: {got}, not {expected}"
        );
    }

    #[test]
    fn names_symbols_and_degrees() {
        near(
            100.0,
            "degrees Fahrenheit",
            "degrees Celsius",
            37.777_777_777_777_78,
        );
        near(100.0, "°F", "C", 37.777_777_777_777_78);
        near(37.5, "℃", "f", 99.5);
        near(20.0, "Celsius", "kelvin", 293.15);
        near(6.0, "feet", "meters", 1.8288);
        near(12.0, "lbs", "kg", 5.443_108_44);
        near(5.0, "Gallons", "litres", 18.927_058_92);
        near(2.0, "cups", "ml", 473.176_473);
        near(60.0, "mph", "km/h", 96.560_64);
        near(2.0, "weeks", "days", 14.0);
        near(1.0, " Km. ", "m", 1000.0);
    }

    #[test]
    fn mega_below_absolute_zero_and_overflow_are_refused() {
        assert!(convert(1.0, "Mm", "km").unwrap_err().contains("mega"));
        assert!(convert(1.0, "kg", "Mg").unwrap_err().contains("mega"));
        near(500.0, "ML", "l", 0.5);
        near(1.0, "MM", "cm", 0.1);
        let cold = convert(-300.0, "°C", "K").unwrap_err();
        assert!(cold.contains("below absolute zero"), "{cold}");
        assert!(convert(-1.0, "K", "C").is_err());
        near(-273.15, "C", "K", 0.0);
        let huge = convert(1e308, "km", "mm").unwrap_err();
        assert_eq!(huge, "the result is too large to write as a number");
        let long = convert(1.0, &"x".repeat(1_000_000), "m").unwrap_err();
        assert!(long.len() < 1000, "{} bytes", long.len());
    }

    #[test]
    fn refusals_name_what_is_known() {
        assert_eq!(
            convert(1.0, "kg", "m"),
            Err("cannot convert mass (kg) to length (m)".into())
        );
        assert_eq!(
            convert(1.0, "celsius", "km"),
            Err("cannot convert temperature to length (km)".into())
        );
        let unknown = convert(1.0, "parsec", "m").unwrap_err();
        assert!(
            unknown.starts_with("unknown unit \"parsec\"; known: length (mm, cm"),
            "{unknown}"
        );
        assert!(
            convert(1.0, "m", "furlongs")
                .unwrap_err()
                .starts_with("unknown unit \"furlongs\"")
        );
    }
}
