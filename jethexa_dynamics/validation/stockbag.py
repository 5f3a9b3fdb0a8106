"""A native bag (e.g. from ``validation.simbag``: the emulated world) rewritten as the stock software records it.

What the tests and the companion benchmark use to try the stock layouts (``validation/layouts.py``) without a
robot, and what an owner can use to see the format ``jethexa-validate --layout`` expects::

    python -m jethexa_dynamics.validation.simbag run --duration 20
    python -m jethexa_dynamics.validation.stockbag run run_hiwonder --layout hiwonder-ros2
    python -m jethexa_dynamics.validation.stockbag run run_nano.bag --layout nano-ros1

* ``hiwonder-ros2`` (rosbag2, MCAP): every joint command as ``/controller_manager/joint_states`` (their joint names
  and angles, ``hardware.joint_map.HIWONDER_ROS2``; the commanded positions, as their controller_manager
  publishes them), the same every 50 ms on ``/joint_states`` (their 20 Hz republication), the IMU as ``/imu`` in
  ``imu_link`` yawed -90 deg from base_link.
* ``nano-ros1`` (ROS 1 ``.bag``): the commands every 50 ms on ``/joint_states`` (this package's names, 20 Hz), the
  IMU on ``/imu/filtered`` (imu_link, the body's axes).

The ground truth (``mocap/pose``) is kept with ``ground_truth`` (the robot has none: tests score against it);
nothing else of the native bag (no measured joints, no ``morphology``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from jethexa_dynamics.hardware.joint_map import imu_from_base

from . import bag_messages as M
from .bag_io import BagWriter, resolve_bag_path
from .layouts import LAYOUTS

#: the stock software's republication of its commands on /joint_states [s]
REPUBLISH_PERIOD = 0.05


def _native_messages(path):
    """(t_ns, role, fields) of the native bag's commands, IMU and ground truth, in time order."""
    from rosbags.highlevel import AnyReader

    roles = {"/joint_commands": "commands", "/imu/data": "imu", "/mocap/pose": "ground_truth"}
    out = []
    with AnyReader([resolve_bag_path(path)], default_typestore=M.typestore()) as reader:
        conns = [c for c in reader.connections if c.topic in roles]
        for conn, t_ns, data in reader.messages(connections=conns):
            msg = reader.deserialize(data, conn.msgtype)
            role = roles[conn.topic]
            if role == "commands":
                if msg.points:
                    out.append((t_ns, role, (list(msg.joint_names), list(msg.points[-1].positions))))
            elif role == "imu":
                o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
                out.append((t_ns, role, ((o.w, o.x, o.y, o.z), (w.x, w.y, w.z), (a.x, a.y, a.z))))
            else:
                p, o = msg.pose.position, msg.pose.orientation
                out.append((t_ns, role, ((p.x, p.y, p.z), (o.w, o.x, o.y, o.z))))
    cmds = [m for m in out if m[1] == "commands"]
    if cmds:      # the stock republication: every REPUBLISH_PERIOD the latest command, stamped then
        t_cmd = np.array([m[0] for m in cmds], dtype=np.int64)
        step = int(round(REPUBLISH_PERIOD * 1e9))
        for t in range(int(t_cmd[0]), int(t_cmd[-1]) + 1, step):
            out.append((t, "republish", cmds[int(np.searchsorted(t_cmd, t, side="right")) - 1][2]))
    out.sort(key=lambda m: (m[0], m[1] != "commands"))
    return out


def write_stock_bag(native, out, layout: str = "hiwonder-ros2", ground_truth: bool = True,
                    imu_frame: str = "imu_link") -> dict:
    """Rewrite the native bag ``native`` at ``out`` in ``layout`` (``hiwonder-ros2``: a rosbag2 directory,
    ``nano-ros1``: a ROS 1 ``.bag`` file); returns {topic: messages written}. ``imu_frame``: the IMU's frame_id
    (a test's foreign frame)."""
    lay = LAYOUTS[layout]
    if lay.joint_map is None:
        raise ValueError("layout %r is this package's own: nothing to rewrite" % layout)
    msgs = _native_messages(native)
    if layout == "nano-ros1":
        return _write_ros1(msgs, Path(out), lay, ground_truth, imu_frame)
    counts = {}
    with BagWriter(out, storage="mcap") as w:
        for t_ns, role, f in msgs:
            if role in ("commands", "republish"):
                names, q = lay.joint_map.to_stock(*f)
                topic = lay.topics.commands if role == "commands" else "/joint_states"
                w.write(topic, t_ns, M.joint_state(t_ns, names, q, frame_id="base_link"))
            elif role == "imu":
                q, g, a = imu_from_base(lay.imu_mount, *f)
                w.write(lay.topics.imu, t_ns, M.imu(t_ns, q, g, a, frame_id=imu_frame))
            elif ground_truth:
                w.write("/mocap/pose", t_ns, M.pose_stamped(t_ns, *f))
        counts = dict(w.counts)
    return counts


