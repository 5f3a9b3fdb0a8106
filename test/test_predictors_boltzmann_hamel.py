"""BoltzmannHamelPredictor: reproduces a commanded walk of the same model exactly, re-anchors on IMU / motion capture /
joint measurements at the horizon, follows morphology changes, reports cycle statistics, rejects bad input.
The 'real robot' is an ``Engine`` driven by 50 Hz servo commands from the gait (as the gait controller does).
"""
import numpy as np
import pytest
from transforms3d.euler import euler2quat, mat2euler

from jethexa_dynamics.control.gait import Gait
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.engine import Engine
from jethexa_dynamics.predictors.boltzmann_hamel import BoltzmannHamelPredictor

RATE = 50.0


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


def _walk(robot, seconds, predictor, damage_at=None, tell_predictor=True, measure=False):
    """Drive a truth engine and the predictor with the same 50 Hz commands; returns truth poses, predictions."""
    truth = Engine(robot, gait=None, record_every=0)
    gait = Gait.paper_tripod(truth.geometry)
    true_p, pred_p, yaw_err = [], [], []
    for k in range(int(seconds * RATE)):
        t = k / RATE
        if damage_at is not None and abs(t - damage_at) < 1e-9:
            truth.set_morphology("damage1")
            if tell_predictor:
                predictor.on_morphology(t, [3, 0, 3, 3, 0, 3])
        q = gait.joint_targets(t + 1.0 / RATE)
        truth.set_joint_targets(q, move_time=1.0 / RATE)
        predictor.on_command(t, q, t + 1.0 / RATE)
        truth.advance(t + 1.0 / RATE)
        g = predictor.predict(t + 1.0 / RATE)
        if measure:
            predictor.on_imu(truth.time, _quat(truth.R))
        true_p.append(truth.p.copy())
        pred_p.append(g[:3, 3].copy())
        yaw_err.append(mat2euler(g[:3, :3], "sxyz")[2] - mat2euler(truth.R, "sxyz")[2])
    return np.array(true_p), np.array(pred_p), np.array(yaw_err), truth


def _quat(R):
    from transforms3d.quaternions import mat2quat
    return mat2quat(R)


def test_same_model_same_commands_reproduces_the_walk(robot):
    pr = BoltzmannHamelPredictor(robot, reanchor_horizon=np.inf)
    true_p, pred_p, yaw_err, truth = _walk(robot, 2.0, pr)
    assert true_p[-1, 0] > 0.1                               # it walked
    assert np.abs(pred_p - true_p).max() < 1e-9 and np.abs(yaw_err).max() < 1e-9
    assert pr.time == pytest.approx(truth.time)
    s = pr.cycle_stats()
    assert s["n"] == 100 and 0 < s["p50"] <= s["p99"] <= s["max"]


def test_morphology_change_is_followed(robot):
    """The robot loses RM and LM at 1 s: a predictor told so tracks it; one not told drifts away."""
    told = BoltzmannHamelPredictor(robot, reanchor_horizon=np.inf)
    tp, pp, _, _ = _walk(robot, 2.6, told, damage_at=1.0)
    blind = BoltzmannHamelPredictor(robot, reanchor_horizon=np.inf)
    tp2, pb, _, _ = _walk(robot, 2.6, blind, damage_at=1.0, tell_predictor=False)
    assert np.abs(pp - tp).max() < 1e-9
    assert np.abs(pb[-1, :2] - tp2[-1, :2]).max() > 0.03      # the healthy model keeps walking forward


