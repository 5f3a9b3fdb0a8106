"""The stock software's joint names and angles -> this package's (URDF ``urdf/jethexa.urdf``), and its IMU mount.

One vocabulary for everything that reads Hiwonder's stock topics: the companion graph's ``stock_adapter`` node and
the bag readers of ``jethexa-validate`` / ``jethexa-identify`` (``validation/layouts.py``). No rclpy.

A :class:`JointMap` holds one :class:`JointMapEntry` per joint: the stock name, this package's name, and the
angle conversion ``q = sign * (q_stock - zero)`` [rad] (``zero``: the stock angle at this package's zero).

:data:`HIWONDER_ROS2` is the map of Hiwonder's ROS 2 stack (``/controller_manager/joint_states``, names
``coxa_LF_joint``, ``femur_LF_joint``, ``tibla_LF_joint`` (their spelling), ...). Where its values come from
(docs/companion.md has the table):

* the gait computes this package's angles (the same convention as Hiwonder's own kinematics table, whose
  ``direction`` signs ``config/servos.yaml`` uses unchanged) and sends servo pulses
  ``500 + direction * q / (0.24 deg)``;
* the stock ``controller_manager`` publishes each joint's last sent pulse as
  ``(pulse - 500) * 0.24 deg``, negated where its servo table lists the joint as flipped (``min: 1000, max: 0``);
* so ``sign = direction * (-1 if flipped else 1)`` and ``zero = 0`` (both tables centre every servo at 500, with
  no offset). That is +1 for every joint except ``coxa_RM`` (-1: flipped -1 there, direction -1); the same copy's
  URDF would give +1 for it too. The standing pose cannot tell (the middle legs' coxa is at 0 there):
  docs/companion.md says how to check it on the robot (a turn in place, validated both ways).

:data:`NANO_ROS1` is the Nano kit's ROS 1 stack: this package's joint names and angles (its URDF is that kit's).

Text form (the ``joint_map`` parameter and the ``--joint-map`` option): comma-separated
``stock_name=our_name[:sign[:zero]]`` entries, e.g. ``coxa_RM_joint=coxa_joint_RM:-1:0.0``; sign is +1 or -1,
zero in rad (default +1 and 0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np

__all__ = ["JointMapEntry", "JointMap", "ForeignJointError", "HIWONDER_ROS2", "NANO_ROS1", "JOINTS",
           "IMU_MOUNT_HIWONDER_ROS2", "IMU_MOUNT_NANO_ROS1", "mount_rotation", "imu_to_base", "imu_from_base"]

LEGS = ("LF", "LM", "LR", "RF", "RM", "RR")
PARTS = ("coxa", "femur", "tibia")
#: this package's 18 joint names in URDF order
JOINTS: Tuple[str, ...] = tuple("%s_joint_%s" % (p, leg) for leg in LEGS for p in PARTS)
#: the zero angle's sanity range [rad]: a zero beyond the servo's half range (120 deg) is no servo's
ZERO_LIMIT = math.radians(120.0)


class ForeignJointError(ValueError):
    """A joint name the map does not know, or a map that is not one: one line naming it and what is allowed."""


@dataclass(frozen=True)
class JointMapEntry:
    """``stock`` name -> this package's ``joint``; ``q = sign * (q_stock - zero)`` [rad]."""

    stock: str
    joint: str
    sign: float = 1.0
    zero: float = 0.0

    def to_ours(self, q_stock: float) -> float:
        return self.sign * (q_stock - self.zero)

    def to_stock(self, q: float) -> float:
        return self.sign * q + self.zero

    def text(self) -> str:
        return "%s=%s:%+d:%g" % (self.stock, self.joint, int(self.sign), self.zero)


