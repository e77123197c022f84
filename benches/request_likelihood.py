"""A probe for the relevance gate: does the local model's likelihood of a
request rise with a tool's description more for requests a tool fits than
for BFCL `irrelevance` questions (a function near the question that does
not serve it)? MiniLM's similarity, the gate's signal, is scored beside it.

    ./target/debug/agentry-eval everyday --split tune --gate-only --out ev.json
    ./target/debug/agentry-eval relevance-gate --sets bfcl --floors 0.2 --out rg.json
    python3 benches/request_likelihood.py input ev.json rg.json > in.jsonl
    cargo run -p agentry-local --example request_likelihood -- MODEL.gguf < in.jsonl > out.jsonl
    python3 benches/request_likelihood.py score in.jsonl out.jsonl

The input: the everyday tuning half's one-turn requests (with their agent's
tools as the gate reads them), BFCL `irrelevance`'s first 120 questions and
`simple_python`'s first 60 (each with its functions). The score: the area
under the ROC curve for each pair of kinds, over all requests and over the
gate's grey zone (MiniLM similarity from 0.1 to 0.2).
"""
import json
import sys


def tool_text(function):
    """A BFCL function as the gate reads it (`ToolText::WithArguments`)."""
    text = f"{function['name']}: {function.get('description', '')}"
    properties = function.get("parameters", {}).get("properties", {})
    if properties:
        parts = [
            f"{name}: {spec['description']}" if spec.get("description") else name
            for name, spec in properties.items()
        ]
        text += " (" + "; ".join(parts) + ")"
    return text


def last_user(question):
    turn = question[-1] if isinstance(question[-1], list) else question
    return [m["content"] for m in turn if m.get("role") == "user"][-1]


def write_input(everyday, gate_report):
    requests = {}
    with open("benches/data/everyday/requests.jsonl") as lines:
        for line in lines:
            request = json.loads(line)
            requests[request["id"]] = request
    for sims in json.load(open(everyday))["sims"]:
        request = requests[sims["id"]]
        if len(request["turns"]) > 1 or request["split"] != "tune":
            continue
        kind = "everyday_no_fit" if request["style"] == "nofit" else "everyday_fit"
        print(json.dumps({"id": sims["id"], "label": kind, "request": request["turns"][-1],
                          "tools": sims["tool_texts"], "sim": sims["gate_best"]}))
    similarity = {}
    for chosen in json.load(open(gate_report))["sets"]:
        if chosen["tool_text"] == "with arguments":
            for best in chosen["best"]:
                similarity[best["id"]] = best["best"]
    for category, limit in [("irrelevance", 120), ("simple_python", 60)]:
        with open(f"datasets/bfcl/{category}.jsonl") as lines:
            for at, line in enumerate(lines):
                if at >= limit:
                    break
                question = json.loads(line)
                print(json.dumps({"id": question["id"], "label": "bfcl_" + category,
                                  "request": last_user(question["question"]),
                                  "tools": [tool_text(f) for f in question["function"]],
                                  "sim": similarity.get(question["id"])}))


def auc(positive, negative):
    if not positive or not negative:
        return float("nan")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def score(inputs, outputs):
    cases = {}
    with open(inputs) as lines:
        for line in lines:
            case = json.loads(line)
            cases[case["id"]] = case
    results = [json.loads(line) for line in open(outputs)]
    signals = {
        "MiniLM similarity": lambda r, c: c["sim"],
        "likelihood gain, best tool": lambda r, c: max(r["pmi"]),
        "... per token": lambda r, c: max(r["pmi"]) / r["tokens"],
    }
    pairs = [("everyday_fit", "bfcl_irrelevance"), ("bfcl_simple_python", "bfcl_irrelevance"),
             ("everyday_fit", "everyday_no_fit")]
    print("| requests | signal | " + " | ".join(f"{a} against {b}" for a, b in pairs) + " |")
    print("| --- | --- |" + " --- |" * len(pairs))
    for grey in (False, True):
        for name, signal in signals.items():
            kinds = {}
            for result in results:
                case = cases[result["id"]]
                if grey and not (case["sim"] is not None and 0.1 <= case["sim"] < 0.2):
                    continue
                kinds.setdefault(result["label"], []).append(signal(result, case))
            cells = []
            for a, b in pairs:
                cells.append(f"{auc(kinds.get(a, []), kinds.get(b, [])):.2f} "
                             f"({len(kinds.get(a, []))}/{len(kinds.get(b, []))})")
            print(f"| {'grey zone' if grey else 'all'} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if sys.argv[1] == "input":
        write_input(sys.argv[2], sys.argv[3])
    else:
        score(sys.argv[2], sys.argv[3])