def test_reanchors_on_mocap_imu_and_joints(robot):
    pr = BoltzmannHamelPredictor(robot, reanchor_horizon=0.5)
    pr.reset(10.0)                                            # caller's clock starts at 10 s
    pr.predict(10.2)
    assert pr.anchors == []                                   # nothing measured yet
    q_true = euler2quat(0.05, -0.03, 0.4, "sxyz")
    pr.measure_pose(10.2, [1.0, 2.0, 0.12], q_true)
    pr.predict(10.201)
    assert pr.anchors == [pytest.approx(10.2)]
    g = pr.pose_matrix                 # one 1 ms step after taking the mocap pose
    assert g[:3, 3] == pytest.approx([1.0, 2.0, 0.12], abs=1e-3)
    assert np.array(mat2euler(g[:3, :3], "sxyz")) == pytest.approx([0.05, -0.03, 0.4], abs=1e-3)
    pr.predict(10.6)                   # on flat ground the feet level the imposed tilt again
    assert pr.anchors == [pytest.approx(10.2)]
    assert abs(mat2euler(pr.pose_matrix[:3, :3], "sxyz")[0]) < 0.01
    # IMU only: roll and pitch from the IMU, yaw kept (no magnetometer); next anchor one horizon later
    pr2 = BoltzmannHamelPredictor(robot, reanchor_horizon=0.5)
    pr2.measure_imu(0.0, euler2quat(0.02, 0.01, 1.0, "sxyz"))
    pr2.predict(0.001)
    r, p, y = mat2euler(pr2.pose_matrix[:3, :3], "sxyz")
    assert (r, p) == (pytest.approx(0.02, abs=1e-3), pytest.approx(0.01, abs=1e-3)) and abs(y) < 1e-3
    pr2.measure_imu(0.3, euler2quat(0.0, 0.0, 0.0, "sxyz"))
    pr2.predict(0.45)
    assert pr2.anchors == [0.0]
    pr2.predict(0.6)
    assert pr2.anchors == [0.0, pytest.approx(0.5)]
    # measured joint angles replace the predicted ones at the anchor
    q = pr2.engine.joint_angles + 0.05
    pr2.measure_joints(0.6, q)
    pr2.predict(1.0)
    assert pr2.anchors[-1] == pytest.approx(1.0)
    assert pr2.engine.joint_angles == pytest.approx(q, abs=0.02)   # then the PID pulls them back slowly


def test_imu_reanchoring_bounds_orientation_error(robot):
    """A predictor that started 0.1 rad off in roll is corrected by the IMU within one horizon."""
    pr = BoltzmannHamelPredictor(robot, reanchor_horizon=0.2)
    pr.engine.R[:] = np.array([[1, 0, 0], [0, np.cos(0.1), -np.sin(0.1)], [0, np.sin(0.1), np.cos(0.1)]])
    true_p, pred_p, _, truth = _walk(robot, 1.0, pr, measure=True)
    r_pred = mat2euler(pr.pose_matrix[:3, :3], "sxyz")[0]
    assert abs(r_pred - mat2euler(truth.R, "sxyz")[0]) < 0.01
    assert len(pr.anchors) >= 4


def test_bad_input(robot):
    pr = BoltzmannHamelPredictor(robot)
    with pytest.raises(ValueError, match="targets must be finite"):
        pr.command(0.0, np.full(18, np.nan))
    with pytest.raises(ValueError, match="targets must have 18 joint angles"):
        pr.command(0.0, np.zeros(3))
    with pytest.raises(ValueError, match="move_time"):
        pr.command(0.0, np.zeros(18), move_time=-1)
    with pytest.raises(ValueError, match=r"quat must be a finite unit quaternion"):
        pr.measure_imu(0.0, [0, 0, 0, 0])
    with pytest.raises(ValueError, match=r"with norm in \[0.999, 1.001\], got \[1.01, 0.0, 0.0, 0.0\]"):
        pr.measure_imu(0.0, [1.01, 0, 0, 0])  # ONE tolerance (model.se3.QUAT_NORM_TOL), not "above 0.5"
    with pytest.raises(ValueError, match="unknown joints"):
        pr.reset(0.0, ["knee"])
    with pytest.raises(ValueError, match="reanchor_horizon must be > 0"):
        BoltzmannHamelPredictor(robot, reanchor_horizon=0)
    pr.predict(1.0)
    with pytest.raises(ValueError, match="before the prediction's time"):
        pr.predict(0.5)
    with pytest.raises(ValueError, match="scenario must be one of"):
        pr.set_morphology("damage9")
        pr.predict(1.1)


def test_replays_a_simulated_bag_through_the_validation_protocol(robot, tmp_path):
    """jethexa-validate's replay (inputs before the measurement they are compared with) on a bag recorded
    from the same engine: open loop the prediction is exact; re-anchoring every second keeps it within mm."""
    from jethexa_dynamics.validation import simbag
    from jethexa_dynamics.validation.bag_io import read_bag
    from jethexa_dynamics.validation.replay import replay

    simbag.write_sim_bag(tmp_path / "bag", duration=3.0, damage_at=1.5, damage="damage1", robot=robot)
    bag = read_bag(tmp_path / "bag")
    exact = replay(bag, BoltzmannHamelPredictor(robot, reanchor_horizon=np.inf))
    assert np.abs(exact.p_pred - exact.p_meas).max() < 1e-6
    anchored = replay(bag, BoltzmannHamelPredictor(robot, reanchor_horizon=1.0))
    assert len(anchored.anchors) >= 3
    assert np.abs(anchored.p_pred - anchored.p_meas).max() < 5e-3


