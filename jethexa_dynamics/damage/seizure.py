"""A seized joint: its servo answers, but the joint stops following its commands (no rclpy).

A seized servo (a locked gear train, a jammed horn) keeps its link: the leg is still there, it still carries
the body, but one joint of it stays where it is. That is no morphology of the model (a morphology removes
links) and must not be read as one: the damage monitor keeps the morphology, reports the joint as seized on
``/diagnostics`` and ``morphology/evidence``, and the gait crawls until the joint follows again.

Rule (:class:`SeizureTracker`), per joint, judged on the ``joint_states`` messages that carry it, at most every
``JUDGE_EVERY`` of the window:

* the commands asked for motion: the commanded angles due in the last ``window`` [s] span at least
  ``min_travel`` [rad] (a robot standing still proves nothing either way). A command is due when its move
  ends (receipt + move time) and counts only once it has been due for ``SERVO_LAG``: a goal sent a moment ago
  has not moved any servo yet;
* the joint did not move: its measured angles over the same span of the publisher's stamps (from the last
  reading at or before its start) stay within ``max_motion`` [rad] (a healthy servo following ``min_travel``
  moves nearly as far, lagging by its move time);
* the measurements are on time and cover the window: at least ``MIN_READINGS`` readings of the joint, every
  one received at most ``max_latency`` [s] after its stamp and stamped at most ``max_interval`` [s] after the
  previous one. A starved reader or a starved publisher (late, sparse messages) proves nothing: the streak
  starts again.

A seized joint is cleared once its measured angles span more than half of the commanded travel in a window
(it follows again). Only measured angles count: the servo driver publishes the positions it read, never a
commanded value in their place, and a servo that does not answer is left out (that is ``damage.detection``'s
lost servo, not a seizure).

Example::

    tr = SeizureTracker(["femur_joint_LM"])
    for k in range(40):                         # 0.8 s at 50 Hz: commands sweep, the joint stays at 0.3 rad
        t = 0.02 * k
        tr.on_command(t, ["femur_joint_LM"], [0.3 + 0.2 * math.sin(4 * t)])
        tr.on_joint_states(t, t, ["femur_joint_LM"], [0.3])
    tr.seized                                   # {'femur_joint_LM': 'follows no command: ...'}
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Deque, Dict, Iterable, Sequence, Tuple


#: readings of a joint within the window, at least, for a verdict
MIN_READINGS = 3
#: s from a goal's due time until the servo's measured angle surely shows it (the driver's write, the servo's
#: response; at a start from standing the plant's servos lagged their first goals by more than 0.1 s)
SERVO_LAG = 0.25
#: a joint is judged at most every this fraction of the window (its measurements are kept at every message): the
#: verdict comes at most a quarter window later, for a quarter of the work at the joint_states rate
JUDGE_EVERY = 0.25


@dataclass(frozen=True)
class SeizureConfig:
    """Thresholds of :class:`SeizureTracker` (the damage monitor's ``seizure_*`` parameters)."""

    window: float = 0.6          # s of commands and measurements judged together
    min_travel: float = 0.1      # rad: the commands moved the joint at least this far in the window ...
    max_motion: float = 0.035    # rad: ... while its measured angle stayed within this (read noise: ~0.004 rad)
    max_interval: float = 0.18   # s between consecutive stamps of the joint's readings (on-time rule; a driver
    #                              reading 3 of 18 servos per 50 Hz cycle reads each every 0.12 s. While it retries
    #                              a lost leg's silent servos it reads the others every 0.2-0.3 s, and a crawl's
    #                              swing (0.2 rad and back in 0.45 s) fell between such readings: a healthy
    #                              femur read as seized in the demo. Readings that sparse prove nothing.)
    max_latency: float = 0.2     # s from a message's stamp to its receipt (on-time rule)

    def __post_init__(self):
        for name, lo, hi in (("window", 0.1, 10.0), ("min_travel", 0.01, 3.0), ("max_motion", 0.0, 1.0),
                             ("max_interval", 0.001, 5.0), ("max_latency", 0.001, 5.0)):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                raise ValueError("seizure %s=%r outside the allowed range [%g, %g]" % (name, v, lo, hi))
        if self.max_motion >= self.min_travel:
            raise ValueError("seizure max_motion=%g must be below min_travel=%g" % (self.max_motion,
                                                                                   self.min_travel))


class SeizureTracker:
    """Which joints follow no command while their servo answers (the rule of the module docstring).

    ``on_command(now, names, angles, move_time)``: goals received at ``now`` [s]; ``on_joint_states(now, stamp,
    names, angles)``: readings stamped ``stamp`` [s, same clock] received at ``now``. ``seized`` maps each seized
    joint to its reason; ``changed`` is set whenever that set changes (the caller clears it).
    """

    def __init__(self, joint_names: Sequence[str], config: SeizureConfig = SeizureConfig()):
        self.config = config
        self.joints = frozenset(joint_names)
        self._commands: Dict[str, Deque[Tuple[float, float]]] = {j: deque() for j in self.joints}
        self._measured: Dict[str, Deque[Tuple[float, float]]] = {j: deque() for j in self.joints}
        self._judged: Dict[str, float] = {j: -math.inf for j in self.joints}
        self.seized: Dict[str, str] = {}
        self.changed = False
        self.late_messages = 0         # messages that broke a streak (late or sparse): no evidence

    def on_command(self, now: float, names: Iterable[str], angles: Iterable[float], move_time: float = 0.0) -> None:
        """Goals ``angles`` [rad] of joints ``names`` received at ``now`` [s], to be reached in ``move_time`` [s]."""
        horizon = now - self.config.window - SERVO_LAG
        due = now + move_time
        for j, q in zip(names, _floats(angles)):
            cmds = self._commands.get(j)
            if cmds is None:
                continue
            cmds.append((due, q))
            while cmds and cmds[0][0] < horizon:
                cmds.popleft()

    def on_joint_states(self, now: float, stamp: float, names: Iterable[str], angles: Iterable[float]) -> None:
        """Readings ``angles`` [rad] of joints ``names`` taken at ``stamp`` [s] and received at ``now`` [s]; the
        joints whose turn it is are judged."""
        c = self.config
        on_time = now - stamp <= c.max_latency
        late = False
        for j, q in zip(names, _floats(angles)):
            meas = self._measured.get(j)
            if meas is None:
                continue
            if not (on_time and (not meas or 0.0 <= stamp - meas[-1][0] <= c.max_interval)):
                late = True
                meas.clear()                   # the streak is broken: it starts again from an on-time message
                if not on_time:
                    continue
            meas.append((stamp, q))
            while len(meas) > 1 and meas[1][0] <= stamp - c.window:
                meas.popleft()                 # keeps the last reading at or before the window's start
            if stamp - self._judged[j] >= JUDGE_EVERY * c.window:
                self._judged[j] = stamp
                self._judge(j, stamp)
        self.late_messages += late

    def _judge(self, j: str, stamp: float) -> None:
        c = self.config
        meas, cmds = self._measured[j], self._commands[j]
        if not cmds or stamp - cmds[-1][0] > c.window:
            return                              # no recent command: nothing asked of the joint
        travel = _span(q for due, q in cmds if stamp - c.window <= due <= stamp - SERVO_LAG)
        if travel < c.min_travel:
            return
        covered = meas[0][0] <= stamp - c.window and len(meas) >= MIN_READINGS
        motion = _span(q for _, q in meas)
        if j not in self.seized and covered and motion <= c.max_motion:
            self.seized[j] = ("follows no command: commanded %.2f rad, moved %.3f rad in %.1f s (servo answering)"
                              % (travel, motion, c.window))
            self.changed = True
        elif j in self.seized and motion > 0.5 * travel:
            del self.seized[j]
            self.changed = True

    def reset(self) -> None:
        for d in (*self._commands.values(), *self._measured.values()):
            d.clear()
        self._judged = {j: -math.inf for j in self.joints}
        if self.seized:
            self.seized.clear()
            self.changed = True


def _floats(values):
    """Python floats (a numpy array's ``tolist``: one conversion instead of one per element)."""
    return values.tolist() if hasattr(values, "tolist") else values


def _span(values) -> float:
    lo, hi = math.inf, -math.inf
    for v in values:
        lo, hi = min(lo, v), max(hi, v)
    return hi - lo if hi >= lo else 0.0
