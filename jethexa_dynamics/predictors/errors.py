"""Prediction error: predicted minus measured pose (roll, pitch, yaw, x, y, z) (no rclpy).

Quaternions are (w, x, y, z) (transforms3d); Euler angles are the paper's ZYX convention (roll about x,
pitch about y, yaw about z; ``transforms3d`` axes ``sxyz``).
"""
from __future__ import annotations

from typing import Optional

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
