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


def _csv_oracle(traj):
    """The documented CSV columns computed here from the recorded rows: t, position, ZYX Euler angles
    (transforms3d per row, yaw unwrapped over the whole run), twist, joint angles, foot normal forces, contact."""
    from transforms3d.euler import mat2euler
    e = np.array([mat2euler(R, "sxyz") for R in traj.data[:, 4:13].reshape(-1, 3, 3)])
    e[:, 2] = np.unwrap(e[:, 2])
    return np.hstack([traj.data[:, :4], e, traj.data[:, 13:19], traj.col("theta"),
                      traj.col("force").reshape(len(traj), -1, 3)[:, :, 2], (traj.col("depth") > 0).astype(float)])


def test_csv_reads_back_the_recorded_rows_to_nine_digits(tmp_path):
    """trajectory.csv, written by a thread while the engine runs (a morphology switch mid-chunk, a rate that is
    not the default), holds every recorded row, each value equal to the recorded one rounded to 9 significant
    digits (%.9g), and is byte for byte what ``Trajectory.to_csv`` writes of the same rows after the run."""
    from jethexa_dynamics.sim.cli import build_parser, run
    from jethexa_dynamics.sim.trajectory import Trajectory
    args = build_parser().parse_args(["--scenario", "damage1", "--damage-at", "0.35", "--duration", "1.0",
                                      "--record-rate", "200", "--quiet"])
    path = tmp_path / "new" / "trajectory.csv"
    traj, s, _ = run(args, csv_path=str(path))
    assert len(traj) == 201 and np.allclose(np.diff(traj.t), 5e-3)
    expected = _csv_oracle(traj)
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    assert data.shape == expected.shape
    rounded = np.array([float("%.9g" % x) for x in expected.ravel()]).reshape(expected.shape)
    np.testing.assert_array_equal(data, rounded)
    with open(path) as f:
        header = f.readline().strip().split(",")
    assert header == (["t", "x", "y", "z", "roll", "pitch", "yaw", "vx", "vy", "vz", "wx", "wy", "wz"]
                      + traj.joint_names + ["fz_" + n for n in traj.leg_names]
                      + ["contact_" + n for n in traj.leg_names])
    np.testing.assert_allclose(traj.euler, expected[:, 4:7], rtol=0, atol=1e-12)   # the summary's angles
    again = tmp_path / "again.csv"
    Trajectory(traj.data, traj.layout, traj.joint_names, traj.leg_names).to_csv(str(again))
    assert again.read_bytes() == path.read_bytes()


