"""jethexa-identify: a bag with a silent LM break (nothing on `morphology`) -> the change, the JSON report of
the issue's exact shape, the PNG; bad options and bad bags -> exit 2 with one clear line, before any work."""
import json
import subprocess
import sys

import pytest

from jethexa_dynamics.damage.identify_cli import main
from jethexa_dynamics.validation import synthetic as S
from jethexa_dynamics.validation.simbag import write_sim_bag

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]


@pytest.fixture(scope="module")
def break_bag(tmp_path_factory):
    path = tmp_path_factory.mktemp("bags") / "lm_break"
    write_sim_bag(path, duration=12.0, breaks="LM:1", break_at=6.0, imu_noise_deg=0.1)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("morphology_topic", ["morphology", "no_such_topic"])
def test_silent_break_found_and_reported(break_bag, tmp_path, capsys, morphology_topic):
    out = tmp_path / "out"
    assert main([str(break_bag), "--out", str(out), "--morphology-topic", morphology_topic]) == 0
    text = capsys.readouterr().out
    assert "initial" in text and "model" in text and "LM:" in text
    rep = json.loads((out / "identify.json").read_text())
    assert rep["format"] == "jethexa-identify/1" and rep["leg_names"] == LEGS
    ev = rep["events"]
    assert ev[0] == {"t_s": 0.0, "morphology": {leg: 3 for leg in LEGS}, "source": "initial"}
    assert len(ev) == 2 and ev[1]["source"] == "model" and 6.0 < ev[1]["t_s"] <= 6.0 + 3 * 1.3
    # the keys of jethexa-identify/1 unchanged; "alternatives" added: link counts the motion did not rule out
    assert ev[1]["probability"] > 0.9 and set(ev[1]) - {"alternatives"} == {"t_s", "morphology", "source",
                                                                            "probability"}
    for alt in ev[1].get("alternatives", ()):
        assert set(alt) == {"morphology", "share"} and 0.2 <= alt["share"] <= 1.0
        changed = [leg for leg in LEGS if alt["morphology"][leg] != ev[1]["morphology"][leg]]
        assert len(changed) == 1 and ev[1]["morphology"][changed[0]] < 3   # the same leg, another link count
    assert [leg for leg in LEGS if ev[1]["morphology"][leg] < 3] == ["LM"]
    assert rep["final_morphology"] == ev[1]["morphology"]
    # added key: the body from the servos' load (issue 23 point 2), null when the healthy walking was too short
    body = rep["body"]
    assert body is None or (set(body) == {"mass_kg", "com_m", "seconds", "servo_lag_s", "urdf_mass_kg",
                                          "urdf_com_m"}
                            and 0.5 < body["mass_kg"] < 3.0 and len(body["com_m"]) == 3)
    assert (out / "probabilities.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_module_runs_as_a_script(tmp_path):
    r = subprocess.run([sys.executable, "-m", "jethexa_dynamics.damage.identify_cli", "--help"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--json FILE" in r.stdout and "--no-plots" in r.stdout


@pytest.mark.parametrize("opts,msg", [(["--window", "0"], r"argument --window: 0 outside the allowed range \[0.2, 3\]"),
                                      (["--threshold", "nan"], "argument --threshold: nan outside"),
                                      (["--confirm", "0"], "argument --confirm: 0 outside"),
                                      (["--initial", "XX:1"], "argument --initial: damage spec 'XX:1': unknown leg")])
def test_bad_options_exit_2_before_reading(tmp_path, capsys, opts, msg):
    """Checked while parsing: one line naming the option, exit 2, before the (existing, empty) bag is read."""
    import re
    assert main([str(tmp_path)] + opts) == 2
    err = capsys.readouterr().err
    assert re.search(msg, err) and err.count("\n") == 1, err


def test_bag_without_imu_orientation_is_refused(tmp_path, capsys):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0, imu_orientation=False)
    assert main([str(p), "--no-plots", "--out", str(tmp_path / "o")]) == 2
    assert "no orientation" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_missing_bag_exit_2(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert "jethexa-identify: error:" in capsys.readouterr().err
