"""The relevance gate's embedders side by side: how well each one's best
similarity tells BFCL's questions a tool fits (`simple_python`, `multiple`,
`parallel`) from `irrelevance`, and the everyday tuning half's requests a
tool fits from those none fits. From `agentry-eval relevance-gate
[--embedder nomic]` and `agentry-eval everyday --gate-only [--gate-embedder
nomic]` reports, without running anything.

For each: the area under the ROC curve (the chance that a request a tool
fits scores above one none fits), and at the floor that turns away as few of
the fitting requests as MiniLM's default 0.2 does on BFCL (2 of 400
`simple_python`), how many `irrelevance` questions it turns away.

    python3 benches/gate_embedders.py results/relevance-gate.json results/relevance-gate-nomic.json
"""
import json
import sys


def auc(fits, others):
    pairs = sum((f > o) + 0.5 * (f == o) for f in fits for o in others)
    return pairs / (len(fits) * len(others))


def main():
    for path in sys.argv[1:]:
        report = json.load(open(path))
        sets = {s["set"]: [b["best"] for b in s["best"]]
                for s in report["sets"] if s["tool_text"] == "with arguments"}
        fits = sets["bfcl simple_python"] + sets["bfcl multiple"] + sets["bfcl parallel"]
        irrelevant = sets["bfcl irrelevance"]
        simple = sorted(sets["bfcl simple_python"])
        floor = simple[2]  # turns away the two lowest, as MiniLM at 0.2 does
        turned = sum(s < floor for s in irrelevant)
        print(f"{report['embedder']}: BFCL AUC {auc(fits, irrelevant):.3f}; "
              f"floor {floor:.3f} turns away 2/400 simple_python and "
              f"{turned}/{len(irrelevant)} irrelevance")


if __name__ == "__main__":
    main()
