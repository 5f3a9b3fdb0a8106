"""The slipping-model predictor on the JetHexa, driven by the project's gait generator's joint commands.

Oracles: the gait's kinematic body velocity (stance feet sweep back at the commanded speed; with one tripod
loaded the body must move at that speed), mirror/commanded-turn symmetry, the batch (prefix product) and
streaming paths agreeing, and morphology bookkeeping against the core model.
"""
import numpy as np
import pytest

from jethexa_dynamics.control.gait import Gait
from jethexa_dynamics.control.ik import LegGeometry
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.predictors.slip import SlipPredictor

DT = 0.02                     # 50 Hz command loop


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


@pytest.fixture(scope="module")
def geometry(robot):
    return LegGeometry.from_robot(robot)


def commands(gait, cycles=2):
    t = np.arange(0.0, cycles * gait.cycle_time + 1e-9, DT)
    return t, np.array([gait.joint_targets(tk) for tk in t])


def stream(pred, t, q):
    for tk, qk in zip(t, q):
        pred.push_joint_command(tk, qk)
    pred.advance(t[-1] + DT)
    return pred


def test_forward_tripod_moves_at_the_commanded_speed(robot, geometry):
    gait = Gait.paper_tripod(geometry)
    t, q = commands(gait)
    pred = stream(SlipPredictor(robot), t, q)
    x, y, yaw = pred.planar_pose()
    travelled = gait.nominal_speed * (t[-1] + DT)
    assert x == pytest.approx(travelled, rel=0.1)
    assert abs(y) < 0.02 * travelled and abs(yaw) < 0.02
    roll, pitch = pred.attitude()
    assert abs(roll) < 0.02 and abs(pitch) < 0.02
    g = pred.pose_matrix
    np.testing.assert_allclose(g[:3, :3] @ g[:3, :3].T, np.eye(3), atol=1e-12)
    assert 0.05 < g[2, 3] < 0.2                       # base_link above the ground at about stance height


def test_turning_in_place_matches_the_commanded_yaw_rate(robot, geometry):
    wz = 0.3
    gait = Gait(geometry, kind="tripod", command=(0.0, 0.0, wz))
    t, q = commands(gait)
    pred = stream(SlipPredictor(robot), t, q)
    x, y, yaw = pred.planar_pose()
    assert yaw == pytest.approx(wz * (t[-1] + DT), rel=0.1)
    assert np.hypot(x, y) < 0.02
    mirrored = Gait(geometry, kind="tripod", command=(0.0, 0.0, -wz))
    assert stream(SlipPredictor(robot), *commands(mirrored)).planar_pose()[2] == pytest.approx(-yaw, rel=0.05)


def test_streaming_equals_batch_prefix_product(robot, geometry):
    gait = Gait(geometry, kind="ripple", command=(0.03, 0.01, 0.1))
    t, q = commands(gait, cycles=1)
    pred = SlipPredictor(robot)
    tr = pred.evaluate_commands(t, q)
    trs = pred.evaluate_commands(t, q, method="sequential")
    np.testing.assert_allclose(tr.poses, trs.poses, atol=1e-12)
    for tk, qk in zip(t, q):
        pred.push_joint_command(tk, qk)
    np.testing.assert_allclose(pred.planar_pose(), tr.poses[-1], atol=1e-12)
    np.testing.assert_allclose(pred.yaw_rate(), tr.frames.yaw_rate[-1], atol=1e-15)


