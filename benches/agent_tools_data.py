#!/usr/bin/env python3
"""Writes benches/data/agent-tools/bfcl/: single-tool agent tasks in BFCL's format.

BFCL's function descriptions rarely carry examples; agents' tools often do
("a city name, e.g. `Paris`"). These tasks give the model one tool described
the way agent tools are, with an example value in the descriptions, and ask
for values unlike the example, so a model that copies the example fails.
Scored by `agentry-eval bfcl --datasets benches/data/agent-tools` like BFCL
(`simple_python`: one call; `parallel`: several calls to the one tool;
`irrelevance`: no call). Written for agentry (issue 15); run this script
again after editing it.
"""

import json
import pathlib

S, N, I, B = "string", "number", "integer", "boolean"


def tool(name, description, props, required):
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                key: dict({"type": kind, "description": text}, **extra)
                for key, (kind, text, extra) in props.items()
            },
            "required": required,
        },
    }


def p(kind, text, **extra):
    return (kind, text, extra)


TOOLS = {
    "calculator": tool(
        "calculator",
        "Evaluate an arithmetic expression and return the number.",
        {"expression": p(S, "Arithmetic such as `(2 + 3) * 4.5`.")},
        ["expression"],
    ),
    "get_weather": tool(
        "get_weather",
        "Current weather for a city.",
        {
            "city": p(S, "City name, e.g. `Paris`."),
            "unit": p(S, "Temperature unit.", enum=["celsius", "fahrenheit"]),
        },
        ["city"],
    ),
    "search_web": tool(
        "search_web",
        "Search the web and return the top results with titles and links.",
        {
            "query": p(S, "Search terms, e.g. `rust async book`."),
            "max_results": p(I, "How many results, e.g. 5."),
        },
        ["query"],
    ),
    "send_email": tool(
        "send_email",
        "Send an email from the user's account.",
        {
            "to": p(S, "Recipient address such as `alice@example.com`."),
            "subject": p(S, "Subject line, e.g. `Lunch on Friday?`."),
            "body": p(S, "Plain-text body."),
        },
        ["to", "subject", "body"],
    ),
    "create_event": tool(
        "create_event",
        "Add an event to the user's calendar.",
        {
            "title": p(S, "What the event is, e.g. `Dentist`."),
            "start": p(S, "ISO 8601 date and time, e.g. `2024-05-01T09:30`."),
            "duration_minutes": p(I, "Length in minutes, e.g. 30."),
        },
        ["title", "start"],
    ),
    "convert_currency": tool(
        "convert_currency",
        "Convert an amount of money between currencies at today's rate.",
        {
            "amount": p(N, "How much, e.g. 100."),
            "from_currency": p(S, "ISO 4217 code such as `USD`."),
            "to_currency": p(S, "ISO 4217 code such as `EUR`."),
        },
        ["amount", "from_currency", "to_currency"],
    ),
    "translate": tool(
        "translate",
        "Translate text into another language.",
        {
            "text": p(S, "The text to translate."),
            "target_language": p(S, "Language code such as `fr` or `de`."),
        },
        ["text", "target_language"],
    ),
    "get_stock_price": tool(
        "get_stock_price",
        "Latest trading price of a listed company's stock.",
        {"ticker": p(S, "Ticker symbol, e.g. `AAPL`.")},
        ["ticker"],
    ),
    "run_sql": tool(
        "run_sql",
        "Run a read-only SQL query against the analytics database and return the rows.",
        {"query": p(S, "One SQL statement, e.g. `SELECT name FROM users LIMIT 10`.")},
        ["query"],
    ),
    "read_file": tool(
        "read_file",
        "Read a text file from the project workspace.",
        {"path": p(S, "Path relative to the workspace root, e.g. `src/main.rs`.")},
        ["path"],
    ),
    "set_timer": tool(
        "set_timer",
        "Start a countdown timer that rings when it ends.",
        {
            "minutes": p(I, "Length in minutes, e.g. 15."),
            "label": p(S, "Optional name shown when it rings, e.g. `tea`."),
        },
        ["minutes"],
    ),
    "define_word": tool(
        "define_word",
        "Dictionary definition of an English word.",
        {"word": p(S, "A single word, e.g. `serendipity`.")},
        ["word"],
    ),
    "get_time": tool(
        "get_time",
        "Current local time in a time zone.",
        {"timezone": p(S, "IANA time zone such as `Europe/Paris`.")},
        ["timezone"],
    ),
    "convert_units": tool(
        "convert_units",
        "Convert a measurement from one unit to another.",
        {
            "value": p(N, "The quantity, e.g. 3.5."),
            "from_unit": p(S, "Unit symbol such as `km`."),
            "to_unit": p(S, "Unit symbol such as `mi`."),
        },
        ["value", "from_unit", "to_unit"],
    ),
    "create_issue": tool(
        "create_issue",
        "Open an issue in a GitHub repository.",
        {
            "repo": p(S, "owner/name, e.g. `rust-lang/rust`."),
            "title": p(S, "One-line summary, e.g. `Crash on empty input`."),
        },
        ["repo", "title"],
    ),
    "fetch_url": tool(
        "fetch_url",
        "Download a web page and return its text.",
        {"url": p(S, "Full URL such as `https://example.com/docs`.")},
        ["url"],
    ),
    "add_todo": tool(
        "add_todo",
        "Add an item to the user's to-do list.",
        {
            "item": p(S, "What to do, e.g. `Buy milk`."),
            "due": p(S, "Optional due date as YYYY-MM-DD, e.g. `2024-06-30`."),
        },
        ["item"],
    ),
    "geocode": tool(
        "geocode",
        "Latitude and longitude of a street address or place.",
        {"address": p(S, "Address or place, e.g. `10 Downing Street, London`.")},
        ["address"],
    ),
    "run_shell": tool(
        "run_shell",
        "Run a shell command in the sandbox and return its output.",
        {"command": p(S, "A shell command such as `ls -la`.")},
        ["command"],
    ),
    "search_flights": tool(
        "search_flights",
        "Find flights between two airports on a date.",
        {
            "origin": p(S, "IATA airport code such as `JFK`."),
            "destination": p(S, "IATA airport code such as `LHR`."),
            "date": p(S, "Departure date as YYYY-MM-DD, e.g. `2024-07-04`."),
        },
        ["origin", "destination", "date"],
    ),
}

