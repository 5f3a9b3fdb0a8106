"""BENCHMARKS.md is generated: it is exactly what benchmarks/collect.py writes from the results files' front matter
(so it cannot drift from them), every row names the machine, the date and a command that exists, the areas users
look for are there, and a results file collect.py cannot read is refused with one line naming the file and field."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECT = os.path.join(ROOT, "benchmarks", "collect.py")


def _collect():
    spec = importlib.util.spec_from_file_location("benchmarks_collect", COLLECT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _benchmarks_md():
    with open(os.path.join(ROOT, "BENCHMARKS.md"), encoding="utf8") as f:
        return f.read()


def _area_rows():
    """{area: [{column: cell}]} of BENCHMARKS.md's area tables."""
    out, area, cols = {}, None, None
    for line in _benchmarks_md().splitlines():
        if line.startswith("## "):
            area, cols = line[3:].strip(), None
            continue
        if area is None or area == "Every results file" or not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cols is None:
            cols = cells
            continue
        out.setdefault(area, []).append(dict(zip(cols, cells)))
    return out


def test_benchmarks_md_is_what_collect_writes():
    assert _benchmarks_md() == _collect().render(), \
        "BENCHMARKS.md is not what benchmarks/collect.py writes: run `python benchmarks/collect.py`"


def test_every_row_names_its_machine_date_and_a_command_that_exists():
    rows = _area_rows()
    assert sum(len(r) for r in rows.values()) >= 20
    for area, area_rows in rows.items():
        for row in area_rows:
            assert row["machine"] and row["figure"] and row["value"], (area, row)
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2})?", row["date"]), (area, row)
            command = row["command"].strip("`")
            scripts = re.findall(r"benchmarks/[\w/]+\.py", command)
            modules = re.findall(r"python -m ([\w.]+)", command)
            assert scripts or modules, (area, command)
            for script in scripts:
                assert os.path.isfile(os.path.join(ROOT, script)), (area, script)
            for module in modules:
                assert importlib.util.find_spec(module) is not None, (area, module)
            link = re.fullmatch(r"\[[^\]]+\]\(([^)]+)\)", row["details"])
            assert link and os.path.isfile(os.path.join(ROOT, link.group(1))), (area, row["details"])


def test_the_areas_users_look_for_are_there():
    rows = _area_rows()
    for area in ("Model vs Pinocchio", "Engine vs MuJoCo", "Nano budget", "Identification", "Recovery",
                 "Prediction fidelity", "Start-up"):
        assert rows.get(area), area


def test_every_results_file_is_listed():
    text = _benchmarks_md()
    for name in os.listdir(os.path.join(ROOT, "benchmarks", "results")):
        if name.endswith(".md"):
            assert "](benchmarks/results/%s)" % name in text, name


GOOD = """---
date: 2026-01-02 03:04
machine: a machine
command: python benchmarks/bench_model.py
current:
  - area: Model vs Pinocchio
    figure: something
    value: 1.0x
---
# A run

- date: 2026-01-02 03:04
"""


@pytest.mark.parametrize("text, field", [
    (GOOD.split("---\n", 2)[2], "front matter"),
    (GOOD.replace("    value: 1.0x\n", ""), "current[0].value"),
    (GOOD.replace("date: 2026-01-02 03:04\nmachine", "date: 2026-01-01 03:04\nmachine"), "date"),
    (GOOD.replace("machine: a machine\n", ""), "machine"),
    (GOOD.replace("    value: 1.0x\n", "    value: 1.0x\n    colour: red\n"), "current[0].colour"),
])
def test_a_results_file_collect_cannot_read_is_one_line_naming_file_and_field(tmp_path, text, field):
    results = tmp_path / "results"
    results.mkdir()
    (results / "good.md").write_text(GOOD)
    r = subprocess.run([sys.executable, COLLECT, "--results", str(results), "--out", str(tmp_path / "B.md")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "| something | 1.0x | a machine | 2026-01-02 03:04 |" in (tmp_path / "B.md").read_text()
    (results / "bad.md").write_text(text)
    r = subprocess.run([sys.executable, COLLECT, "--results", str(results), "--out", str(tmp_path / "B.md")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "bad.md: %s:" % field in r.stderr, r.stderr


def test_check_mode_says_when_benchmarks_md_is_stale(tmp_path):
    stale = tmp_path / "B.md"
    shutil.copy(os.path.join(ROOT, "BENCHMARKS.md"), stale)
    assert subprocess.run([sys.executable, COLLECT, "--check", "--out", str(stale)]).returncode == 0
    stale.write_text(stale.read_text().replace("| 0.65x", "| 0.60x", 1))
    r = subprocess.run([sys.executable, COLLECT, "--check", "--out", str(stale)], capture_output=True, text=True)
    assert r.returncode == 1 and "collect.py" in r.stderr
