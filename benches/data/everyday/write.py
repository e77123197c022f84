#!/usr/bin/env python3
"""Write benches/data/everyday/requests.jsonl: everyday requests to two agents.

Written on 2026-11-27, before any change made for issue 41, and frozen
(BENCHMARKS.md records the file's sha256). Do not edit the requests to make a
number look better: add a new file instead.

Two agents:
- `demo`: `agentry run` as it ships (calculator, current_time,
  convert_units, read_file over `files/`).
- `assistant`: eight tools described the way real tools are (a sentence,
  example values), answering from fixed data (`agentry-eval everyday` holds it).

Each request has
- `turns`: the user's messages; every turn but the last is run first, and its
  answer kept as the conversation (follow-ups);
- `calls`: the calls the last turn should make (any order), each with the
  arguments that are checked: a list of accepted values per argument (numbers
  by value, text without case as a part of what was written, `""`: the
  argument may be left out); `[]`: no call; `null`: calls are not scored;
- `answer`: checks of the final answer, all of which must hold:
  `number` (some number in the answer within `tol` of `value`),
  `text` (one of `any` appears, without case), `all` (each appears),
  `weekday` / `date` / `time` / `year` (now, in `zone`);
- `style`: plain, terse, chatty, misspelt, two (two requests in one),
  followup, nofit (no tool fits);
- `split`: `tune` or `test`, by a fixed rule: the first byte of
  sha256(id) even means tune.
"""

import hashlib
import json
import pathlib

OUT = pathlib.Path(__file__).with_name("requests.jsonl")
rows = []


def add(agent, style, turns, calls, *answer):
    if isinstance(turns, str):
        turns = [turns]
    rid = f"{agent}-{len([r for r in rows if r['agent'] == agent]) + 1:03d}"
    split = "tune" if hashlib.sha256(rid.encode()).digest()[0] % 2 == 0 else "test"
    rows.append(
        {
            "id": rid,
            "agent": agent,
            "style": style,
            "split": split,
            "turns": turns,
            "calls": calls,
            "answer": list(answer),
        }
    )


def call(name, **args):
    return {"name": name, "args": {k: v if isinstance(v, list) else [v] for k, v in args.items()}}


def num(value, tol=0.01):
    return {"check": "number", "value": value, "tol": tol}


def text(*any_of):
    return {"check": "text", "any": list(any_of)}


def every(*all_of):
    return {"check": "all", "all": list(all_of)}


def now(check, zone):
    return {"check": check, "zone": zone}


CALC = call("calculator")


def conv(value):
    return call("convert_units", value=value)


def clock(*zones):
    return call("current_time", timezone=list(zones))


def read(path):
    return call("read_file", path=path)


NOT_FOUND = text("not found", "no such", "doesn't exist", "does not exist", "couldn't", "could not",
                 "cannot", "can't", "unable", "no file", "not exist")

# --- demo: calculator
add("demo", "plain", "What is 17% of 2,350?", [CALC], num(399.5))
add("demo", "plain", "What's the square root of 2025, plus 11?", [CALC], num(56))
add("demo", "chatty", "Hey! I'm splitting a dinner bill of 213.60 with five friends, so six of us in total. How much does each person pay?", [CALC], num(35.6))
add("demo", "misspelt", "whats 45 tims 12", [CALC], num(540))
add("demo", "plain", "Compute 2 to the power of 16.", [CALC], num(65536))
add("demo", "terse", "3.5*4.2-1.7", [CALC], num(13.0))
add("demo", "plain", "How much is a 15 percent tip on a $86.40 meal?", [CALC], num(12.96))
add("demo", "chatty", "If I put away 250 a month for 3 years, how much will I have saved? No interest, just the sum.", [CALC], num(9000))
add("demo", "plain", "What is 7 factorial?", [CALC], num(5040))
add("demo", "terse", "average of 12, 18, 27 and 43", [CALC], num(25))
add("demo", "plain", "What's 1000 divided by 7, to two decimals?", [CALC], num(142.86, 0.01))
add("demo", "plain", "A jacket costs 120 euros and is 30% off. What's the sale price?", [CALC], num(84))
add("demo", "misspelt", "calcualte 987 minus 658", [CALC], num(329))
add("demo", "chatty", "Doing my taxes, ugh. Could you add up 1,245.50 and 3,870.25 and 612.80 for me?", [CALC], num(5728.55))
add("demo", "plain", "What's 2^10 + 3^5?", [CALC], num(1267))
add("demo", "terse", "12 squared?", [CALC], num(144))
add("demo", "plain", "How many seconds are there in a week?", [CALC], num(604800))
add("demo", "plain", "What is 45 mod 7?", [CALC], num(3))
add("demo", "terse", "half of 3,418", [CALC], num(1709))
add("demo", "plain", "What's 8% VAT on 1,499?", [CALC], num(119.92))
add("demo", "plain", "A car goes 340 km on 25 liters of fuel. How many km per liter is that?", [CALC], num(13.6))

