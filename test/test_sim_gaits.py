"""Closed-loop walking with every gait and command direction: the body follows the commanded body velocity
(the gait's kinematic oracle: mean body velocity = stride / stance time), and the Coulomb contact option
keeps every tangential force inside the friction cone. Two gait cycles each (2.6 s): enough for the mean."""
import numpy as np
import pytest

from jethexa_dynamics.control.gait import Gait
from jethexa_dynamics.control.ik import LegGeometry
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.contact import ContactModel
from jethexa_dynamics.sim.engine import Engine


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


@pytest.mark.parametrize("kind,command", [("wave", (0.04, 0.0, 0.0)), ("ripple", (0.05, 0.0, 0.0)),
                                          ("tripod", (0.0, 0.05, 0.0)), ("tripod", (-0.04, 0.03, 0.0)),
                                          ("tripod", (0.0, 0.0, 0.3))])
def test_body_follows_the_command(robot, kind, command):
    g = Gait(LegGeometry.from_robot(robot), kind=kind, command=command)
    e = Engine(robot, gait=g, record_every=0)
    T = 2 * g.cycle_time
    e.advance(T)
    vx, vy, wz = command
    yaw = e.euler[2]
    assert yaw == pytest.approx(wz * T, abs=max(0.15 * abs(wz * T), 0.03))
    if wz == 0.0:
        assert e.p[:2] == pytest.approx([vx * T, vy * T], abs=0.2 * np.hypot(vx, vy) * T)
    else:
        assert np.hypot(*e.p[:2]) < 0.01                   # turning on the spot
    assert e.p[2] > 0.11


def test_coulomb_contact_stays_in_the_cone(robot):
    mu = 0.3
    e = Engine(robot, contact=ContactModel(friction="coulomb", mu=mu), record_every=1)
    tr = e.run(2.6)
    f = tr.foot_forces
    ft = np.hypot(f[..., 0], f[..., 1])
    assert (ft <= mu * f[..., 2] + 1e-9).all()
    assert (ft[f[..., 2] > 1.0] > 0.99 * mu * f[..., 2][f[..., 2] > 1.0]).any()   # and it does slide sometimes
    assert tr.pos[-1, 0] > 0.15
