"""Silent breaks in the engine: the lost links leave the dynamics (mass, foot contact) while their servos keep
answering (joints still commanded and reporting). Oracles: static equilibrium (total normal force = weight of
the links still present), a foot that is gone carries no force, the unloaded joint tracks its command."""
import numpy as np
import pytest

from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.cli import main
from jethexa_dynamics.sim.engine import Engine


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


@pytest.mark.parametrize("spec,leg,links", [("LM:1", "LM", 1), ("RR:0", "RR", 0), ("RF:2", "RF", 2)])
def test_break_at_rest_carries_new_weight(robot, spec, leg, links):
    e = Engine(robot, gait="tripod", settle=30.0, record_every=0)
    e.set_breaks(spec)
    i = robot.leg_names.index(leg)
    assert e.body_morphology.links_per_leg[i] == links
    assert e.morphology.is_healthy                         # the servo interface keeps all 18 joints
    e.advance(2.0)
    _, f = e.contact_state()
    weight = robot.with_morphology(e.body_morphology).total_mass * 9.81
    assert weight < robot.total_mass * 9.81 - 0.05        # something was lost
    assert f[:, 2].sum() == pytest.approx(weight, rel=2e-3)
    assert np.all(f[i] == 0.0)                             # the broken foot carries nothing
    assert np.abs(e.twist).max() < 1e-3                    # at rest


def test_broken_joints_keep_reporting_and_following_commands(robot):
    e = Engine(robot, gait="tripod", settle=0.2, record_every=1)
    traj = e.run(1.5, breaks_at=(0.5, "LM:1"))
    th, qd = traj.col("theta"), traj.col("qdes")
    after = traj.t > 0.6
    lm = [robot.joint_names.index(n) for n in ("coxa_joint_LM", "femur_joint_LM", "tibia_joint_LM")]
    assert np.ptp(th[after][:, lm[1]]) > 0.05             # the broken femur still moves with the gait
    np.testing.assert_allclose(th[after][:, lm[1:]], qd[after][:, lm[1:]], atol=1e-12)
    assert traj.contact[after][:, robot.leg_names.index("LM")].max() == 0.0
    assert np.all(traj.contact[traj.t < 0.45][:, robot.leg_names.index("LM")].any())   # touched before
    assert ("breaks" in [ev[1] for ev in traj.events])


def test_sim_cli_break(tmp_path, capsys):
    assert main(["--break", "LM:1", "--damage-at", "0.3", "--duration", "0.6", "--quiet", "--no-plots",
                 "--out", str(tmp_path)]) == 0
    assert "Silent break LM:1" in capsys.readouterr().out
    data = np.loadtxt(tmp_path / "trajectory.csv", delimiter=",", skiprows=1)
    with open(tmp_path / "trajectory.csv") as f:
        header = f.readline().strip().split(",")
    assert data[data[:, 0] > 0.31, header.index("contact_LM")].max() == 0.0


def test_sim_cli_bad_break(capsys):
    assert main(["--break", "XX:1", "--duration", "0.1", "--quiet"]) == 2
    assert "--break" in capsys.readouterr().err
