"""The README's examples say what the code does (issue 14: the tour claimed 20 DoF and 5 feet)."""
import os
import re
import subprocess

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf8") as fh:
        return fh.read()


def _tour_block():
    text = _readme()
    tour = text[text.index("## A tour"):]
    return re.search(r"```python\n(.*?)```", tour, re.S).group(1)


def test_tour_runs_and_its_dof_and_feet_comments_are_what_the_code_gives():
    code = _tour_block()
    ns = {"np": np}
    checked = 0
    for line in code.splitlines():
        m = re.search(r"#\s*(\d+) DoF, (\d+) feet", line)
        if m is None:
            continue
        head = line.split("#")[0].strip()
        obj = head.split(".")[0]
        exec(code[: code.index(line)], ns)  # everything before the claim
        value = ns[obj]
        # DoF = nv, the velocity dimension (6 base + joints), as jethexa-model-report prints it
        assert (value.nv, len(value.tip_names)) == (int(m.group(1)), int(m.group(2))), (line, value.tip_names)
        checked += 1
    assert checked >= 1
    exec(code, {"np": np})  # the whole tour runs


def test_readme_flow_never_records_twice_to_the_same_bag():
    """``jethexa-demo --record P`` refuses an existing P, so following the README in order must not reuse one."""
    paths = re.findall(r"jethexa-demo --record (\S+)", _readme())
    assert paths and len(paths) == len(set(paths)), paths


def test_run_and_output_directories_are_ignored_by_git():
    r = subprocess.run(["git", "check-ignore", "runs/walk1/metadata.yaml", "out/damage2/trajectory.csv"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.stdout.split() == ["runs/walk1/metadata.yaml", "out/damage2/trajectory.csv"], r.stdout + r.stderr


def test_docs_list_every_predictor_the_demo_accepts():
    """docs/nodes.md listed two predictors where three are accepted (issue 14)."""
    from jethexa_dynamics.nodes.params import PREDICTOR
    from jethexa_dynamics.predictors.registry import predictor_names

    choices = PREDICTOR["predictor"].choices
    assert sorted(choices) == sorted(predictor_names())  # the node and jethexa-validate accept the same
    with open(os.path.join(ROOT, "docs", "nodes.md"), encoding="utf8") as fh:
        row = next(line for line in fh if line.startswith("| `--predictor NAME`"))
    assert all("`%s`" % c in row for c in choices), row