def test_quaternion_and_empty_cycle_stats(robot):
    """``quaternion`` (Shepperd, no eigenproblem) = transforms3d's mat2quat with w >= 0, also for rotations of
    about 180 deg (w near 0, where a trace-only formula loses accuracy); no predict call yet: n = 0, NaNs."""
    pr = BoltzmannHamelPredictor(robot, reanchor_horizon=np.inf)
    s = pr.cycle_stats()
    assert s["n"] == 0 and all(np.isnan(s[k]) for k in ("p50", "p99", "mean", "max"))
    rng = np.random.default_rng(3)
    from transforms3d.axangles import axangle2mat
    rots = [np.linalg.qr(rng.normal(size=(3, 3)))[0] for _ in range(30)]
    rots = [R * np.linalg.det(R) for R in rots]
    rots += [axangle2mat(rng.normal(size=3), np.pi - 1e-7 * k) for k in range(5)] + [np.eye(3)]
    for R in rots:
        pr.engine.R[:] = R
        q, ref = pr.quaternion, _quat(R)
        ref = ref if ref[0] >= 0 else -ref
        assert q[0] >= 0 and q == pytest.approx(ref, abs=1e-12)
        _, q_pose = pr.pose(pr.time)
        assert q_pose == pytest.approx(q, abs=0)


def test_anchor_uses_the_newest_measurement_stamped_at_or_before_it(robot):
    """Live, measurements arrive before the prediction reaches the anchor time, so the latest one is usually
    stamped after it. The anchor at 1.0 s must take the mocap pose of 0.95 s (not skip it, not take 1.05 s),
    and the joints read at or before 1.0 s (the newest read per joint; a joint not read keeps its prediction)."""
    pr = BoltzmannHamelPredictor(robot, reanchor_horizon=1.0)
    pr.measure_pose(0.0, [0.0, 0.0, 0.12], [1.0, 0.0, 0.0, 0.0])
    pr.predict(0.5)
    assert pr.anchors == [0.0]
    q0 = pr.engine.joint_angles.copy()
    yaw_a, yaw_b = 0.3, -0.6
    pr.measure_pose(0.95, [1.0, 0.5, 0.12], euler2quat(0.0, 0.0, yaw_a, "sxyz"))
    pr.measure_pose(1.05, [2.0, -1.0, 0.12], euler2quat(0.0, 0.0, yaw_b, "sxyz"))
    a, b = np.full(18, np.nan), np.full(18, np.nan)
    a[0], a[1] = q0[0] + 0.2, q0[1] + 0.1           # read at 0.9 s: coxa and femur of LF
    b[0] = q0[0] - 0.3                               # read at 1.2 s (after the anchor): not used
    pr.measure_joints(0.9, a)
    pr.measure_joints(1.2, b)
    pr.predict(1.001)                                # one 1 ms step after the anchor
    assert pr.anchors == [0.0, pytest.approx(1.0)]
    g = pr.pose_matrix
    assert g[:2, 3] == pytest.approx([1.0, 0.5], abs=1e-3)
    assert mat2euler(g[:3, :3], "sxyz")[2] == pytest.approx(yaw_a, abs=1e-3)
    q = pr.engine.joint_angles
    assert q[0] == pytest.approx(q0[0] + 0.2, abs=0.01) and q[1] == pytest.approx(q0[1] + 0.1, abs=0.01)
    assert q[2] == pytest.approx(q0[2], abs=0.01)    # not read: stays where the model had it


