//! The `assistant` agent's tools for `agentry-eval everyday`: eight tools
//! described the way real tools are (a sentence, example values), answering
//! from fixed data so that an answer can be checked. The model under test is
//! real; only the world behind the tools is fixed.

use agentry::tool::Tool;
use serde_json::{Value, json};

/// Every assistant tool.
pub(crate) fn all() -> Vec<Tool> {
    vec![
        get_weather::tool(),
        convert_currency::tool(),
        get_stock_price::tool(),
        search_contacts::tool(),
        send_email::tool(),
        create_reminder::tool(),
        list_events::tool(),
        search_flights::tool(),
    ]
}

/// Current weather for a city.
///
/// # Arguments
/// * `city` - City name, e.g. `Paris`.
/// * `unit` - `celsius` (default) or `fahrenheit`.
#[agentry::tool(name = "get_weather", read_only, concurrency_safe)]
pub(crate) fn get_weather(city: String, unit: Option<String>) -> Result<Value, String> {
    let key = fold(city.split(',').next().unwrap_or_default());
    let (name, celsius, conditions, humidity) = match key.as_str() {
        "paris" => ("Paris", 14.0, "light rain", 88),
        "tokyo" => ("Tokyo", 9.0, "cloudy", 61),
        "chicago" => ("Chicago", -3.0, "snow", 79),
        "lisbon" | "lisboa" => ("Lisbon", 21.0, "sunny", 52),
        "berlin" => ("Berlin", 6.0, "overcast", 74),
        "sydney" => ("Sydney", 27.0, "sunny", 48),
        "toronto" => ("Toronto", -1.0, "windy", 66),
        _ => return Err(format!("no weather station found for {city:?}")),
    };
    let unit = unit.map(|u| fold(&u)).unwrap_or_else(|| "celsius".into());
    let temperature = match unit.as_str() {
        "celsius" | "c" => celsius,
        "fahrenheit" | "f" => round2(celsius * 9.0 / 5.0 + 32.0),
        other => return Err(format!("unknown unit {other:?}: use celsius or fahrenheit")),
    };
    let unit = if temperature == celsius && unit.starts_with('c') {
        "celsius"
    } else {
        "fahrenheit"
    };
    Ok(
        json!({"city": name, "temperature": temperature, "unit": unit,
              "conditions": conditions, "humidity_percent": humidity}),
    )
}

/// Units per US dollar.
fn per_dollar(code: &str) -> Option<f64> {
    Some(match code {
        "USD" => 1.0,
        "EUR" => 0.92,
        "GBP" => 0.79,
        "JPY" => 151.2,
        "CHF" => 0.88,
        "CAD" => 1.37,
        "INR" => 83.1,
        _ => return None,
    })
}

/// Convert money between currencies at today's rate.
///
/// # Arguments
/// * `amount` - Amount, e.g. `25.5`.
/// * `from` - Currency code, e.g. `USD`.
/// * `to` - Currency code, e.g. `EUR`.
#[agentry::tool(name = "convert_currency", read_only, concurrency_safe)]
pub(crate) fn convert_currency(amount: f64, from: String, to: String) -> Result<Value, String> {
    let (from, to) = (from.trim().to_uppercase(), to.trim().to_uppercase());
    let rate = |code: &str| {
        per_dollar(code)
            .ok_or_else(|| format!("unknown currency code {code:?} (use codes such as USD)"))
    };
    let (from_rate, to_rate) = (rate(&from)?, rate(&to)?);
    Ok(json!({
        "amount": round2(amount / from_rate * to_rate),
        "currency": to,
        "rate": (to_rate / from_rate * 10_000.0).round() / 10_000.0,
    }))
}

/// Latest share price.
///
/// # Arguments
/// * `symbol` - Ticker, e.g. `AAPL`.
#[agentry::tool(name = "get_stock_price", read_only, concurrency_safe)]
pub(crate) fn get_stock_price(symbol: String) -> Result<Value, String> {
    let symbol = symbol.trim().to_uppercase();
    let price = match symbol.as_str() {
        "AAPL" => 231.45,
        "MSFT" => 418.20,
        "TSLA" => 245.10,
        "NVDA" => 142.37,
        "GOOGL" | "GOOG" => 176.05,
        "AMZN" => 203.88,
        _ => return Err(format!("unknown ticker {symbol:?}")),
    };
    Ok(json!({"symbol": symbol, "price": price, "currency": "USD"}))
}

const CONTACTS: [(&str, &str, &str); 5] = [
    ("Ana Souza", "ana.souza@example.com", "+351 912 345 678"),
    ("Ana Lima", "ana.lima@example.com.br", "+55 11 98765 4321"),
    ("Ben Carter", "ben.carter@example.com", "+1 312 555 0142"),
    (
        "Chloé Martin",
        "chloe.martin@example.fr",
        "+33 6 12 34 56 78",
    ),
    ("David Kim", "david.kim@example.com", "+82 10 5555 1234"),
];

/// Find people in the address book.
///
/// # Arguments
/// * `query` - Name or part of it, e.g. `Ana`.
#[agentry::tool(name = "search_contacts", read_only, concurrency_safe)]
pub(crate) fn search_contacts(query: String) -> Value {
    let words: Vec<String> = fold(&query).split_whitespace().map(str::to_owned).collect();
    let found: Vec<Value> = CONTACTS
        .iter()
        .filter(|(name, _, _)| {
            let name = fold(name);
            !words.is_empty() && words.iter().all(|word| name.contains(word.as_str()))
        })
        .map(|(name, email, phone)| json!({"name": name, "email": email, "phone": phone}))
        .collect();
    json!(found)
}

