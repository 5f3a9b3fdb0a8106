"""The docs: the generated reference pages are what the code gives, the Sphinx build has no warning, and every
internal link and every file path a page names (README.md, BENCHMARKS.md, docs/**/*.md) exists.

A failure names the page, the line and the target."""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from jethexa_dynamics.nodes import diagnostics, graph_spec, params as node_params, reference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pages():
    """The pages the checks read: README.md, BENCHMARKS.md and every Markdown file under docs/."""
    out = [os.path.join(ROOT, p) for p in ("README.md", "BENCHMARKS.md") if os.path.exists(os.path.join(ROOT, p))]
    return out + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))


# ---------------------------------------------------------------------------------------------- generated pages
def test_reference_pages_are_what_the_specs_give():
    """docs/nodes/*.md, docs/api/*.md and the node graph between the markers of docs/nodes.md and README.md (when
    it has them) are what ``python -m jethexa_dynamics.nodes.reference`` writes."""
    generated = reference.files()
    assert generated["docs/nodes.md"] is not None, "docs/nodes.md lost its node-graph markers"
    stale = reference.stale(generated)
    assert not stale, "%s differ from the specs: run python -m jethexa_dynamics.nodes.reference" % stale


def test_check_names_a_drifted_page_and_the_generator_mends_it(tmp_path, monkeypatch, capsys):
    for path in ("README.md", "docs/nodes.md"):
        os.makedirs(os.path.dirname(str(tmp_path / path)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, path), str(tmp_path / path))
    monkeypatch.setattr(reference, "ROOT", str(tmp_path))
    assert reference.main([]) == 0                                   # writes every page into the copy
    assert reference.main(["--check"]) == 0
    page = tmp_path / "docs" / "nodes" / "predictor.md"
    page.write_text(page.read_text().replace("| `horizon` |", "| `horizon_s` |"))
    (tmp_path / "docs" / "nodes" / "old_node.md").write_text("# a node that is no more\n")
    capsys.readouterr()
    assert reference.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "docs/nodes/predictor.md" in out and "docs/nodes/old_node.md" in out, out
    assert reference.main([]) == 0 and reference.main(["--check"]) == 0
    assert not (tmp_path / "docs" / "nodes" / "old_node.md").exists()


