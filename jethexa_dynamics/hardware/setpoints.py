"""Each servo's set-point at any time, from the moves the driver sent it (no rclpy, no bus I/O).

A Hiwonder move (MOVE_TIME_WRITE) takes the servo's set-point linearly from where it is when the move arrives to
the goal over the move time; a stop (MOVE_STOP) holds it where it is. :class:`ServoSetpoints` replays the moves
the joint layer sent, in radians (the goal as the servo got it: rounded to whole ticks; the time to whole ms),
so the driver can say, for each position it read, what the servo was asked to be at at that instant: the pair a
servo's tracking error -- its load -- is made of (``damage.body_load``). The same model as ``EmulatedServo.logical``
and ``Engine.set_joint_targets``. A joint never moved has no set-point (NaN): its first move starts at its goal.

Times are the caller's clock (the joint layer's ``time_fn``); a move is taken to start when it was written
(the servo's receipt, the wire time of the frames, is not modelled: under 16 ms for 18 servos at 115200 baud).
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, Mapping, Sequence, Tuple

__all__ = ["ServoSetpoints"]


class ServoSetpoints:
    """Set-points [rad] of ``joints`` over time from the moves sent (see the module's docstring)."""

    def __init__(self, joints: Sequence[str]):
        self.joints = tuple(joints)
        # per joint: (start [rad], goal [rad], t0 [s], duration [s]); absent = never moved
        self._moves: Dict[str, Tuple[float, float, float, float]] = {}

    def at(self, joint: str, t: float) -> float:
        """The set-point of ``joint`` at ``t`` [rad] (NaN if it was never moved)."""
        m = self._moves.get(joint)
        if m is None:
            return math.nan
        start, goal, t0, duration = m
        if duration <= 0.0 or t >= t0 + duration:
            return goal
        if t <= t0:
            return start
        return start + (goal - start) * (t - t0) / duration

    def at_times(self, times: Mapping[str, float]) -> Dict[str, float]:
        """``{joint: set-point at its own time}`` for ``{joint: t}`` (e.g. each servo's read time)."""
        return {j: self.at(j, t) for j, t in times.items()}

    def move(self, t: float, goals: Mapping[str, float], duration: float) -> None:
        """Moves sent at ``t``: each joint of ``goals`` from its set-point now to its goal [rad] in ``duration`` s."""
        d = float(duration)
        for joint, goal in goals.items():
            now = self.at(joint, t)
            g = float(goal)
            self._moves[joint] = (g if math.isnan(now) else now, g, float(t), d)

    def stop(self, t: float, joints: Iterable[str] = None) -> None:
        """A stop at ``t``: the joints (default all moved ones) hold their set-point of now."""
        for joint in list(self._moves if joints is None else joints):
            now = self.at(joint, t)
            if not math.isnan(now):
                self._moves[joint] = (now, now, float(t), 0.0)
