"""Bags from the stock software, validated as they are: jethexa-validate and jethexa-identify on a rosbag2 in
Hiwonder's ROS 2 layout and a ROS 1 .bag in the Nano kit's, both written with rosbags from the emulated world
(a silent LM break at 6 s); bad input (no layout, a wrong --layout, a foreign joint name or IMU frame, a bad
--joint-map): one line, exit 2, before any work.

Oracle: the same world recorded in this package's own layout -- the stock bags carry the same motion through
another joint vocabulary, IMU frame and command rate, so their scores must be the native bag's."""
import json

import numpy as np
import pytest

from jethexa_dynamics.damage.identify_cli import main as identify_main
from jethexa_dynamics.hardware.joint_map import HIWONDER_ROS2, JOINTS
from jethexa_dynamics.validation import bag_messages as M
from jethexa_dynamics.validation.bag_io import BagWriter, read_bag
from jethexa_dynamics.validation.cli import main as validate_main
from jethexa_dynamics.validation.simbag import write_sim_bag
from jethexa_dynamics.validation.stockbag import write_stock_bag

T0 = 1_700_000_000_000_000_000


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    d = tmp_path_factory.mktemp("stock")
    write_sim_bag(d / "native", duration=12.0, breaks="LM:1", break_at=6.0, imu_noise_deg=0.1)
    write_stock_bag(d / "native", d / "hiwonder", "hiwonder-ros2")
    write_stock_bag(d / "native", d / "nano.bag", "nano-ros1")
    return d


def _scores(rep):
    r = rep["results"][0]["overall"]
    return [r["orientation"][ax]["rmse_deg"] for ax in ("roll", "pitch", "yaw")], r["position"]["rmse_m"]


@pytest.mark.slow
@pytest.mark.parametrize("name, layout, commands", [("hiwonder", "hiwonder-ros2", "/controller_manager/joint_states"),
                                                    ("nano.bag", "nano-ros1", "/joint_states")])
def test_a_stock_bag_scores_as_the_same_world_recorded_natively(bags, tmp_path, capsys, name, layout, commands):
    native = tmp_path / "native"
    assert validate_main([str(bags / "native"), "--out", str(native), "--no-plots", "--quiet"]) == 0
    assert validate_main([str(bags / name), "--out", str(tmp_path / "stock"), "--no-plots"]) == 0
    text = capsys.readouterr().out
    assert "commanded ones, none measured: no servo health, no seizure detection" in text
    ref = json.loads((native / "report.json").read_text())
    rep = json.loads((tmp_path / "stock" / "report.json").read_text())
    assert rep["bag"]["layout"] == layout and rep["bag"]["topics"]["commands"] == commands
    assert rep["bag"]["topics"]["joint_states"] is None
    assert rep["bag"]["unavailable"] == ["measured joint positions", "servo health", "seizure detection",
                                         "body estimate"]
    (o_ref, p_ref), (o, p) = _scores(ref), _scores(rep)
    assert np.allclose(o, o_ref, atol=0.3) and abs(p - p_ref) < 0.005, (o, o_ref, p, p_ref)
    # the layout named explicitly reads the same
    assert validate_main([str(bags / name), "--layout", layout, "--out", str(tmp_path / "again"), "--no-plots",
                          "--quiet"]) == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hiwonder", "nano.bag"])
def test_identify_names_the_silent_break_in_a_stock_bag(bags, tmp_path, capsys, name):
    out = tmp_path / "out"
    assert identify_main([str(bags / name), "--out", str(out), "--no-plots"]) == 0
    assert "commanded joints only: no servo health, no seizure detection" in capsys.readouterr().out
    rep = json.loads((out / "identify.json").read_text())
    ev = rep["events"]
    assert len(ev) == 2 and ev[1]["source"] == "model" and 6.0 < ev[1]["t_s"] <= 6.0 + 3 * 1.3
    assert [leg for leg, n in ev[1]["morphology"].items() if n < 3] == ["LM"]
    assert rep["body"] is None and rep["layout"] in ("hiwonder-ros2", "nano-ros1")


def test_the_reader_turns_their_joints_and_imu_frame_into_ours(bags):
    native = read_bag(bags / "native")
    stock = read_bag(bags / "hiwonder", layout="auto")
    assert stock.layout == "hiwonder-ros2" and set(stock.commands.names) == set(JOINTS)
    cols = [stock.commands.names.index(n) for n in native.commands.names]
    assert np.allclose(stock.commands.q[:, cols], native.commands.q, atol=1e-9)
    assert np.allclose(stock.imu.gyro, native.imu.gyro, atol=1e-9)
    assert np.allclose(np.abs(np.sum(stock.imu.quat * native.imu.quat, axis=1)), 1.0, atol=1e-9)
    nano = read_bag(bags / "nano.bag", layout="auto")
    assert nano.layout == "nano-ros1" and nano.storage == "rosbag1"
    assert np.allclose(np.diff(nano.commands.t), 0.05, atol=1e-6)       # 20 Hz, as the Nano kit republishes


def _tiny_stock_bag(path, names, frame="imu_link", commands="/controller_manager/joint_states", imu="/imu"):
    with BagWriter(path) as w:
        for k in range(20):
            t = T0 + k * 20_000_000
            w.write(commands, t, M.joint_state(t, names, np.zeros(len(names))))
            w.write(imu, t, M.imu(t, (1.0, 0.0, 0.0, 0.0), frame_id=frame))
    return path


def _one_line_exit_2(capsys, argv, needle):
    for main in (validate_main, identify_main):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and "\n" not in err, err
        assert "Traceback" not in err


def test_bad_stock_input_is_one_line_exit_2_before_any_work(bags, tmp_path, capsys):
    out = ["--out", str(tmp_path / "o"), "--no-plots"]
    neither = _tiny_stock_bag(tmp_path / "neither", list(JOINTS), commands="/foo", imu="/bar")
    _one_line_exit_2(capsys, [str(neither)] + out, "the bag fits no layout (native: /joint_commands + /imu/data;")
    _one_line_exit_2(capsys, [str(bags / "hiwonder"), "--layout", "nano-ros1"] + out,
                     "--layout nano-ros1: the bag has no /imu/filtered of the type the layout needs "
                     "(nano-ros1: /joint_states + /imu/filtered) (it looks like --layout hiwonder-ros2)")
    _one_line_exit_2(capsys, [str(bags / "nano.bag"), "--layout", "native"] + out,
                     "--layout native: the bag has no /joint_commands and no /imu/data")
    foreign = _tiny_stock_bag(tmp_path / "foreign", list(HIWONDER_ROS2.stock_names) + ["head_pan_joint"])
    _one_line_exit_2(capsys, [str(foreign)] + out, "joint 'head_pan_joint' is not in the hiwonder-ros2 joint map")
    frame = _tiny_stock_bag(tmp_path / "frame", list(HIWONDER_ROS2.stock_names), frame="base_link")
    _one_line_exit_2(capsys, [str(frame)] + out, "/imu (hiwonder-ros2 layout): IMU frame_id 'base_link' is not "
                                                 "'imu_link'")
    _one_line_exit_2(capsys, [str(bags / "hiwonder"), "--joint-map", "coxa_LF_joint=nowhere"] + out,
                     "argument --joint-map: joint map entry coxa_LF_joint: 'nowhere' is not a joint")
    _one_line_exit_2(capsys, [str(bags / "hiwonder"), "--layout", "ros3"] + out, "argument --layout: invalid choice")
    assert not (tmp_path / "o").exists()
