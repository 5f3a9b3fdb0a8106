"""Build ROS 2 messages (rosbags typestore classes, ROS 2 Humble definitions) without a ROS install.

Used to write bags from Python (tests, benchmarks, offline tools). Quaternions are given as
``(w, x, y, z)`` (transforms3d order) and written in ROS field order.
"""
from __future__ import annotations

import functools

import numpy as np
from rosbags.typesys import Stores, get_typestore


@functools.lru_cache(maxsize=1)
def typestore():
    """The ROS 2 Humble typestore (the JetHexa runs Humble)."""
    return get_typestore(Stores.ROS2_HUMBLE)


def _t(name):
    return typestore().types[name]


def stamp(t_ns: int):
    """``builtin_interfaces/Time`` for an integer time in ns."""
    t_ns = int(t_ns)
    return _t("builtin_interfaces/msg/Time")(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)


def duration(d_ns: int):
    d_ns = int(d_ns)
    return _t("builtin_interfaces/msg/Duration")(sec=d_ns // 1_000_000_000, nanosec=d_ns % 1_000_000_000)


def header(t_ns: int, frame_id: str = ""):
    return _t("std_msgs/msg/Header")(stamp=stamp(t_ns), frame_id=frame_id)


def _f64(values, n=None):
    a = np.asarray(values if values is not None else [], dtype=np.float64).ravel()
    if n is not None and a.size not in (0, n):
        raise ValueError("expected {} values, got {}".format(n, a.size))
    return a


def joint_state(t_ns, names, position, velocity=None, effort=None, frame_id=""):
    names = [str(n) for n in names]
    return _t("sensor_msgs/msg/JointState")(
        header=header(t_ns, frame_id), name=names, position=_f64(position, len(names)),
        velocity=_f64(velocity, len(names)), effort=_f64(effort, len(names)))


def joint_trajectory(t_ns, names, positions, time_from_start_s=0.0, frame_id=""):
    """A one-point ``JointTrajectory`` (the point reached ``time_from_start_s`` after ``t_ns``).

    ``positions`` may also be a 2-D array (several points) with ``time_from_start_s`` a matching sequence.
    """
    names = [str(n) for n in names]
    pos = np.atleast_2d(np.asarray(positions, dtype=np.float64))
    tfs = np.atleast_1d(np.asarray(time_from_start_s, dtype=np.float64))
    if tfs.size == 1 and pos.shape[0] > 1:
        tfs = np.full(pos.shape[0], tfs[0])
    if tfs.size != pos.shape[0]:
        raise ValueError("time_from_start_s: one value per point expected")
    point = _t("trajectory_msgs/msg/JointTrajectoryPoint")
    pts = [point(positions=_f64(p, len(names)), velocities=_f64(None), accelerations=_f64(None),
                 effort=_f64(None), time_from_start=duration(round(s * 1e9))) for p, s in zip(pos, tfs)]
    return _t("trajectory_msgs/msg/JointTrajectory")(header=header(t_ns, frame_id), joint_names=names,
                                                     points=pts)


def quaternion(q_wxyz):
    w, x, y, z = (float(v) for v in q_wxyz)
    return _t("geometry_msgs/msg/Quaternion")(x=x, y=y, z=z, w=w)


def vector3(v):
    x, y, z = (float(c) for c in v)
    return _t("geometry_msgs/msg/Vector3")(x=x, y=y, z=z)


def imu(t_ns, q_wxyz=None, gyro=(0.0, 0.0, 0.0), accel=(0.0, 0.0, 9.81), frame_id="imu_link"):
    """``sensor_msgs/Imu``; ``q_wxyz=None`` marks the orientation as not provided (covariance[0] = -1)."""
    ocov = np.zeros(9)
    if q_wxyz is None:
        ocov[0] = -1.0
        q_wxyz = (1.0, 0.0, 0.0, 0.0)
    return _t("sensor_msgs/msg/Imu")(
        header=header(t_ns, frame_id), orientation=quaternion(q_wxyz), orientation_covariance=ocov,
        angular_velocity=vector3(gyro), angular_velocity_covariance=np.zeros(9),
        linear_acceleration=vector3(accel), linear_acceleration_covariance=np.zeros(9))


def morphology(links_per_leg, leg_names=None):
    """``std_msgs/UInt8MultiArray`` of the ``morphology`` topic (wire format: ``model.wire.morphology_to_wire``):
    one entry per leg = number of intact links, labelled with ``leg_names`` (None: no label = URDF leg order)."""
    from jethexa_dynamics.model.wire import morphology_to_wire

    links = [int(v) for v in np.asarray(links_per_leg).ravel()]
    data, label = (links, "") if leg_names is None else morphology_to_wire(links, leg_names)
    dims = [] if not label else [_t("std_msgs/msg/MultiArrayDimension")(label=label, size=len(data), stride=len(data))]
    layout = _t("std_msgs/msg/MultiArrayLayout")(dim=dims, data_offset=0)
    return _t("std_msgs/msg/UInt8MultiArray")(layout=layout, data=np.asarray(data, dtype=np.uint8))


def pose_stamped(t_ns, position, q_wxyz, frame_id="world"):
    p = _t("geometry_msgs/msg/Point")(x=float(position[0]), y=float(position[1]), z=float(position[2]))
    pose = _t("geometry_msgs/msg/Pose")(position=p, orientation=quaternion(q_wxyz))
    return _t("geometry_msgs/msg/PoseStamped")(header=header(t_ns, frame_id), pose=pose)


def twist(linear=(0.0, 0.0, 0.0), angular=(0.0, 0.0, 0.0)):
    return _t("geometry_msgs/msg/Twist")(linear=vector3(linear), angular=vector3(angular))


def serialize(msg) -> bytes:
    """CDR bytes of a typestore message (what rclpy hands to a ``raw=True`` subscription)."""
    return bytes(typestore().serialize_cdr(msg, msg.__msgtype__))


def deserialize(data, msgtype: str):
    return typestore().deserialize_cdr(data, msgtype)