class JointMap:
    """Stock joint names and angles <-> this package's. Every one of the 18 joints exactly once."""

    def __init__(self, entries: Iterable[JointMapEntry], name: str = "custom"):
        self.entries: Tuple[JointMapEntry, ...] = tuple(entries)
        self.name = name
        stock = [e.stock for e in self.entries]
        ours = [e.joint for e in self.entries]
        for e in self.entries:
            if e.joint not in JOINTS:
                raise ForeignJointError("joint map entry %s: %r is not a joint of this package (allowed: %s)"
                                        % (e.stock, e.joint, ", ".join(JOINTS)))
            if e.sign not in (1.0, -1.0):
                raise ForeignJointError("joint map entry %s: sign %r must be +1 or -1" % (e.stock, e.sign))
            if not (math.isfinite(e.zero) and abs(e.zero) <= ZERO_LIMIT):
                raise ForeignJointError("joint map entry %s: zero %r rad outside [%.4f, %.4f] rad"
                                        % (e.stock, e.zero, -ZERO_LIMIT, ZERO_LIMIT))
        for label, names in (("stock name", stock), ("joint", ours)):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ForeignJointError("joint map: %s %s given more than once" % (label, dup[0]))
        missing = [j for j in JOINTS if j not in ours]
        if missing:
            raise ForeignJointError("joint map: no entry for %s (every one of the 18 joints needs one)"
                                    % ", ".join(missing))
        self._by_stock: Dict[str, JointMapEntry] = {e.stock: e for e in self.entries}
        self._by_joint: Dict[str, JointMapEntry] = {e.joint: e for e in self.entries}

    # ------------------------------------------------------------------------------------------ text form
    @classmethod
    def parse(cls, text: str, name: str = "custom") -> "JointMap":
        """The map of a ``stock=ours[:sign[:zero]], ...`` text (the module's docstring); ForeignJointError with
        one line naming the bad entry otherwise."""
        entries = []
        for raw in str(text).split(","):
            item = raw.strip()
            if not item:
                continue
            stock, eq, rest = item.partition("=")
            parts = rest.split(":")
            if not eq or not stock.strip() or not parts[0].strip() or len(parts) > 3:
                raise ForeignJointError("joint map entry %r: expected stock_name=our_name[:sign[:zero]]" % item)
            try:
                sign = float(parts[1]) if len(parts) > 1 and parts[1].strip() else 1.0
                zero = float(parts[2]) if len(parts) > 2 and parts[2].strip() else 0.0
            except ValueError:
                raise ForeignJointError("joint map entry %r: sign must be +1 or -1 and zero a number [rad]"
                                        % item) from None
            entries.append(JointMapEntry(stock.strip(), parts[0].strip(), sign, zero))
        return cls(entries, name)

    def text(self) -> str:
        return ", ".join(e.text() for e in self.entries)

    # ------------------------------------------------------------------------------------------ conversion
    @property
    def stock_names(self) -> Tuple[str, ...]:
        return tuple(e.stock for e in self.entries)

    def entry(self, stock_name: str) -> Optional[JointMapEntry]:
        return self._by_stock.get(stock_name)

    def foreign(self, names: Sequence[str]) -> List[str]:
        """The names of ``names`` this map does not know, in order."""
        return [n for n in names if n not in self._by_stock]

    def check_names(self, names: Sequence[str], where: str = "joint message") -> None:
        """ForeignJointError (one line) when ``names`` holds a name the map does not know."""
        bad = self.foreign(names)
        if bad:
            raise ForeignJointError("%s: joint %r is not in the %s joint map (it knows: %s); give the map with "
                                    "these names (joint_map parameter, --joint-map option)"
                                    % (where, bad[0], self.name, ", ".join(self.stock_names)))

    def to_ours(self, names: Sequence[str], positions: Sequence[float],
                strict: bool = True) -> Tuple[List[str], List[float]]:
        """(this package's names, angles [rad]) of a stock message; a foreign name is a ForeignJointError
        (``strict``) or left out."""
        if strict:
            self.check_names(names)
        out_n, out_q = [], []
        for n, v in zip(names, positions):
            e = self._by_stock.get(n)
            if e is not None:
                out_n.append(e.joint)
                out_q.append(e.to_ours(float(v)))
        return out_n, out_q

    def to_stock(self, names: Sequence[str], positions: Sequence[float]) -> Tuple[List[str], List[float]]:
        """(stock names, stock angles) of this package's joints (what a stand-in for the stock software
        publishes)."""
        out_n, out_q = [], []
        for n, v in zip(names, positions):
            e = self._by_joint[n]
            out_n.append(e.stock)
            out_q.append(e.to_stock(float(v)))
        return out_n, out_q

    def columns(self, names: Sequence[str], q: np.ndarray) -> Tuple[Tuple[str, ...], np.ndarray]:
        """(this package's names, converted (N, len(names)) matrix) of a matrix of stock angles."""
        self.check_names(names)
        es = [self._by_stock[n] for n in names]
        sign = np.array([e.sign for e in es])
        zero = np.array([e.zero for e in es])
        return tuple(e.joint for e in es), (np.asarray(q, float) - zero) * sign