def test_a_file_without_the_markers_is_left_alone(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# no markers here\n")
    (tmp_path / "docs" / "nodes.md").write_text("# nor here\n")
    monkeypatch.setattr(reference, "ROOT", str(tmp_path))
    files = reference.files()
    assert files["README.md"] is None and files["docs/nodes.md"] is None
    assert reference.main([]) == 0
    assert (tmp_path / "README.md").read_text() == "# no markers here\n"


def test_every_topic_has_a_qos_profile():
    """Each topic a node creates names its QoS profile (``Endpoint.qos``, a key of ``graph_spec.QOS``): the node
    pages print it, test_security.py compares it with the running nodes'."""
    missing = [(node, e.name) for node, eps in list(graph_spec.ENDPOINTS.items()) + [("every node", graph_spec.THIN_NODE)]
               for e in eps if e.kind in ("publish", "subscribe") and e.name not in ("/rosout", "/parameter_events")
               and e.qos not in graph_spec.QOS]
    assert not missing, missing


def test_every_node_parameter_topic_and_argument_is_on_its_page():
    """Independent of the generator's code paths: each page names what the specs hold."""
    for node, specs in node_params.ALL.items():
        text = open(os.path.join(ROOT, "docs", "nodes", node + ".md"), encoding="utf-8").read()
        for s in specs:
            row = next((ln for ln in text.splitlines() if ln.startswith("| `%s` |" % s.name)), None)
            assert row is not None, (node, s.name)
            assert (s.unit in row) and (("| yes |" in row) == s.read_only), (node, row)
        for e in graph_spec.ENDPOINTS[node]:
            assert "| `%s` | `%s` |" % (e.name, e.type) in text, (node, e.name)
        for status in diagnostics.KEYS[node]:
            for key in status.keys:
                assert "| `%s` |" % key.name in text, (node, key.name)
    text = open(os.path.join(ROOT, "docs", "nodes", "launch_arguments.md"), encoding="utf-8").read()
    for graph, spec in graph_spec.GRAPHS.items():
        assert "## `%s.launch.py`" % graph in text
        for a in spec["arguments"]:
            assert "| `%s` |" % a.name in text, (graph, a.name)


def test_the_graph_picture_has_every_topic_between_two_nodes_of_the_graph():
    """The Mermaid text of the sim graph against the endpoints: each (publisher, topic, subscriber) of the default
    launch is one arrow's label, and no label names a topic nobody creates."""
    text = reference.mermaid("sim")
    arrows = re.findall(r'^  (\w+)(?:\(\[[^]]*\]\))? -->\|"([^"]+)"\| (.+)$', text, re.M)
    drawn = {(p, t, s.split("(")[0].strip()) for p, topics, subs in arrows for t in topics.split(", ")
             for s in subs.split(" & ")}
    expected = set()
    created = {}
    for entry, values in graph_spec.node_parameters("sim"):
        for e in graph_spec.ENDPOINTS[entry.executable]:
            if e.when is None or e.when.applies(values):
                created.setdefault((e.kind, e.name), set()).add(entry.name)
    for (kind, topic), subs in created.items():
        if kind == "subscribe" and topic != "/diagnostics":
            for p in created.get(("publish", topic), {"outside_in"}):
                expected |= {(p, topic, s) for s in subs}
    assert expected <= drawn, sorted(expected - drawn)
    assert ("servo_driver", "/diagnostics", "damage_monitor") in drawn
    assert ("robot_emulator", "emulator/imu_motion", "imu") in drawn and "serial bus" in text


def test_every_declared_diagnostics_key_is_still_written_by_the_code():
    """nodes/diagnostics.py against the package's source: each key's fixed text (the parts between ``<...>``) is
    in a string of the code (``test_security.py`` checks the other way: every key a running node publishes is
    declared)."""
    source = "\n".join(open(p, encoding="utf-8").read() for p in glob.glob(
        os.path.join(ROOT, "jethexa_dynamics", "**", "*.py"), recursive=True)
        if not p.endswith(os.path.join("nodes", "diagnostics.py")))
    strings = set(re.findall(r"\"([^\"\n]*)\"", source))
    missing = []
    for node, statuses in diagnostics.KEYS.items():
        for status in statuses:
            if status.keys == tuple(diagnostics.K(k, v) for k, v in diagnostics.SERVO_FIELDS.items()):
                continue                  # ServoStatus's fields, by name: diagnostics.py asserts them
            for key in status.keys:
                fragments = [f for f in re.split(r"<[^>]*>", key.name) if len(f.strip(" _")) >= 3]
                if not all(any(f.strip() in text for text in strings) for f in fragments):
                    missing.append((node, status.name, key.name))
    assert not missing, "declared in nodes/diagnostics.py but written nowhere in the code: %s" % missing


# ---------------------------------------------------------------------------------------------- the Sphinx build
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sphinx_builds_the_docs_without_a_warning(tmp_path):
    """``sphinx-build -W``: a broken cross-reference, a page in no toctree, a malformed docstring of the API pages
    or a Markdown link to a missing file fails the build."""
    pytest.importorskip("myst_parser")
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        os.path.join(ROOT, "docs"), str(tmp_path / "html")],
                       capture_output=True, text=True, timeout=850, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-6000:]
    assert (tmp_path / "html" / "nodes" / "predictor.html").exists()
    assert (tmp_path / "html" / "api" / "model.html").exists()


# ---------------------------------------------------------------------------------------------- links and paths
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|!\[[^\]]*\]\(\s*([^)\s]+)[^)]*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
#: what makes a code span or a word in a code block a file path: a known file suffix, or a known top-level directory
PATH = re.compile(r"^[\w.-]+(/[\w.-]+)*\.(py|md|yaml|yml|xml|txt|sh|urdf|json|csv|toml|cfg|ini|launch\.py)$")
TOP_DIRS = ("benchmarks/", "config/", "docs/", "docker/", "jethexa_dynamics/", "launch/", "policy/", "scripts/",
            "test/", "tools/", "urdf/")


