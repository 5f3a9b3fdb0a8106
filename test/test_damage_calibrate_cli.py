"""jethexa-calibrate: a bag of a robot heavier than its URDF -> a parameters file with its body (the oracle: the
plant's own body), which jethexa-validate --params replays on; and the files the nodes take."""
import json

import numpy as np
import pytest
import yaml

from jethexa_dynamics.damage import calibrate_cli
from jethexa_dynamics.model import LeggedRobot, body_params
from jethexa_dynamics.sim.streams import scaled_body_robot
from jethexa_dynamics.validation import cli as validate_cli
from jethexa_dynamics.validation.simbag import write_sim_bag

SCALE, OFFSET = 1.25, (0.01, 0.0, 0.0)


@pytest.fixture(scope="module")
def heavy_bag(tmp_path_factory):
    path = tmp_path_factory.mktemp("bags") / "heavy"
    write_sim_bag(path, duration=40.0, robot=scaled_body_robot(SCALE, OFFSET), command=(0.05, 0.0, 0.0),
                  imu_noise_deg=0.1)
    return path


@pytest.mark.slow
def test_calibrate_writes_the_body_and_validate_replays_on_it(heavy_bag, tmp_path, capsys):
    out = tmp_path / "body.yaml"
    assert calibrate_cli.main([str(heavy_bag), "--out", str(out)]) == 0
    assert "parameters: %s" % out in capsys.readouterr().out
    params = body_params.read(out)
    truth = LeggedRobot.jethexa().description.body_mass * SCALE
    assert abs(params.mass - truth) <= 0.10 * truth, params
    assert np.linalg.norm(np.subtract(params.com_offset, OFFSET)[:2]) <= 0.005, params
    # the same file is jethexa-validate's --params; on it the model's height (the body's sag) moves toward the
    # plant's: the URDF's lighter body stands higher than the heavier robot does
    reports = {}
    for name, extra in (("urdf", []), ("calibrated", ["--params", str(out)])):
        assert validate_cli.main([str(heavy_bag), "--out", str(tmp_path / name), "--quiet", *extra]) == 0
        reports[name] = json.loads((tmp_path / name / "report.json").read_text())
    assert reports["calibrated"]["options"]["params"] == str(out)
    z = {k: r["results"][0]["overall"]["position"]["mean_xyz_m"][2] for k, r in reports.items()}
    assert abs(z["calibrated"]) < abs(z["urdf"]), z


@pytest.mark.slow
def test_a_known_body_gives_the_servos_law(heavy_bag, tmp_path, capsys):
    """``--known-body-mass``: the bag's body known (the plant's, 1.6875 kg), the servos' gains given 20 % low:
    calibrate tries both dampings, keeps the plant's own law (the engine's PID: kd on the error) and scales the
    gains back to the plant's (50, 10, 1; the oracle) within 5 %, and writes them with the body as damage_monitor
    takes them."""
    from jethexa_dynamics.nodes.params import DAMAGE_MONITOR

    out = tmp_path / "law.yaml"
    truth = LeggedRobot.jethexa().description.body_mass * SCALE
    assert calibrate_cli.main([str(heavy_bag), "--out", str(out), "--known-body-mass", str(truth),
                               "--servo-kp", "40", "--servo-ki", "8", "--servo-kd", "0.8"]) == 0
    assert "servo law: damping error" in capsys.readouterr().out
    values = yaml.safe_load(out.read_text())["/**"]["ros__parameters"]
    assert values["body_servo_damping"] == "error"
    np.testing.assert_allclose([values["body_servo_" + k] for k in ("kp", "ki", "kd")], [50.0, 10.0, 1.0],
                               rtol=0.05)
    for name, value in values.items():
        if name.startswith("body_servo_"):
            DAMAGE_MONITOR.specs[name].validate(value)
    params = body_params.read(out)
    assert abs(params.mass - truth) <= 0.01 * truth
    assert np.linalg.norm(np.subtract(params.com_offset, OFFSET)[:2]) <= 0.005, params


