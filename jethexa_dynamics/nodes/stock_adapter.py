"""stock_adapter: the companion graph's input -- Hiwonder's stock ROS 2 topics in this package's vocabulary.

The companion graph (``companion.launch.py``, namespace ``companion``) runs the predictor and the damage monitor
beside Hiwonder's own ROS 2 stack, which keeps the servos and the IMU (``/dev/rrc``): this node reads what that
stack publishes and gives the two nodes what they read on the robot's own graph:

* ``commands_topic`` (``/controller_manager/joint_states``: the **commanded** positions, their joint names and
  angles) -> ``joint_commands`` (one-point trajectories in this package's names and angles, through
  ``hardware.joint_map``; ``move_time`` to reach them);
* ``imu_topic`` (``/imu``: imu_filter_madgwick's output in ``imu_link``) -> ``imu/data`` in base_link axes
  (``imu_mount_rpy``).

What the companion graph cannot have is said on ``/diagnostics`` (``mode: companion``, ``unavailable: ...``): no
measured joint positions, so no servo-health evidence and no seizure detection; the morphology verdict goes on
``companion/morphology``, which the stock gait does not read (reported, not acted on). A stock joint the map does
not know, or an IMU message in another frame, is one ERROR line the first time, then counted on /diagnostics; the
node keeps serving what it can convert.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from sensor_msgs.msg import Imu, JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from jethexa_dynamics.hardware.joint_map import HIWONDER_ROS2, JointMap, imu_to_base, joint_map_for
from jethexa_dynamics.nodes import messages as validate, params as node_params
from jethexa_dynamics.nodes._common import RELIABLE_QOS, SENSOR_QOS, ThinNode, run
from jethexa_dynamics.validation.layouts import UNAVAILABLE_STOCK

#: /diagnostics: what the companion graph cannot give (no measured joints)
UNAVAILABLE = ", ".join(UNAVAILABLE_STOCK[:3])
MORPHOLOGY_NOTE = "reported on morphology, not acted on (the stock gait does not read it)"


class StockAdapter(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.STOCK_ADAPTER, **kwargs)
        self.map: JointMap = joint_map_for(self.p["joint_map"], HIWONDER_ROS2)   # checked by its ParamSpec
        self.mount = tuple(float(v) for v in self.p["imu_mount_rpy"])
        self.commands_in = self.imu_in = 0
        self.foreign_joints: dict = {}
        self.foreign_frames: dict = {}
        self._t_cmd: Optional[float] = None
        self._t_imu: Optional[float] = None
        self.cmd_pub = self.create_publisher(JointTrajectory, "joint_commands", RELIABLE_QOS)
        self.imu_pub = self.create_publisher(Imu, "imu/data", SENSOR_QOS)
        # the stock publishers' QoS is theirs (controller_manager: reliable, depth 1): best effort reads either
        self.sub(JointState, self.p["commands_topic"], self._on_commands, SENSOR_QOS)
        self.sub(Imu, self.p["imu_topic"], self._on_imu, SENSOR_QOS)
        self.timer(1.0, self._on_diag, "diagnostics")
        self.get_logger().info("companion mode: %s -> joint_commands (%s joint map), %s (%s, mount rpy %s) -> "
                               "imu/data; unavailable: %s" % (
                                   self.p["commands_topic"], self.map.name, self.p["imu_topic"],
                                   self.p["imu_frame"], ", ".join("%g" % v for v in self.mount), UNAVAILABLE))

    # ------------------------------------------------------------------ stock topics
    def _on_commands(self, msg: JointState) -> None:
        names = list(msg.name)
        if len(names) != len(msg.position):
            raise validate.InvalidMessage("%s: %d names but %d positions" % (
                self.p["commands_topic"], len(names), len(msg.position)))
        for n in self.map.foreign(names):
            if n not in self.foreign_joints:
                self.get_logger().error(
                    "%s: joint %r is not in the %s joint map (it knows: %s); its angle is not used -- give the "
                    "map with this name (parameter joint_map)" % (self.p["commands_topic"], n, self.map.name,
                                                                 ", ".join(self.map.stock_names)))
            self.foreign_joints[n] = self.foreign_joints.get(n, 0) + 1
        ours, q = self.map.to_ours(names, msg.position, strict=False)
        if not ours:
            return
        q = validate.finite_vector(self.p["commands_topic"] + ".position", q)
        out = JointTrajectory()
        out.header.stamp = msg.header.stamp
        out.joint_names = ours
        point = JointTrajectoryPoint()
        point.positions = [float(v) for v in q]
        mt = self.p["move_time"]
        point.time_from_start.sec = int(mt)
        point.time_from_start.nanosec = int(round((mt - int(mt)) * 1e9))
        out.points = [point]
        self.cmd_pub.publish(out)
        self.commands_in += 1
        self._t_cmd = self.t()

    def _on_imu(self, msg: Imu) -> None:
        frame = msg.header.frame_id
        if frame != self.p["imu_frame"]:
            if frame not in self.foreign_frames:
                self.get_logger().error(
                    "%s: frame_id %r is not %r, the frame imu_mount_rpy describes; its samples are not used -- "
                    "set imu_frame and imu_mount_rpy for it" % (self.p["imu_topic"], frame, self.p["imu_frame"]))
            self.foreign_frames[frame] = self.foreign_frames.get(frame, 0) + 1
            return
        o = msg.orientation
        x, y, z, w = validate.imu_orientation((o.x, o.y, o.z, o.w), msg.orientation_covariance)
        gyro = validate.finite_vector(self.p["imu_topic"] + ".angular_velocity", (
            msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z))
        acc = validate.finite_vector(self.p["imu_topic"] + ".linear_acceleration", (
            msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z))
        self.imu_pub.publish(turned_imu(msg, "base_link", *imu_to_base(self.mount, np.array([w, x, y, z]), gyro,
                                                                        acc)))
        self.imu_in += 1
        self._t_imu = self.t()

    # ------------------------------------------------------------------ diagnostics
    def _age(self, t: Optional[float]) -> float:
        return math.inf if t is None else self.t() - t

    def _on_diag(self) -> None:
        stale = [name for name, t in (("commands", self._t_cmd), ("imu", self._t_imu))
                 if self._age(t) > self.p["stale_after"]]
        level, message = 0, "companion mode: converting the stock topics"
        if self.foreign_joints or self.foreign_frames:
            level, message = 1, "companion mode: stock messages with names or frames the map does not know"
        if stale:
            level = 2
            message = "companion mode: no %s from the stock stack for over %g s (is it running?)" % (
                " and no ".join(self.p[n + "_topic"] if n == "commands" else self.p["imu_topic"] for n in stale),
                self.p["stale_after"])
        values = [("mode", "companion"), ("unavailable", UNAVAILABLE), ("morphology", MORPHOLOGY_NOTE),
                  ("joint_map", self.map.name), ("commands_topic", self.p["commands_topic"]),
                  ("imu_topic", self.p["imu_topic"]), ("commands_in", self.commands_in), ("imu_in", self.imu_in),
                  ("command_age_s", self._age(self._t_cmd)), ("imu_age_s", self._age(self._t_imu))]
        if self.foreign_joints:
            values.append(("foreign_joints", ", ".join("%s (%d)" % kv for kv in sorted(self.foreign_joints.items()))))
        if self.foreign_frames:
            values.append(("foreign_frames", ", ".join("%s (%d)" % kv for kv in sorted(self.foreign_frames.items()))))
        self.publish_diagnostics([self.node_status(message, level, values)])


def turned_imu(msg: Imu, frame: str, quat_wxyz, gyro, accel) -> Imu:
    """``msg`` (stamp, covariances) with its orientation, rates and specific force replaced by the turned ones, in
    ``frame``. The covariances are copied: a rotation keeps a diagonal of equal entries (the stock filter's)."""
    out = Imu()
    out.header.stamp = msg.header.stamp
    out.header.frame_id = frame
    out.orientation.w, out.orientation.x, out.orientation.y, out.orientation.z = (float(v) for v in quat_wxyz)
    out.angular_velocity.x, out.angular_velocity.y, out.angular_velocity.z = (float(v) for v in gyro)
    out.linear_acceleration.x, out.linear_acceleration.y, out.linear_acceleration.z = (float(v) for v in accel)
    out.orientation_covariance = list(msg.orientation_covariance)
    out.angular_velocity_covariance = list(msg.angular_velocity_covariance)
    out.linear_acceleration_covariance = list(msg.linear_acceleration_covariance)
    return out


NODE = StockAdapter  # the class graph.node_class() finds


def main(args=None):
    return run(StockAdapter, args)
