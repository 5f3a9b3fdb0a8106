"""Servo table: which bus servo drives which URDF joint, and the radian <-> tick map.

Hiwonder's map (reference §1.3, ``x_joint_control.py``)::

    real  = direction * (offset + joint_rad)        servo angle from centre [rad], |real| <= 120 deg
    ticks = center + real * ticks_per_range / (2 * servo_range)

Hiwonder truncates with ``int()``; we round to the nearest tick (half a tick = 0.12 deg less bias).
Joint angles follow the URDF convention (docs/development.md); zero = servo centre.
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from typing import Dict, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

import yaml

from .errors import JointLimitError, ParameterError

__all__ = [
    "SERVO_RANGE_RAD", "ServoSpec", "ServoTable", "default_config_path", "default_urdf_path",
    "load_servo_table", "urdf_joint_limits",
]

SERVO_RANGE_RAD = math.radians(120.0)
_DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def default_config_path() -> str:
    """Bundled ``config/servos.yaml`` (via the ``jethexa_dynamics/data/config`` symlink; works after pip install)."""
    return os.path.join(_DATA_DIR, "config", "servos.yaml")


def default_urdf_path() -> str:
    """Bundled ``urdf/jethexa.urdf``."""
    return os.path.join(_DATA_DIR, "urdf", "jethexa.urdf")


def urdf_joint_limits(path: Optional[str] = None) -> Dict[str, Tuple[float, float]]:
    """``{joint: (lower, upper)}`` [rad] of the revolute joints of a URDF (bundled JetHexa URDF by default).

    Only ``<limit lower upper>`` is needed here, so plain xml.etree keeps the hardware layer free of the
    model package.
    """
    path = path or default_urdf_path()
    out = {}
    for j in ET.parse(path).getroot().iter("joint"):
        lim = j.find("limit")
        if j.get("type") != "revolute" or lim is None:
            continue
        try:
            out[j.get("name")] = (float(lim.get("lower", "-inf")), float(lim.get("upper", "inf")))
        except ValueError:
            raise ParameterError("%s: joint %s limit" % (path, j.get("name")), dict(lim.attrib)) from None
    return out


@dataclass(frozen=True)
class ServoSpec:
    """One joint's servo.

    ``offset`` [rad] is the software trim added to the joint angle before the direction sign;
    ``lower``/``upper`` [rad] are the effective joint limits (URDF and the +-120 deg servo range).
    """

    joint: str
    servo_id: int
    direction: int = 1
    center: int = 500
    offset: float = 0.0
    lower: float = -SERVO_RANGE_RAD
    upper: float = SERVO_RANGE_RAD
    servo_range: float = SERVO_RANGE_RAD
    ticks_per_range: int = 1000

    def __post_init__(self):
        if self.direction not in (1, -1):
            raise ParameterError("%s direction" % self.joint, self.direction, -1, 1, "must be +1 or -1")
        if not 1 <= self.servo_id <= 253:
            raise ParameterError("%s servo id" % self.joint, self.servo_id, 1, 253)
        if not 0 <= self.center <= self.ticks_per_range:
            raise ParameterError("%s center" % self.joint, self.center, 0, self.ticks_per_range)
        if not math.isfinite(self.offset) or abs(self.offset) > self.servo_range:
            raise ParameterError("%s offset [rad]" % self.joint, self.offset, -self.servo_range, self.servo_range)
        # the servo range, seen from the joint: |direction*(offset+q)| <= range
        lo = max(self.lower, -self.servo_range - self.offset)
        hi = min(self.upper, self.servo_range - self.offset)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ParameterError("%s limits [rad]" % self.joint, (self.lower, self.upper),
                                 detail="empty after intersecting with the servo range")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @property
    def ticks_per_rad(self) -> float:
        return self.ticks_per_range / (2.0 * self.servo_range)

    def check(self, q: float) -> float:
        """Return ``q`` as float if finite and inside [lower, upper], else :class:`JointLimitError`."""
        try:
            qf = float(q)
        except (TypeError, ValueError):
            raise JointLimitError(self.joint, q, self.lower, self.upper, "not a number") from None
        if not math.isfinite(qf):
            raise JointLimitError(self.joint, qf, self.lower, self.upper, "not finite")
        if not self.lower <= qf <= self.upper:
            raise JointLimitError(self.joint, qf, self.lower, self.upper)
        return qf

    def position(self, q: float) -> float:
        """Joint angle [rad] -> the servo's position [ticks, not rounded], no limit check (where a servo at ``q``
        is; ``to_ticks`` checks and rounds it for a command)."""
        return self.center + self.direction * (self.offset + float(q)) * self.ticks_per_rad

    def to_ticks(self, q: float) -> int:
        """Joint angle [rad] -> servo position [ticks]; checks the limits first."""
        ticks = int(round(self.position(self.check(q))))
        return min(max(ticks, 0), self.ticks_per_range)

    def reported(self, q: float) -> float:
        """Joint angle [rad] a position read of this servo at ``q`` [rad] gives: whole ticks (no limit check: a
        servo reports where it is)."""
        return self.to_rad(round(self.position(q)))

    def to_rad(self, ticks: float) -> float:
        """Servo position [ticks] (as read back, may be slightly outside 0..1000) -> joint angle [rad]."""
        real = (ticks - self.center) / self.ticks_per_rad
        return self.direction * real - self.offset


class ServoTable(Sequence):
    """Ordered servo specs (joint order = URDF order) with lookup by joint name or servo ID."""

    def __init__(self, specs: Iterable[ServoSpec]):
        self._specs = tuple(specs)
        self._by_joint = {s.joint: s for s in self._specs}
        self._by_id = {s.servo_id: s for s in self._specs}
        if len(self._by_joint) != len(self._specs):
            raise ParameterError("servo table", [s.joint for s in self._specs], detail="duplicate joint names")
        if len(self._by_id) != len(self._specs):
            raise ParameterError("servo table", [s.servo_id for s in self._specs], detail="duplicate servo IDs")

    def __getitem__(self, i):
        return self._specs[i]

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[ServoSpec]:
        return iter(self._specs)

    @property
    def joint_names(self) -> Tuple[str, ...]:
        return tuple(s.joint for s in self._specs)

    @property
    def servo_ids(self) -> Tuple[int, ...]:
        return tuple(s.servo_id for s in self._specs)

    def by_joint(self, joint: str) -> ServoSpec:
        try:
            return self._by_joint[joint]
        except KeyError:
            raise ParameterError("joint", joint, detail="unknown joint; known: %s" % ", ".join(self.joint_names)) \
                from None

    def by_id(self, servo_id: int) -> ServoSpec:
        try:
            return self._by_id[servo_id]
        except KeyError:
            raise ParameterError("servo_id", servo_id,
                                 detail="not in the servo table; known: %s" % sorted(self._by_id)) from None

    def lookup(self, key: Union[str, int]) -> ServoSpec:
        """Spec by joint name or servo ID."""
        return self.by_joint(key) if isinstance(key, str) else self.by_id(int(key))

    def with_limits(self, limits: Mapping[str, Tuple[float, float]]) -> "ServoTable":
        """A copy whose joint limits are also intersected with ``limits`` ({joint: (lo, hi)} rad).

        Joints not in ``limits`` keep theirs; unknown names in ``limits`` are ignored (a URDF has more joints).
        """
        out = []
        for s in self._specs:
            if s.joint in limits:
                lo, hi = limits[s.joint]
                s = replace(s, lower=max(s.lower, float(lo)), upper=min(s.upper, float(hi)))
            out.append(s)
        return ServoTable(out)


def load_servo_table(path: Optional[str] = None, urdf: Union[str, bool, None] = True,
                     limits: Optional[Mapping[str, Tuple[float, float]]] = None) -> ServoTable:
    """Read the servo table YAML (bundled ``config/servos.yaml`` by default).

    ``urdf``: ``True`` = also enforce the bundled URDF's joint limits, a path = that URDF's, ``False``/``None``
    = only the YAML limits. ``limits``: extra {joint: (lo, hi)} [rad] to intersect (e.g. from a node parameter).
    Raises :class:`ParameterError` naming the entry and field on a malformed file.
    """
    path = path or default_config_path()
    with open(path, "r") as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("servos"), list):
        raise ParameterError("%s: servos" % path, None, detail="expected a mapping with a 'servos' list")
    rng = math.radians(float(doc.get("servo_range_deg", 120.0)))
    tpr = int(doc.get("ticks_per_range", 1000))
    specs = []
    for i, e in enumerate(doc["servos"]):
        where = "%s: servos[%d]" % (path, i)
        if not isinstance(e, dict):
            raise ParameterError(where, e, detail="expected a mapping")
        missing = [k for k in ("joint", "id", "direction") if k not in e]
        if missing:
            raise ParameterError(where, e, detail="missing %s" % ", ".join(missing))
        try:
            specs.append(ServoSpec(
                joint=str(e["joint"]), servo_id=int(e["id"]), direction=int(e["direction"]),
                center=int(e.get("center", tpr // 2)), offset=float(e.get("offset", 0.0)),
                lower=float(e.get("lower", -rng)), upper=float(e.get("upper", rng)),
                servo_range=rng, ticks_per_range=tpr))
        except (TypeError, ValueError) as exc:
            raise ParameterError(where, e, detail=str(exc)) from None
    table = ServoTable(specs)
    if urdf:
        table = table.with_limits(urdf_joint_limits(None if urdf is True else urdf))
    if limits:
        table = table.with_limits(limits)
    return table
