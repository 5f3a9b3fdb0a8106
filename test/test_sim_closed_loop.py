"""The one closed loop of the offline walks (``sim.closed_loop.GaitLoop``): the gait's targets reach the engine's
servos by joint name, over one command period while walking and ``STANCE_MOVE_TIME`` on the way to the stance,
and a morphology reaches both the plant and the gait."""
import numpy as np
import pytest

from jethexa_dynamics.control.walking import STANCE_MOVE_TIME
from jethexa_dynamics.sim.closed_loop import GaitLoop


def test_targets_reach_the_servos_by_name_with_the_drivers_move_time():
    loop = GaitLoop.build(dt=1e-3)
    loop.walker.set_command((0.05, 0.0, 0.0))
    names, q, mt = loop.command(0.02, walking=True)
    assert mt == 0.02 and len(names) == 18
    loop.send(names, q, mt)
    loop.engine.advance(0.02)                      # a linear move of one period: at the target
    np.testing.assert_allclose(loop.engine.setpoints()[loop.joints(names)], q, atol=1e-12)
    names, q, mt = loop.command(0.02, walking=False)
    assert mt == STANCE_MOVE_TIME
    t0 = loop.engine.time
    loop.send(names, q, mt)
    loop.engine.advance(t0 + STANCE_MOVE_TIME / 2)       # half-way through the stance move: not there yet
    assert not np.allclose(loop.engine.setpoints()[loop.joints(names)], q, atol=1e-6)
    loop.engine.advance(t0 + STANCE_MOVE_TIME)
    np.testing.assert_allclose(loop.engine.setpoints()[loop.joints(names)], q, atol=1e-12)


def test_a_morphology_reaches_the_plant_and_the_gait():
    loop = GaitLoop.build(dt=1e-3)
    loop.set_morphology("damage1")
    assert list(loop.engine.morphology.links_per_leg) == [3, 0, 3, 3, 0, 3]
    assert loop.walker.links_per_leg == [3, 0, 3, 3, 0, 3]
    names, _ = loop.step(0.02, walking=True)
    assert len(names) == 12 and not any(n.endswith(("_LM", "_RM")) for n in names)
    with pytest.raises(KeyError):
        loop.joints(["no_such_joint"])
