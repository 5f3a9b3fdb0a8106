#!/usr/bin/env python3
"""Per-file test durations from pytest's JUnit XML (``--junitxml``), as a markdown table, slowest first.

    python3 scripts/test_durations.py junit.xml [junit2.xml ...] [--labels before,after] [--top 0]

Several files (one per run) give one column each. A test file's time is the sum of its test cases' times
(setup, call and teardown, as pytest writes them; with parallel workers they overlap, so the sum exceeds the wall
time); its CPU, where the run recorded it (test/conftest.py), the sum of its cases' ``cpu_s``; the run's wall time
is the ``testsuite`` element's ``time``. Standard library only."""
import argparse
import collections
import sys
import xml.etree.ElementTree as ET


def per_file(path):
    """({test file: (seconds, tests, failed, CPU seconds or None)}, wall seconds) of one JUnit XML file; CPU from
    the test cases' ``cpu_s`` property (test/conftest.py writes it), None where the file has none."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    files = collections.defaultdict(lambda: [0.0, 0, 0, None])
    wall = 0.0
    for suite in suites:
        wall += float(suite.get("time", 0.0))
        for case in suite.iter("testcase"):
            name = case.get("file") or (case.get("classname", "").replace(".", "/") + ".py")
            row = files[name]
            row[0] += float(case.get("time", 0.0))
            row[1] += 1
            row[2] += bool(case.find("failure") is not None or case.find("error") is not None)
            for prop in case.iter("property"):
                if prop.get("name") == "cpu_s":
                    row[3] = (row[3] or 0.0) + float(prop.get("value"))
    return {k: tuple(v) for k, v in files.items()}, wall


def table(paths, labels, top=0):
    runs = [per_file(p) for p in paths]
    names = sorted({n for files, _ in runs for n in files}, key=lambda n: -max(f.get(n, (0.0,))[0]
                                                                            for f, _ in runs))
    if top:
        names = names[:top]
    cpu = [any(v[3] is not None for v in files.values()) for files, _ in runs]
    head = []
    for lab, c in zip(labels, cpu):
        head += ["%s [s]" % lab] + (["%s CPU [s]" % lab] if c else [])
    md = ["| test file | tests | " + " | ".join(head) + " |", "|---|---|" + "---|" * len(head)]
    for n in names:
        tests = max(f.get(n, (0, 0, 0, None))[1] for f, _ in runs)
        cells = []
        for (files, _), c in zip(runs, cpu):
            s, _, failed, used = files.get(n, (float("nan"), 0, 0, None))
            cells.append("%.1f%s" % (s, " (%d failed)" % failed if failed else ""))
            if c:
                cells.append("-" if used is None else "%.1f" % used)
        md.append("| %s | %d | %s |" % (n, tests, " | ".join(cells)))
    total, wall = [], []
    for (files, w), c in zip(runs, cpu):
        total.append("**%.0f**" % sum(v[0] for v in files.values()))
        wall.append("**%.0f**" % w)
        if c:
            total.append("**%.0f**" % sum(v[3] or 0.0 for v in files.values()))
            wall.append("")
    md.append("| **sum over the tests** | %d | %s |" % (max(sum(v[1] for v in f.values()) for f, _ in runs),
                                                        " | ".join(total)))
    md.append("| **wall time of the pytest run** | | %s |" % " | ".join(wall))
    return "\n".join(md)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit", nargs="+", help="JUnit XML files (pytest --junitxml)")
    ap.add_argument("--labels", help="comma-separated column labels (default: the file names)")
    ap.add_argument("--top", type=int, default=0, help="only the N slowest files (default 0: all)")
    args = ap.parse_args(argv)
    labels = args.labels.split(",") if args.labels else args.junit
    if len(labels) != len(args.junit):
        ap.error("argument --labels: %d labels for %d files" % (len(labels), len(args.junit)))
    print(table(args.junit, labels, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