# --- demo: the time
add("demo", "plain", "What time is it in Tokyo?", [clock("Asia/Tokyo")], now("time", "Asia/Tokyo"))
add("demo", "terse", "time in NYC", [clock("America/New_York")], now("time", "America/New_York"))
add("demo", "plain", "What's today's date?", [clock("", "UTC", "Etc/UTC")], now("date", "UTC"))
add("demo", "plain", "What day of the week is it in Sydney right now?", [clock("Australia/Sydney")], now("weekday", "Australia/Sydney"))
add("demo", "misspelt", "wat time is it in londn", [clock("Europe/London")], now("time", "Europe/London"))
add("demo", "chatty", "My sister lives in Los Angeles and I don't want to wake her up. What time is it there right now?", [clock("America/Los_Angeles")], now("time", "America/Los_Angeles"))
add("demo", "plain", "What's the current time in India?", [clock("Asia/Kolkata", "Asia/Calcutta")], now("time", "Asia/Kolkata"))
add("demo", "plain", "What's the date in Auckland?", [clock("Pacific/Auckland")], now("date", "Pacific/Auckland"))
add("demo", "terse", "current UTC time", [clock("", "UTC", "Etc/UTC")], now("time", "UTC"))
add("demo", "plain", "What year is it?", [clock("", "UTC", "Etc/UTC")], now("year", "UTC"))

# --- demo: units
add("demo", "plain", "What's 451 °F in Celsius?", [conv(451)], num(232.78, 0.1))
add("demo", "chatty", "I'm 5 feet 11 inches tall. How tall is that in centimeters?", None, num(180.34, 0.5))
add("demo", "terse", "convert 26.2 miles to km", [conv(26.2)], num(42.16, 0.05))
add("demo", "plain", "How many pounds is 70 kg?", [conv(70)], num(154.32, 0.1))
add("demo", "terse", "5 gal in liters", [conv(5)], num(18.93, 0.05))
add("demo", "misspelt", "how many kilograms in 12 punds", [conv(12)], num(5.44, 0.02))
add("demo", "misspelt", "whats -40 celsius in fahrenheit", [conv(-40)], num(-40))
add("demo", "chatty", "I'm baking from an American recipe that says 350 degrees. My oven is in Celsius, what should I set it to?", [conv(350)], num(176.67, 0.6))
add("demo", "plain", "How many ounces are in 2.5 kilograms?", [conv(2.5)], num(88.18, 0.1))
add("demo", "plain", "Convert 750 ml to liters.", [conv(750)], num(0.75))
add("demo", "plain", "How many inches is 30 cm?", [conv(30)], num(11.81, 0.02))
add("demo", "terse", "37.5 C in F", [conv(37.5)], num(99.5, 0.05))
add("demo", "plain", "How far is 10 km in miles?", [conv(10)], num(6.21, 0.01))
add("demo", "plain", "How many meters are in a mile?", [conv(1)], num(1609.34, 0.5))
add("demo", "chatty", "The room is at 20 degrees Celsius, what is that in Kelvin? It's for my physics homework.", [conv(20)], num(293.15, 0.01))
add("demo", "terse", "how many feet is 100 yards", [conv(100)], num(300))
add("demo", "plain", "A marathon is 42.195 km. How many miles is that?", [conv(42.195)], num(26.22, 0.01))

