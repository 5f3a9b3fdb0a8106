"""Every option of every console script, given a bad value: ONE line on stderr naming the option, exit status
2, no traceback, nothing on stdout -- and all of it while parsing, before any work starts (issue 14)."""
import os
import subprocess
import sys

import pytest

from jethexa_dynamics import demo, warmup
from jethexa_dynamics.damage import calibrate_cli, identify_cli
from jethexa_dynamics.hardware import emulator_cli
from jethexa_dynamics.model import report as model_report
from jethexa_dynamics.sim import cli as sim_cli
from jethexa_dynamics.validation import cli as validate_cli

EXISTING = "<existing>"  # replaced by an existing directory (tmp_path)
SCRIPTS = {  # console script -> (module with build_parser/main, leading arguments)
    "jethexa-demo": (demo, []),
    "jethexa-sim": (sim_cli, ["--quiet"]),
    "jethexa-bus-emulator": (emulator_cli, []),
    "jethexa-validate": (validate_cli, [EXISTING]),
    "jethexa-model-report": (model_report, []),
    "jethexa-identify": (identify_cli, [EXISTING]),
    "jethexa-calibrate": (calibrate_cli, [EXISTING]),
    "jethexa-warmup": (warmup, []),
}
BAD = {  # (script, option) -> bad values
    ("jethexa-demo", "--duration"): ["0", "x"],
    ("jethexa-demo", "--damage-at"): ["-1", "20"],
    ("jethexa-demo", "--no-damage"): ["--no-damage=yes"],
    ("jethexa-demo", "--damage"): ["XX"],
    ("jethexa-demo", "--break"): ["XX", "LM:7"],
    ("jethexa-demo", "--recovery"): ["maybe"],
    ("jethexa-demo", "--speed"): ["1", "nan"],
    ("jethexa-demo", "--predictor"): ["foo"],
    ("jethexa-demo", "--horizon"): ["0"],
    ("jethexa-demo", "--predictor-rate"): ["0"],
    ("jethexa-demo", "--period"): ["0"],
    ("jethexa-demo", "--record"): [EXISTING, "/proc/x"],
    ("jethexa-demo", "--record-storage"): ["rosbag1"],
    ("jethexa-demo", "--network"): ["--network=yes"],
    ("jethexa-demo", "--kit"): ["xavier"],
    ("jethexa-demo", "--body-estimate"): ["--body-estimate=yes"],
    ("jethexa-sim", "--scenario"): ["damage3"],
    ("jethexa-sim", "--gait"): ["trot"],
    ("jethexa-sim", "--duration"): ["0"],
    ("jethexa-sim", "--dt"): ["0.5"],
    ("jethexa-sim", "--damage-at"): ["-1"],
    ("jethexa-sim", "--break"): ["XX", "LM:7"],
    ("jethexa-sim", "--recovery"): ["maybe"],
    ("jethexa-sim", "--out"): ["/proc/nope"],
    ("jethexa-sim", "--step-length"): ["-1"],
    ("jethexa-sim", "--step-height"): ["-1"],
    ("jethexa-sim", "--cycle-time"): ["0"],
    ("jethexa-sim", "--body-height"): ["0"],
    ("jethexa-sim", "--yaw-rate"): ["inf"],
    ("jethexa-sim", "--friction"): ["ice"],
    ("jethexa-sim", "--mu"): ["-1"],
    ("jethexa-sim", "--settle"): ["-1"],
    ("jethexa-sim", "--record-rate"): ["0"],
    ("jethexa-sim", "--no-plots"): ["--no-plots=yes"],
    ("jethexa-sim", "--quiet"): ["--quiet=yes"],
    ("jethexa-bus-emulator", "--config"): ["/nonexistent/servos.yaml"],
    ("jethexa-bus-emulator", "--faults"): ["5:explode"],
    ("jethexa-bus-emulator", "--transport"): ["can"],
    ("jethexa-bus-emulator", "--link"): ["/proc/x/link"],
    ("jethexa-bus-emulator", "--seed"): ["-1", "x"],
    ("jethexa-bus-emulator", "--imu-rate"): ["-1", "2000", "x"],
    ("jethexa-bus-emulator", "--battery-rate"): ["nan", "-5"],
    ("jethexa-validate", "bag"): ["/nonexistent/bag"],
    ("jethexa-validate", "--predictor"): ["foo"],
    ("jethexa-validate", "--compare-all"): ["--compare-all=yes"],
    ("jethexa-validate", "--list-predictors"): ["--list-predictors=yes"],
    ("jethexa-validate", "--model"): ["/nonexistent.urdf"],
    ("jethexa-validate", "--reanchor-horizon"): ["0"],
    ("jethexa-validate", "--start"): ["-1"],
    ("jethexa-validate", "--end"): ["0"],
    ("jethexa-validate", "--commands-topic"): ["joint commands"],
    ("jethexa-validate", "--joint-states-topic"): ["1joint_states"],
    ("jethexa-validate", "--setpoints-topic"): ["1joint_states/setpoint"],
    ("jethexa-validate", "--imu-topic"): ["imu//data"],
    ("jethexa-validate", "--layout"): ["ros3"],
    ("jethexa-validate", "--joint-map"): ["coxa_LF_joint=nowhere", "coxa_LF_joint=coxa_joint_LF:2"],
    ("jethexa-validate", "--morphology-topic"): ["morph-ology"],
    ("jethexa-validate", "--ground-truth-topic"): [""],
    ("jethexa-validate", "--max-gap"): ["0"],
    ("jethexa-validate", "--out"): ["/proc/nope"],
    ("jethexa-validate", "--json"): ["/proc/nope/report.json"],
    ("jethexa-validate", "--force"): ["--force=yes"],
    ("jethexa-validate", "--no-plots"): ["--no-plots=yes"],
    ("jethexa-validate", "--quiet"): ["--quiet=yes"],
    ("jethexa-model-report", "--urdf"): ["/nonexistent.urdf"],
    ("jethexa-model-report", "--morphology"): ["a,b"],
    ("jethexa-identify", "bag"): ["/nonexistent/bag"],
    ("jethexa-identify", "--window"): ["0.1", "x"],
    ("jethexa-identify", "--threshold"): ["1.5"],
    ("jethexa-identify", "--confirm"): ["0", "1.5"],
    ("jethexa-identify", "--initial"): ["LM:9"],
    ("jethexa-identify", "--start"): ["-1"],
    ("jethexa-identify", "--end"): ["0"],
    ("jethexa-identify", "--commands-topic"): ["joint commands"],
    ("jethexa-identify", "--joint-states-topic"): ["1joint_states"],
    ("jethexa-identify", "--setpoints-topic"): ["1joint_states/setpoint"],
    ("jethexa-identify", "--servo-kp"): ["1e9"],
    ("jethexa-identify", "--servo-ki"): ["nan"],
    ("jethexa-identify", "--servo-kd"): ["-0.5"],
    ("jethexa-identify", "--servo-damping"): [""],
    ("jethexa-identify", "--imu-topic"): ["imu//data"],
    ("jethexa-identify", "--layout"): ["ros3"],
    ("jethexa-identify", "--joint-map"): ["coxa_LF_joint=nowhere", "coxa_LF_joint=coxa_joint_LF:2"],
    ("jethexa-identify", "--morphology-topic"): ["morph-ology"],
    ("jethexa-identify", "--ground-truth-topic"): [""],
    ("jethexa-identify", "--max-gap"): ["0"],
    ("jethexa-identify", "--out"): ["/proc/nope"],
    ("jethexa-identify", "--json"): ["/proc/nope/identify.json"],
    ("jethexa-identify", "--no-plots"): ["--no-plots=yes"],
    ("jethexa-identify", "--quiet"): ["--quiet=yes"],
    ("jethexa-warmup", "--print-cache-dir"): ["--print-cache-dir=yes"],
    ("jethexa-warmup", "--jobs"): ["0", "9", "two"],
    ("jethexa-validate", "--params"): ["/nonexistent.yaml", EXISTING],
    ("jethexa-calibrate", "bag"): ["/nonexistent/bag"],
    ("jethexa-calibrate", "--out"): ["/proc/nope/body.yaml", EXISTING],
    ("jethexa-calibrate", "--min-seconds"): ["1", "x"],
    ("jethexa-calibrate", "--start"): ["-1"],
    ("jethexa-calibrate", "--end"): ["0"],
    ("jethexa-calibrate", "--commands-topic"): ["joint commands"],
    ("jethexa-calibrate", "--joint-states-topic"): ["1joint_states"],
    ("jethexa-calibrate", "--setpoints-topic"): ["1joint_states/setpoint"],
    ("jethexa-calibrate", "--imu-topic"): ["imu//data"],
    ("jethexa-calibrate", "--morphology-topic"): ["morph-ology"],
    ("jethexa-calibrate", "--ground-truth-topic"): [""],
    ("jethexa-calibrate", "--max-gap"): ["0"],
    ("jethexa-calibrate", "--servo-kp"): ["0", "x"],
    ("jethexa-calibrate", "--known-body-mass"): ["0", "-1.35", "heavy"],
    ("jethexa-calibrate", "--servo-ki"): ["-1"],
    ("jethexa-calibrate", "--servo-kd"): ["101"],
    ("jethexa-calibrate", "--servo-damping"): ["measured"],
}


