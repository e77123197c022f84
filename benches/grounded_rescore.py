#!/usr/bin/env python3
"""Score stored `agentry-eval bfcl` reports again with the later calls that
the conversation does not ground left out, as `agentry_local::grounding`
does by default since 2026-11-26 (`LocalConfig::ungrounded_calls`): after a
reply's first call, a call that repeats an earlier one with its numbers in
another order, or brings in a number found nowhere in the question, is
dropped. The runs stored before 2026-11-25 kept calls repeated word for
word, which are read once by default since (`LocalConfig::repeated_calls`),
so each report is scored three ways: as stored, with such repeats read once,
and with the rule applied after that (the default now).

Usage: python3 benches/grounded_rescore.py DATASETS_DIR REPORT.json [REPORT.json ...]
(DATASETS_DIR holds CATEGORY.jsonl and CATEGORY_answers.jsonl: `datasets/bfcl`
or `benches/data/agent-tools/bfcl`.)

The rule is a transcription of `crates/agentry-local/src/grounding.rs`, and
BFCL's scoring one of `crates/agentry-eval/src/bfcl.rs`; a report's stored
`pass` flags are checked against the transcribed scoring first.
"""
import json
import pathlib
import sys

SCALES = [1.0, 100.0, 0.01, 1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 1e12, 1e-12]


def numbers_in(text):
    """The numbers written in `text`, as grounding.rs reads them."""
    out, at, n = [], 0, len(text)
    while at < n:
        if not text[at].isascii() or not text[at].isdigit():
            at += 1
            continue
        negative = at > 0 and text[at - 1] == "-"
        digits, end = "", at
        while end < n:
            c = text[end]
            nxt = end + 1 < n and text[end + 1].isascii() and text[end + 1].isdigit()
            if c.isascii() and c.isdigit():
                digits += c
            elif c == "," and nxt and "." not in digits:
                group = 0
                while end + 1 + group < n and text[end + 1 + group].isascii() and text[end + 1 + group].isdigit():
                    group += 1
                if group != 3:
                    break
            elif c == "." and nxt and "." not in digits and "e" not in digits:
                digits += "."
            elif c in "eE" and "e" not in digits:
                sign = end + 1 < n and text[end + 1] in "+-"
                k = end + 1 + (1 if sign else 0)
                if not (k < n and text[k].isascii() and text[k].isdigit()):
                    break
                digits += "e"
                if sign:
                    end += 1
                    digits += text[end]
            else:
                break
            end += 1
        try:
            value = float(digits)
            out.append(-value if negative else value)
        except ValueError:
            pass
        at = max(end, at + 1)
    return out


def grounded(number, written):
    if number in (0.0, 1.0, -1.0):
        return True
    return any(abs(abs(number) * s - abs(w)) <= 1e-9 * max(abs(w), 1.0) for s in SCALES for w in written)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def numbers_of(v):
    if is_number(v):
        return [float(v)]
    if isinstance(v, list):
        return [x for item in v for x in numbers_of(item)]
    if isinstance(v, dict):
        return [x for item in v.values() for x in numbers_of(item)]
    return []


def numbers_reordered(earlier, later):
    if not (isinstance(earlier, dict) and isinstance(later, dict)) or set(earlier) != set(later):
        return False
    before, after = [], []
    for name, value in earlier.items():
        other = later[name]
        if value == other and type(value) is type(other):
            continue
        if not (is_number(value) and is_number(other)):
            return False
        before.append(float(value))
        after.append(float(other))
    return bool(before) and sorted(before) == sorted(after)


def grounded_calls(calls, conversation):
    written = numbers_in(conversation)
    kept = []
    for call in calls:
        if kept:
            args = call["input"] if isinstance(call["input"], dict) else {}
            reordered = any(k["name"] == call["name"] and numbers_reordered(k["input"], call["input"]) for k in kept)
            new = [v for name, v in args.items()
                   if not any(k["name"] == call["name"] and isinstance(k["input"], dict)
                              and name in k["input"] and k["input"][name] == v for k in kept)]
            made_up = any(not grounded(x, written) for v in new for x in numbers_of(v))
            if reordered or made_up:
                continue
        kept.append(call)
    return kept


def standard(text):
    return "".join(c for c in text if c not in " ,./-_*^").lower()


def value_matches(got, accepted):
    if is_number(got) and is_number(accepted):
        return float(got) == float(accepted)
    if isinstance(got, str) and isinstance(accepted, str):
        return standard(got) == standard(accepted)
    if isinstance(got, list) and isinstance(accepted, list):
        return len(got) == len(accepted) and all(value_matches(x, y) for x, y in zip(got, accepted))
    if isinstance(got, dict) and isinstance(accepted, dict):
        return len(got) <= len(accepted) and all(
            k in accepted and (any(value_matches(v, o) for o in accepted[k]) if isinstance(accepted[k], list)
                               else value_matches(v, accepted[k])) for k, v in got.items())
    return got == accepted


def call_matches(call, truth):
    (function, params), = truth.items()
    args = call["input"]
    if call["name"] != function or not isinstance(args, dict) or any(k not in params for k in args):
        return False
    for name, accepted in params.items():
        if name not in args:
            if "" not in accepted:
                return False
        elif not any(value_matches(args[name], option) for option in accepted):
            return False
    return True


def calls_match(calls, truth):
    if len(calls) != len(truth):
        return False
    used = [False] * len(calls)

    def assign(rest):
        if not rest:
            return True
        for i, call in enumerate(calls):
            if not used[i] and call_matches(call, rest[0]):
                used[i] = True
                if assign(rest[1:]):
                    return True
                used[i] = False
        return False

    return assign(truth)


def distinct(calls):
    out = []
    for call in calls:
        if not any(c["name"] == call["name"] and c["input"] == call["input"] for c in out):
            out.append(call)
    return out


def load(path):
    if not path.exists():
        return {}
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines()) if row}


def main():
    datasets = pathlib.Path(sys.argv[1])
    print("| report | questions | passed as stored | repeats read once | and ungrounded later calls left out | gained by the rule | lost by the rule |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for report_path in sys.argv[2:]:
        report = json.loads(pathlib.Path(report_path).read_text())
        category = report["category"]
        questions = load(datasets / f"{category}.jsonl")
        answers = load(datasets / f"{category}_answers.jsonl")
        stored = once = after = gained = lost = 0
        for result in report["results"]:
            truth = answers.get(result["id"], {}).get("ground_truth")
            if truth is None:
                # irrelevance: passes with no call, and a reply's first call is always kept
                passed = not result["calls"]
                assert passed == result["pass"], f"{report_path}: {result['id']} scores differently"
                stored, once, after = stored + passed, once + passed, after + passed
                continue
            assert calls_match(result["calls"], truth) == result["pass"], f"{report_path}: {result['id']} scores differently"
            turns = questions[result["id"]]["question"]
            conversation = "\n".join(m["content"] for turn in turns for m in turn if m["role"] != "assistant")
            read_once = distinct(result["calls"])
            before = calls_match(read_once, truth)
            now = calls_match(grounded_calls(read_once, conversation), truth)
            stored += result["pass"]
            once += before
            after += now
            gained += now and not before
            lost += before and not now
        print(f"| {report_path} | {len(report['results'])} | {stored} | {once} | {after} | {gained} | {lost} |")


if __name__ == "__main__":
    main()