# --- demo: files
add("demo", "plain", "What does notes.txt say?", [read("notes.txt")], every("plumber", "flowerpot"))
add("demo", "plain", "Read todo.md and tell me the first item.", [read("todo.md")], text("car insurance"))
add("demo", "plain", "How many eggs does the banana bread in recipe.txt need?", [read("recipe.txt")], text("2 eggs", "two eggs", "two", "2"))
add("demo", "terse", "port in config.json?", [read("config.json")], num(8443, 0))
add("demo", "plain", "When is the quarterly planning meeting? It's in meeting.md.", [read("meeting.md")], every("thursday", "10:30"))
add("demo", "plain", "What's on my shopping list (shopping.csv)?", [read("shopping.csv")], every("apples", "milk", "coffee", "rice"))
add("demo", "terse", "open poem.txt", [read("poem.txt")], text("fog"))
add("demo", "plain", "What does missing.txt say?", [read("missing.txt")], NOT_FOUND)
add("demo", "chatty", "I left myself some notes in notes.txt. When were the library books due again?", [read("notes.txt")], text("december 4", "dec 4", "4 december", "december 4th", "4th of december"))
add("demo", "misspelt", "whats in the todo file todo.md", [read("todo.md")], every("insurance", "dentist"))
add("demo", "plain", "How long should the banana bread bake? The recipe is in recipe.txt.", [read("recipe.txt")], num(55, 0))
add("demo", "plain", "Who is coming to the meeting in meeting.md?", [read("meeting.md")], every("priya", "tom", "lena"))
add("demo", "plain", "Which database host does config.json point to?", [read("config.json")], text("db.internal"))
add("demo", "plain", "How many items are on the list in todo.md?", [read("todo.md")], num(4, 0))
add("demo", "terse", "where's the spare key? check notes.txt", [read("notes.txt")], text("flowerpot", "flower pot"))
add("demo", "plain", "How much will the coffee and the milk in shopping.csv cost together?", None, num(10.18, 0.005))
add("demo", "plain", "What log level is set in config.json?", [read("config.json")], text("warn"))
add("demo", "terse", "read secret.txt", [read("secret.txt")], NOT_FOUND)
add("demo", "plain", "Summarise meeting.md in one sentence.", [read("meeting.md")], text("budget", "hiring", "office move"))

# --- demo: two requests in one
add("demo", "two", "What's 15% of 80, and what time is it in Paris?", [CALC, clock("Europe/Paris")], num(12), now("time", "Europe/Paris"))
add("demo", "two", "Convert 10 miles to km and 10 kg to pounds.", [conv(10), conv(10)], num(16.09, 0.01), num(22.05, 0.01))
add("demo", "two", "What time is it in Tokyo and in New York?", [clock("Asia/Tokyo"), clock("America/New_York")], now("time", "Asia/Tokyo"), now("time", "America/New_York"))
add("demo", "two", "Add 234 and 567, and tell me what 5 feet is in cm.", [CALC, conv(5)], num(801), num(152.4, 0.05))
add("demo", "two", "What's the date in Sydney, and what's 3 cubed?", [clock("Australia/Sydney"), CALC], now("date", "Australia/Sydney"), num(27))
add("demo", "two", "Two quick ones: how many liters is 3 gallons, and what's 17 times 23?", [conv(3), CALC], num(11.36, 0.01), num(391))

# --- demo: follow-ups
add("demo", "followup", ["What's 120 divided by 8?", "And times 3?"], [CALC], num(45))
add("demo", "followup", ["Convert 5 miles to kilometers.", "What about 12?"], [conv(12)], num(19.31, 0.01))
add("demo", "followup", ["What time is it in Berlin?", "And in Chicago?"], [clock("America/Chicago")], now("time", "America/Chicago"))
add("demo", "followup", ["Read notes.txt", "When are the library books due?"], None, text("december 4", "dec 4", "4 december", "december 4th", "4th of december"))
add("demo", "followup", ["How many pounds is 50 kg?", "and 80?"], [conv(80)], num(176.37, 0.05))
add("demo", "followup", ["What's 25% of 360?", "Now add 17 to that."], None, num(107))
add("demo", "followup", ["what's in todo.md", "which one is about the dentist?"], None, text("january"))

