#!/usr/bin/env python3
"""Summarise `agentry-eval bfcl` reports (benches/results/bfcl-*.json) as a Markdown table."""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent / "results"
rows = []
for path in sorted(root.glob("bfcl-*.json")):
    r = json.loads(path.read_text())
    text_calls = {True: "on", False: "off"}.get(r.get("text_calls"), "—")
    rows.append((r["category"], "on" if r["grammar"] else "off", text_calls, r["questions"], r["passed"], r["accuracy"],
                 r["calls"], r["schema_valid_calls"], r["schema_valid_rate"], r["seconds"] / max(r["questions"], 1)))
order = {"simple_python": 0, "multiple": 1, "parallel": 2, "irrelevance": 3}
rows.sort(key=lambda row: (order.get(row[0], 9), row[1] != "on", row[2]))
print("| category | grammar | text calls | questions | passed | accuracy | calls | schema-valid calls | schema-valid rate | s/question |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for c, g, t, q, p, a, calls, valid, rate, spq in rows:
    print(f"| {c} | {g} | {t} | {q} | {p} | {a:.1%} | {calls} | {valid} | {rate:.1%} | {spq:.1f} |")
