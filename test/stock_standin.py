"""A stand-in for Hiwonder's stock ROS 2 stack, from the emulated world (no Hiwonder code): it publishes exactly
the topics, types, joint names (with their angle convention) and frames the companion graph reads.

* ``/controller_manager/joint_states`` (sensor_msgs/JointState, 50 Hz from a timer, frame ``base_link``): the last
  commanded positions, as the stock controller_manager publishes its last sent pulses -- here the sim graph's
  ``joint_commands`` (the gait stands in for the stock gait) through ``HIWONDER_ROS2.to_stock``: their names
  (``tibla``), their angles (``coxa_RM`` negated);
* ``/imu`` (sensor_msgs/Imu, frame ``imu_link``): the world's ``imu/data`` as an IMU mounted as their URDF
  mounts it (yawed -90 deg: ``imu_from_base``);
* optionally the world's ``mocap/pose`` forwarded to ``<ns>/mocap/pose`` (a motion capture beside the robot: the
  tests' and the benchmark's truth for the predictor, as the native graph has it).

``extra_joint`` / ``imu_frame``: a foreign joint name added to every message / another frame_id (bad input).
"""
from __future__ import annotations

import threading

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import Imu, JointState
from trajectory_msgs.msg import JointTrajectory

from jethexa_dynamics.hardware.joint_map import HIWONDER_ROS2, IMU_MOUNT_HIWONDER_ROS2, imu_from_base
from jethexa_dynamics.nodes._common import RELIABLE_QOS, SENSOR_QOS
from jethexa_dynamics.nodes.stock_adapter import turned_imu


class StockStandIn(Node):
    def __init__(self, rate: float = 50.0, extra_joint: str = "", imu_frame: str = "imu_link",
                 mocap_to: str = "", **kwargs):
        super().__init__("stock_standin", **kwargs)
        self.lock = threading.Lock()
        self.q = {}                       # this package's joint -> last commanded angle
        self.extra_joint, self.imu_frame = extra_joint, imu_frame
        self.js_pub = self.create_publisher(JointState, "/controller_manager/joint_states", 1)   # theirs: depth 1
        self.imu_pub = self.create_publisher(Imu, "/imu", 10)
        self.create_subscription(JointTrajectory, "/joint_commands", self._on_cmd, RELIABLE_QOS)
        self.create_subscription(Imu, "/imu/data", self._on_imu, SENSOR_QOS)
        if mocap_to:
            self.mocap_pub = self.create_publisher(PoseStamped, mocap_to, SENSOR_QOS)
            self.create_subscription(PoseStamped, "/mocap/pose", self.mocap_pub.publish, SENSOR_QOS)
        self.published = 0
        self.create_timer(1.0 / rate, self._tick)

    def _on_cmd(self, msg: JointTrajectory) -> None:
        if msg.points:
            with self.lock:
                self.q.update(zip(msg.joint_names, msg.points[-1].positions))

    def _tick(self) -> None:
        with self.lock:
            if not self.q:
                return
            names, q = HIWONDER_ROS2.to_stock(list(self.q), list(self.q.values()))
        msg = JointState()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "base_link"
        msg.name = names + ([self.extra_joint] if self.extra_joint else [])
        msg.position = [float(v) for v in q] + ([0.0] if self.extra_joint else [])
        self.js_pub.publish(msg)
        self.published += 1

    def _on_imu(self, msg: Imu) -> None:
        o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
        self.imu_pub.publish(turned_imu(msg, self.imu_frame, *imu_from_base(
            IMU_MOUNT_HIWONDER_ROS2, (o.w, o.x, o.y, o.z), (w.x, w.y, w.z), (a.x, a.y, a.z))))
