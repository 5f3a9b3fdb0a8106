"""The README says what the code does: its tour runs and its DoF/feet claims hold, the two commands are what the
scripts and CI run, every command line and option it names exists, every topic it explains is one the nodes
publish with that type, every message of its troubleshooting table is one the code writes, every link resolves,
and it stays a guide (short; no dates, no issue numbers)."""
import glob
import os
import re
import subprocess
import sys

import numpy as np
from test_startup import _console_scripts

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
    text = _readme()
    paths = re.findall(r"jethexa-demo [^\n]*--record (\S+)", text)
    assert paths and len(paths) == len(set(paths)), paths
    # and every bag the README then validates or identifies is one it recorded before
    for m in re.finditer(r"jethexa-(?:validate|identify) (\S+)", text):
        assert m.group(1) in re.findall(r"jethexa-demo [^\n]*--record (\S+)", text[:m.start()]), m.group(0)


def test_run_and_output_directories_are_ignored_by_git():
    r = subprocess.run(["git", "check-ignore", "runs/walk1/metadata.yaml", "out/damage2/trajectory.csv"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.stdout.split() == ["runs/walk1/metadata.yaml", "out/damage2/trajectory.csv"], r.stdout + r.stderr


def test_docs_list_every_predictor_the_demo_accepts():
    """Every page with a row for the demo's ``--predictor NAME`` lists all the predictors it accepts (docs/nodes.md
    once listed two of three)."""
    from jethexa_dynamics.nodes.params import PREDICTOR
    from jethexa_dynamics.predictors.registry import predictor_names

    choices = PREDICTOR["predictor"].choices
    assert sorted(choices) == sorted(predictor_names())  # the node and jethexa-validate accept the same
    rows = []
    for page in ("getting_started.md", "nodes.md"):
        path = os.path.join(ROOT, "docs", page)
        if os.path.exists(path):
            with open(path, encoding="utf8") as fh:
                rows += [line for line in fh if line.startswith("| `--predictor NAME`")]
    assert rows
    for row in rows:
        assert all("`%s`" % c in row for c in choices), row

def _section(title):
    text = _readme()
    start = text.index("\n## " + title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def _bash_lines():
    """The command lines of the README's bash blocks, continuations joined, comments dropped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", _readme(), re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line:
                lines.append(line)
    return lines



def test_readme_is_a_guide_short_without_dates_or_issue_numbers():
    text = _readme()
    assert len(text.splitlines()) <= 260, len(text.splitlines())
    assert not re.search(r"\b20\d\d-\d\d(-\d\d)?\b", text), "a date in the README"
    months = r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
    assert not re.search(r"\b\d{1,2} %s\b|\b%s \d{1,2}\b" % (months, months), text), "a date in the README"
    assert not re.search(r"\b[Ii]ssues? \d+|(?<![\w&])#\d+\b", text), "an issue number in the README"
    for title in ("The two commands", "A tour", "On the robot", "What to echo, and what it means", "Troubleshooting",
                  "Results at a glance"):
        assert "\n## " + title + "\n" in text, title


def test_node_graph_markers_on_their_own_lines():
    lines = _readme().splitlines()
    begin, end = lines.index("<!-- node-graph:begin -->"), lines.index("<!-- node-graph:end -->")
    assert begin < end


def test_the_two_commands_are_what_the_scripts_and_ci_run():
    text = _section("The two commands")
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text
    with open(os.path.join(ROOT, "scripts", "demo.sh")) as f:
        demo = f.read()
    assert "bash scripts/setup_env.sh" in demo and re.search(r"^exec \.venv/bin/jethexa-demo \"\$@\"$", demo, re.M)
    with open(os.path.join(ROOT, "scripts", "test.sh")) as f:
        test = f.read()
    assert "bash scripts/setup_env.sh" in test and re.search(r"^exec .*-m pytest .*\"\$@\"", test, re.M)
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = [ln for ln in f.read().splitlines() if ln.strip() and not ln.startswith("#")]
    assert ci[-1] == "exec bash scripts/test.sh", ci


def test_every_command_line_and_option_in_the_readme_exists():
    """Each ``jethexa-*`` line (and ``bash scripts/demo.sh OPTIONS``) names a console script of setup.py, and
    every ``--option`` on it is one that script's --help lists."""
    scripts = _console_scripts()
    bindir = os.path.dirname(sys.executable)
    checked = 0
    for line in _bash_lines():
        for cmd in line.split("&&"):
            words = cmd.split()
            if words[:2] == ["bash", "scripts/demo.sh"]:
                words = ["jethexa-demo"] + words[2:]
            if not words or not words[0].startswith("jethexa-"):
                continue
            assert words[0] in scripts, (words[0], line)
            options = [w.split("=")[0] for w in words[1:] if w.startswith("--")]
            if not options:
                continue
            exe = os.path.join(bindir, words[0])
            argv = [exe] if os.path.exists(exe) else [sys.executable, "-c",
                                                      "import sys; from %s import %s as m; sys.argv[0] = %r; m()"
                                                      % (*scripts[words[0]].split(":"), words[0])]
            r = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=300, cwd=ROOT)
            assert r.returncode == 0, r.stderr[-2000:]
            for opt in options:
                assert re.search(r"(^|[\s,\[])%s\b" % re.escape(opt), r.stdout), (opt, line)
                checked += 1
    assert checked >= 5, checked


def test_every_topic_explained_is_published_by_a_node_with_that_type():
    from jethexa_dynamics.nodes.graph_spec import ENDPOINTS, THIN_NODE

    published = {}
    for eps in list(ENDPOINTS.values()) + [THIN_NODE]:
        for e in eps:
            if e.kind == "publish":
                published["/" + e.name.lstrip("/")] = e.type.replace("/msg/", "/")
    rows = [ln for ln in _section("What to echo, and what it means").splitlines() if ln.startswith("| `/")]
    assert len(rows) >= 7, rows
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        topics, types = re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", cells[1])
        assert len(topics) == len(types), row
        for topic, typ in zip(topics, types):
            assert published.get(topic) == typ, (topic, typ, published.get(topic))
    for line in _bash_lines():
        m = re.match(r"ros2 topic echo (?:--\S+ \S+ )?(/\S+)", line)
        if m:
            assert m.group(1) in published, line


def _source_text():
    """Every .py file of the package, format specifiers (``%s``, ``%.1f``, ``{}``) written as ``...``."""
    out = []
    for path in glob.glob(os.path.join(ROOT, "jethexa_dynamics", "**", "*.py"), recursive=True):
        with open(path, encoding="utf8") as f:
            out.append(f.read())
    text = "\n".join(out)
    return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdfrgx]|\{[^{}\n]*\}", "...", text)


#: messages of the troubleshooting table that come from outside the package
EXTERNAL_MESSAGES = {"Operation not permitted"}


def test_every_troubleshooting_message_is_one_the_code_writes():
    source = _source_text()
    rows = [ln for ln in _section("Troubleshooting").splitlines() if ln.startswith("| `")]
    assert len(rows) >= 10, rows
    for row in rows:
        first = row.strip("|").split("|")[0]
        for message in re.findall(r"`([^`]+)`", first):
            if message in EXTERNAL_MESSAGES:
                continue
            for fragment in message.split("..."):
                fragment = fragment.strip(" ;:,")
                if len(fragment) >= 4:
                    assert fragment in source, (fragment, message)


def test_every_link_of_the_readme_resolves():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", _readme())
    assert len(links) >= 15, links
    for link in links:
        if "://" in link:
            continue
        assert os.path.exists(os.path.join(ROOT, link)), link


def test_results_at_a_glance_link_where_each_figure_is_measured():
    rows = [ln for ln in _section("Results at a glance").splitlines()
            if ln.startswith("| ") and not ln.startswith("| what") and "---" not in ln]
    assert len(rows) >= 8, rows
    for row in rows:
        where = re.search(r"\]\(([^)]+)\)\s*\|\s*$", row)
        assert where and os.path.isfile(os.path.join(ROOT, where.group(1))), row
