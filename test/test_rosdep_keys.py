"""Issue 24: ``rosdep install --from-paths src -y --ignore-src`` resolves every key of package.xml first and
stops on the first one it cannot resolve, before installing anything. Every key is checked against
test/data/humble_rosdep_keys.txt (Humble's rosdep keys for Ubuntu 22.04 and its released packages, from
ros/rosdistro by tools/humble_rosdep_keys.py); no network here."""
import importlib.util
import os
import re
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS_FILE = os.path.join(ROOT, "test", "data", "humble_rosdep_keys.txt")
DEP_TAGS = ("depend", "build_depend", "build_export_depend", "buildtool_depend", "buildtool_export_depend",
            "exec_depend", "test_depend", "doc_depend")


def _keys_file():
    with open(KEYS_FILE, encoding="utf8") as f:
        lines = [ln.rstrip("\n") for ln in f]
    return [ln for ln in lines if ln.startswith("#")], {ln for ln in lines if ln and not ln.startswith("#")}


def _package_xml_keys():
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    return [(e.tag, e.text.strip()) for e in root if e.tag in DEP_TAGS]


def _tool():
    spec = importlib.util.spec_from_file_location("humble_rosdep_keys",
                                                  os.path.join(ROOT, "tools", "humble_rosdep_keys.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_package_xml_key_resolves_on_humble_jammy():
    _, known = _keys_file()
    deps = _package_xml_keys()
    assert len(deps) >= 15, deps
    missing = ["<%s>%s</%s>" % (tag, key, tag) for tag, key in deps if key not in known]
    assert not missing, ("not a rosdep key on Humble/Ubuntu 22.04 nor a Humble package, so `rosdep install` "
                         "stops before installing anything: %s (list: %s)" % (", ".join(missing), KEYS_FILE))


def test_package_xml_keeps_the_ament_python_build_type_without_the_old_template_buildtool_key():
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    assert root.find("export").findtext("build_type") == "ament_python"
    assert ("buildtool_depend", "ament_python") not in _package_xml_keys()


def test_the_key_list_names_its_rosdistro_commit_and_holds_what_the_issue_found():
    header, known = _keys_file()
    assert any(re.fullmatch(r"# rosdistro commit: [0-9a-f]{40}", ln) for ln in header), header
    # read in ros/rosdistro (issue 24): these resolve on humble/jammy ...
    for key in ("rclpy", "sensor_msgs", "launch_ros", "robot_state_publisher", "pinocchio", "python3-numpy",
                "python3-smbus2", "python3-transforms3d", "python3-numba", "python3-rosbags-pip"):
        assert key in known, key
    # ... and these do not
    for key in ("ament_python", "python3-rosbags", "python3-pinocchio"):
        assert key not in known, key
    assert len(known) > 3000


# ------------------------------------------------------------------ the generator (rosdep's rules, offline)
RULES = """
plain: {ubuntu: [p1]}
wildcard: {ubuntu: {'*': [p2], focal: null}}
null_for_jammy: {ubuntu: {jammy: null, noble: [p3]}}
only_focal: {ubuntu: {focal: [p4]}}
no_ubuntu: {debian: [p5]}
ubuntu_null: {ubuntu: null}
pip_only: {ubuntu: {pip: {packages: [p6]}}}
jammy_pip: {ubuntu: {jammy: {pip: {packages: [p7]}}}}
jammy_apt_dict: {ubuntu: {jammy: {packages: [p8]}}}
"""
DISTRIBUTION = """
release_platforms: {ubuntu: [jammy]}
repositories:
  one_pkg_repo: {release: {version: 1.0.0-1}}
  multi: {release: {packages: [multi_a, multi_b], version: 2.0.0-1}}
  unreleased: {release: {packages: [never_built]}}
  source_only: {source: {type: git}}
"""


def test_generator_follows_rosdeps_precedence_for_ubuntu_jammy(tmp_path):
    for rel, text in (("rosdep/base.yaml", RULES), ("rosdep/python.yaml", "py_key: {ubuntu: [python3-x]}"),
                      ("rosdep/ruby.yaml", "{}"), ("humble/distribution.yaml", DISTRIBUTION)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    lines = list(_tool().generate(str(tmp_path), "0" * 40))
    names = [ln for ln in lines if not ln.startswith("#")]
    assert names == sorted(["plain", "wildcard", "pip_only", "jammy_pip", "jammy_apt_dict", "py_key",
                            "one_pkg_repo", "multi_a", "multi_b"])
    assert "# rosdistro commit: " + "0" * 40 in lines


def test_generator_needs_a_commit_when_the_path_is_no_checkout(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        _tool().main([str(tmp_path)])
    assert exc.value.code == 2
    assert "--commit" in capsys.readouterr().err