# --- demo: no tool fits
add("demo", "nofit", "Write a haiku about autumn.", [])
add("demo", "nofit", "What is the capital of Canada?", [], text("ottawa"))
add("demo", "nofit", "Who wrote Pride and Prejudice?", [], text("austen"))
add("demo", "nofit", "Tell me a joke about programmers.", [])
add("demo", "nofit", "Translate 'good morning' into Spanish.", [], text("buenos días", "buenos dias"))
add("demo", "nofit", "What's a synonym for happy?", [])
add("demo", "nofit", "Explain what a black hole is in two sentences.", [])
add("demo", "nofit", "hi!", [])
add("demo", "nofit", "Thanks, that's all.", [])
add("demo", "nofit", "What's the weather like in Paris?", [])
add("demo", "nofit", "Recommend a good book about history.", [])
add("demo", "nofit", "Can you send an email to my boss?", [])
add("demo", "nofit", "How do I reverse a list in Python?", [], text("reverse", "[::-1]"))

# --- assistant: weather
W = "get_weather"
add("assistant", "plain", "What's the weather in Paris?", [call(W, city="Paris")], num(14, 0.5), text("rain"))
add("assistant", "terse", "weather tokyo", [call(W, city="Tokyo")], num(9, 0.5), text("cloud"))
add("assistant", "plain", "Is it snowing in Chicago?", [call(W, city="Chicago")], text("yes", "snow"))
add("assistant", "plain", "How warm is it in Lisbon, in Fahrenheit?", [call(W, city="Lisbon", unit="fahrenheit")], num(69.8, 0.5))
add("assistant", "misspelt", "wether in berln today?", [call(W, city="Berlin")], num(6, 0.5))
add("assistant", "chatty", "I'm flying to Sydney next week and have no idea what to pack. What's it like there at the moment?", [call(W, city="Sydney")], num(27, 0.5))
add("assistant", "plain", "Do I need an umbrella in Paris today?", [call(W, city="Paris")], text("yes", "rain"))
add("assistant", "plain", "Compare the weather in Lisbon and Berlin.", [call(W, city="Lisbon"), call(W, city="Berlin")], num(21, 0.5), num(6, 0.5))
add("assistant", "plain", "Is it colder in Chicago or Toronto right now?", [call(W, city="Chicago"), call(W, city="Toronto")], text("chicago"))
add("assistant", "terse", "whats the temp in sydney in F", [call(W, city="Sydney", unit="fahrenheit")], num(80.6, 0.5))

# --- assistant: currency
C = "convert_currency"
add("assistant", "plain", "How much is 100 USD in EUR?", [call(C, amount=100, **{"from": "USD", "to": "EUR"})], num(92, 0.05))
add("assistant", "terse", "50 gbp to usd", [call(C, amount=50, **{"from": "GBP", "to": "USD"})], num(63.29, 0.05))
add("assistant", "plain", "convert 2500 yen to euros", [call(C, amount=2500, **{"from": "JPY", "to": "EUR"})], num(15.21, 0.05))
add("assistant", "chatty", "My hotel in Zurich costs 180 francs a night, what's that in dollars?", [call(C, amount=180, **{"from": "CHF", "to": "USD"})], num(204.55, 0.1))
add("assistant", "misspelt", "how mutch is 75 euro in canadain dollars", [call(C, amount=75, **{"from": "EUR", "to": "CAD"})], num(111.68, 0.1))
add("assistant", "plain", "How many rupees do I get for 20 pounds?", [call(C, amount=20, **{"from": "GBP", "to": "INR"})], num(2103.80, 1))
add("assistant", "plain", "Convert 1,000 Canadian dollars into US dollars.", [call(C, amount=1000, **{"from": "CAD", "to": "USD"})], num(729.93, 0.5))
add("assistant", "plain", "What's 30 euros in Swiss francs?", [call(C, amount=30, **{"from": "EUR", "to": "CHF"})], num(28.70, 0.05))

