"""The predictor node's bookkeeping (no rclpy): measured pose, prediction error, cycle-time statistics.

Quaternions are (w, x, y, z) (transforms3d); Euler angles are the paper's ZYX convention (roll about x,
pitch about y, yaw about z; ``transforms3d`` axes ``sxyz``).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
from transforms3d.euler import quat2euler

ERROR_FIELDS = ("roll", "pitch", "yaw", "x", "y", "z")


def wrap_angle(a):
    """Angles wrapped to (-pi, pi]."""
    return np.arctan2(np.sin(a), np.cos(a))


def rpy(quat_wxyz) -> np.ndarray:
    return np.array(quat2euler(np.asarray(quat_wxyz, dtype=float), "sxyz"))


def pose_error(pred_pos, pred_quat, meas_pos: Optional[np.ndarray], meas_quat) -> np.ndarray:
    """[roll, pitch, yaw, x, y, z] of predicted minus measured (angles wrapped; position NaN if not measured)."""
    e = np.full(6, np.nan)
    e[:3] = wrap_angle(rpy(pred_quat) - rpy(meas_quat))
    if meas_pos is not None:
        e[3:] = np.asarray(pred_pos, dtype=float) - np.asarray(meas_pos, dtype=float)
    return e


@dataclass
class MeasuredPose:
    """The robot's measured pose: orientation from the IMU filter, position from mocap when it is fresh."""

    mocap_timeout: float = 0.5
    quat: Optional[np.ndarray] = None
    imu_time: Optional[float] = None
    position: Optional[np.ndarray] = None
    mocap_quat: Optional[np.ndarray] = None
    mocap_time: Optional[float] = None

    def on_imu(self, t: float, quat) -> None:
        self.quat, self.imu_time = np.asarray(quat, dtype=float), t

    def on_mocap(self, t: float, pos, quat) -> None:
        self.position, self.mocap_quat, self.mocap_time = np.asarray(pos, float), np.asarray(quat, float), t

    def mocap_fresh(self, now: float) -> bool:
        return self.mocap_time is not None and now - self.mocap_time <= self.mocap_timeout

    def current(self, now: float) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """(position or None, orientation or None) usable at ``now``."""
        pos = self.position if self.mocap_fresh(now) else None
        return pos, self.quat


class CycleStats:
    """Rolling cycle-time statistics (seconds in, milliseconds out)."""

    def __init__(self, window: int = 2000):
        self.samples: deque = deque(maxlen=int(window))
        self.count = 0
        self.overruns = 0

    def add(self, seconds: float, period: Optional[float] = None) -> None:
        self.samples.append(float(seconds))
        self.count += 1
        if period is not None and seconds > period:
            self.overruns += 1

    def summary(self) -> dict:
        """{'p50_ms', 'p99_ms', 'max_ms', 'mean_ms', 'cycles', 'overruns'} (NaN before the first cycle)."""
        if not self.samples:
            return {"p50_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan, "mean_ms": math.nan,
                    "cycles": 0, "overruns": 0}
        a = 1e3 * np.asarray(self.samples)
        return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
                "max_ms": float(a.max()), "mean_ms": float(a.mean()), "cycles": self.count,
                "overruns": self.overruns}
