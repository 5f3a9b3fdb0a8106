"""Synthetic bags with known content (for testing the bag tooling, not the model).

The body follows an analytic pose (forward walk with small roll/pitch/yaw oscillations); the IMU
orientation and the motion-capture pose are that pose exactly, joint commands are sinusoids, joint states
follow them one sample later, morphology switches once at ``damage_at``. Every stream is stamped with
the same clock as the log time, so each message's content is a known function of its time.
"""
from __future__ import annotations

import numpy as np

from . import bag_messages as M
from .bag_io import BagWriter
from jethexa_dynamics.model import jethexa

LEGS = tuple(jethexa().leg_names)
JOINT_NAMES = tuple(jethexa().joint_names)
T0_NS = 1_700_000_000_000_000_000
INTACT = (3, 3, 3, 3, 3, 3)
DAMAGE_1 = (3, 0, 3, 3, 0, 3)   # paper damage 1: middle legs removed


def rpy_to_quat(rpy) -> np.ndarray:
    """(N, 3) roll, pitch, yaw -> (N, 4) w, x, y, z (ZYX)."""
    r = np.atleast_2d(np.asarray(rpy, dtype=float))
    cr, sr = np.cos(r[:, 0] / 2), np.sin(r[:, 0] / 2)
    cp, sp = np.cos(r[:, 1] / 2), np.sin(r[:, 1] / 2)
    cy, sy = np.cos(r[:, 2] / 2), np.sin(r[:, 2] / 2)
    return np.stack([cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy,
                     cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy], axis=1)


def body_rpy(t):
    t = np.asarray(t, dtype=float)
    return np.stack([0.03 * np.sin(2.0 * t), 0.02 * np.cos(1.3 * t), 0.1 * np.sin(0.2 * t)], axis=-1)


def body_pos(t):
    t = np.asarray(t, dtype=float)
    return np.stack([0.05 * t, 0.01 * np.sin(0.5 * t), 0.1 + 0.002 * np.sin(4.0 * t)], axis=-1)


def joint_command(t):
    t = np.asarray(t, dtype=float)
    phase = np.arange(18) * 0.3
    return 0.3 * np.sin(2.0 * np.pi * 1.0 * t[..., None] + phase)


def write_synthetic_bag(path, duration=10.0, storage="mcap", imu_rate=100.0, cmd_rate=50.0, mocap_rate=50.0,
                        damage_at=None, damage=DAMAGE_1, mocap=True, joint_states=True, morphology=True,
                        imu_topic="imu/data", imu_orientation=True, gap=None, stamp_jump=None, topics_extra=None):
    """Write a bag and return its path.

    ``gap=(t, length)``: nothing is recorded in ``[t, t + length)``. ``stamp_jump=(t, dt)``: IMU header
    stamps after ``t`` are shifted by ``dt`` (negative = backwards). ``topics_extra``: {topic: msg} written once.
    """
    events = []

    def times(rate):
        return np.arange(0.0, duration + 1e-9, 1.0 / rate)

    for t in times(imu_rate):
        events.append((t, 1, "imu"))
    for t in times(cmd_rate):
        events.append((t, 0, "cmd"))
        if joint_states:
            events.append((t + 0.5 / cmd_rate, 2, "js"))
    if mocap:
        for t in times(mocap_rate):
            events.append((t, 3, "mocap"))
    if morphology:
        events.append((0.0, -1, "morph0"))
        if damage_at is not None:
            events.append((float(damage_at), -1, "morph1"))
    events.sort()
    with BagWriter(path, storage=storage) as w:
        for topic, msg in (topics_extra or {}).items():
            w.write(topic, T0_NS, msg)
        for t, _, kind in events:
            if gap is not None and gap[0] <= t < gap[0] + gap[1]:
                continue
            if t > duration + 1e-9:
                continue
            t_ns = T0_NS + int(round(t * 1e9))
            if kind == "imu":
                st = t_ns
                if stamp_jump is not None and t >= stamp_jump[0]:
                    st += int(round(stamp_jump[1] * 1e9))
                q = rpy_to_quat(body_rpy(t))[0]
                w.write(imu_topic, t_ns, M.imu(st, q if imu_orientation else None))
            elif kind == "cmd":
                w.write("joint_commands", t_ns, M.joint_trajectory(t_ns, JOINT_NAMES, joint_command(t), 1.0 / cmd_rate))
            elif kind == "js":
                w.write("joint_states", t_ns, M.joint_state(t_ns, JOINT_NAMES, joint_command(t - 0.5 / cmd_rate)))
            elif kind == "mocap":
                w.write("mocap/pose", t_ns, M.pose_stamped(t_ns, body_pos(t), rpy_to_quat(body_rpy(t))[0]))
            elif kind == "morph0":
                w.write("morphology", t_ns, M.morphology(INTACT))
            elif kind == "morph1":
                w.write("morphology", t_ns, M.morphology(damage))
    return path
