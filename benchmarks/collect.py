#!/usr/bin/env python3
"""Generate BENCHMARKS.md: the current figures, one table per area, from the results files' front matter.

The format (benchmarks/README.md gives it in full): every ``benchmarks/results/<topic>.md`` is one run of a ``bench_*.py`` (its tables, its machine and date) and
begins with a YAML front matter block that names the run and the figures of it that are current::

    ---
    date: 2026-11-25 20:10              # when the run was made (YYYY-MM-DD HH:MM or YYYY-MM-DD)
    machine: AMD EPYC VM, 2 shared cores
    command: OMP_NUM_THREADS=1 python benchmarks/bench_model.py
    current:                            # [] for a run kept as history only
      - area: Model vs Pinocchio        # the table it goes into (AREAS gives the order; a new name adds a table)
        figure: forward dynamics per call (Python API) against pin.aba
        value: 0.65x (0.64-0.65)
        nano: ...                       # optional: the Jetson Nano figure (this machine's x 4-6)
        target: <= 1.0x (met)           # optional: the target and whether it is met
        date: / machine: / command:     # optional: a row measured by another run overrides the file's
    ---

BENCHMARKS.md is HEADER.md followed by the tables, then the list of every results file. The figures are never
retyped: a bench re-run rewrites its results file, and a front matter whose ``date`` no longer matches the run's
``- date:`` line is an error here (the block must be brought up to date with the run).

Run: ``python benchmarks/collect.py`` (writes BENCHMARKS.md); ``--check`` exits 1 if BENCHMARKS.md is not what
this would write. A results file without a valid front matter: one line naming the file and the field, exit 2.
"""
import argparse
import datetime
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
#: the areas in the order of BENCHMARKS.md; an area a results file names that is not here follows, sorted
AREAS = ["Model vs Pinocchio", "Engine vs MuJoCo", "Nano budget", "Prediction fidelity", "Identification",
         "Recovery", "Start-up", "Servo bus", "Bad input (flood)", "Replay", "Second opinions"]
#: results files whose rows lead their area, in this order (the headline runs); every other file follows, sorted
FIRST = ["model.md", "model_py310_numba060.md", "model_py310.md", "sim.md", "nano_budget_split_dec5.md", "nodes.md",
         "nano_budget.md", "identify.md", "identify_probe.md", "identify_probe_mujoco.md", "soak.md",
         "false_damage.md", "recovery.md", "startup.md"]
FILE_KEYS = ("date", "machine", "command", "current")
ROW_KEYS = ("area", "figure", "value", "nano", "target", "date", "machine", "command")
ROW_REQUIRED = ("area", "figure", "value")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2})?$")


class ResultsError(ValueError):
    """A results file whose front matter cannot be read: the message names the file and the field."""


def _text(value):
    """A scalar of the front matter as text (YAML reads 2026-11-27 as a date, 3.79 as a float)."""
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return "" if value is None else str(value).strip()


def split_front_matter(text):
    """(front matter dict or None, body) of a results file's text."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError("front matter: no closing '---' line")
    try:
        meta = yaml.safe_load(text[4:end])
    except yaml.YAMLError as exc:
        raise ValueError("front matter: not YAML (%s)" % str(exc).replace("\n", " "))
    return meta, text[end + 5:]


def _run_date(body):
    """The run's date from its ``- date:`` line (``YYYY-MM-DD HH:MM``), None if it has none."""
    m = re.search(r"^- date: (\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}))?", body, re.M)
    if m is None:
        return None
    return m.group(1) + (" " + m.group(2) if m.group(2) else "")


