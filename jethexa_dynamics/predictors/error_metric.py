"""The prediction error, one definition live (the predictor node's ``prediction/error``) and offline
(``jethexa-validate``'s metrics). No rclpy.

Orientation error = predicted minus measured roll, pitch, yaw: the ZYX Euler angles of base_link in the world
(R = Rz(yaw) Ry(pitch) Rx(roll); transforms3d axes ``sxyz``), each difference wrapped to [-pi, pi) rad
(``model.se3.wrap_angle``).
Position error = predicted minus measured position of base_link (m, world axes). Quaternions (w, x, y, z).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from jethexa_dynamics.model.se3 import wrap_angle

ERROR_FIELDS = ("roll", "pitch", "yaw", "x", "y", "z")


def quat_to_rpy(q_wxyz) -> np.ndarray:
    """(N, 4) quaternions ``w, x, y, z`` (normalised here) -> (N, 3) roll, pitch, yaw [rad]."""
    q = np.atleast_2d(np.asarray(q_wxyz, dtype=float))
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    roll = np.arctan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2.0 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return np.stack([roll, pitch, yaw], axis=1)


def rpy(quat_wxyz) -> np.ndarray:
    """(roll, pitch, yaw) [rad] of one quaternion (w, x, y, z)."""
    return quat_to_rpy(quat_wxyz)[0]


def orientation_errors(q_pred, q_meas) -> np.ndarray:
    """(N, 3) wrapped roll/pitch/yaw differences predicted - measured [rad]."""
    return wrap_angle(quat_to_rpy(q_pred) - quat_to_rpy(q_meas))


def pose_error(pred_pos, pred_quat, meas_pos: Optional[np.ndarray], meas_quat) -> np.ndarray:
    """[roll, pitch, yaw (rad), x, y, z (m)] of predicted minus measured (position NaN if not measured)."""
    e = np.full(6, np.nan)
    e[:3] = orientation_errors(pred_quat, meas_quat)[0]
    if meas_pos is not None:
        e[3:] = np.asarray(pred_pos, dtype=float) - np.asarray(meas_pos, dtype=float)
    return e
