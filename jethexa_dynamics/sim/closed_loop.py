"""The gait controller's logic driving the simulated robot: one closed loop for every offline walk.

:class:`GaitLoop` pairs an :class:`~jethexa_dynamics.sim.engine.Engine` (servo-target mode: the plant) with a
:class:`~jethexa_dynamics.control.walking.WalkingGait` (what ``gait_controller`` runs): each :meth:`GaitLoop.step`
takes the gait's joint targets for one command period and hands them to the engine's servos as the servo
driver does on the robot (the joints by name, the move time of one period, or ``STANCE_MOVE_TIME`` when the
gait goes to the stance). Bag synthesis (``validation.simbag``), the recovery runs (``sim.recovery``) and the
identification plant (``sim.streams``) all walk through it; each adds what it records.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.control.walking import STANCE_MOVE_TIME, WalkingGait

from .engine import Engine


class GaitLoop:
    """``engine`` (a servo-target ``Engine``) walked by ``walker`` (a ``WalkingGait`` over the engine's joints).

    Example::

        >>> loop = GaitLoop.build(dt=1e-3)
        >>> _ = loop.walker.set_command((0.05, 0.0, 0.0))
        >>> for k in range(10):
        ...     names, q = loop.step(0.02, walking=True)
        ...     _ = loop.engine.advance(0.02 * (k + 1))
        >>> len(names), round(loop.engine.time, 3)
        (18, 0.2)
    """

    def __init__(self, engine: Engine, walker: WalkingGait):
        self.engine, self.walker = engine, walker
        self._index = {n: k for k, n in enumerate(engine.robot.joint_names)}

    @classmethod
    def build(cls, plant=None, engine: Optional[Engine] = None, dt: float = 1e-3, **gait) -> "GaitLoop":
        """A new loop: ``engine`` (default a servo-target engine of the ``LeggedRobot`` ``plant`` at ``dt`` s, no
        recording) and a ``WalkingGait`` on its geometry and joints with the keyword arguments ``gait`` (its
        ``robot`` is the gait's model of the robot, which need not be the plant)."""
        eng = engine or Engine(plant, gait=None, dt=dt, record_every=0)
        return cls(eng, WalkingGait(eng.geometry, list(eng.robot.joint_names), **gait))

    def joints(self, names: Sequence[str]) -> np.ndarray:
        """Indices of joint ``names`` in the engine's joint vector."""
        return np.array([self._index[n] for n in names], dtype=np.int64)

    def command(self, dt_cmd: float, walking: bool, stand: bool = False) -> Tuple[List[str], np.ndarray, float]:
        """The gait's targets for one command period of ``dt_cmd`` s and the move time the servo driver gives
        them (one period while walking, ``STANCE_MOVE_TIME`` on the way to the stance); nothing sent. ``stand``:
        the stance at once, no blend (``WalkingGait.stand``: an active probe's stand, as the gait controller's)."""
        names, q = self.walker.stand() if stand else self.walker.step(dt_cmd, walking)
        walking = walking and not stand
        move_time = dt_cmd if walking and self.walker.can_walk else STANCE_MOVE_TIME
        return names, q, move_time

    def send(self, names: Sequence[str], q: np.ndarray, move_time: float) -> None:
        """The servos of joints ``names`` move to ``q`` (rad) over ``move_time`` s."""
        if len(names):
            self.engine.set_joint_targets(q, move_time=move_time, joints=self.joints(names))

    def step(self, dt_cmd: float, walking: bool, move_time: Optional[float] = None) -> Tuple[List[str], np.ndarray]:
        """:meth:`command` then :meth:`send` (``move_time`` overrides the driver's); the engine does not advance."""
        names, q, mt = self.command(dt_cmd, walking)
        self.send(names, q, mt if move_time is None else move_time)
        return names, q

    def set_morphology(self, morphology) -> None:
        """The plant loses what ``morphology`` says (anything ``Engine.set_morphology`` takes) and the gait
        follows it, as the gait controller does on a ``morphology`` message."""
        self.engine.set_morphology(morphology)
        self.walker.set_morphology(list(self.engine.morphology.links_per_leg))
