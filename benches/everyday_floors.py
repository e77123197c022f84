"""The relevance gate's floor and the local model's call floor, chosen on the
tuning half of the everyday requests (benches/data/everyday) from three runs
of `agentry-eval everyday --split tune`, without running the model again:

- C, `--relevance-floor 1`: every request turned away (step 1 offers no tool),
  which also records each request's gate similarity (`gate_best`);
- A, `--relevance-floor 0 --call-floor 0.9999`: no gate, the model's own
  choice (a floor that high only ever keeps a call the model would have made
  anyway), which records each request's call share at its first token;
- B, `--relevance-floor 0 --call-floor 0`: no gate, a call opened wherever
  the grammar allows one.

For a gate floor g and a call floor c a request's last turn is C's outcome
when its similarity is below g, else B's when its call share is at least c,
else A's. That is exact for one-turn requests; for follow-ups only the last
turn is varied (their earlier turns ran as each run ran them).

Rule: the pair with the most right answers on the tuning half; ties go to the
higher gate floor, then the higher call floor (fewer calls forced).

    python3 benches/everyday_floors.py C.json A.json B.json
    python3 benches/everyday_floors.py C.json A.json      # the gate floor alone
    python3 benches/everyday_floors.py --sims S.json C.json A.json

`--sims` takes each request's gate similarity from `agentry-eval everyday
--gate-only` instead of C (C's outcomes hold for any request the gate turns
away: step 1 then offers no tool, whatever the tools' descriptions say).
"""
import json
import sys

GATE_FLOORS = [0.0, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3]
CALL_FLOORS = [1.0, 0.8, 0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.0]


def outcomes(path):
    return {o["id"]: o for o in json.load(open(path))["outcomes"]}


def simulate(none, free, forced, gate, call):
    rows = {}
    for rid, refused in none.items():
        if gate > 0 and refused.get("gate_best", 0.0) < gate:
            rows[rid] = refused
            continue
        share = free[rid].get("call_share")
        if call < 1.0 and share is not None and share >= call:
            rows[rid] = forced[rid]
        else:
            rows[rid] = free[rid]
    return rows


def score(rows, gate, none):
    right = sum(o["answer_ok"] for o in rows.values())
    nofit = [o for o in rows.values() if o["style"] == "nofit"]
    fits = [o for o in rows.values() if o["style"] != "nofit"]
    # A tool fits where the request expects calls (follow-ups answered from an
    # earlier result expect none).
    fit_ids = [rid for rid, o in none.items() if o.get("call_ok") is not None and o["style"] != "nofit"]
    refused = sum(gate > 0 and none[rid].get("gate_best", 0.0) < gate for rid in fit_ids)
    return (right, len(rows), sum(not o["calls"] for o in nofit), len(nofit),
            sum(o["answer_ok"] for o in fits), len(fits), refused, len(fit_ids))


def main():
    args = sys.argv[1:]
    sims = None
    if args[0] == "--sims":
        sims = {s["id"]: s["gate_best"] for s in json.load(open(args[1]))["sims"]}
        args = args[2:]
    none, free = outcomes(args[0]), outcomes(args[1])
    if sims is not None:
        for rid, outcome in none.items():
            outcome["gate_best"] = sims[rid]
    forced = outcomes(args[2]) if len(args) > 2 else free
    call_floors = CALL_FLOORS if len(args) > 2 else [1.0]
    best = None
    print("| gate floor | call floor | right answers | none fits, no call | other requests, right | a tool fits, turned away |")
    print("| --- | --- | --- | --- | --- | --- |")
    for gate in GATE_FLOORS:
        for call in call_floors:
            right, n, quiet, nofit, fit_right, fits, refused, fit_n = score(
                simulate(none, free, forced, gate, call), gate, none)
            print(f"| {gate} | {call} | {right}/{n} | {quiet}/{nofit} | {fit_right}/{fits} | {refused}/{fit_n} |")
            key = (right, gate, call)
            if best is None or key > best[0]:
                best = (key, gate, call)
    print(f"\nchosen on the tuning half: gate floor {best[1]}, call floor {best[2]} ({best[0][0]} right)")


if __name__ == "__main__":
    main()
