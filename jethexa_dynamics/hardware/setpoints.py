"""Each servo's set-point at any time, from the moves the driver sent it (no rclpy, no bus I/O).

A Hiwonder move (MOVE_TIME_WRITE) takes the servo's set-point linearly from where it is when the move arrives to
the goal over the move time; a stop (MOVE_STOP) holds it where it is. :class:`ServoSetpoints` replays the moves
the joint layer sent, in radians (the goal as the servo got it: rounded to whole ticks; the time to whole ms),
so the driver can say, for each position it read, what the servo was asked to be at at that instant: the pair a
servo's tracking error -- its load -- is made of (``damage.body_load``). The same model as ``EmulatedServo.logical``
and ``Engine.set_joint_targets``. A joint never moved has no set-point (NaN): its first move starts at its goal.

Times are the caller's clock (the joint layer's ``time_fn``); a move starts at each servo's receipt of it, which
the caller gives (``ServoBus.move_receipts``: a servo acts on its frame's last byte, the 18th of a group move 15.6 ms
after the first at 115200 baud).
"""
from __future__ import annotations

from typing import Dict, Iterable, Mapping, Sequence

import numpy as np

__all__ = ["ServoMoves", "ServoSetpoints"]


class ServoMoves:
    """The set-points [rad] of ``n_joints`` servos (by index) over time from the moves sent: each move takes its
    joints linearly from their set-point then to the goal over its move time; a joint never moved has NaN, and
    its first move starts at its goal. ``damage.body_load`` rebuilds the set-points from the command stream with
    it, :class:`ServoSetpoints` from the moves the driver sent."""

    def __init__(self, n_joints: int):
        self.start = np.full(n_joints, np.nan)
        self.goal = np.full(n_joints, np.nan)
        self.t0 = np.zeros(n_joints)
        self.duration = np.zeros(n_joints)

    def at(self, t) -> np.ndarray:
        """Set-points [rad] at ``t`` [s]: one time for every joint, or an array of one per joint (NaN for a joint
        never commanded)."""
        s = np.ones_like(self.t0)
        moving = self.duration > 0
        t = np.asarray(t, dtype=float)[moving] if np.ndim(t) else t
        s[moving] = np.clip((t - self.t0[moving]) / self.duration[moving], 0.0, 1.0)
        return self.start + s * (self.goal - self.start)

    def rate(self, t: float) -> np.ndarray:
        """Set-point rates [rad/s] at ``t`` [s]: a move's slope while it runs, 0 before and after it (NaN for a
        joint never commanded)."""
        moving = (self.duration > 0) & (self.t0 <= t) & (t < self.t0 + self.duration)
        r = np.where(np.isnan(self.goal), np.nan, 0.0)
        r[moving] = (self.goal[moving] - self.start[moving]) / self.duration[moving]
        return r

    def command(self, t, idx: np.ndarray, q: np.ndarray, move_time: float) -> None:
        """A move that starts at ``t`` [s] (one time, or one per joint of ``idx``): joints ``idx`` to ``q`` [rad] in
        ``move_time`` [s]."""
        idx = np.asarray(idx, dtype=int)
        if np.ndim(t):
            t0 = self.t0.copy()
            t0[idx] = t
            now = self.at(t0)[idx]
        else:
            now = self.at(t)[idx]
        self.start[idx] = np.where(np.isnan(now), q, now)
        self.goal[idx] = q
        self.t0[idx] = t
        self.duration[idx] = move_time


class ServoSetpoints:
    """Set-points [rad] of the servos named ``joints`` over time from the moves sent (see the module's docstring):
    :class:`ServoMoves` by joint name, with a stop."""

    def __init__(self, joints: Sequence[str]):
        self.joints = tuple(joints)
        self._index = {j: i for i, j in enumerate(self.joints)}
        self._moves = ServoMoves(len(self.joints))

    def at(self, joint: str, t: float) -> float:
        """The set-point of ``joint`` at ``t`` [rad] (NaN if it was never moved)."""
        return float(self._moves.at(t)[self._index[joint]])

    def at_times(self, times: Mapping[str, float]) -> Dict[str, float]:
        """``{joint: set-point at its own time}`` for ``{joint: t}`` (e.g. each servo's read time)."""
        t = np.zeros(len(self.joints))
        for j, tj in times.items():
            t[self._index[j]] = tj
        s = self._moves.at(t)
        return {j: float(s[self._index[j]]) for j in times}

    def move(self, t: float, goals: Mapping[str, float], duration: float, receipts: Sequence[float] = ()) -> None:
        """Moves sent at ``t``: each joint of ``goals`` from its set-point then to its goal [rad] in ``duration`` s,
        starting ``receipts`` [s] (one per goal, in its order; none: 0) after ``t``."""
        idx = np.array([self._index[j] for j in goals], dtype=int)
        starts = float(t) + np.asarray(receipts, dtype=float) if len(receipts) else float(t)
        self._moves.command(starts, idx, np.fromiter(goals.values(), float, len(idx)), float(duration))

    def stop(self, t: float, joints: Iterable[str] = None) -> None:
        """A stop at ``t``: the joints (default all moved ones) hold their set-point of now."""
        now = self._moves.at(t)
        idx = np.arange(len(self.joints)) if joints is None else np.array([self._index[j] for j in joints], dtype=int)
        idx = idx[~np.isnan(now[idx])]
        self._moves.command(float(t), idx, now[idx], 0.0)