def _stock_ros2() -> JointMap:
    # sign = Hiwonder's kinematics direction x their servo table's flip (see the module's docstring)
    flipped_not = {("coxa", "RM"), ("femur", "RF"), ("tibia", "RF"), ("femur", "RM"), ("tibia", "RM"),
                   ("femur", "RR"), ("tibia", "RR")}
    direction_plus = {("femur", "RF"), ("tibia", "RF"), ("femur", "RM"), ("tibia", "RM"), ("femur", "RR"),
                      ("tibia", "RR")}
    entries = []
    for leg in LEGS:
        for part in PARTS:
            flip = 1.0 if (part, leg) in flipped_not else -1.0
            direction = 1.0 if (part, leg) in direction_plus else -1.0
            stock = "%s_%s_joint" % ("tibla" if part == "tibia" else part, leg)
            entries.append(JointMapEntry(stock, "%s_joint_%s" % (part, leg), flip * direction, 0.0))
    return JointMap(entries, "hiwonder-ros2")


#: Hiwonder's ROS 2 stack (today's kit): their names, their angles -> ours (coxa_RM negated)
HIWONDER_ROS2 = _stock_ros2()
#: the Nano kit's ROS 1 stack: this package's names and angles
NANO_ROS1 = JointMap((JointMapEntry(j, j) for j in JOINTS), "nano-ros1")

# ------------------------------------------------------------------------------------------------ IMU mount
#: imu_link in base_link, (roll, pitch, yaw) [rad] as a URDF joint's origin rpy: Hiwonder's ROS 2 description
#: yaws imu_link -90 deg (a copy of their imu.urdf.xacro; check it on the robot: docs/companion.md)
IMU_MOUNT_HIWONDER_ROS2 = (0.0, 0.0, -math.pi / 2)
#: the Nano kit: its IMU driver remaps the chip's axes to the body's (imu_link unrotated)
IMU_MOUNT_NANO_ROS1 = (0.0, 0.0, 0.0)


def mount_rotation(rpy: Sequence[float]) -> np.ndarray:
    """R (3x3): base_link <- imu_link of a mount given as URDF origin rpy (fixed-axis x, y, z)."""
    from transforms3d.euler import euler2mat

    r, p, y = (float(v) for v in rpy)
    return euler2mat(r, p, y, "sxyz")


def imu_to_base(rpy: Sequence[float], quat_wxyz, gyro, accel):
    """An IMU sample in imu_link -> base_link: (orientation world<-base (w, x, y, z), gyro, specific force);
    ``quat_wxyz`` is world<-imu_link (a filter's output), gyro/accel in imu_link axes. Arrays of shape (4,)/(3,)
    or (N, 4)/(N, 3)."""
    from transforms3d.quaternions import mat2quat, qmult

    R = mount_rotation(rpy)
    q_ib = mat2quat(R.T)                              # imu_link <- base_link
    qs = np.atleast_2d(np.asarray(quat_wxyz, float))
    qb = np.array([qmult(q, q_ib) for q in qs])
    qb *= np.where(qb[:, :1] < 0, -1.0, 1.0)
    g = np.atleast_2d(np.asarray(gyro, float)) @ R.T
    a = np.atleast_2d(np.asarray(accel, float)) @ R.T
    if np.ndim(quat_wxyz) == 1:
        return qb[0], g[0], a[0]
    return qb, g, a


def imu_from_base(rpy: Sequence[float], quat_wxyz, gyro, accel):
    """The inverse of :func:`imu_to_base`: a base_link sample as the mounted IMU gives it (the stand-in's)."""
    from transforms3d.quaternions import mat2quat, qmult

    R = mount_rotation(rpy)
    q_bi = mat2quat(R)                                # base_link <- imu_link
    qs = np.atleast_2d(np.asarray(quat_wxyz, float))
    qi = np.array([qmult(q, q_bi) for q in qs])
    qi *= np.where(qi[:, :1] < 0, -1.0, 1.0)
    g = np.atleast_2d(np.asarray(gyro, float)) @ R
    a = np.atleast_2d(np.asarray(accel, float)) @ R
    if np.ndim(quat_wxyz) == 1:
        return qi[0], g[0], a[0]
    return qi, g, a


def joint_map_for(text: str, default: JointMap) -> JointMap:
    """The map of a parameter/option text: empty = ``default``."""
    return default if not str(text).strip() else JointMap.parse(text)
