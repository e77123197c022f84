"""Writes pii.jsonl: a labelled set for the PII guardrail (agentry-guardrails),
written once before the guardrail was measured on it, and frozen (seeded, so the
same file comes out). Each line: {"id", "text", "pii": [{"kind", "value"}]}.
Positives carry realistic values in everyday sentences; negatives are hard:
dates, times, IP addresses, versions, amounts, order and tracking numbers,
card-length numbers that fail Luhn, IBAN shapes with bad check digits, hashes,
UUIDs, words that look like key prefixes. Lines with an even id tune; odd ids
are held out (BENCHMARKS.md reports them)."""
import json, random

random.seed(20261129)

def luhn_ok(digits):
    s = 0
    for i, d in enumerate(reversed(digits)):
        d = int(d)
        if i % 2 == 1:
            d *= 2
            if d > 9: d -= 9
        s += d
    return s % 10 == 0

def card(prefix, length):
    while True:
        body = prefix + "".join(random.choice("0123456789") for _ in range(length - len(prefix) - 1))
        for check in "0123456789":
            if luhn_ok(body + check):
                return body + check

def not_luhn(length):
    while True:
        n = "".join(random.choice("0123456789") for _ in range(length))
        if n[0] != "0" and not luhn_ok(n):
            return n

def group(n, size=4, sep=" "):
    return sep.join(n[i:i + size] for i in range(0, len(n), size))

def iban(country, bban):
    # ISO 13616 check digits.
    rearranged = bban + country + "00"
    num = "".join(str(int(c, 36)) for c in rearranged)
    check = 98 - int(num) % 97
    return f"{country}{check:02d}{bban}"

BBAN = {
    "DE": lambda: "".join(random.choice("0123456789") for _ in range(18)),
    "FR": lambda: "".join(random.choice("0123456789") for _ in range(23)),
    "ES": lambda: "".join(random.choice("0123456789") for _ in range(20)),
    "NL": lambda: "".join(random.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(4)) + "".join(random.choice("0123456789") for _ in range(10)),
    "GB": lambda: "".join(random.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(4)) + "".join(random.choice("0123456789") for _ in range(14)),
    "IT": lambda: random.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + "".join(random.choice("0123456789") for _ in range(22)),
}

FIRST = ["ana", "li.wei", "j.smith", "maria.garcia", "oskar", "fatima.z", "tom_h", "noor", "p.dupont", "kenji"]
DOMAINS = ["example.com", "mail.example.org", "corp.example.co.uk", "uni.example.edu", "example.io"]

def email():
    return f"{random.choice(FIRST)}{random.choice(['', '+news', '2', '.work'])}@{random.choice(DOMAINS)}"

def phone():
    shapes = [
        lambda: f"+44 20 {random.randint(7000,7999)} {random.randint(1000,9999)}",
        lambda: f"+1 ({random.randint(200,989)}) 555-{random.randint(1000,9999):04d}",
        lambda: f"({random.randint(200,989)}) 555-{random.randint(1000,9999):04d}",
        lambda: f"+33 6 {random.randint(10,99)} {random.randint(10,99)} {random.randint(10,99)} {random.randint(10,99)}",
        lambda: f"06.{random.randint(10,99)}.{random.randint(10,99)}.{random.randint(10,99)}.{random.randint(10,99)}",
        lambda: f"+49 30 {random.randint(1000000,9999999)}",
        lambda: f"+34 {random.randint(600,699)} {random.randint(100,999)} {random.randint(100,999)}",
        lambda: f"0{random.randint(100,999)}-{random.randint(100,999)}-{random.randint(1000,9999)}",
        lambda: f"+81 3-{random.randint(1000,9999)}-{random.randint(1000,9999)}",
        lambda: f"+61412{random.randint(100000,999999)}",
    ]
    return random.choice(shapes)()

def card_number():
    kind = random.choice([("4", 16), ("51", 16), ("37", 15), ("6011", 16), ("35", 16)])
    n = card(*kind)
    style = random.choice(["spaces", "dashes", "plain"])
    return group(n) if style == "spaces" else group(n, sep="-") if style == "dashes" else n

def iban_value():
    country = random.choice(list(BBAN))
    value = iban(country, BBAN[country]())
    return group(value) if random.random() < 0.6 else value

