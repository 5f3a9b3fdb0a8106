"""Madgwick orientation filter, IMU variant (gyro + accelerometer, no magnetometer).

S. Madgwick, "An efficient orientation filter for inertial and inertial/magnetic sensor arrays", 2010,
eqs. 12, 25, 26, 33 (the same equations as ``ahrs.filters.Madgwick.updateIMU``, which the tests use as an
oracle). Kept here (40 lines) instead of depending on ``ahrs`` at run time because ``ahrs`` skips the
accelerometer correction whenever the gyro reads exactly zero, which happens with quantised, bias-corrected
data at rest.

Quaternion ``q = (w, x, y, z)`` rotates body vectors into the world frame (transforms3d convention);
yaw is unobservable without a magnetometer and drifts with the gyro bias.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from .errors import ParameterError

__all__ = ["MadgwickFilter", "quat_from_accel"]


def quat_from_accel(accel: Sequence[float]) -> np.ndarray:
    """Roll/pitch quaternion (yaw 0) that maps the measured specific force onto world +z."""
    a = np.asarray(accel, dtype=float)
    n = np.linalg.norm(a)
    if not n > 0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    ax, ay, az = a / n
    roll = math.atan2(ay, az)
    pitch = math.atan2(-ax, math.hypot(ay, az))
    cr, sr, cp, sp = math.cos(roll / 2), math.sin(roll / 2), math.cos(pitch / 2), math.sin(pitch / 2)
    return np.array([cr * cp, sr * cp, cr * sp, -sr * sp])


class MadgwickFilter:
    """``beta`` [rad/s]: gradient-descent gain (Madgwick's sqrt(3/4) * gyro error; 0.033 is his default for IMU).

    :meth:`update` returns the new quaternion; the first call initialises roll/pitch from the accelerometer
    unless ``q0`` was given.
    """

    def __init__(self, beta: float = 0.033, q0: Optional[Sequence[float]] = None):
        if not (math.isfinite(beta) and beta >= 0):
            raise ParameterError("beta", beta, 0, None)
        self.beta = float(beta)
        self.q = None if q0 is None else np.asarray(q0, dtype=float) / np.linalg.norm(q0)

    def reset(self, q0: Optional[Sequence[float]] = None) -> None:
        self.q = None if q0 is None else np.asarray(q0, dtype=float) / np.linalg.norm(q0)

    def update(self, gyro: Sequence[float], accel: Sequence[float], dt: float) -> np.ndarray:
        """Advance by ``dt`` [s] with body rates ``gyro`` [rad/s] and specific force ``accel`` [m/s^2]."""
        if not (math.isfinite(dt) and dt > 0):
            raise ParameterError("dt [s]", dt, "> 0", None)
        g = np.asarray(gyro, dtype=float)
        a = np.asarray(accel, dtype=float)
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(a))):
            raise ParameterError("gyro/accel", (g.tolist(), a.tolist()), detail="not finite")
        if self.q is None:
            self.q = quat_from_accel(a)
        qw, qx, qy, qz = self.q
        # eq. 12: q_dot = 1/2 q (x) (0, w)
        q_dot = 0.5 * np.array([
            -qx * g[0] - qy * g[1] - qz * g[2],
            qw * g[0] + qy * g[2] - qz * g[1],
            qw * g[1] - qx * g[2] + qz * g[0],
            qw * g[2] + qx * g[1] - qy * g[0]])
        n = np.linalg.norm(a)
        if n > 0:
            ax, ay, az = a / n
            f = np.array([2.0 * (qx * qz - qw * qy) - ax,            # eq. 25
                          2.0 * (qw * qx + qy * qz) - ay,
                          2.0 * (0.5 - qx * qx - qy * qy) - az])
            j = np.array([[-2.0 * qy, 2.0 * qz, -2.0 * qw, 2.0 * qx],  # eq. 26
                          [2.0 * qx, 2.0 * qw, 2.0 * qz, 2.0 * qy],
                          [0.0, -4.0 * qx, -4.0 * qy, 0.0]])
            grad = j.T @ f
            gn = np.linalg.norm(grad)
            if gn > 0:
                q_dot = q_dot - self.beta * grad / gn              # eq. 33
        q = self.q + q_dot * dt
        self.q = q / np.linalg.norm(q)
        return self.q.copy()
