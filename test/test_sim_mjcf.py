"""The MJCF of the same robot (benchmark peer) against the dynamics core, and MuJoCo as an independent
simulator of the same walk: same mass matrix, same statics, similar walking speed."""
import numpy as np
import pytest

from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.engine import Engine

mujoco = pytest.importorskip("mujoco")
from jethexa_dynamics.sim.mjcf import MujocoHexapod  # noqa: E402


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


@pytest.mark.parametrize("links", [None, (3, 0, 3, 3, 0, 3), (3, 1, 3, 3, 3, 1)])
def test_mass_matrix_matches_the_model(robot, links):
    mj = MujocoHexapod(robot, links_per_leg=links)
    rng = np.random.default_rng(0)
    th = rng.uniform(-0.8, 0.8, 18)
    mj.reset(np.zeros(3), np.eye(3), th)       # R = I: MuJoCo's world-frame base velocity = ours
    M = np.zeros((mj.model.nv, mj.model.nv))
    mujoco.mj_fullM(mj.model, M, mj.data.qM) if hasattr(mj.data, "qM") else mujoco.mj_fullM(mj.model, mj.data, M)
    red = robot.with_morphology(links or (3,) * 6)
    assert M.shape == (red.nv, red.nv)
    ours = red.mass_matrix(th[red.joint_index_in_full])
    assert M == pytest.approx(ours, abs=1e-12)


def test_standing_and_walking_agree_with_mujoco(robot):
    e = Engine(robot, gait=None, record_every=0)
    mj = MujocoHexapod(robot)
    mj.reset(e.p, e.R, e.theta)
    mj.step(1500)
    e.advance(1.5)
    assert mj.normal_force_sum() == pytest.approx(robot.total_mass * 9.81, rel=1e-3)
    assert e.p[2] == pytest.approx(mj.base_pos[2] - 0.002, abs=1.5e-3)    # MuJoCo's foot: 2 mm sphere
    # two gait cycles of the paper's tripod, same joint targets
    w = Engine(robot, record_every=0)
    mj.reset(w.p, w.R, w.theta)
    for k in range(2600):
        mj.set_targets(w.gait.joint_targets((k + 1) * 1e-3))
        mj.step()
    w.advance(2.6)
    assert w.p[0] == pytest.approx(mj.base_pos[0], rel=0.15)
    assert w.p[0] > 0.15 and abs(w.p[1]) < 0.01 and abs(mj.base_pos[1]) < 0.01