# --- assistant: stocks
S = "get_stock_price"
add("assistant", "plain", "What's Apple's stock price?", [call(S, symbol="AAPL")], num(231.45))
add("assistant", "terse", "TSLA price", [call(S, symbol="TSLA")], num(245.10))
add("assistant", "plain", "How is Nvidia trading?", [call(S, symbol="NVDA")], num(142.37))
add("assistant", "plain", "Which is higher right now, Microsoft or Amazon?", [call(S, symbol="MSFT"), call(S, symbol="AMZN")], text("microsoft", "msft"))
add("assistant", "misspelt", "googel share price pls", [call(S, symbol=["GOOGL", "GOOG"])], num(176.05))
add("assistant", "plain", "If I buy 10 shares of Microsoft, how much does it cost?", [call(S, symbol="MSFT")], num(4182, 1))
add("assistant", "terse", "Amazon stock?", [call(S, symbol="AMZN")], num(203.88))
add("assistant", "chatty", "My friend keeps bragging about his Nvidia shares. How much is one worth today?", [call(S, symbol="NVDA")], num(142.37))

# --- assistant: contacts
K = "search_contacts"
add("assistant", "plain", "What's Ben's email?", [call(K, query="Ben")], text("ben.carter@example.com"))
add("assistant", "terse", "phone number for David Kim", [call(K, query=["David", "Kim"])], text("5555 1234"))
add("assistant", "plain", "Do I have a Chloé in my contacts?", [call(K, query=["Chlo"])], text("martin"))
add("assistant", "misspelt", "find ana's number", [call(K, query="Ana")], every("souza", "lima"))
add("assistant", "plain", "What's Ana Souza's phone number?", [call(K, query=["Ana", "Souza"])], text("912 345 678"))
add("assistant", "terse", "ben carter phone", [call(K, query=["Ben", "Carter"])], text("555 0142", "555-0142"))

# --- assistant: email
E = "send_email"
add("assistant", "plain", "Send an email to ana.souza@example.com saying I'll be 10 minutes late.", [call(E, to="ana.souza@example.com")], text("sent"))
add("assistant", "plain", "Email ben.carter@example.com with the subject 'Invoice' and tell him the invoice is attached.", [call(E, to="ben.carter@example.com", subject="invoice")], text("sent"))
add("assistant", "terse", "email david.kim@example.com: meeting moved to 3pm", [call(E, to="david.kim@example.com")], text("sent"))
add("assistant", "plain", "Send Ben an email asking if he's free for lunch.", [call(K, query="Ben"), call(E, to="ben.carter@example.com")], text("sent"))
add("assistant", "chatty", "It's Chloé's birthday today! Could you email chloe.martin@example.fr and wish her a happy birthday from me?", [call(E, to="chloe.martin@example.fr")], text("sent"))

# --- assistant: reminders
R = "create_reminder"
add("assistant", "plain", "Remind me to call mom on 2026-12-05 at 18:00.", [call(R, text="mom", when="2026-12-05")], text("remind", "set"))
add("assistant", "terse", "set a reminder for tomorrow 9am: dentist", [call(R, text="dentist")], text("remind", "set"))
add("assistant", "chatty", "I always forget to water the plants. Could you remind me on Saturday morning?", [call(R, text="plant")], text("remind", "set"))
add("assistant", "misspelt", "remnd me to pay rent on the 1st", [call(R, text="rent")], text("remind", "set"))
add("assistant", "plain", "Remind me at 2026-12-24 20:00 to wrap the presents.", [call(R, text="present", when="2026-12-24")], text("remind", "set"))

# --- assistant: calendar
V = "list_events"
add("assistant", "plain", "What's on my calendar on 2026-12-01?", [call(V, date="2026-12-01")], every("standup", "dentist"))
add("assistant", "plain", "Do I have anything on December 2nd, 2026?", [call(V, date="2026-12-02")], text("lunch"))
add("assistant", "plain", "Am I free on 2026-12-03?", [call(V, date="2026-12-03")], text("free", "no event", "nothing", "don't have", "do not have", "no meeting", "no appointment"))
add("assistant", "plain", "When is my dentist appointment on Dec 1 2026?", [call(V, date="2026-12-01")], text("14:00", "2 pm", "2pm", "2:00"))
add("assistant", "terse", "what do I have on 2026-12-02", [call(V, date="2026-12-02")], text("11:00", "11 am", "11am"))