def slug(heading):
    """GitHub's (and MyST's) anchor of a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__|<[^>]+>", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    out, seen = set(), {}
    in_code = False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
        out |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line))
    return out


def lines_of(path):
    """(line number, text, in a code block) of a page; the generated graph pictures are left out (their labels are
    topics)."""
    in_code = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        yield number, line, in_code


def link_problems(path, root=ROOT):
    """[(line, target, what is wrong)] of the Markdown links of ``path`` (a page of the repository ``root``)."""
    out = []
    here = os.path.dirname(path)
    for number, line, in_code in lines_of(path):
        if in_code:
            continue
        for m in LINK.finditer(CODE_SPAN.sub("", line)):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):        # http:, https:, mailto:, ...
                continue
            file_part, _, fragment = target.partition("#")
            full = os.path.normpath(os.path.join(here, file_part)) if file_part else path
            if not os.path.exists(full):
                out.append((number, target, "no such file"))
            elif fragment and full.endswith(".md") and fragment not in anchors(full):
                out.append((number, target, "no heading with that anchor"))
            elif not full.startswith(root + os.sep):
                out.append((number, target, "outside the repository"))
    return out


def named_paths(path):
    """[(line, path)]: the code spans, and the words of code blocks, that name a repository file or directory: a
    path with a directory part taken to be this repository's (another project's file is named by its name and
    project, not by a path)."""
    out = []
    for number, line, in_code in lines_of(path):
        words = line.split() if in_code else [m.group(2).strip() for m in CODE_SPAN.finditer(line)]
        for word in words:
            word = word.strip("'\"(),;")
            word = re.sub(r":[\w.]+$", "", word)           # nodes/executor.py:LeanExecutor
            if re.search(r"[<>*{}$~]|\.\.\.", word) or word.startswith("/"):
                continue                                    # a pattern, a placeholder, a device or /tmp path
            if "/" not in word:
                continue                                    # a file's name (sim.launch.py, metadata.yaml), no path
            if PATH.match(word) or (not in_code and word.startswith(TOP_DIRS) and re.match(r"^[\w./-]+$", word)):
                out.append((number, word))
    return out


def path_exists(page, name):
    """A named path exists relative to the repository, to the page, or (a module named from the package's
    top, ``nodes/params.py``) to jethexa_dynamics/."""
    bases = (ROOT, os.path.dirname(page), os.path.join(ROOT, "jethexa_dynamics"))
    return any(os.path.exists(os.path.join(b, name)) for b in bases)


def test_every_internal_link_resolves():
    problems = []
    for page in pages():
        problems += ["%s:%d: %s: %s" % (os.path.relpath(page, ROOT), n, t, why) for n, t, why in link_problems(page)]
    assert not problems, "\n".join(problems)


def test_every_file_path_a_page_names_exists():
    problems = []
    checked = 0
    for page in pages():
        for number, name in named_paths(page):
            checked += 1
            if not path_exists(page, name):
                problems.append("%s:%d: %s: no such file or directory" % (os.path.relpath(page, ROOT), number, name))
    assert checked > 100, checked
    assert not problems, "\n".join(problems)


def test_the_checkers_find_what_is_broken(tmp_path):
    """The link and path checks against a page with known faults (they must be able to fail)."""
    (tmp_path / "b.md").write_text("# Part one\n\n## Part `two`: the end\n")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#part-two-the-end) [gone](c.md) [bad anchor](b.md#part-three)\n"
                    "[web](https://example.org/x.md) `config/servo_driver.yaml` `config/no_such.yaml`\n"
                    "```bash\npython tools/no_such_tool.py /dev/ttyTHS1\n```\n`[not a link](nowhere.md)`\n")
    assert link_problems(str(page), str(tmp_path)) == [(1, "c.md", "no such file"), (1, "b.md#part-three", "no heading with that "
                                                                                             "anchor")]
    named = named_paths(str(page))
    assert named == [(2, "config/servo_driver.yaml"), (2, "config/no_such.yaml"), (4, "tools/no_such_tool.py")]
    assert [n for _, n in named if not path_exists(str(page), n)] == ["config/no_such.yaml", "tools/no_such_tool.py"]