def _write_ros1(msgs, out: Path, lay, ground_truth: bool, imu_frame: str) -> dict:
    from rosbags.rosbag1 import Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS1_NOETIC)
    T = ts.types
    seq = {"js": 0, "imu": 0, "gt": 0}

    def header(t_ns, frame, key):
        seq[key] += 1
        return T["std_msgs/msg/Header"](seq=seq[key], stamp=T["builtin_interfaces/msg/Time"](
            sec=int(t_ns) // 1_000_000_000, nanosec=int(t_ns) % 1_000_000_000), frame_id=frame)

    def vec(v):
        return T["geometry_msgs/msg/Vector3"](x=float(v[0]), y=float(v[1]), z=float(v[2]))

    def quat(q):
        return T["geometry_msgs/msg/Quaternion"](x=float(q[1]), y=float(q[2]), z=float(q[3]), w=float(q[0]))

    counts = {}
    with Writer(out) as w:
        conns = {}

        def put(topic, msgtype, t_ns, msg):
            if topic not in conns:
                conns[topic] = w.add_connection(topic, msgtype, typestore=ts)
            w.write(conns[topic], int(t_ns), ts.serialize_ros1(msg, msgtype))
            counts[topic] = counts.get(topic, 0) + 1

        zeros9 = np.zeros(9)
        for t_ns, role, f in msgs:
            if role == "commands":
                continue                       # the Nano kit records its 20 Hz republication only
            if role == "republish":
                names, q = lay.joint_map.to_stock(*f)
                put(lay.topics.commands, "sensor_msgs/msg/JointState", t_ns, T["sensor_msgs/msg/JointState"](
                    header=header(t_ns, "", "js"), name=names, position=np.asarray(q, float),
                    velocity=np.zeros(0), effort=np.zeros(0)))
            elif role == "imu":
                q, g, a = imu_from_base(lay.imu_mount, *f)
                put(lay.topics.imu, "sensor_msgs/msg/Imu", t_ns, T["sensor_msgs/msg/Imu"](
                    header=header(t_ns, imu_frame, "imu"), orientation=quat(q), orientation_covariance=zeros9,
                    angular_velocity=vec(g), angular_velocity_covariance=zeros9, linear_acceleration=vec(a),
                    linear_acceleration_covariance=zeros9))
            elif ground_truth:
                p, q = f
                put("/mocap/pose", "geometry_msgs/msg/PoseStamped", t_ns, T["geometry_msgs/msg/PoseStamped"](
                    header=header(t_ns, "world", "gt"), pose=T["geometry_msgs/msg/Pose"](
                        position=T["geometry_msgs/msg/Point"](x=float(p[0]), y=float(p[1]), z=float(p[2])),
                        orientation=quat(q))))
    return counts


def main(argv=None) -> int:
    from jethexa_dynamics.cli_args import ArgumentParser, existing_path

    p = ArgumentParser(prog="python -m jethexa_dynamics.validation.stockbag",
                       description="Rewrite a native bag (e.g. from validation.simbag) as the stock software records "
                                   "it (hiwonder-ros2: a rosbag2 directory; nano-ros1: a ROS 1 .bag).")
    p.add_argument("native", type=existing_path, help="a native rosbag2 bag (joint_commands, imu/data)")
    p.add_argument("out", help="the bag to write (must not exist)")
    p.add_argument("--layout", choices=[n for n, lay in LAYOUTS.items() if lay.joint_map is not None],
                   default="hiwonder-ros2")
    p.add_argument("--no-ground-truth", action="store_true", help="leave mocap/pose out (as on the robot)")
    args = p.parse_args(argv)
    if Path(args.out).exists():
        print("stockbag: error: %s exists already; bags are never overwritten" % args.out, file=sys.stderr)
        return 2
    counts = write_stock_bag(args.native, args.out, args.layout, ground_truth=not args.no_ground_truth)
    print("%s: %s" % (args.out, ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