def test_anchor_carries_the_newest_sample_forward_to_the_anchor_time(robot):
    """Live, the newest sample before an anchor is up to a sample period plus the transport delay old (more on
    a loaded machine). The anchor carries it forward at the rates measured with it. Oracle: a body with a
    constant twist, whose pose at any time is known in closed form -- motion capture (world-frame rate w:
    R(t) = exp([w] t) R0) and IMU (body-frame gyro w_b: R(t) = R0 exp([w_b] t)) -- must give the exact pose at
    the anchor time, not the pose of the sample's stamp; a sample older than MAX_CARRY is used as it is."""
    from jethexa_dynamics.model.se3 import rot_exp
    from jethexa_dynamics.predictors.base import MAX_CARRY
    from transforms3d.quaternions import mat2quat

    v, w = np.array([0.1, -0.03, 0.01]), np.array([0.5, -0.2, 1.0])
    R0, p0 = rot_exp([0.1, 0.2, 0.3]), np.array([0.3, 0.1, 0.12])

    def truth(t):
        return p0 + v * t, rot_exp(w * t) @ R0

    pr = BoltzmannHamelPredictor(robot, reanchor_horizon=1.0)
    for t in (0.0, 0.96, 0.98):
        p, R = truth(t)
        pr.measure_pose(t, p, mat2quat(R))
    p, R = pr.mocap_pose_at(1.0)
    p1, R1 = truth(1.0)
    assert p == pytest.approx(p1, abs=1e-12) and R == pytest.approx(R1, abs=1e-12)
    p, R = pr.mocap_pose_at(0.98 + 2 * MAX_CARRY)                      # too old to carry: as measured
    assert R == pytest.approx(truth(0.98)[1], abs=1e-12)
    pr.predict(0.5)
    pr.predict(1.0)                                                   # the anchor at 1.0 s uses it
    assert pr.anchors == [0.0, pytest.approx(1.0)]
    assert pr.engine.R == pytest.approx(R1, abs=1e-9) and pr.engine.p == pytest.approx(p1, abs=1e-9)

    imu = BoltzmannHamelPredictor(robot, reanchor_horizon=1.0)
    wb = np.array([0.4, -0.7, 0.2])
    imu.measure_imu(0.993, mat2quat(R0), wb)
    assert imu.imu_attitude_at(1.0) == pytest.approx(R0 @ rot_exp(wb * 0.007), abs=1e-12)
    assert not np.allclose(imu.imu_attitude_at(1.0), R0, atol=1e-3)  # the carry is not negligible


def _walk_with_reads(robot, predictor, seconds=4.0):
    """A walk of the truth engine with the predictor fed its commands, its exact motion capture and its exact
    joint angles read as the bus reads them: 3 joints per 20 ms cycle, round-robin. The position errors [m]."""
    truth = Engine(robot, gait=None, record_every=0)
    gait = Gait.paper_tripod(truth.geometry)
    errors = []
    for k in range(int(seconds * RATE)):
        t = k / RATE
        q = gait.joint_targets(t + 1.0 / RATE)
        truth.set_joint_targets(q, move_time=1.0 / RATE)
        predictor.on_command(t, q, t + 1.0 / RATE)
        read = np.full(18, np.nan)
        for j in range(3 * k, 3 * k + 3):
            read[j % 18] = truth.joint_angles[j % 18]
        predictor.on_joints(t, read)
        predictor.on_ground_truth(t, truth.p.copy(), _quat(truth.R))
        truth.advance(t + 1.0 / RATE)
        predictor.predict(t + 1.0 / RATE)
        errors.append(np.linalg.norm(predictor.position - truth.p))
    assert truth.p[0] > 0.1                                     # it walked
    return np.array(errors)


def test_joint_anchor_on_reads_of_past_instants_does_not_move_the_body(robot):
    """At an anchor each joint's newest read is up to 0.12 s old (the bus reads 3 joints per 20 ms cycle). Reads
    exact for their own instants must leave a model that is exact where it was: anchored every 0.5 s on exact
    motion capture, the same engine's prediction with the joint anchor is as close to the truth as without it
    (the pose anchor alone: 0.5 mm at most, the base's velocity is not anchored). Put in place of the model's
    angles now, the reads set the legs back by their last ~65 ms of motion and the body lurched forward at every
    anchor: 3 of the sim graph's 3.3 mm of position error, 10 mm here."""
    with_joints = BoltzmannHamelPredictor(robot, reanchor_horizon=0.5)
    errors = _walk_with_reads(robot, with_joints)
    pose_only = _walk_with_reads(robot, BoltzmannHamelPredictor(robot, reanchor_horizon=0.5, anchor_joints=False))
    assert len(with_joints.anchors) >= 7
    assert errors.max() <= pose_only.max() + 5e-5 and errors.mean() <= pose_only.mean() + 2e-5