OPT = ""  # BFCL's "may be omitted"

# (tool, question, [{argument: [accepted values]}]): one call each.
SIMPLE = [
    ("calculator", "What is 17.5 times 4, plus 12?",
     [{"expression": ["17.5 * 4 + 12", "17.5*4+12", "(17.5 * 4) + 12", "(17.5*4)+12", "17.5 x 4 + 12"]}]),
    ("calculator", "How much is 1250 divided by 8?",
     [{"expression": ["1250 / 8", "1250/8"]}]),
    ("get_weather", "Is it raining in Lisbon right now?",
     [{"city": ["Lisbon"], "unit": [OPT, "celsius"]}]),
    ("get_weather", "What's the temperature in Chicago in Fahrenheit?",
     [{"city": ["Chicago"], "unit": ["fahrenheit"]}]),
    ("search_web", "Find me articles about the James Webb telescope's latest discoveries.",
     [{"query": ["James Webb telescope latest discoveries", "James Webb telescope discoveries",
                 "James Webb Space Telescope latest discoveries", "James Webb telescope's latest discoveries",
                 "articles about the James Webb telescope's latest discoveries"],
       "max_results": [OPT, 5, 10]}]),
    ("search_web", "Search for the three best sourdough bread recipes.",
     [{"query": ["best sourdough bread recipes", "sourdough bread recipes", "best sourdough bread recipe",
                 "three best sourdough bread recipes"],
       "max_results": [3]}]),
    ("send_email", "Email bob@acme.io with the subject 'Invoice 42' and say the invoice is attached.",
     [{"to": ["bob@acme.io"], "subject": ["Invoice 42"],
       "body": ["The invoice is attached.", "The invoice is attached", "the invoice is attached",
                "Hi Bob, the invoice is attached.", "Hi Bob,\n\nThe invoice is attached."]}]),
    ("send_email", "Send an email to maria.lopez@uni.edu titled 'Thesis draft' saying: I will send the draft on Monday.",
     [{"to": ["maria.lopez@uni.edu"], "subject": ["Thesis draft"],
       "body": ["I will send the draft on Monday.", "I will send the draft on Monday"]}]),
    ("create_event", "Put a team standup on my calendar for 2025-03-14 at 10:00, 15 minutes.",
     [{"title": ["Team standup", "standup", "team stand-up"], "start": ["2025-03-14T10:00", "2025-03-14T10:00:00"],
       "duration_minutes": [15]}]),
    ("create_event", "Schedule 'Flight to Rome' on 2025-08-02 at 07:45.",
     [{"title": ["Flight to Rome"], "start": ["2025-08-02T07:45", "2025-08-02T07:45:00"],
       "duration_minutes": [OPT]}]),
    ("convert_currency", "How many Japanese yen is 250 British pounds?",
     [{"amount": [250], "from_currency": ["GBP"], "to_currency": ["JPY"]}]),
    ("convert_currency", "Convert 1,000 Swiss francs to Canadian dollars.",
     [{"amount": [1000], "from_currency": ["CHF"], "to_currency": ["CAD"]}]),
    ("translate", "Translate 'Where is the train station?' into Spanish.",
     [{"text": ["Where is the train station?"], "target_language": ["es", "Spanish"]}]),
    ("translate", "How do you say 'good morning, my friend' in Italian?",
     [{"text": ["good morning, my friend", "Good morning, my friend"], "target_language": ["it", "Italian"]}]),
    ("get_stock_price", "What's Microsoft trading at?",
     [{"ticker": ["MSFT"]}]),
    ("get_stock_price", "Give me the current share price of Tesla.",
     [{"ticker": ["TSLA"]}]),
    ("run_sql", "From the orders table, count how many orders there are.",
     [{"query": ["SELECT COUNT(*) FROM orders", "SELECT COUNT(*) FROM orders;", "SELECT count(*) FROM orders",
                 "SELECT COUNT(*) AS order_count FROM orders", "SELECT COUNT(*) AS total_orders FROM orders",
                 "SELECT COUNT(*) AS count FROM orders", "SELECT COUNT(id) FROM orders"]}]),
    ("run_sql", "List the email of every customer in the customers table whose country is 'NZ'.",
     [{"query": ["SELECT email FROM customers WHERE country = 'NZ'", "SELECT email FROM customers WHERE country = 'NZ';",
                 "SELECT email FROM customers WHERE country='NZ'"]}]),
    ("read_file", "Show me what's in Cargo.toml.",
     [{"path": ["Cargo.toml"]}]),
    ("read_file", "Open docs/setup.md so I can see the installation steps.",
     [{"path": ["docs/setup.md"]}]),
    ("set_timer", "Set a timer for 45 minutes for the roast.",
     [{"minutes": [45], "label": [OPT, "roast", "the roast"]}]),
    ("set_timer", "Remind me in 3 minutes.",
     [{"minutes": [3], "label": [OPT, "reminder", "Reminder"]}]),
    ("define_word", "What does 'ephemeral' mean?",
     [{"word": ["ephemeral"]}]),
    ("define_word", "Define the word obfuscate.",
     [{"word": ["obfuscate"]}]),
    ("get_time", "What time is it in Tokyo?",
     [{"timezone": ["Asia/Tokyo"]}]),
    ("get_time", "What's the time in New York right now?",
     [{"timezone": ["America/New_York"]}]),
    ("convert_units", "How many kilograms is 180 pounds?",
     [{"value": [180], "from_unit": ["lb", "lbs", "pound", "pounds"], "to_unit": ["kg", "kilogram", "kilograms"]}]),
    ("convert_units", "Convert 2 litres to US cups.",
     [{"value": [2], "from_unit": ["l", "L", "liter", "litre", "liters", "litres"],
       "to_unit": ["cup", "cups", "US cup", "us_cup", "cup_us", "US cups"]}]),
    ("create_issue", "Open an issue on tokio-rs/axum titled 'Router panics on empty path'.",
     [{"repo": ["tokio-rs/axum"], "title": ["Router panics on empty path"]}]),
    ("create_issue", "File a bug in serde-rs/json: 'Float parsing loses precision'.",
     [{"repo": ["serde-rs/json"], "title": ["Float parsing loses precision"]}]),
    ("fetch_url", "Get the text of https://www.rust-lang.org/learn.",
     [{"url": ["https://www.rust-lang.org/learn"]}]),
    ("fetch_url", "Download the page at https://news.ycombinator.com and give me its text.",
     [{"url": ["https://news.ycombinator.com", "https://news.ycombinator.com/"]}]),
    ("add_todo", "Add 'renew passport' to my to-do list.",
     [{"item": ["renew passport", "Renew passport"], "due": [OPT]}]),
    ("add_todo", "Add a to-do to call the plumber, due 2025-02-10.",
     [{"item": ["call the plumber", "Call the plumber", "call plumber", "Call plumber"], "due": ["2025-02-10"]}]),
    ("geocode", "Where exactly is the Eiffel Tower? I need coordinates.",
     [{"address": ["Eiffel Tower", "Eiffel Tower, Paris", "Eiffel Tower, Paris, France"]}]),
    ("geocode", "Find the coordinates of 1600 Pennsylvania Avenue, Washington DC.",
     [{"address": ["1600 Pennsylvania Avenue, Washington DC", "1600 Pennsylvania Avenue, Washington, DC",
                   "1600 Pennsylvania Avenue NW, Washington, DC", "1600 Pennsylvania Avenue, Washington D.C."]}]),
    ("run_shell", "How much free disk space is there? Use df -h.",
     [{"command": ["df -h"]}]),
    ("run_shell", "Show the last 20 lines of /var/log/syslog.",
     [{"command": ["tail -n 20 /var/log/syslog", "tail -20 /var/log/syslog", "tail -n20 /var/log/syslog"]}]),
    ("search_flights", "Find flights from SFO to Narita (NRT) on 2025-05-20.",
     [{"origin": ["SFO"], "destination": ["NRT"], "date": ["2025-05-20"]}]),
    ("search_flights", "Any flights from Berlin BER to Madrid MAD on 2025-09-03?",
     [{"origin": ["BER"], "destination": ["MAD"], "date": ["2025-09-03"]}]),
]

