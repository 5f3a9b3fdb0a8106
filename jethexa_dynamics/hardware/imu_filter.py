"""Madgwick orientation filter, IMU variant (gyro + accelerometer, no magnetometer).

S. Madgwick, "An efficient orientation filter for inertial and inertial/magnetic sensor arrays", 2010,
eqs. 12, 25, 26, 33 (the same equations as ``ahrs.filters.Madgwick.updateIMU``, which the tests use as an
oracle). Kept here (40 lines) instead of depending on ``ahrs`` at run time because ``ahrs`` skips the
accelerometer correction whenever the gyro reads exactly zero, which happens with quantised, bias-corrected
data at rest.

Quaternion ``q = (w, x, y, z)`` rotates body vectors into the world frame (transforms3d convention);
yaw is unobservable without a magnetometer and drifts with the gyro bias.

Initialisation (not in Madgwick's paper; the scheme of his later Fusion library, which ramps its gain down from
10 to the working gain over 3 s): the first sample's accelerometer tilt can be far off -- a robot jerking into
its stance, a servo kick -- and at the working gain beta = 0.033 rad/s (1.9 deg/s) a 35 deg error takes ~20 s to
correct (seconds of a wrong attitude that a model reads as a broken leg). So for ``init_time`` seconds of
samples the gain falls linearly from ``init_beta`` (default 1 rad/s: up to ~30 deg corrected in the first
second) to ``beta``; :attr:`initialising` says the attitude is not yet to be trusted.
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
    """``beta`` [rad/s]: gradient-descent gain (Madgwick's sqrt(3/4) * gyro error; 0.033 is his default for IMU);
    ``init_beta`` [rad/s] the gain at the start of the initialisation, ``init_time`` [s] its length (0: none).

    :meth:`update` returns the new quaternion; the first call initialises roll/pitch from the accelerometer
    unless ``q0`` was given (a known attitude: no initialisation ramp).

    Example: a filter started from a wrong tilt is within a degree after its initialisation ramp::

        >>> f = MadgwickFilter(init_time=2.0)
        >>> bool(abs(f.update([0, 0, 0], [5.6, 0, 8.1], 0.01)[2]) > 0.25)    # a jolt's sample: ~35 deg pitch
        True
        >>> for _ in range(199):
        ...     q = f.update([0, 0, 0], [0, 0, 9.81], 0.01)
        >>> bool(abs(q[2]) < 0.01), f.initialising
        (True, False)
    """

    def __init__(self, beta: float = 0.033, q0: Optional[Sequence[float]] = None, init_beta: float = 1.0,
                 init_time: float = 2.0):
        for name, val in (("beta", beta), ("init_beta", init_beta), ("init_time [s]", init_time)):
            if not (math.isfinite(val) and val >= 0):
                raise ParameterError(name, val, 0, None)
        self.beta, self.init_beta, self.init_time = float(beta), float(init_beta), float(init_time)
        self.reset(q0)

    def reset(self, q0: Optional[Sequence[float]] = None) -> None:
        """Forget the attitude: the next :meth:`update` starts from the accelerometer (or from ``q0``)."""
        self.q = None if q0 is None else np.asarray(q0, dtype=float) / np.linalg.norm(q0)
        self._init_left = self.init_time if q0 is None else 0.0    # s of the initialisation ramp still to run

    @property
    def initialising(self) -> bool:
        """True until ``init_time`` s of samples have run through the filter since the start (or a reset)."""
        return self.q is None or self._init_left > 0.0

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
        beta = self.beta
        if self._init_left > 0.0:
            beta += (self.init_beta - self.beta) * self._init_left / self.init_time
            self._init_left = max(0.0, self._init_left - dt)
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
                q_dot = q_dot - beta * grad / gn              # eq. 33
        q = self.q + q_dot * dt
        self.q = q / np.linalg.norm(q)
        return self.q.copy()