def test_csv_writer_unwraps_yaw_across_blocks(tmp_path):
    """Yaw turning 2.5 times, handed to the writer in uneven blocks: the written yaw is the unwrapped yaw of
    the whole run (oracle: np.unwrap over all rows), continuous across the blocks."""
    from transforms3d.euler import euler2mat
    from jethexa_dynamics.sim.csv_writer import TrajectoryCsvWriter
    from jethexa_dynamics.sim.engine import Engine
    from jethexa_dynamics.sim.trajectory import Trajectory
    e = Engine(record_every=0)
    n = 400
    yaw = np.linspace(0.0, 5 * np.pi, n)
    data = np.zeros((n, e._ncols))
    data[:, 0] = np.arange(n) * 0.01
    data[:, 4:13] = np.array([euler2mat(0.01, -0.02, y, "sxyz").ravel() for y in yaw])
    w = TrajectoryCsvWriter(str(tmp_path / "t.csv"), e, batch_rows=7)
    for a, b in zip([0, 1, 40, 41, 200], [1, 40, 41, 200, n]):
        w.add(data[a:b])
    euler = w.close()
    ref = Trajectory(data, e._layout, e.robot.joint_names, e.robot.leg_names).euler
    np.testing.assert_allclose(euler, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ref[:, 2], yaw, atol=1e-9)
    written = np.loadtxt(tmp_path / "t.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(written[:, 4:7], ref, rtol=1e-8, atol=1e-9)


def test_euler_angles_are_transforms3d_mat2euler_bit_for_bit():
    """The batch ZYX angles are transforms3d's ``mat2euler(R, "sxyz")`` row by row, to the bit (oracle: the
    library), random rotations and the gimbal-lock branch (pitch +-90 deg) included; yaw unwrapped."""
    from transforms3d.euler import euler2mat, mat2euler
    from jethexa_dynamics.sim.trajectory import _euler_angles
    rng = np.random.default_rng(3)
    angles = rng.uniform(-np.pi, np.pi, (3000, 3)) * [1.0, 0.5, 1.0]
    angles[:4, 1] = [np.pi / 2, -np.pi / 2, np.pi / 2, -np.pi / 2]
    rot = np.array([euler2mat(r, p, y, "sxyz") for r, p, y in angles])
    rot[2:4, :2, 0] = 0.0                            # cos(pitch) exactly 0: mat2euler's other branch
    ref = np.array([mat2euler(R, "sxyz") for R in rot])
    got = _euler_angles(rot)
    np.testing.assert_array_equal(got[:, :2], ref[:, :2])
    np.testing.assert_array_equal(got[:, 2], np.unwrap(ref[:, 2]))
    assert got[2, 2] == 0.0 and got[3, 2] == 0.0


def test_unwrap_is_numpy_unwrap_bit_for_bit():
    """trajectory._unwrap (compiled) gives np.unwrap's bits (oracle: numpy), from the start or continuing an
    unwrapped value, over wrapped random walks, spins and the +-pi / +-0 boundary values."""
    from jethexa_dynamics.sim.trajectory import _unwrap
    rng = np.random.default_rng(5)
    for trial in range(240):
        n = (0, 1, 2, 50, 400)[trial % 5]
        y = [np.angle(np.exp(1j * np.cumsum(rng.normal(0.0, 1.0, n)))),
             np.angle(np.exp(1j * np.linspace(0.0, rng.uniform(-30.0, 30.0), n))),
             rng.choice([-np.pi, np.pi, 0.0, -0.0, np.pi / 2], n)][trial % 3]
        got = y.copy()
        _unwrap(got, 0.0, False)
        np.testing.assert_array_equal(got.view(np.int64), np.unwrap(y).view(np.int64))
        before = float(rng.choice([np.pi, -np.pi, -0.0, rng.uniform(-50.0, 50.0)]))
        got = y.copy()
        _unwrap(got, before, True)
        np.testing.assert_array_equal(got.view(np.int64), np.unwrap(np.concatenate([[before], y]))[1:].view(np.int64))


def test_csv_writer_errors_reach_the_caller_and_abort_removes_the_file(tmp_path):
    from jethexa_dynamics.sim.csv_writer import TrajectoryCsvWriter
    from jethexa_dynamics.sim.engine import Engine
    e = Engine(record_every=0)
    w = TrajectoryCsvWriter(str(tmp_path / "bad.csv"), e, batch_rows=1)
    w.add(np.zeros((3, 5)))                  # not record rows: the thread fails, close() raises it here
    with pytest.raises(ValueError):
        w.close()
    w = TrajectoryCsvWriter(str(tmp_path / "part.csv"), e)
    w.add(np.zeros((2, e._ncols)))
    w.abort()
    assert not (tmp_path / "part.csv").exists()


def test_bad_record_rate_is_refused_before_any_work(tmp_path, capsys):
    """One line naming --record-rate and its range, exit 2, and the output directory is not created."""
    out = tmp_path / "never"
    assert main(["--record-rate", "1500", "--dt", "0.001", "--duration", "0.1", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--record-rate=1500.0 outside the allowed range (0, 1/dt = 1000] Hz" in err
    assert not out.exists()
    assert main(["--record-rate", "nan", "--duration", "0.1", "--quiet"]) == 2
    assert "--record-rate" in capsys.readouterr().err


def test_break_run_parses_the_urdf_once(tmp_path, monkeypatch, capsys):
    """--break is checked while parsing the options against the same robot model the run simulates: one URDF
    load per command (count of ``urdf_cache.load`` calls: parse + describe, or their cached result)."""
    from jethexa_dynamics.model import urdf_cache
    calls = []
    real = urdf_cache.load
    monkeypatch.setattr(urdf_cache, "load", lambda path: calls.append(path) or real(path))
    assert main(["--break", "LM:1", "--duration", "0.2", "--quiet", "--no-plots", "--out", str(tmp_path)]) == 0
    assert len(calls) == 1 and "Silent break LM:1" in capsys.readouterr().out
    assert main(["--duration", "0.1", "--quiet"]) == 0
    assert len(calls) == 2


def test_rerun_into_the_same_directory_replaces_the_files(tmp_path):
    """A second, shorter run into the same --out leaves only its own rows and summary (the files are replaced
    by new ones, not truncated: ``trajectory.open_new``); a hard link to the old CSV keeps the old rows."""
    args = ["--quiet", "--no-plots", "--out", str(tmp_path)]
    assert main(["--duration", "0.2"] + args) == 0
    old = (tmp_path / "trajectory.csv").read_bytes()
    os.link(tmp_path / "trajectory.csv", tmp_path / "old.csv")
    assert main(["--duration", "0.1"] + args) == 0
    data = np.loadtxt(tmp_path / "trajectory.csv", delimiter=",", skiprows=1)
    assert len(data) == 11 and data[-1, 0] == pytest.approx(0.1)
    assert (tmp_path / "old.csv").read_bytes() == old
    assert (tmp_path / "summary.txt").read_text().count("duration_s: 0.1\n") == 1
