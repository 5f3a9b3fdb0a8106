"""The active probe's request between nodes (issue 23 point 1): ``damage/probe``, diagnostic_msgs/DiagnosticStatus.

The damage monitor decides and scores a probe (``active_probe.ActiveProbe`` on its identifier's worker); the gait
controller, the only writer of ``joint_commands``, moves the leg. The request is one small message on a reliable,
transient-local topic (a gait controller that starts late still sees the last one, and rejects it as stale): a
DiagnosticStatus named :data:`NAME` whose key/values are :meth:`ProbeRequest.to_values`. No new message package:
the robot runs the stock interfaces only.

* ``action`` ``probe``: stop walking now (hold the stance on the other legs), bring ``leg`` to its ``stance``
  angles [rad: coxa, femur, tibia], and from ``t_start`` [s, ROS clock: the gait controller and the monitor share
  the robot's clock] for ``duration`` [s] move its coxa and femur through ``LinkProbe.targets`` of the spec sent
  (``coxa_hz`` [Hz], ``coxa_amp`` [rad], ``femur_hz``, ``femur_amp``); then the leg back to its stance, walk on.
* ``action`` ``cancel``: the probe ``id`` ends now (the monitor refused it at its plan, or aborted it: the margin
  watched fell); the leg back to its stance, walk on.

The schedule is on the ROS clock, not on the message's arrival: the gait computes the probe time from the clock
at every command tick, so its targets follow the schedule the monitor scores against whatever its tick phase.
Parsing (:meth:`ProbeRequest.from_values`) and the age check (:meth:`ProbeRequest.check_time`) raise ValueError
naming the key: the node rejects the message with one line and keeps serving. Imports no rclpy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Mapping, Sequence, Tuple

from .probe import ProbeSpec

__all__ = ["NAME", "ACTIONS", "MAX_LEAD", "ProbeRequest"]

#: the DiagnosticStatus name of a request
NAME = "damage_probe"
ACTIONS = ("probe", "cancel")
#: s: a probe starting further ahead than this is refused (a clock far apart, a forged request)
MAX_LEAD = 10.0
_SPEC_KEYS = ("duration", "coxa_hz", "coxa_amp", "femur_hz", "femur_amp")


@dataclass(frozen=True)
class ProbeRequest:
    """One request: ``action`` (``ACTIONS``), ``id`` (the monitor's probe number, > 0), ``leg`` (a leg name),
    ``t_start`` [s, ROS clock], ``spec`` (the probe's motion; ``command_period``/``imu_period`` are the
    receiver's own), ``stance`` the leg's 3 joint angles [rad] it holds before and after the probe."""
    action: str
    id: int
    leg: str
    t_start: float = 0.0
    spec: ProbeSpec = ProbeSpec()
    stance: Tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def t_end(self) -> float:
        """s, ROS clock: the probe's end."""
        return self.t_start + self.spec.duration

    def to_values(self) -> List[Tuple[str, str]]:
        """The message's key/values (floats with 9 significant digits: the ROS time of day to the microsecond)."""
        out = [("action", self.action), ("id", str(int(self.id))), ("leg", self.leg)]
        if self.action == "probe":
            out.append(("t_start", "%.6f" % self.t_start))
            out += [(k, "%.9g" % getattr(self.spec, k)) for k in _SPEC_KEYS]
            out.append(("stance", ",".join("%.9g" % v for v in self.stance)))
        return out

    @classmethod
    def from_values(cls, values: Mapping[str, str], leg_names: Sequence[str]) -> "ProbeRequest":
        """Parse a message's key/values; ValueError naming the key for anything missing, unknown or out of
        range (the spec's own ranges and the URDF's rate limits are checked by the receiver's ``LinkProbe``)."""
        def get(key):
            if key not in values:
                raise ValueError("probe request: no %r" % key)
            return str(values[key]).strip()

        def number(key):
            text = get(key)
            try:
                v = float(text)
            except ValueError:
                raise ValueError("probe request: %s=%r is not a number" % (key, text)) from None
            if not math.isfinite(v):
                raise ValueError("probe request: %s=%r is not finite" % (key, values[key]))
            return v

        action = get("action")
        if action not in ACTIONS:
            raise ValueError("probe request: action=%r, one of %s" % (action, ", ".join(ACTIONS)))
        text = get("id")
        if not text.isdigit() or int(text) < 1:
            raise ValueError("probe request: id=%r, a positive integer" % text)
        leg = get("leg")
        if leg not in leg_names:
            raise ValueError("probe request: leg=%r, one of %s" % (leg, ", ".join(leg_names)))
        if action == "cancel":
            return cls(action, int(text), leg)
        spec = ProbeSpec(**{k: number(k) for k in _SPEC_KEYS})      # ValueError names the field and its range
        parts = get("stance").split(",")
        try:
            stance = tuple(float(p) for p in parts)
        except ValueError:
            raise ValueError("probe request: stance=%r, 3 angles [rad] comma-separated" % values["stance"]) from None
        if len(stance) != 3 or not all(math.isfinite(v) and abs(v) <= math.pi for v in stance):
            raise ValueError("probe request: stance=%r, 3 finite angles within +-pi rad" % values["stance"])
        return cls(action, int(text), leg, number("t_start"), spec, stance)

    def check_time(self, now: float) -> None:
        """ValueError if a probe request is stale (its probe over by ``now`` [s, ROS clock]) or starts more than
        ``MAX_LEAD`` s ahead."""
        if self.action != "probe":
            return
        if now >= self.t_end:
            raise ValueError("probe request %d (%s): stale, its probe ended %.2f s ago" % (
                self.id, self.leg, now - self.t_end))
        if self.t_start - now > MAX_LEAD:
            raise ValueError("probe request %d (%s): starts %.1f s ahead, more than %.0f s" % (
                self.id, self.leg, self.t_start - now, MAX_LEAD))