def _options(module):
    """Every option of a parser: its first long option string, or the positional's name."""
    out = []
    for a in module.build_parser()._actions:
        if "-h" in a.option_strings:
            continue
        out.append(next((s for s in a.option_strings if s.startswith("--")), a.dest))
    return out


def test_table_covers_every_option_of_every_console_script():
    import setuptools  # noqa: F401 - setup.py below only lists names
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "setup.py")) as fh:
        text = fh.read()
    for script in SCRIPTS:
        assert '"%s = ' % script in text, script
    have = {(s, o) for s, (m, _) in SCRIPTS.items() for o in _options(m)}
    assert have == set(BAD), (sorted(have - set(BAD)), sorted(set(BAD) - have))


CASES = [(s, o, v) for (s, o), vals in BAD.items() for v in vals]


@pytest.mark.parametrize("script, option, value", CASES, ids=["%s %s %s" % c for c in CASES])
def test_bad_value_gives_one_line_naming_the_option_and_exit_2(script, option, value, tmp_path, capsys):
    module, lead = SCRIPTS[script]
    value = str(tmp_path) if value == EXISTING else value
    lead = [str(tmp_path) if a == EXISTING else a for a in lead]
    if value.startswith("--"):
        argv = lead + [value]
    elif option.startswith("--"):
        argv = lead + [option, value]
    else:  # the positional
        argv = [value]
    try:
        code = module.main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, (argv, out, err)
    assert len(lines) == 1, err
    assert lines[0].startswith("%s: error: " % script), err
    assert option in lines[0], err
    assert "Traceback" not in err and out == ""
    if option == "--damage-at" and script == "jethexa-demo" and value == "20":
        assert "(0, --duration)" in lines[0]