/// Send an email.
///
/// # Arguments
/// * `to` - Address, e.g. `ana@example.com`.
/// * `subject` - Subject line.
/// * `body` - The message.
#[agentry::tool(name = "send_email")]
pub(crate) fn send_email(
    to: String,
    subject: Option<String>,
    body: String,
) -> Result<String, String> {
    if !to.contains('@') {
        return Err(format!("{to:?} is not an email address"));
    }
    let _ = (subject, body);
    Ok(format!("Email sent to {to} (message id msg-1042)."))
}

/// Set a reminder.
///
/// # Arguments
/// * `text` - What to remember, e.g. `call mom`.
/// * `when` - When, e.g. `2026-12-01 09:00`.
#[agentry::tool(name = "create_reminder")]
pub(crate) fn create_reminder(text: String, when: String) -> String {
    format!("Reminder set for {when}: {text}")
}

/// Calendar events on a day.
///
/// # Arguments
/// * `date` - Day as `YYYY-MM-DD`.
#[agentry::tool(name = "list_events", read_only, concurrency_safe)]
pub(crate) fn list_events(date: String) -> Result<Value, String> {
    let day: jiff::civil::Date = date
        .trim()
        .parse()
        .map_err(|_| format!("{date:?} is not a date as YYYY-MM-DD"))?;
    let events = match day.to_string().as_str() {
        "2026-12-01" => json!([
            {"time": "09:00", "title": "Team standup"},
            {"time": "14:00", "title": "Dentist"}
        ]),
        "2026-12-02" => json!([{"time": "11:00", "title": "Lunch with Ben"}]),
        _ => json!([]),
    };
    Ok(json!({"date": day.to_string(), "events": events}))
}

/// Find flights.
///
/// # Arguments
/// * `origin` - Airport code, e.g. `LIS`.
/// * `destination` - Airport code, e.g. `JFK`.
/// * `date` - Day as `YYYY-MM-DD`.
#[agentry::tool(name = "search_flights", read_only, concurrency_safe)]
pub(crate) fn search_flights(
    origin: String,
    destination: String,
    date: String,
) -> Result<Value, String> {
    let code = |place: &str, what: &str| {
        let place = place.trim().to_uppercase();
        if place.len() == 3 && place.chars().all(|c| c.is_ascii_alphabetic()) {
            Ok(place)
        } else {
            Err(format!(
                "{what} must be an airport code such as LIS, not {place:?}"
            ))
        }
    };
    let (origin, destination) = (code(&origin, "origin")?, code(&destination, "destination")?);
    let day: jiff::civil::Date = date
        .trim()
        .parse()
        .map_err(|_| format!("{date:?} is not a date as YYYY-MM-DD"))?;
    let flight = |number: &str, departs: &str, price: u32, currency: &str| json!({"flight": number, "departs": departs, "price": price, "currency": currency});
    let flights = match (
        origin.as_str(),
        destination.as_str(),
        day.to_string().as_str(),
    ) {
        ("LIS", "LHR", "2026-12-10") => vec![
            flight("TP1350", "07:05", 142, "EUR"),
            flight("BA501", "12:40", 198, "EUR"),
        ],
        ("LHR", "LIS", "2026-12-12") => vec![flight("TP1351", "10:15", 156, "EUR")],
        ("JFK", "SFO", "2026-12-20") => vec![
            flight("UA415", "08:00", 289, "USD"),
            flight("DL1720", "17:30", 254, "USD"),
        ],
        ("JFK", "CDG", "2026-12-18") => vec![
            flight("AF007", "19:30", 612, "USD"),
            flight("DL264", "22:10", 598, "USD"),
        ],
        ("LIS", "JFK", "2026-12-15") => vec![flight("TP207", "11:00", 489, "EUR")],
        _ => Vec::new(),
    };
    Ok(
        json!({"origin": origin, "destination": destination, "date": day.to_string(), "flights": flights}),
    )
}

/// Lower case, trimmed, with the accents this data has folded away.
fn fold(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .map(|c| match c {
            'é' | 'è' | 'ê' => 'e',
            'á' | 'à' | 'ã' => 'a',
            other => other,
        })
        .collect()
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_world_answers_what_the_requests_expect() {
        assert_eq!(
            get_weather("Lisbon".into(), Some("fahrenheit".into())).unwrap()["temperature"],
            69.8
        );
        assert_eq!(
            get_weather("paris, France".into(), None).unwrap()["temperature"],
            14.0
        );
        assert!(get_weather("Atlantis".into(), None).is_err());
        assert_eq!(
            convert_currency(75.0, "eur".into(), "CAD".into()).unwrap()["amount"],
            111.68
        );
        assert_eq!(
            convert_currency(20.0, "GBP".into(), "INR".into()).unwrap()["amount"],
            2103.8
        );
        assert_eq!(search_contacts("ana".into()).as_array().unwrap().len(), 2);
        assert_eq!(
            search_contacts("Chloe".into())[0]["email"],
            "chloe.martin@example.fr"
        );
        assert_eq!(search_contacts("".into()), json!([]));
        assert!(send_email("Ben".into(), None, "hi".into()).is_err());
        assert_eq!(
            list_events("2026-12-03".into()).unwrap()["events"],
            json!([])
        );
        assert!(list_events("tomorrow".into()).is_err());
        assert_eq!(
            search_flights("lis".into(), "LHR".into(), "2026-12-10".into()).unwrap()["flights"][0]
                ["flight"],
            "TP1350"
        );
        assert!(search_flights("Lisbon".into(), "LHR".into(), "2026-12-10".into()).is_err());
    }
}