# (tool, question, [calls]): several calls to the one tool, in any order.
PARALLEL = [
    ("calculator", "Work out 12 * 7 and 144 / 16.",
     [{"expression": ["12 * 7", "12*7"]}, {"expression": ["144 / 16", "144/16"]}]),
    ("get_weather", "What's the weather in Oslo, Cairo and Lima?",
     [{"city": ["Oslo"], "unit": [OPT, "celsius"]}, {"city": ["Cairo"], "unit": [OPT, "celsius"]},
      {"city": ["Lima"], "unit": [OPT, "celsius"]}]),
    ("convert_currency", "Convert 50 USD to euros and 50 USD to pounds.",
     [{"amount": [50], "from_currency": ["USD"], "to_currency": ["EUR"]},
      {"amount": [50], "from_currency": ["USD"], "to_currency": ["GBP"]}]),
    ("get_stock_price", "Compare the prices of Nvidia and AMD stock.",
     [{"ticker": ["NVDA"]}, {"ticker": ["AMD"]}]),
    ("translate", "Translate 'thank you' into French and into German.",
     [{"text": ["thank you", "Thank you"], "target_language": ["fr", "French"]},
      {"text": ["thank you", "Thank you"], "target_language": ["de", "German"]}]),
    ("define_word", "Define 'laconic' and 'verbose'.",
     [{"word": ["laconic"]}, {"word": ["verbose"]}]),
    ("get_time", "What time is it in London and in Sydney?",
     [{"timezone": ["Europe/London"]}, {"timezone": ["Australia/Sydney"]}]),
    ("read_file", "Read README.md and LICENSE.",
     [{"path": ["README.md"]}, {"path": ["LICENSE"]}]),
    ("set_timer", "Set one timer for 10 minutes and another for 25 minutes.",
     [{"minutes": [10], "label": [OPT]}, {"minutes": [25], "label": [OPT]}]),
    ("add_todo", "Add 'water the plants' and 'pay rent' to my to-do list.",
     [{"item": ["water the plants", "Water the plants"], "due": [OPT]},
      {"item": ["pay rent", "Pay rent"], "due": [OPT]}]),
    ("geocode", "Get coordinates for Machu Picchu and for Petra.",
     [{"address": ["Machu Picchu", "Machu Picchu, Peru"]}, {"address": ["Petra", "Petra, Jordan"]}]),
    ("convert_units", "Convert 5 miles to kilometres and 20 kilograms to pounds.",
     [{"value": [5], "from_unit": ["mi", "mile", "miles"], "to_unit": ["km", "kilometer", "kilometre", "kilometers", "kilometres"]},
      {"value": [20], "from_unit": ["kg", "kilogram", "kilograms"], "to_unit": ["lb", "lbs", "pound", "pounds"]}]),
    ("fetch_url", "Fetch https://example.org/a and https://example.org/b.",
     [{"url": ["https://example.org/a"]}, {"url": ["https://example.org/b"]}]),
    ("search_flights", "Look for flights from LAX to SEA on 2025-06-01 and back from SEA to LAX on 2025-06-05.",
     [{"origin": ["LAX"], "destination": ["SEA"], "date": ["2025-06-01"]},
      {"origin": ["SEA"], "destination": ["LAX"], "date": ["2025-06-05"]}]),
    ("create_issue", "In octo/app open two issues: 'Login button misaligned' and 'Dark mode flickers'.",
     [{"repo": ["octo/app"], "title": ["Login button misaligned"]},
      {"repo": ["octo/app"], "title": ["Dark mode flickers"]}]),
    ("search_web", "Search the web for 'tokio tutorial' and, separately, for 'axum middleware'.",
     [{"query": ["tokio tutorial"], "max_results": [OPT]}, {"query": ["axum middleware"], "max_results": [OPT]}]),
]