@pytest.mark.parametrize("argv, option", [
    (["-m", "jethexa_dynamics.demo", "--record", EXISTING], "--record"),
    (["-m", "jethexa_dynamics.demo", "--predictor", "foo"], "--predictor"),
    (["-m", "jethexa_dynamics.sim.cli", "--out", "/proc/nope"], "--out"),
])
def test_console_scripts_fail_before_any_work(argv, option, tmp_path):
    """As a user runs them: one line, exit 2, and no work (no graph built, nothing simulated)."""
    argv = [str(tmp_path) if a == EXISTING else a for a in argv]
    r = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and option in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""  # the demo prints its banner and the sim its progress only once work starts


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_is_argparse_own_text(script, monkeypatch):
    """The parsers ask the terminal for its width once (``cli_args.ArgumentParser._get_formatter``); --help and
    usage are still argparse's own text, at any width."""
    import argparse

    from jethexa_dynamics import cli_args
    module = SCRIPTS[script][0]
    for columns in ("60", "200"):
        monkeypatch.setenv("COLUMNS", columns)
        ours = module.build_parser()
        texts = (ours.format_help(), ours.format_usage())
        with monkeypatch.context() as m:
            m.setattr(cli_args.ArgumentParser, "_get_formatter", argparse.ArgumentParser._get_formatter)
            plain = module.build_parser()
            assert texts == (plain.format_help(), plain.format_usage())