# --- assistant: flights
F = "search_flights"
add("assistant", "plain", "Find flights from LIS to LHR on 2026-12-10.", [call(F, origin="LIS", destination="LHR", date="2026-12-10")], text("TP1350", "BA501"))
add("assistant", "plain", "What's the cheapest flight from Lisbon to London on December 10, 2026?", [call(F, origin=["LIS", "Lisbon"], destination=["LHR", "London"], date="2026-12-10")], text("TP1350", "142"))
add("assistant", "terse", "flights JFK to SFO 2026-12-20", [call(F, origin="JFK", destination="SFO", date="2026-12-20")], text("UA415", "DL1720"))
add("assistant", "chatty", "My parents want to visit me in Paris. They fly out of New York (JFK) on 2026-12-18. What flights are there to CDG?", [call(F, origin="JFK", destination="CDG", date="2026-12-18")], text("AF007", "DL264"))
add("assistant", "plain", "Any flights from LHR to LIS on 2026-12-12?", [call(F, origin="LHR", destination="LIS", date="2026-12-12")], text("TP1351", "156"))
add("assistant", "misspelt", "flihgts from lisbon to new york JFK on 2026-12-15", [call(F, origin=["LIS", "Lisbon"], destination="JFK", date="2026-12-15")], text("TP207", "489"))

# --- assistant: two requests in one
add("assistant", "two", "What's the weather in Tokyo and the price of Apple stock?", [call(W, city="Tokyo"), call(S, symbol="AAPL")], num(9, 0.5), num(231.45))
add("assistant", "two", "Convert 200 EUR to USD and tell me Tesla's share price.", [call(C, amount=200, **{"from": "EUR", "to": "USD"}), call(S, symbol="TSLA")], num(217.39, 0.1), num(245.10))
add("assistant", "two", "Find Chloé's email and check the weather in Paris.", [call(K, query=["Chlo"]), call(W, city="Paris")], text("chloe.martin@example.fr"), num(14, 0.5))
add("assistant", "two", "wether in lisbon + nvda price", [call(W, city="Lisbon"), call(S, symbol="NVDA")], num(21, 0.5), num(142.37))

# --- assistant: follow-ups
add("assistant", "followup", ["What's the weather in Berlin?", "And in Paris?"], [call(W, city="Paris")], num(14, 0.5))
add("assistant", "followup", ["How much is 100 dollars in euros?", "and in pounds?"], [call(C, amount=100, **{"from": "USD", "to": "GBP"})], num(79, 0.05))
add("assistant", "followup", ["Look up Ben in my contacts.", "Send him an email saying the report is ready."], [call(E, to="ben.carter@example.com")], text("sent"))
add("assistant", "followup", ["What's on my calendar on 2026-12-01?", "Remind me about the dentist one at 13:30 that day."], [call(R, text="dentist", when="13:30")], text("remind", "set"))
add("assistant", "followup", ["What's Microsoft trading at?", "What about Apple?"], [call(S, symbol="AAPL")], num(231.45))
add("assistant", "followup", ["Find flights from LIS to LHR on 2026-12-10.", "Which one is cheapest?"], None, text("TP1350", "142"))

# --- assistant: no tool fits
add("assistant", "nofit", "Book me a table for two at an Italian restaurant tonight.", [])
add("assistant", "nofit", "What's the capital of Australia?", [], text("canberra"))
add("assistant", "nofit", "Translate 'thank you' into German.", [], text("danke"))
add("assistant", "nofit", "Play some jazz music.", [])
add("assistant", "nofit", "Write a short poem about the sea.", [])
add("assistant", "nofit", "How many legs does a spider have?", [], num(8, 0))
add("assistant", "nofit", "Order me a pizza.", [])
add("assistant", "nofit", "What is 2+2?", [], num(4, 0))
add("assistant", "nofit", "Turn off the living room lights.", [])
add("assistant", "nofit", "Who painted the Mona Lisa?", [], text("leonardo", "da vinci"))
add("assistant", "nofit", "tell me something interesting", [])
add("assistant", "nofit", "What's the population of Japan?", [])

with OUT.open("w") as f:
    for row in rows:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
print(len(rows), "requests:", sum(r["split"] == "tune" for r in rows), "tune,",
      sum(r["split"] == "test" for r in rows), "test")
