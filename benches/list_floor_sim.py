#!/usr/bin/env python3
"""Choose `LocalConfig::list_floor` from stored runs, and check the choice
on held-out halves.

When a reply to a request offering one tool opens a call block, the model
picks a bare call (`{`) or a JSON list of calls (`[`). With a floor, the
list is opened whenever its share of the probability reaches the floor
(`agentry_local::list_opening`). Greedy decoding is deterministic, so each
question's outcome at any floor is one of two stored outcomes:

- below the floor (or no call block): the default run with the model's own
  choice (`--list-floor 1`), `benches/results/bfcl-list-floor/*-default.json`;
- at or above it: the run that always opens a list (`--one-tool-lists`),
  `benches/results/bfcl-one-tool-lists/` and `agent-tools/*-one-tool-lists.json`,
  scored with calls repeated word for word read once and ungrounded later
  calls left out, as the default stack does (`grounded_rescore.py`).

Each question's list share is in `benches/results/bfcl-list-floor/list-shares.json`
(recorded at the first choice of the default runs; `null` where the reply
opened no call block). The runs at the chosen floor, made afterwards with
the real option, check the simulation.

Usage: python3 benches/list_floor_sim.py
"""
import json
import pathlib

import grounded_rescore as g

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benches/results"
SETS = {
    "bfcl/simple_python": ("datasets/bfcl", "bfcl-list-floor/bfcl-simple_python-default.json",
                           "bfcl-one-tool-lists/bfcl-simple_python-grammar.json"),
    "bfcl/parallel": ("datasets/bfcl", "bfcl-list-floor/bfcl-parallel-default.json",
                      "bfcl-one-tool-lists/bfcl-parallel-grammar.json"),
    "agent-tools/simple_python": ("benches/data/agent-tools/bfcl",
                                  "agent-tools/simple_python-template-list-floor-default.json",
                                  "agent-tools/simple_python-template-one-tool-lists.json"),
    "agent-tools/parallel": ("benches/data/agent-tools/bfcl",
                             "agent-tools/parallel-template-list-floor-default.json",
                             "agent-tools/parallel-template-one-tool-lists.json"),
}
FLOORS = [0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 1.0]


def outcomes(datasets, report):
    """Each question's pass, as the default stack reads the stored calls."""
    datasets = ROOT / datasets
    report = json.loads((RESULTS / report).read_text())
    category = report["category"]
    questions = g.load(datasets / f"{category}.jsonl")
    answers = g.load(datasets / f"{category}_answers.jsonl")
    passed = {}
    for result in report["results"]:
        truth = answers[result["id"]]["ground_truth"]
        turns = questions[result["id"]]["question"]
        conversation = "\n".join(m["content"] for turn in turns for m in turn if m["role"] != "assistant")
        calls = g.grounded_calls(g.distinct(result["calls"]), conversation)
        passed[result["id"]] = g.calls_match(calls, truth)
    return passed


def main():
    shares = json.loads((RESULTS / "bfcl-list-floor/list-shares.json").read_text())
    sets = {name: (outcomes(ds, default), outcomes(ds, lists), shares[name])
            for name, (ds, default, lists) in SETS.items()}

    def score(name, floor, keep=lambda _: True):
        default, lists, share = sets[name]
        chosen = [q for q in default if keep(q)]
        listed = lambda q: share[q] is not None and share[q] >= floor  # noqa: E731
        return sum(lists[q] if listed(q) else default[q] for q in chosen), len(chosen)

    print("| floor | " + " | ".join(SETS) + " |")
    print("| --- |" + " --- |" * len(SETS))
    for floor in FLOORS:
        cells = [f"{score(name, floor)[0]}" for name in SETS]
        print(f"| {floor} | " + " | ".join(cells) + " |")

    # Two-fold: choose on one half of BFCL (even or odd ids) the floor with
    # the most `parallel` passes that keeps `simple_python` within 2 points
    # of the model's own choice (floor 1), score it on the other half.
    print()
    print("| floor chosen on | floor | held-out simple_python | own choice | held-out parallel | own choice |")
    print("| --- | --- | --- | --- | --- | --- |")
    for half in (0, 1):
        on = lambda q, h=half: int(q.rsplit("_", 1)[1]) % 2 == h  # noqa: E731
        off = lambda q, h=half: int(q.rsplit("_", 1)[1]) % 2 != h  # noqa: E731
        base, n = score("bfcl/simple_python", 1.0, on)
        allowed = [f for f in FLOORS if score("bfcl/simple_python", f, on)[0] >= base - 0.02 * n]
        best = max(allowed, key=lambda f: (score("bfcl/parallel", f, on)[0], f))
        simple, n_simple = score("bfcl/simple_python", best, off)
        parallel, n_parallel = score("bfcl/parallel", best, off)
        print(f"| {'even' if half == 0 else 'odd'} ids | {best} | {simple}/{n_simple} | "
              f"{score('bfcl/simple_python', 1.0, off)[0]} | {parallel}/{n_parallel} | "
              f"{score('bfcl/parallel', 1.0, off)[0]} |")


if __name__ == "__main__":
    main()
