"""``jethexa-validate`` on bad bags and bad options: a clear message, exit status 2, never a traceback."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jethexa_dynamics.predictors import registry
from jethexa_dynamics.predictors.base import Predictor
from jethexa_dynamics.validation import bag_messages as M, cli, synthetic as S
from jethexa_dynamics.validation.errors import EXIT_BAD_INPUT


class Still(Predictor):
    name, horizon = "t_still", 1.0

    def pose(self, t):
        return np.zeros(3), np.array([1.0, 0, 0, 0])


@pytest.fixture(autouse=True)
def still_predictor():
    registry.register_predictor("t_still", lambda model=None, horizon=None: Still())
    yield
    registry._FACTORIES.pop("t_still")


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return S.write_synthetic_bag(tmp_path_factory.mktemp("g") / "good", duration=3.0)


def _bad(capsys, argv, *patterns):
    code = cli.main([str(a) for a in argv] + ["--predictor", "t_still", "--no-plots"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    assert err.startswith("jethexa-validate: error: ") and "Traceback" not in err
    for p in patterns:
        assert p in err, (p, err)
    return err


def test_not_a_bag(tmp_path, capsys):
    _bad(capsys, [tmp_path / "nope"], "no such file or directory")
    f = tmp_path / "x.txt"
    f.write_text("x")
    _bad(capsys, [f], "is a file, not a rosbag2 directory")
    _bad(capsys, [tmp_path], "no metadata.yaml")


def test_truncated_and_corrupt(tmp_path, capsys, good):
    for storage in ("mcap", "sqlite3"):
        p = S.write_synthetic_bag(tmp_path / storage, duration=2.0, storage=storage)
        f = next(x for x in p.iterdir() if x.suffix in (".mcap", ".db3"))
        f.write_bytes(f.read_bytes()[:3000])
        _bad(capsys, [p], str(p))
    q = tmp_path / "meta"
    shutil.copytree(good, q)
    (q / "good.mcap").rename(q / "meta.mcap")
    _bad(capsys, [q], "missing")
    (q / "metadata.yaml").write_text(": : :\n  - [")
    _bad(capsys, [q], "metadata")


def test_missing_topics_named_with_inventory(tmp_path, capsys, good):
    err = _bad(capsys, [good, "--imu-topic", "imu/filtered", "--commands-topic", "cmd"],
               "missing required topic(s): /cmd (commands), /imu/filtered (imu)", "the bag has:",
               "/imu/data  [sensor_msgs/msg/Imu]", "/joint_commands  [trajectory_msgs/msg/JointTrajectory]")
    assert err.count("\n") >= 6


def test_unknown_message_type(tmp_path, capsys):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0, mocap=False, topics_extra={"mocap/pose": M.twist()})
    _bad(capsys, [p], "/mocap/pose (ground_truth) has message type geometry_msgs/msg/Twist")
    _bad(capsys, [p, "--imu-topic", "morphology"], "/morphology (imu) has message type std_msgs/msg/UInt8MultiArray")


def test_time_jumps(tmp_path, capsys):
    p = S.write_synthetic_bag(tmp_path / "b", duration=5.0, gap=(1.0, 2.0))
    _bad(capsys, [p], "time jump in /imu/data", "--max-gap")
    q = S.write_synthetic_bag(tmp_path / "c", duration=2.0, stamp_jump=(1.0, -3.0))
    _bad(capsys, [q], "header stamp goes back")


def test_empty_window(capsys, good):
    _bad(capsys, [good, "--start", "10"], "empty window", "spans 0 to 3.000 s")
    _bad(capsys, [good, "--start", "2", "--end", "1"], "empty window")
    _bad(capsys, [good, "--start", "1.001", "--end", "1.005"], "empty window")


def test_bad_options(tmp_path, capsys, good):
    assert cli.main([str(good), "--predictor", "nope"]) == EXIT_BAD_INPUT
    assert "unknown predictor 'nope'; available:" in capsys.readouterr().err
    _bad(capsys, [good, "--model", tmp_path / "none.urdf"], "does not exist")
    _bad(capsys, [good, "--reanchor-horizon", "0"], "argument --reanchor-horizon: 0 outside the allowed range (0, inf)")
    _bad(capsys, [good, "--max-gap", "-1"], "argument --max-gap: -1 outside the allowed range (0, inf)")


def test_console_script_exit_status(tmp_path, good):
    """The installed entry point, in its own process: message on stderr, status 2, no traceback."""
    exe = Path(sys.executable).parent / "jethexa-validate"
    assert exe.is_file()
    p = tmp_path / "trunc"
    shutil.copytree(good, p)
    f = p / "good.mcap"
    f.write_bytes(f.read_bytes()[:5000])
    (p / "good.mcap").rename(p / "trunc.mcap")
    meta = (p / "metadata.yaml").read_text().replace("good.mcap", "trunc.mcap")
    (p / "metadata.yaml").write_text(meta)
    r = subprocess.run([str(exe), str(p), "--no-plots"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, MPLBACKEND="Agg"))
    assert r.returncode == EXIT_BAD_INPUT, r.stderr
    assert "jethexa-validate: error: bag {} is corrupt or truncated".format(p) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--compare-all" in r.stdout and "--reanchor-horizon" in r.stdout


def test_an_earlier_report_is_never_overwritten_without_force(tmp_path, capsys, good):
    """A second run into the same --out refuses (exit 2, one line, nothing written); --force overwrites."""
    out = tmp_path / "val"
    argv = [str(good), "--predictor", "t_still", "--no-plots", "--quiet", "--out", str(out)]
    assert cli.main(argv) == 0
    report = out / "report.json"
    before = report.read_bytes()
    report.write_bytes(b"earlier")
    capsys.readouterr()
    assert cli.main(argv) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("jethexa-validate: error: --out: ") and "--force" in err and len(err.splitlines()) == 1
    assert report.read_bytes() == b"earlier"
    assert cli.main(argv + ["--force"]) == 0
    assert report.read_bytes()[:1] == before[:1] == b"{"


def test_compare_all_defaults_to_its_own_directory(good):
    """``jethexa-validate B`` then ``jethexa-validate B --compare-all`` (the README's flow) write two reports."""
    single = cli.output_paths(cli.build_parser().parse_args([str(good)]))
    both = cli.output_paths(cli.build_parser().parse_args([str(good), "--compare-all"]))
    assert single[0] == good.parent / (good.name + "_validation")
    assert both[0] == good.parent / (good.name + "_compare")
    assert single[1] == single[0] / "report.json" and both[1] == both[0] / "report.json"


def test_non_unit_quat_is_a_bad_bag(tmp_path, capsys):
    """Bags use the package's one unit-quaternion tolerance too: a norm-1.01 orientation is not renormalised."""
    from jethexa_dynamics.validation.bag_io import BagWriter

    p = tmp_path / "nq"
    with BagWriter(p) as w:
        for k in range(10):
            t = k * 10_000_000
            w.write("/imu/data", t, M.imu(t, (1.01 if k == 4 else 1.0, 0.0, 0.0, 0.0)))
            w.write("/joint_commands", t, M.joint_trajectory(t, S.JOINT_NAMES, [0.0] * 18))
    _bad(capsys, [p], "/imu/data: orientation of the message at 0.040 s has norm 1.01 (1 such messages)",
         "norm in [0.999, 1.001]")