def load(path):
    """(title, file metadata, rows) of one results file; rows carry every key resolved and ``source``.
    ResultsError naming the file and the field otherwise."""
    name = os.path.relpath(path, ROOT)

    def fail(field, why):
        raise ResultsError("%s: %s: %s" % (name, field, why))

    with open(path, encoding="utf8") as f:
        text = f.read()
    try:
        meta, body = split_front_matter(text)
    except ValueError as exc:
        raise ResultsError("%s: %s" % (name, exc))
    if meta is None:
        fail("front matter", "missing (the file must begin with a '---' line, then date, machine, command and "
                             "current, then '---'; see benchmarks/README.md)")
    if not isinstance(meta, dict):
        fail("front matter", "not a mapping of date, machine, command, current")
    for key in sorted(set(meta) - set(FILE_KEYS)):
        fail(key, "unknown key (allowed: %s)" % ", ".join(FILE_KEYS))
    info = {}
    for key in ("date", "machine", "command"):
        info[key] = _text(meta.get(key))
        if not info[key]:
            fail(key, "missing (a non-empty string)")
    if not DATE.match(info["date"]):
        fail("date", "%r is not YYYY-MM-DD HH:MM or YYYY-MM-DD" % info["date"])
    run = _run_date(body)
    if run is not None and not run.startswith(info["date"]) and not info["date"].startswith(run):
        fail("date", "%s, but the run in the file is of %s: bring the front matter up to date with the run"
             % (info["date"], run))
    current = meta.get("current")
    if not isinstance(current, list):
        fail("current", "missing (a list of figures; [] for a run kept as history)")
    rows = []
    for i, row in enumerate(current):
        where = "current[%d]" % i
        if not isinstance(row, dict):
            fail(where, "not a mapping of %s" % ", ".join(ROW_KEYS))
        for key in sorted(set(row) - set(ROW_KEYS)):
            fail(where + "." + key, "unknown key (allowed: %s)" % ", ".join(ROW_KEYS))
        out = {key: _text(row.get(key)) for key in ROW_KEYS}
        for key in ROW_REQUIRED:
            if not out[key]:
                fail(where + "." + key, "missing (a non-empty string)")
        for key in ("date", "machine", "command"):
            out[key] = out[key] or info[key]
        if not DATE.match(out["date"]):
            fail(where + ".date", "%r is not YYYY-MM-DD HH:MM or YYYY-MM-DD" % out["date"])
        out["source"] = os.path.relpath(path, ROOT).replace(os.sep, "/")
        rows.append(out)
    title = next((line[2:].strip() for line in body.splitlines() if line.startswith("# ")), os.path.basename(path))
    return title, info, rows


def _cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def render(results=RESULTS):
    """The text of BENCHMARKS.md."""
    with open(os.path.join(HERE, "HEADER.md"), encoding="utf8") as f:
        header = f.read().rstrip() + "\n"
    files = sorted((f for f in os.listdir(results) if f.endswith(".md")),
                   key=lambda f: (FIRST.index(f) if f in FIRST else len(FIRST), f))
    loaded = [(f,) + load(os.path.join(results, f)) for f in files]
    by_area = {}
    for _, _, _, rows in loaded:
        for row in rows:
            by_area.setdefault(row["area"], []).append(row)
    areas = [a for a in AREAS if a in by_area] + sorted(a for a in by_area if a not in AREAS)
    out = ["<!-- generated by benchmarks/collect.py from benchmarks/results/*.md: do not edit; see "
           "benchmarks/README.md -->\n", header]
    for area in areas:
        rows = by_area[area]
        nano = any(r["nano"] for r in rows)
        target = any(r["target"] for r in rows)
        cols = ["figure", "value"] + (["Jetson Nano (4-6x)"] if nano else []) + (["target"] if target else []) + \
            ["machine", "date", "command", "details"]
        out.append("\n## %s\n\n| %s |\n|%s\n" % (area, " | ".join(cols), "---|" * len(cols)))
        for r in rows:
            cells = [r["figure"], r["value"]] + ([r["nano"] or "-"] if nano else []) + \
                ([r["target"] or "-"] if target else []) + \
                [r["machine"], r["date"], "`%s`" % r["command"],
                 "[%s](%s)" % (os.path.basename(r["source"])[:-3], r["source"])]
            out.append("| %s |\n" % " | ".join(_cell(c) for c in cells))
    out.append("\n## Every results file\n\nEach is one run, its full tables and what it measured; the figures "
               "above are the current ones. Runs kept as history (no current figure) are marked so.\n\n"
               "| file | what | date | machine | current figures |\n|---|---|---|---|---|\n")
    for f, title, info, rows in loaded:
        out.append("| [%s](benchmarks/results/%s) | %s | %s | %s | %s |\n" % (
            f[:-3], f, _cell(re.sub(r"\s*\((?:issue|#) ?[\d.]+\)", "", title.replace("`", ""))), info["date"], _cell(info["machine"]),
            len(rows) if rows else "history"))
    return "".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Generate BENCHMARKS.md from benchmarks/results/*.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if BENCHMARKS.md differs from what would be written")
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"), help="where to write (default BENCHMARKS.md)")
    ap.add_argument("--results", default=RESULTS, help="the results directory (default benchmarks/results)")
    args = ap.parse_args(argv)
    try:
        text = render(args.results)
    except ResultsError as exc:
        print("collect.py: %s" % exc, file=sys.stderr)
        return 2
    if args.check:
        with open(args.out, encoding="utf8") as f:
            same = f.read() == text
        if not same:
            print("collect.py: %s is not what benchmarks/collect.py writes: run it" % args.out, file=sys.stderr)
        return 0 if same else 1
    with open(args.out, "w", encoding="utf8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
