#!/usr/bin/env python3
"""Assemble BENCHMARKS.md from benchmarks/HEADER.md and the per-topic results in benchmarks/results/.

Each ``bench_*.py`` writes its own ``results/<topic>.md`` (machine, date, peer measured in the same run);
this script only concatenates them (headings demoted one level), so the figures are never retyped.
Run: ``python benchmarks/collect.py``.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["model", "model_py310", "model_py310_numba060", "sim", "bus", "nodes", "nano_budget",
         "nano_budget_separate_half", "false_damage", "replay", "second_opinions", "identify", "identify_probe",
         "identify_probe_mujoco", "identify_probe_calibrated", "identify_probe_mujoco_calibrated",
         "identify_probe_mujoco_dt40", "identify_probe_lag30ms", "identify_probe_mujoco_lag30ms",
         "identify_probe_mujoco_calibrated_lag30ms", "identify_probe_lag0ms_ambiguous",
         "identify_probe_mujoco_lag0ms_ambiguous", "soak"]


def main():
    with open(os.path.join(HERE, "HEADER.md")) as f:
        parts = [f.read().rstrip() + "\n"]
    names = sorted(f[:-3] for f in os.listdir(os.path.join(HERE, "results")) if f.endswith(".md"))
    for name in ORDER + [n for n in names if n not in ORDER]:
        path = os.path.join(HERE, "results", name + ".md")
        if not os.path.exists(path):
            parts.append(f"\n## {name}\n\n(not measured yet: run `benchmarks/bench_{name}.py`)\n")
            continue
        with open(path) as f:
            text = f.read()
        lines = ["#" + line if line.startswith("#") else line for line in text.splitlines()]
        parts.append("\n" + "\n".join(lines).rstrip() + "\n")
    with open(os.path.join(HERE, "..", "BENCHMARKS.md"), "w") as f:
        f.write("".join(parts))


if __name__ == "__main__":
    main()