def test_morphology_removed_and_truncated_legs(robot, geometry):
    gait = Gait.paper_tripod(geometry)
    t, q = commands(gait, cycles=1)
    swing = np.array([gait.swing_mask(tk) for tk in t])
    healthy = SlipPredictor(robot).evaluate_commands(t, q).frames
    # damage 1 of the paper: the middle legs removed -> a 4-leg model. Each stance tripod keeps 2 legs on
    # one side, so the body rolls onto the swinging legs of the other side.
    pred = SlipPredictor(robot)
    pred.set_morphology([3, 0, 3, 3, 0, 3])
    for tk, qk in zip(t, q):
        pred.push_joint_command(tk, qk)                  # healthy-order commands are accepted
        assert not pred.frame.contact[0, [1, 4]].any()
    fr = pred.evaluate_commands(t, q).frames
    assert np.abs(fr.roll).max() > 10 * np.abs(healthy.roll).max()
    assert np.any(fr.contact & swing)
    # the whole left side gone: the COM is outside the support -> tip-over reported, not raised
    pred.set_morphology([0, 0, 0, 3, 3, 3])
    pred.push_joint_command(t[-1] + DT, q[0])
    assert pred.tipped
    # damage 2: LM and RR keep only the coxa -> no foot, they leave the list
    pred.set_morphology([3, 1, 3, 3, 3, 1])
    reduced = robot.with_morphology([3, 1, 3, 3, 3, 1])
    pred.push_joint_command(t[-1] + 2 * DT, q[0][reduced.joint_index_in_full])
    assert not pred.frame.contact[0, [1, 5]].any() and pred.frame.loads[0, [1, 5]].sum() == 0


def test_imu_residual_and_twist(robot, geometry):
    pred = SlipPredictor(robot)
    gait = Gait.paper_tripod(geometry)
    pred.push_joint_command(0.0, gait.joint_targets(0.0))
    assert pred.imu_residual() is None
    r = 0.1
    pred.push_imu(0.0, [np.cos(r / 2), np.sin(r / 2), 0, 0], [0, 0, 0.2])
    res = pred.imu_residual()
    assert res[0] == pytest.approx(pred.attitude()[0] - r) and res[2] == pytest.approx(-0.2)
    assert pred.twist.shape == (6,)


def test_bad_input(robot):
    pred = SlipPredictor(robot)
    with pytest.raises(ValueError, match="q"):
        pred.push_joint_command(0.0, np.zeros(5))
    with pytest.raises(ValueError, match="q"):
        pred.push_joint_command(0.0, np.full(18, np.nan))
    pred.push_joint_command(1.0, np.zeros(18))
    with pytest.raises(ValueError, match="t"):
        pred.advance(0.5)
    with pytest.raises(ValueError, match="smoothing"):
        SlipPredictor(robot, smoothing=1.5)
    with pytest.raises(ValueError, match="quat"):
        pred.push_imu(1.0, [0, 0, 1], [0, 0, 0])
    with pytest.raises(ValueError, match="morphology"):
        pred.set_morphology([3, 3])


def test_move_time_commands_equal_shifted_finite_differences(robot, geometry):
    """command(t, q, move_time) moves from the set-point to q over the move; the same twists as
    push_joint_command(t + move_time, q), one move later; after the last move the body stops."""
    gait = Gait(geometry, kind="tripod", command=(0.04, 0.0, 0.2))
    t, q = commands(gait, cycles=1)
    a, b = SlipPredictor(robot), SlipPredictor(robot)
    for tk, qk in zip(t, q):
        a.command(tk, qk, move_time=DT)
        b.push_joint_command(tk + DT, qk)
    end = a.predict(t[-1] + DT)
    np.testing.assert_allclose(end, b.predict(t[-1] + 2 * DT), atol=1e-12)
    np.testing.assert_allclose(a.predict(t[-1] + 5.0), end, atol=1e-15)


