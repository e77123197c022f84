#!/usr/bin/env python3
"""Print the median of every criterion benchmark in a group as a Markdown table.

Usage: python3 benches/medians.py GROUP   (after `cargo bench`; reads target/criterion/GROUP)
"""
import json
import pathlib
import sys


def human(ns: float) -> str:
    return f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.0f} ns"


group = sys.argv[1]
root = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion" / group
print("| benchmark | median | 95% CI of the median |")
print("| --- | --- | --- |")
for path in sorted(root.glob("*/new/estimates.json")):
    median = json.loads(path.read_text())["median"]
    ci = median["confidence_interval"]
    name = json.loads((path.parent / "benchmark.json").read_text())["function_id"]
    print(f"| {name} | {human(median['point_estimate'])} | {human(ci['lower_bound'])} – {human(ci['upper_bound'])} |")
