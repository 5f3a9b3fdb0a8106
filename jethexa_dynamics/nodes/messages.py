"""Validation of incoming message fields (no rclpy): every check names the field and the allowed range.

Nodes extract plain Python/numpy values from their messages and call these functions; an invalid message
raises :class:`InvalidMessage` (a ``ValueError``) whose text is the one log line the node prints before
rejecting the message and carrying on.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.errors import CannotServe, InputError, InvalidMessage  # noqa: F401 (the nodes' names for them)
from jethexa_dynamics.hardware.protocol import MAX_MOVE_TIME_S
from jethexa_dynamics.model.se3 import unit_quat


#: up to this many entries the checks run on Python floats (``ndarray.tolist``): numpy's per-call overhead
#: (``isfinite``, ``flatnonzero``: a few µs each) is most of the cost of checking a 3-, 4- or 18-vector
_SCALAR_CHECK_MAX = 64


def finite_vector(field: str, values: Sequence[float], length: Optional[int] = None,
                  lo: Optional[float] = None, hi: Optional[float] = None) -> np.ndarray:
    """``values`` as a float array, checked for length, finiteness and (optional) bounds."""
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidMessage("%s: not a list of numbers" % field) from None
    if length is not None and arr.size != length:
        raise InvalidMessage("%s: has %d entries, expected %d" % (field, arr.size, length))
    if arr.size <= _SCALAR_CHECK_MAX:
        vals = arr.tolist()
        if not all(map(math.isfinite, vals)):
            i = next(k for k, v in enumerate(vals) if not math.isfinite(v))
            raise InvalidMessage("%s[%d] = %s: must be a finite number" % (field, i, arr[i]))
        if (lo is not None or hi is not None) and vals:
            lo_ = -math.inf if lo is None else lo
            hi_ = math.inf if hi is None else hi
            if min(vals) < lo_ or max(vals) > hi_:
                i = next(k for k, v in enumerate(vals) if v < lo_ or v > hi_)
                raise InvalidMessage("%s[%d] = %.6g: must be in [%.6g, %.6g]" % (field, i, arr[i], lo_, hi_))
        return arr
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        raise InvalidMessage("%s[%d] = %s: must be a finite number" % (field, i, arr[i]))
    if lo is not None or hi is not None:
        lo_ = -np.inf if lo is None else lo
        hi_ = np.inf if hi is None else hi
        out = np.flatnonzero((arr < lo_) | (arr > hi_))
        if out.size:
            i = int(out[0])
            raise InvalidMessage("%s[%d] = %.6g: must be in [%.6g, %.6g]" % (field, i, arr[i], lo_, hi_))
    return arr


#: {id(known): (a copy of known, {name: index})}: the nodes check every message against the same few lists
_INDEX_CACHE: Dict[int, Tuple[List[str], Dict[str, int]]] = {}


def _index_of(known: Sequence[str]) -> Dict[str, int]:
    hit = _INDEX_CACHE.get(id(known))
    if hit is not None and hit[0] == known:      # (a list equal to the one cached: not a reused id)
        return hit[1]
    index = {n: i for i, n in enumerate(known)}
    if isinstance(known, list) and len(_INDEX_CACHE) < 64:
        _INDEX_CACHE[id(known)] = (list(known), index)
    return index


def joint_indices(field: str, names: Sequence[str], known: Sequence[str]) -> List[int]:
    """Indices of ``names`` in ``known``; rejects an empty list, unknown and duplicated names."""
    if len(names) == 0:
        raise InvalidMessage("%s: empty (expected joint names out of %d known joints)" % (field, len(known)))
    index = _index_of(known)
    try:
        out = [index[n] for n in names]
    except KeyError:
        out = None
    if out is not None and len(set(out)) == len(out):
        return out
    out, seen = [], set()       # an unknown or a repeated name: the first one, in the message's order
    for n in names:
        if n not in index:
            raise InvalidMessage("%s: unknown joint %r (expected names like %r)" % (field, n, known[0]))
        if n in seen:
            raise InvalidMessage("%s: joint %r listed twice" % (field, n))
        seen.add(n)
        out.append(index[n])
    return out


#: measured joint angles may pass a joint limit by this much (servo overshoot, calibration offsets) [rad]
JOINT_STATE_MARGIN = 0.1


def stamp(field: str, sec: int, nanosec: int, now: float, tolerance: float) -> float:
    """Check a ``builtin_interfaces/Time`` against the receiver's clock ``now`` [s]: ``nanosec < 1e9`` and
    ``|stamp - now| <= tolerance`` [s]; an all-zero stamp means "not stamped" and passes. Returns it [s]."""
    if not 0 <= nanosec < 1_000_000_000:
        raise InvalidMessage("%s.nanosec = %d: must be in [0, 999999999]" % (field, nanosec))
    if sec == 0 and nanosec == 0:
        return 0.0
    t = sec + 1e-9 * nanosec
    if abs(t - now) > tolerance:
        raise InvalidMessage("%s = %.9g s: must be within %g s of the receiver's clock (%.9g s)"
                             % (field, t, tolerance, now))
    return t


def _within(field: str, idx: Sequence[int], pos: np.ndarray, known: Sequence[str], lower, upper,
            margin: float = 0.0) -> None:
    if len(idx) <= _SCALAR_CHECK_MAX:      # the same comparisons on Python floats (see finite_vector)
        lower_, upper_ = np.asarray(lower, dtype=float).tolist(), np.asarray(upper, dtype=float).tolist()
        for j, (i, p) in enumerate(zip(idx, pos.tolist())):
            lo, hi = lower_[i] - margin, upper_[i] + margin
            if p < lo or p > hi:
                raise InvalidMessage("%s[%d] (%s) = %.4f rad: must be in [%.4f, %.4f] rad"
                                     % (field, j, known[i], p, lo, hi))
        return
    lo = np.asarray(lower, dtype=float)[idx] - margin
    hi = np.asarray(upper, dtype=float)[idx] + margin
    out = np.flatnonzero((pos < lo) | (pos > hi))
    if out.size:
        j = int(out[0])
        raise InvalidMessage("%s[%d] (%s) = %.4f rad: must be in [%.4f, %.4f] rad"
                             % (field, j, known[idx[j]], pos[j], lo[j], hi[j]))


def joint_state(names: Sequence[str], position: Sequence[float], velocity: Sequence[float],
                effort: Sequence[float], known: Sequence[str], prefix: str = "joint_states",
                lower: Optional[Sequence[float]] = None, upper: Optional[Sequence[float]] = None
                ) -> Tuple[List[int], np.ndarray, Optional[np.ndarray]]:
    """Check a ``sensor_msgs/JointState``: returns (joint indices, positions, velocities or None).

    Positions are checked against ``lower``/``upper`` (arrays over ``known``) widened by
    :data:`JOINT_STATE_MARGIN` when given."""
    idx = joint_indices(prefix + ".name", names, known)
    pos = finite_vector(prefix + ".position", position, len(idx))
    if lower is not None and upper is not None:
        _within(prefix + ".position", idx, pos, known, lower, upper, JOINT_STATE_MARGIN)
    vel = None
    if len(velocity):
        vel = finite_vector(prefix + ".velocity", velocity, len(idx))
    if len(effort):
        finite_vector(prefix + ".effort", effort, len(idx))
    return idx, pos, vel


def trajectory(joint_names: Sequence[str], points: Sequence[Tuple[Sequence[float], Sequence[float], float]],
               known: Sequence[str], lower: Optional[Sequence[float]] = None,
               upper: Optional[Sequence[float]] = None, prefix: str = "joint_commands"
               ) -> Tuple[List[int], np.ndarray, float]:
    """Check a ``trajectory_msgs/JointTrajectory`` given as (positions, velocities, time_from_start [s]) points.

    Returns (joint indices, positions of the LAST point, its time_from_start). Positions are checked
    against ``lower``/``upper`` (arrays over ``known``) when given.
    """
    idx = joint_indices(prefix + ".joint_names", joint_names, known)
    if len(points) == 0:
        raise InvalidMessage("%s.points: empty (expected at least one point with %d positions)"
                             % (prefix, len(idx)))
    last_t = -1.0
    pos = None
    for k, (p, v, t) in enumerate(points):
        f = "%s.points[%d]" % (prefix, k)
        pos = finite_vector(f + ".positions", p, len(idx))
        if len(v):
            finite_vector(f + ".velocities", v, len(idx))
        if not math.isfinite(t) or t < 0.0 or t > MAX_MOVE_TIME_S:
            raise InvalidMessage("%s.time_from_start = %.6g s: must be in [0, %g] s" % (f, t, MAX_MOVE_TIME_S))
        if t < last_t:
            raise InvalidMessage("%s.time_from_start = %.6g s: must not decrease (previous %.6g s)"
                                 % (f, t, last_t))
        last_t = t
        if lower is not None and upper is not None:
            _within(f + ".positions", idx, pos, known, lower, upper)
    return idx, pos, float(last_t)


def quaternion(field: str, xyzw: Sequence[float]) -> np.ndarray:
    """Check a quaternion (x, y, z, w): finite, norm within ``1 +- model.se3.QUAT_NORM_TOL`` (the package's one
    tolerance); returns it normalised."""
    return unit_quat(finite_vector(field, xyzw, 4), field, InvalidMessage)


#: the byte order of a serialized message's plain encodings (CDR and XCDR2, big and little endian), by its 2nd byte
_CDR = {0x00: ">", 0x01: "<", 0x06: ">", 0x07: "<"}
_STAMP = {e: struct.Struct(e + "iI") for e in "<>"}
_QUAT = {e: struct.Struct(e + "4d") for e in "<>"}
_DOUBLE = {e: struct.Struct(e + "d") for e in "<>"}
#: where the quaternion of a stamped message is in its serialized form: (strings after the header's frame_id,
#: float64 values after those, the field's name after the topic, whether the float64 after it is a covariance
#: whose -1 says the message carries no orientation), by the message type's name
QUATERNION_AT = {"Imu": (0, 0, ".orientation", True), "PoseStamped": (0, 3, ".pose.orientation", False),
                 "Odometry": (1, 3, ".pose.pose.orientation", False)}


def raw_stamp(raw: bytes) -> Optional[Tuple[int, int]]:
    """(sec, nanosec) of a serialized message that starts with a ``std_msgs/Header``, read from its first bytes
    (right after the 4-byte encapsulation); None when the bytes are not plain CDR or too short."""
    endian = _CDR.get(raw[1]) if len(raw) >= 12 else None
    return None if endian is None else _STAMP[endian].unpack_from(raw, 4)


def raw_quaternion(raw: bytes, strings: int, values: int) -> Optional[Tuple[Tuple[float, ...], Optional[float]]]:
    """((x, y, z, w), the float64 after it or None) of a serialized stamped message (``sensor_msgs/Imu``: its
    ``orientation`` and ``orientation_covariance[0]``; the layouts in ``QUATERNION_AT``) read from the bytes, without
    decoding: the header (stamp, ``frame_id``), ``strings`` more strings, ``values`` float64s, then the quaternion.
    None when the bytes are not plain CDR or too short for it (the decoder judges those)."""
    endian = _CDR.get(raw[1]) if len(raw) > 16 else None
    if endian is None:
        return None
    pos = 8                                    # data offsets (after the 4-byte encapsulation): the stamp is 0..8
    for _ in range(1 + strings):
        pos = (pos + 3) & ~3                   # a string: uint32 length (with its NUL), aligned to 4, its bytes
        if len(raw) < 4 + pos + 4:
            return None
        pos += 4 + int.from_bytes(raw[4 + pos:8 + pos], "little" if endian == "<" else "big")
    pos = ((pos + 7) & ~7) + 8 * values        # float64s aligned to 8
    if len(raw) < 4 + pos + 32:
        return None
    q = _QUAT[endian].unpack_from(raw, 4 + pos)
    return q, (_DOUBLE[endian].unpack_from(raw, 4 + pos + 32)[0] if len(raw) >= 4 + pos + 40 else None)


def raw_unit_quaternion(raw: bytes, type_name: str, topic: str) -> None:
    """Check the quaternion of a serialized ``type_name`` message on ``topic`` (``QUATERNION_AT``) as
    :func:`quaternion` checks the decoded one, before decoding: ``InvalidMessage`` naming the field. Not checked:
    bytes ``raw_quaternion`` cannot read (the decoder judges them), an Imu that carries no orientation."""
    strings, values, field, covariance = QUATERNION_AT[type_name]
    got = raw_quaternion(raw, strings, values)
    if got is not None and not (covariance and got[1] == -1.0):
        quaternion(topic + field, got[0])


def twist(linear: Sequence[float], angular: Sequence[float], max_linear: float, max_angular: float,
          prefix: str = "cmd_vel") -> Tuple[np.ndarray, bool]:
    """Check a ``geometry_msgs/Twist`` for finiteness; returns ((vx, vy, wz) clamped to the limits, clamped?)."""
    lin = finite_vector(prefix + ".linear", linear, 3)
    ang = finite_vector(prefix + ".angular", angular, 3)
    cmd = np.array([lin[0], lin[1], ang[2]])
    speed = float(np.hypot(cmd[0], cmd[1]))
    clamped = False
    if speed > max_linear:
        cmd[:2] *= max_linear / speed
        clamped = True
    if abs(cmd[2]) > max_angular:
        cmd[2] = math.copysign(max_angular, cmd[2])
        clamped = True
    return cmd, clamped


def imu_orientation(orientation: Sequence[float], orientation_covariance: Sequence[float],
                    prefix: str = "imu/data") -> np.ndarray:
    """The orientation of a ``sensor_msgs/Imu`` that must carry one (covariance[0] != -1)."""
    cov = finite_vector(prefix + ".orientation_covariance", orientation_covariance, 9)
    if cov[0] == -1.0:
        raise InvalidMessage("%s.orientation_covariance[0] = -1: message has no orientation "
                             "(expected the filtered imu/data, not imu/data_raw)" % prefix)
    return quaternion(prefix + ".orientation", orientation)




def pose(position: Sequence[float], orientation: Sequence[float], prefix: str,
         max_abs: float = 1.0e4) -> Tuple[np.ndarray, np.ndarray]:
    """Check a ``geometry_msgs/Pose``: finite position within ``+-max_abs`` m and a unit quaternion."""
    p = finite_vector(prefix + ".position", position, 3, -max_abs, max_abs)
    q = quaternion(prefix + ".orientation", orientation)
    return p, q


# ---------------------------------------------------------------------------------------------- morphology
# The ``morphology`` topic (std_msgs/UInt8MultiArray): one entry per leg = number of intact links, in the order
# of ``layout.dim[0].label`` (leg names, comma separated; an empty label means URDF leg order).
@dataclass
class MeasuredPose:
    """The robot's measured pose: orientation from the IMU filter, position from mocap when it is fresh."""

    mocap_timeout: float = 0.5
    quat: Optional[np.ndarray] = None
    imu_time: Optional[float] = None
    position: Optional[np.ndarray] = None
    mocap_time: Optional[float] = None

    def on_imu(self, t: float, quat) -> None:
        self.quat, self.imu_time = np.asarray(quat, dtype=float), t

    def on_mocap(self, t: float, pos) -> None:
        self.position, self.mocap_time = np.asarray(pos, float), t

    def mocap_fresh(self, now: float) -> bool:
        return self.mocap_time is not None and now - self.mocap_time <= self.mocap_timeout

    def current(self, now: float) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """(position or None, orientation or None) usable at ``now``."""
        pos = self.position if self.mocap_fresh(now) else None
        return pos, self.quat
