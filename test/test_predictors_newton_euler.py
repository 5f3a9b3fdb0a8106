"""The Newton-Euler predictor (paper 004's formulation on the JetHexa) and the PREDICTORS registry.

Oracles: statics with the core Boltzmann-Hamel model (joint torques = gravity rows - J^T f for the same
foot forces, using the core's gravity vector and tip Jacobians), vertical equilibrium, the gait's kinematic
speed, and the predictors' shared interface.
"""
import numpy as np
import pytest

from jethexa_dynamics.control.gait import Gait
from jethexa_dynamics.control.ik import LegGeometry
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.predictors.newton_euler import NewtonEulerPredictor
from jethexa_dynamics.predictors.registry import PREDICTORS
from jethexa_dynamics.predictors.slip import SlipPredictor

DT = 0.02


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


@pytest.fixture(scope="module")
def gait(robot):
    return Gait.paper_tripod(LegGeometry.from_robot(robot))


def test_standing_torques_match_the_boltzmann_hamel_statics(robot, gait):
    pred = NewtonEulerPredictor(robot)
    q = gait.joint_targets(0.25 * gait.cycle_time)           # mid-stance of one tripod
    for k in range(3):
        pred.push_joint_command(k * DT, q)
    grf = pred.ground_reactions()
    stance = pred.frame.contact[0]
    assert grf.rank == 6 and np.abs(grf.residual).max() < 1e-9
    np.testing.assert_allclose(grf.forces[:, 2].sum(), robot.total_mass * 9.81, rtol=1e-9)
    # the same foot forces through the core model: tau = G - J^T [R^T f; 0] on the joint rows
    g = pred.pose_matrix
    f = np.zeros((6, 3))
    f[stance] = grf.forces
    Rw = g[:3, :3] @ robot.tip_poses(q)[:, :3, :3]
    F = np.concatenate([np.einsum("kji,kj->ki", Rw, f), np.zeros((6, 3))], axis=1).ravel()
    expected = robot.gravity_forces(g, q) - robot.tip_jacobian(q).T @ F
    np.testing.assert_allclose(pred.joint_torques(), expected[6:], atol=1e-9)
    np.testing.assert_allclose(expected[:6], 0, atol=1e-9)     # the base is balanced by those forces


def test_walking_tripod_follows_the_stance_feet(robot, gait):
    pred = NewtonEulerPredictor(robot)
    t = np.arange(0.0, 2 * gait.cycle_time, DT)
    ranks = []
    for tk in t:
        pred.push_joint_command(tk, gait.joint_targets(tk))
        ranks.append(pred.twist_rank)
    pred.advance(t[-1] + DT)
    x, y, yaw = pred.planar_pose()
    assert x == pytest.approx(gait.nominal_speed * (t[-1] + DT), rel=0.1)
    assert abs(y) < 0.005 and abs(yaw) < 0.01
    assert min(ranks[1:]) == 6                                 # >= 3 non-collinear stance feet throughout
    assert pred.joint_torques().shape == (18,)


def test_paper_scheme_reports_rank_deficiency(robot):
    """Stepping in place: the stance tripod LF, RM, LR has its lone middle foot at x = 0, where the paper's
    3-leg sharing rule is rank 5 (extraction NE-T4): least squares, and the result says so."""
    in_place = Gait(LegGeometry.from_robot(robot), kind="tripod")      # zero velocity command
    pred = NewtonEulerPredictor(robot, scheme="paper")
    pred.push_joint_command(0.0, in_place.joint_targets(0.25 * in_place.cycle_time))
    grf = pred.ground_reactions()
    np.testing.assert_array_equal(pred.frame.contact[0], [1, 0, 1, 0, 1, 0])
    assert grf.rank == 5 and grf.least_squares and "rank 5" in grf.message
    np.testing.assert_allclose(grf.forces[:, 2].sum(), robot.total_mass * 9.81, rtol=1e-9)


def test_morphology_and_bad_input(robot, gait):
    pred = NewtonEulerPredictor(robot)
    pred.set_morphology([3, 1, 3, 3, 3, 1])
    q = robot.with_morphology([3, 1, 3, 3, 3, 1]).joint_index_in_full
    pred.push_joint_command(0.0, gait.joint_targets(0.0)[q])
    assert pred.joint_torques().shape == (14,)
    with pytest.raises(ValueError, match="scheme"):
        NewtonEulerPredictor(robot, scheme="equal")


def test_registry_predictors_share_the_interface(robot, gait):
    assert set(PREDICTORS) == {"slip", "newton_euler"}
    assert PREDICTORS["slip"] is SlipPredictor and PREDICTORS["newton_euler"] is NewtonEulerPredictor
    for name, cls in PREDICTORS.items():
        pred = cls(robot)
        assert pred.name == name
        pred.set_morphology(None)
        pred.push_joint_command(0.0, gait.joint_targets(0.0))
        pred.push_joint_command(DT, gait.joint_targets(DT))
        pred.push_imu(DT, [1, 0, 0, 0], [0, 0, 0])
        pred.advance(2 * DT)
        g = pred.pose_matrix
        assert g.shape == (4, 4) and pred.twist.shape == (6,)
        anchor = np.eye(4)
        anchor[:3, 3] = [1.0, 2.0, 0.1]
        pred.anchor(3 * DT, anchor)
        np.testing.assert_allclose(pred.pose_matrix[:2, 3], [1.0, 2.0], atol=1e-12)