@pytest.mark.slow
def test_a_bag_read_as_the_robots_bus_reads_gives_the_body_from_its_set_points(tmp_path, capsys):
    """The robot's bag: joint_states with 3 servos per 20 ms cycle in whole ticks, each message with servo_driver's
    joint_states/setpoint twin (``write_sim_bag(reads_per_message=3)``), body +25 % and CoM +1 cm: calibrate
    writes the body within 10 % and 5 mm of the plant's (the oracle) after 35 s, and jethexa-identify reports the
    same body; the same bag without the set-point topic is refused as before (one line, nothing written)."""
    from jethexa_dynamics.damage import identify_cli

    bag = tmp_path / "robot_bus"
    write_sim_bag(bag, duration=36.0, robot=scaled_body_robot(SCALE, OFFSET), command=(0.05, 0.0, 0.0),
                  imu_noise_deg=0.1, reads_per_message=3)
    out = tmp_path / "body.yaml"
    assert calibrate_cli.main([str(bag), "--out", str(out)]) == 0
    params = body_params.read(out)
    truth = LeggedRobot.jethexa().description.body_mass * SCALE
    assert abs(params.mass - truth) <= 0.10 * truth, params
    assert np.linalg.norm(np.subtract(params.com_offset, OFFSET)[:2]) <= 0.005, params
    assert identify_cli.main([str(bag), "--out", str(tmp_path / "id"), "--no-plots", "--quiet"]) == 0
    body = json.loads((tmp_path / "id" / "identify.json").read_text())["body"]
    assert body["mass_kg"] == pytest.approx(params.mass, abs=1e-4), body
    capsys.readouterr()
    out2 = tmp_path / "body2.yaml"
    assert calibrate_cli.main([str(bag), "--out", str(out2), "--setpoints-topic", "no/such/topic"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "3.0 of 18 joints per message" in err[0] and "set-point" in err[0], err
    assert not out2.exists()


def test_simbag_reads_per_message_outside_its_range_is_one_line_and_exit_2_with_nothing_written(tmp_path, capsys):
    from jethexa_dynamics.validation import simbag

    for bad in ("0", "19"):
        bag = tmp_path / ("b" + bad)
        assert simbag.main([str(bag), "--duration", "1", "--reads-per-message", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "reads_per_message=%s outside the allowed range [1, 18]" % bad in err[0], err
        assert not bag.exists()


def test_too_little_walking_is_one_line_and_exit_2_with_nothing_written(tmp_path, capsys):
    bag = tmp_path / "short"
    write_sim_bag(bag, duration=3.0)
    out = tmp_path / "body.yaml"
    assert calibrate_cli.main([str(bag), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--min-seconds" in err[0] and not out.exists()


def test_parameters_file_round_trip_and_bad_files_name_the_field(tmp_path):
    path = body_params.write(tmp_path / "b.yaml", body_params.BodyParams(1.6, (0.01, -0.002, 0.0)), ["a note"])
    assert body_params.read(path) == body_params.BodyParams(1.6, (0.01, -0.002, 0.0))
    text = path.read_text()
    assert text.startswith("# a note\n/**:\n  ros__parameters:\n")
    bad = tmp_path / "bad.yaml"
    for content, field in [("/**:\n  ros__parameters:\n    body_mass: 50.0\n", "body_mass"),
                           ("/**:\n  ros__parameters:\n    body_com_offset: [0.5, 0, 0]\n", "body_com_offset"),
                           ("predictor:\n  ros__parameters:\n    rate: 100.0\n", "no body_mass"),
                           ("[: not yaml", "cannot read")]:
        bad.write_text(content)
        with pytest.raises(ValueError, match=field):
            body_params.read(bad)
    base = LeggedRobot.jethexa()
    assert body_params.BodyParams().robot(base) is base


def test_a_bag_whose_joint_states_carry_a_few_joints_each_is_refused_and_identify_reports_no_body(tmp_path,
                                                                                                    capsys):
    """The real bus reads 3 servos per 20 ms cycle: each joint's reading time is then only the message's, and the
    estimate needs it to the millisecond (``body_load.TIMING_NOTE``): without servo_driver's set-point at each
    reading (joint_states/setpoint) calibrate refuses with one line and writes nothing; jethexa-identify reports
    ``body: null`` (its other keys unchanged)."""
    from jethexa_dynamics.damage import identify_cli
    from jethexa_dynamics.validation import bag_messages as M
    from jethexa_dynamics.validation.bag_io import BagWriter
    from jethexa_dynamics.validation.simbag import T0_NS

    robot = LeggedRobot.jethexa()
    names = list(robot.joint_names)
    bag = tmp_path / "partial"
    with BagWriter(bag, storage="mcap") as w:
        for k in range(2000):                       # 20 s at 100 Hz
            t_ns = T0_NS + k * 10_000_000
            w.write("imu/data", t_ns, M.imu(t_ns, (1.0, 0.0, 0.0, 0.0), np.zeros(3), np.array([0.0, 0.0, 9.81])))
            if k % 2 == 0:
                w.write("joint_commands", t_ns, M.joint_trajectory(t_ns, names, np.zeros(18), 0.02))
                j = (k // 2 * 3) % 18
                w.write("joint_states", t_ns, M.joint_state(t_ns, names[j:j + 3], np.zeros(3)))
    out = tmp_path / "body.yaml"
    assert calibrate_cli.main([str(bag), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "3.0 of 18 joints per message" in err[0] and not out.exists()
    assert identify_cli.main([str(bag), "--out", str(tmp_path / "id"), "--no-plots", "--quiet"]) == 0
    rep = json.loads((tmp_path / "id" / "identify.json").read_text())
    assert rep["body"] is None and rep["final_morphology"] == {leg: 3 for leg in robot.leg_names}
