"""The peer of the PII guardrail (`cargo run --release -p agentry-guardrails
--example pii_eval`): Microsoft Presidio's analyzer on the same labelled set
(datasets/guardrails/pii.jsonl), scored the same way (a finding counts when
its kind matches and its span covers the label's, give or take a character),
on the held-out half (odd ids), and its time per line.

Presidio finds these kinds with its pattern recognizers (emails, phone
numbers through `phonenumbers`, card numbers with Luhn, IBANs with their
check digits); its spaCy models are not on PyPI, so it runs here with an NLP
engine that gives no named entities (names and places are not in the set).
Presidio has no API-key recognizer.

    pip install presidio-analyzer==2.2.366
    python3 benches/pii_presidio.py
"""

import json
import pathlib
import time

from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
from presidio_analyzer.nlp_engine import NlpArtifacts, NlpEngine

KINDS = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "card",
    "IBAN_CODE": "iban",
}


class NoModel(NlpEngine):
    """Tokens and named entities from no model: pattern recognizers only."""

    def load(self):
        pass

    def is_loaded(self):
        return True

    def process_text(self, text, language):
        return NlpArtifacts(entities=[], tokens=[], tokens_indices=[], lemmas=[], nlp_engine=self, language=language)

    def process_batch(self, texts, language, batch_size=1, n_process=1, **kwargs):
        for text in texts:
            yield text, self.process_text(text, language)

    def is_stopword(self, word, language):
        return False

    def is_punct(self, word, language):
        return False

    def get_supported_entities(self):
        return []

    def get_supported_languages(self):
        return ["en"]


def main():
    rows = [json.loads(line) for line in pathlib.Path("datasets/guardrails/pii.jsonl").read_text().splitlines()]
    registry = RecognizerRegistry()
    registry.load_predefined_recognizers(languages=["en"])
    engine = AnalyzerEngine(registry=registry, nlp_engine=NoModel(), supported_languages=["en"])
    entities = list(KINDS)

    def find(text):
        return [
            (KINDS[r.entity_type], r.start, r.end)
            for r in engine.analyze(text=text, language="en", entities=entities)
        ]

    for half, parity in [("tuning (even ids)", 0), ("held out (odd ids)", 1)]:
        tallies = {}
        clean = flagged = 0
        for row in (r for r in rows if r["id"] % 2 == parity):
            text = row["text"]
            found = find(text)
            if not row["pii"]:
                clean += 1
                flagged += bool(found)
            used = [False] * len(found)
            for label in row["pii"]:
                kind = label["kind"]
                tally = tallies.setdefault(kind, [0, 0, 0])
                if kind == "api_key":
                    tally[2] += 1
                    continue
                start = text.find(label["value"])
                end = start + len(label["value"])
                hit = next(
                    (i for i, (k, s, e) in enumerate(found) if not used[i] and k == kind and s <= start + 1 and e + 1 >= end),
                    None,
                )
                if hit is None:
                    tally[2] += 1
                else:
                    used[hit] = True
                    tally[0] += 1
            for i, (kind, _, _) in enumerate(found):
                if not used[i]:
                    tallies.setdefault(kind, [0, 0, 0])[1] += 1
        print(f"{half}: {clean} lines without personal data, {flagged} of them flagged")
        print("  kind     right  false+  missed")
        for kind in sorted(tallies):
            right, false_positive, missed = tallies[kind]
            print(f"  {kind:<8} {right:>5}  {false_positive:>6}  {missed:>6}")
    texts = [row["text"] for row in rows]
    rounds = 5
    started = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            find(text)
    each = (time.perf_counter() - started) / (rounds * len(texts))
    print(f"time per check: {each * 1e6:.1f} µs (a line of {sum(map(len, texts)) // len(texts)} bytes on average)")
    long = " ".join(texts)
    started = time.perf_counter()
    for _ in range(rounds):
        find(long)
    each = (time.perf_counter() - started) / rounds
    print(f"time per check of one {len(long) // 1024} KiB text: {each * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
