"""What every predictor offers (no rclpy): the replay/node interface and the shared plumbing.

A predictor turns time-stamped joint commands (and measurements to re-anchor on) into the predicted pose
of ``base_link`` in the world. Times are seconds on the caller's clock; quaternions are (w, x, y, z).
"""
from __future__ import annotations

import math
from collections import deque
from typing import List, Optional

import numpy as np


class PredictorAdapter:
    """What the replay needs from a predictor (all times in s from the bag start, quaternions w, x, y, z)."""

    name = "predictor"
    horizon = float("nan")        #: re-anchoring horizon (s)

    def reset(self, t: float, joint_names) -> None:
        """Start at ``t``; joint vectors given later are in the order of ``joint_names``."""

    def on_command(self, t: float, q: np.ndarray, t_target: float) -> None:
        """Joint command received at ``t`` (target ``q`` to be reached at ``t_target``)."""

    def on_joints(self, t: float, q: np.ndarray) -> None:
        """Measured joint positions."""

    def on_imu(self, t: float, quat: np.ndarray, gyro: np.ndarray, accel: np.ndarray) -> None:
        """IMU sample (orientation from the IMU filter)."""

    def on_ground_truth(self, t: float, pos: np.ndarray, quat: np.ndarray) -> None:
        """Motion-capture pose (if the bag has one)."""

    def on_morphology(self, t: float, links: np.ndarray) -> None:
        """Intact links per leg changed (or repeated)."""

    def pose(self, t: float):
        """Advance to ``t`` and return the predicted ``(position (3,), quaternion (4,))``."""
        raise NotImplementedError

    @property
    def anchors(self) -> List[float]:
        """Times at which the prediction was re-anchored to measurements."""
        return []

    @property
    def notes(self) -> List[str]:
        return []


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