def test_main_predictor_interface_and_mocap_reanchoring(robot, geometry):
    gait = Gait.paper_tripod(geometry)
    names = list(robot.joint_names)[::-1]                 # any joint order given at reset
    pred = SlipPredictor(robot, reanchor_horizon=0.5)
    pred.reset(0.0, joint_names=names)
    ref = SlipPredictor(robot, reanchor_horizon=0.5)
    order = [robot.joint_names.index(n) for n in names]
    for tk in np.arange(0.0, 0.3, DT):
        qk = gait.joint_targets(tk)
        pred.on_command(tk, qk[order], tk + DT)
        ref.command(tk, qk, move_time=DT)
    pos, quat = pred.pose(0.3)
    np.testing.assert_allclose(pos, ref.predict(0.3)[:3, 3], atol=1e-12)
    from transforms3d.quaternions import quat2mat
    np.testing.assert_allclose(quat2mat(quat), pred.pose_matrix[:3, :3], atol=1e-12)
    # ground truth at 0.3 s: the next anchor (first measurement time) puts the planar pose there
    mocap = np.array([1.0, -2.0, 0.12])
    yaw = 0.4
    q_m = np.array([np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)])
    pred.on_ground_truth(0.3, mocap, q_m)
    pred.on_imu(0.31, q_m, [0, 0, 0.1], [0, 0, 9.81])
    pred.measure_joints(0.31, np.full(18, np.nan))
    pos, quat = pred.pose(0.31)
    assert pred.anchors == [0.3]
    np.testing.assert_allclose(pred.planar_pose()[2], yaw, atol=1e-12)
    np.testing.assert_allclose(pos[:2], mocap[:2], atol=1e-9)      # no twist after the last move ended
    pred.on_morphology(0.32, [3, 0, 3, 3, 0, 3])
    assert pred.robot.leg_names == ["LF", "LR", "RF", "RR"]
    assert pred.cycle_stats()["n"] >= 2


def test_reset_keeps_the_morphology_and_anchor_keeps_the_support(robot, geometry):
    gait = Gait.paper_tripod(geometry)
    pred = SlipPredictor(robot, morphology=[3, 3, 3, 3, 3, 3])
    pred.set_morphology([3, 0, 3, 3, 0, 3])
    pred.push_joint_command(0.0, gait.joint_targets(0.0))
    roll = pred.attitude()[0]
    pred.anchor(0.01, np.eye(4))
    assert pred.attitude()[0] == roll and pred.pose_matrix[2, 3] > 0.05
    pred.reset(0.02, pose=np.eye(4))
    assert pred.robot.leg_names == ["LF", "LR", "RF", "RR"] and pred.frame is None


def test_anchor_uses_the_newest_mocap_stamped_at_or_before_it(robot):
    """The anchor at 0.5 s takes the mocap pose of 0.45 s although one of 0.55 s already arrived."""
    pred = SlipPredictor(robot, reanchor_horizon=0.5)
    pred.measure_pose(0.0, [0.0, 0.0, 0.12], [1.0, 0.0, 0.0, 0.0])
    pred.predict(0.2)
    assert pred.anchors == [0.0]
    pred.measure_pose(0.45, [1.0, 0.5, 0.12], [np.cos(0.15), 0.0, 0.0, np.sin(0.15)])     # yaw 0.3
    pred.measure_pose(0.55, [2.0, -1.0, 0.12], [1.0, 0.0, 0.0, 0.0])
    pos, _ = pred.pose(0.52)
    assert pred.anchors == [0.0, 0.5]
    np.testing.assert_allclose(pos[:2], [1.0, 0.5], atol=1e-9)       # no command: the body stands still
    assert pred.planar_pose()[2] == pytest.approx(0.3)


@pytest.mark.parametrize("morphology", [None, "LM:0", "RR:1"])
def test_centre_of_mass_matches_newton_euler(robot, morphology):
    """The predictor's COM (the core model's compiled link CoMs) against an independent sum of link
    masses at the link CoMs by the recursive Newton-Euler model's own forward kinematics, healthy and with a
    removed / truncated leg."""
    from jethexa_dynamics.second_opinions.rnea import NewtonEulerRobot

    pred = SlipPredictor(robot, morphology=morphology)
    ne = NewtonEulerRobot.from_urdf(robot.urdf_path).with_morphology(pred.robot.morphology.links_per_leg)
    rng = np.random.default_rng(4)
    for _ in range(5):
        q = rng.uniform(-0.6, 0.6, len(pred.robot.joint_names))
        np.testing.assert_allclose(pred._centre_of_mass(q), ne.center_of_mass(q), rtol=0, atol=1e-14)