def api_key():
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    r = lambda n, a=alnum: "".join(random.choice(a) for _ in range(n))
    shapes = [
        lambda: "sk-proj-" + r(40),
        lambda: "sk-ant-api03-" + r(48),
        lambda: "ghp_" + r(36),
        lambda: "AKIA" + r(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        lambda: "xoxb-" + r(11, "0123456789") + "-" + r(24),
        lambda: "AIza" + r(35),
        lambda: "glpat-" + r(20),
        lambda: "sk_live_" + r(24),
    ]
    return random.choice(shapes)()

POSITIVE = [
    ("email", email, ["Please send the invoice to {v}.", "My address is {v}, reply there.", "Contact {v} for access.", "cc {v} on the thread", "Is {v} still the right mailbox?"]),
    ("phone", phone, ["Call me on {v} after six.", "The office number is {v}.", "Text {v} if you are late.", "Reach support at {v}", "My mobile: {v}"]),
    ("card", card_number, ["Charge it to {v}, expiry 09/27.", "Card number {v} please.", "I paid with {v} yesterday.", "Use the card ending... actually the full one is {v}.", "Refund to {v}"]),
    ("iban", iban_value, ["Wire the deposit to {v}.", "Our IBAN is {v}.", "Transfer to IBAN {v} by Friday.", "Account: {v}", "Send it to {v} (Sparkasse)."]),
    ("api_key", api_key, ["Here is my key: {v}", "export OPENAI_API_KEY={v}", "The token {v} stopped working.", "config: api_key = \"{v}\"", "Why does {v} get 401?"]),
]

NEGATIVE = [
    lambda: f"The meeting is on {random.randint(2020,2027)}-{random.randint(1,12):02d}-{random.randint(1,28):02d} at {random.randint(8,18)}:{random.choice(['00','30','15'])}.",
    lambda: f"Ping the server at 10.{random.randint(0,255)}.{random.randint(0,255)}.{random.randint(1,254)} and 192.168.{random.randint(0,255)}.{random.randint(1,254)}.",
    lambda: f"Upgrade to version {random.randint(1,9)}.{random.randint(0,30)}.{random.randint(0,99)} before Monday.",
    lambda: f"The total was {random.randint(1,999)},{random.randint(100,999)}.{random.randint(10,99)} euros.",
    lambda: f"Order {not_luhn(16)} has shipped.",
    lambda: f"Tracking number {group(not_luhn(16))}, arriving Thursday.",
    lambda: f"Reference {not_luhn(random.choice([13,15,19]))} is on the receipt.",
    lambda: f"The ISBN is 978-{random.randint(0,9)}-{random.randint(100,999)}-{random.randint(10000,99999)}-{random.randint(0,9)}.",
    lambda: f"Commit {''.join(random.choice('0123456789abcdef') for _ in range(40))} fixed it.",
    lambda: f"Request id {''.join(random.choice('0123456789abcdef') for _ in range(8))}-{''.join(random.choice('0123456789abcdef') for _ in range(4))}-4{''.join(random.choice('0123456789abcdef') for _ in range(3))}-a{''.join(random.choice('0123456789abcdef') for _ in range(3))}-{''.join(random.choice('0123456789abcdef') for _ in range(12))} failed.",
    lambda: f"Population grew to {random.randint(1,99)} {random.randint(100,999)} {random.randint(100,999)} people.",
    lambda: f"The flight is LH{random.randint(100,9999)} from gate B{random.randint(1,60)}.",
    lambda: f"Skills like sk-{random.choice(['iing','ateboarding','etching'])} and ghp-style notes are fine.",
    lambda: f"Room {random.randint(100,999)}, building {random.randint(1,20)}, floor {random.randint(1,9)}.",
    lambda: f"The coordinates are {random.uniform(-90,90):.6f}, {random.uniform(-180,180):.6f}.",
    lambda: f"Serial GB{random.randint(10,99)} {random.randint(1000,9999)} is not an account.",
    lambda: f"Email support through the contact form, not by mail at example dot com.",
    lambda: f"Temperature {random.randint(-20,40)} degrees, humidity {random.randint(10,99)} percent.",
    lambda: f"Invoice INV-{random.randint(2020,2027)}-{random.randint(10000,99999)} is overdue.",
    lambda: f"Score {random.randint(0,10)}-{random.randint(0,10)} after {random.randint(60,120)} minutes.",
]

rows = []
for i in range(130):
    kind, make, templates = POSITIVE[i % len(POSITIVE)]
    value = make()
    text = random.choice(templates).format(v=value)
    pii = [{"kind": kind, "value": value}]
    if i % 9 == 0:  # two kinds in one line
        other_kind, other_make, _ = POSITIVE[(i + 1) % len(POSITIVE)]
        other = other_make()
        text += f" Also {other}."
        pii.append({"kind": other_kind, "value": other})
    rows.append({"text": text, "pii": pii})
for i in range(120):
    rows.append({"text": NEGATIVE[i % len(NEGATIVE)](), "pii": []})
random.shuffle(rows)
with open("pii.jsonl", "w") as out:
    for i, row in enumerate(rows):
        out.write(json.dumps({"id": i, **row}, ensure_ascii=False) + "\n")
print(len(rows), "lines")