# (tool, question): no call is right.
IRRELEVANT = [
    ("calculator", "Write a haiku about autumn leaves."),
    ("get_weather", "Who wrote the novel 'Middlemarch'?"),
    ("search_flights", "What's a good recipe for banana bread?"),
    ("send_email", "Explain what a binary search tree is."),
    ("get_stock_price", "How do I say hello in Japanese?"),
    ("run_sql", "Tell me a joke about penguins."),
    ("set_timer", "What is the capital of Australia?"),
    ("define_word", "Convert 30 degrees Celsius to Fahrenheit."),
    ("geocode", "Summarise the plot of Hamlet in two sentences."),
    ("translate", "What is 15% of 80?"),
    ("create_issue", "Recommend three science fiction films."),
    ("convert_currency", "What year did the Berlin Wall fall?"),
    ("read_file", "How many legs does a spider have?"),
    ("add_todo", "Why is the sky blue?"),
    ("get_time", "Give me a synonym for 'happy'."),
    ("fetch_url", "What's the difference between a list and a tuple in Python?"),
]


def write(folder, name, rows):
    with open(folder / name, "w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")


def main():
    folder = pathlib.Path(__file__).parent / "data" / "agent-tools" / "bfcl"
    folder.mkdir(parents=True, exist_ok=True)
    for category, rows in [("simple_python", SIMPLE), ("parallel", PARALLEL)]:
        questions, answers = [], []
        for index, (name, question, calls) in enumerate(rows):
            id = f"{category}_{index}"
            questions.append({"id": id, "question": [[{"role": "user", "content": question}]],
                              "function": [TOOLS[name]]})
            answers.append({"id": id, "ground_truth": [{name: call} for call in calls]})
        write(folder, f"{category}.jsonl", questions)
        write(folder, f"{category}_answers.jsonl", answers)
    write(folder, "irrelevance.jsonl", [
        {"id": f"irrelevance_{index}", "question": [[{"role": "user", "content": question}]],
         "function": [TOOLS[name]]}
        for index, (name, question) in enumerate(IRRELEVANT)
    ])


if __name__ == "__main__":
    main()
