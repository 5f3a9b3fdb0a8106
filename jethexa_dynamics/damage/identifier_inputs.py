"""The damage identifier's input samples: their checks and the IMU's attitude (no rclpy).

Each check returns the sample as the identifier keeps it and ``""``, or None and one line saying what is wrong
(the identifier counts it as a rejection and goes on: a live node keeps running on the next good sample).
Times in seconds on any single clock; joint vectors in the robot's joint order (rad); quaternions (w, x, y, z)
world <- base_link; gyro rad/s in base_link axes.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.hardware.protocol import MAX_MOVE_TIME_S

from .identifier_config import LIMIT_TOL, MIN_QUAT_NORM

__all__ = ["check_command", "check_imu", "check_joints", "check_stamp", "check_vector", "imu_attitude"]

_FLOAT_EPS = float(np.finfo(float).eps)     # transforms3d.quaternions.quat2mat's
_EPS4 = 4.0 * _FLOAT_EPS                    # transforms3d.euler.mat2euler's


def imu_attitude(q, gyro) -> Tuple[float, float, float]:
    """(roll, pitch, world z-rate) of a unit quaternion (w, x, y, z) and body rates (arrays): what
    ``R = quat2mat(q); roll, pitch, _ = mat2euler(R, "sxyz"); R[2] @ gyro`` give, bit for bit (the same
    operations, on Python floats: ~3x cheaper, for every IMU sample)."""
    w, x, y, z = q.tolist()
    nq = w * w + x * x + y * y + z * z
    if nq < _FLOAT_EPS:
        r00, r10, r11, r12, r20, r21, r22 = 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    else:
        s = 2.0 / nq
        X, Y, Z = x * s, y * s, z * s
        wX, wY, wZ = w * X, w * Y, w * Z
        xX, xY, xZ = x * X, x * Y, x * Z
        yY, yZ, zZ = y * Y, y * Z, z * Z
        r00, r10, r11, r12 = 1.0 - (yY + zZ), xY + wZ, 1.0 - (xX + zZ), yZ - wX
        r20, r21, r22 = xZ - wY, yZ + wX, 1.0 - (xX + yY)
    cy = math.sqrt(r00 * r00 + r10 * r10)
    roll = math.atan2(r21, r22) if cy > _EPS4 else math.atan2(-r12, r11)
    return roll, math.atan2(-r20, cy), float(np.array((r20, r21, r22)).dot(gyro))


def check_vector(x, n, name) -> Tuple[Optional[np.ndarray], str]:
    """``x`` as ``n`` finite float64 values."""
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if a.shape != (n,):
        return None, "%s must have %d values, got %d" % (name, n, a.size)
    if not all(map(math.isfinite, a.tolist())):
        return None, "%s must be finite (no NaN/inf)" % name
    return a, ""


def check_stamp(t, last, name) -> Tuple[Optional[float], str]:
    """Stamp ``t`` [s] of a ``name`` sample: a finite time, not before the stream's ``last``."""
    try:
        t = float(t)
    except (TypeError, ValueError):
        return None, "%s stamp %r is not a time" % (name, t)
    if not math.isfinite(t):
        return None, "%s stamp must be finite, got %r" % (name, t)
    if t < last:
        return None, "%s stamp %.6f s is before the previous one %.6f s (out of order)" % (name, t, last)
    return t, ""


def check_command(t: float, q, t_target, joints, limits: Tuple[np.ndarray, np.ndarray],
                  joint_names: Sequence[str]) -> Tuple[Optional[tuple], str]:
    """A joint command stamped ``t`` (checked): ``joints`` (indices into ``joint_names``, None = all) to reach
    ``q`` (rad, within ``limits`` (lower, upper); NaN = joint left alone) at ``t_target`` (s; before ``t``: an
    immediate move). Returns (angles, move time [s], joint indices) of the commanded joints."""
    nj = len(joint_names)
    idx = np.arange(nj) if joints is None else np.asarray(joints, dtype=np.int64).reshape(-1)
    a = np.asarray(q, dtype=np.float64).reshape(-1)
    if a.shape != idx.shape or (idx.size and (idx.min() < 0 or idx.max() >= nj)):
        return None, "command must have %d values (one per joint), got %d" % (idx.size, a.size)
    if np.any(np.isinf(a)) or np.all(np.isnan(a)):
        return None, "command must be finite joint angles (rad); NaN = joint not commanded"
    lo, hi = limits
    with np.errstate(invalid="ignore"):
        out = (a < lo[idx] - LIMIT_TOL) | (a > hi[idx] + LIMIT_TOL)
    if np.any(out):
        k = int(np.argmax(out))
        j = int(idx[k])
        return None, ("command %s = %.4g rad: outside its limits [%.4f, %.4f] rad"
                      % (joint_names[j], a[k], lo[j], hi[j]))
    try:
        mt = float(t_target) - t
    except (TypeError, ValueError):
        mt = math.nan
    mt = max(0.0, mt) if math.isfinite(mt) else mt
    if not (math.isfinite(mt) and mt <= MAX_MOVE_TIME_S):
        return None, ("command t_target=%r: must be a time within %g s after the command's %r"
                      % (t_target, MAX_MOVE_TIME_S, t))
    ok = np.isfinite(a)
    return (a[ok].copy(), mt, idx[ok].copy()), ""


def check_joints(q, nj: int) -> Tuple[Optional[np.ndarray], str]:
    """Measured joint angles (rad, ``nj`` of them); NaN entries (unmeasured joints) are allowed."""
    a = np.asarray(q, dtype=np.float64).reshape(-1)
    if a.shape != (nj,) or np.any(np.isinf(a)) or np.all(np.isnan(a)):
        return None, "joints must be %d angles (rad), finite or NaN (unmeasured)" % nj
    return a, ""


def check_imu(quat, gyro) -> Tuple[Optional[Tuple[float, float, float]], str]:
    """An IMU sample's orientation (w, x, y, z, normalised here) and body rates (rad/s) as (roll, pitch, world
    z-rate) (:func:`imu_attitude`)."""
    qv, err = check_vector(quat, 4, "imu orientation")
    n = math.sqrt(qv.dot(qv)) if qv is not None else 0.0      # np.linalg.norm's bits
    if qv is None or not n > MIN_QUAT_NORM:
        return None, err or "imu orientation must be a unit quaternion (w, x, y, z)"
    w, err = check_vector(gyro, 3, "imu angular_velocity")
    if w is None:
        return None, err
    return imu_attitude(qv / n, w), ""
