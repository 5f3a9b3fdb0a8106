"""jethexa-sim: files, columns and units of the output, mid-run damage, clear errors for bad arguments."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from jethexa_dynamics.sim.cli import main


def test_run_writes_csv_plots_and_summary(tmp_path, capsys):
    out = tmp_path / "d2"
    assert main(["--scenario", "damage2", "--duration", "0.6", "--damage-at", "0.3", "--out", str(out),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "Scenario damage2 (healthy until t = 0.30 s)" in text and "faster than real time" in text
    for name in ("trajectory.csv", "orientation.png", "position.png", "summary.txt"):
        assert (out / name).stat().st_size > 0
    assert (out / "orientation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(out / "trajectory.csv") as f:
        header = f.readline().strip().split(",")
    assert header[:7] == ["t", "x", "y", "z", "roll", "pitch", "yaw"]
    data = np.loadtxt(out / "trajectory.csv", delimiter=",", skiprows=1)
    assert data[0, 0] == 0.0 and data[-1, 0] == pytest.approx(0.6) and len(data) == 61      # default 100 Hz
    assert np.isfinite(data).all()
    assert data[0, 3] == pytest.approx(0.12) and np.abs(data[:, 4:7]).max() < 0.5     # metres, radians
    lm = header.index("contact_LM")
    assert data[data[:, 0] > 0.31, lm].max() == 0.0          # LM lost its foot at 0.3 s


@pytest.mark.parametrize("args,msg", [
    (["--scenario", "damage3"], "argument --scenario: invalid choice: 'damage3'"),
    (["--gait", "trot"], "argument --gait: invalid choice: 'trot'"),
    (["--damage-at", "1"], "--damage-at needs a damage scenario"),
    (["--scenario", "damage1", "--damage-at", "9", "--duration", "2"], r"--damage-at=9.0 outside"),
    (["--step-length", "0.19"], "cannot reach"),
    (["--duration", "-1"], r"argument --duration: -1 outside the allowed range \(0, 3600\] s"),
    (["--dt", "0.5"], r"argument --dt: 0.5 outside the allowed range \[1e-05, 0.005\] s"),
    (["--record-rate", "2000"], r"--record-rate=2000.0 outside the allowed range \(0, 1/dt = 1000\] Hz"),
    (["--record-rate", "0"], r"argument --record-rate: 0 outside the allowed range \(0, 1e\+06\] Hz"),
])
def test_bad_arguments(args, msg, capsys):
    extra = [] if "--duration" in args else ["--duration", "0.1"]
    assert main(args + extra + ["--quiet"]) == 2
    assert re.search(msg, capsys.readouterr().err)


def test_record_rate_every_step(tmp_path):
    out = tmp_path / "h"
    assert main(["--duration", "0.1", "--record-rate", "1000", "--out", str(out), "--quiet", "--no-plots"]) == 0
    data = np.loadtxt(out / "trajectory.csv", delimiter=",", skiprows=1)
    assert len(data) == 101 and np.allclose(np.diff(data[:, 0]), 1e-3)


def test_console_script_help():
    exe = os.path.join(os.path.dirname(sys.executable), "jethexa-sim")
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--damage-at SECONDS" in r.stdout


def test_scenario_aliases_are_the_same_experiment(capsys):
    """``--scenario scenario1`` (the demo's and the emulator's name) runs damage 1: one scenario table."""
    a = main(["--scenario", "scenario1", "--duration", "0.2", "--quiet"])
    out_alias = capsys.readouterr().out
    b = main(["--scenario", "damage1", "--duration", "0.2", "--quiet"])
    out_name = capsys.readouterr().out
    assert a == b == 0 and "Scenario damage1" in out_alias
    def physics(text):                      # the paragraph without its wall-time sentence
        return text.split(" Simulated in ")[0]
    assert physics(out_alias) == physics(out_name)


def test_recovery_run_accepts_the_scenario_aliases(capsys):
    """--recovery resolves --scenario through the one alias table (scenario1 = damage1) like every command."""
    from jethexa_dynamics.sim.cli import main as sim_main
    assert sim_main(["--scenario", "scenario1", "--recovery", "off", "--duration", "3", "--damage-at", "1",
                     "--quiet"]) == 0
    assert "scenario1, recovery off" in capsys.readouterr().out   # reported under the name the user gave
