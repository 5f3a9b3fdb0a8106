"""Topic names and message types used by recording and validation (one place for both)."""
from __future__ import annotations

from dataclasses import dataclass, fields

JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
JOINT_STATE = "sensor_msgs/msg/JointState"
IMU = "sensor_msgs/msg/Imu"
UINT8_MULTI_ARRAY = "std_msgs/msg/UInt8MultiArray"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
TWIST = "geometry_msgs/msg/Twist"

#: message type(s) accepted for each role of :class:`TopicNames`
ROLE_TYPES = {
    "commands": (JOINT_TRAJECTORY,),
    "joint_states": (JOINT_STATE,),
    "setpoints": (JOINT_STATE,),
    "imu": (IMU,),
    "morphology": (UINT8_MULTI_ARRAY,),
    "ground_truth": (POSE_STAMPED,),
}

#: topics the recorder takes by default (name -> type); what the demo and the emulator publish
DEFAULT_RECORD_TOPICS = {
    "joint_commands": JOINT_TRAJECTORY,
    "joint_states": JOINT_STATE,
    "joint_states/setpoint": JOINT_STATE,
    "imu/data_raw": IMU,
    "imu/data": IMU,
    "morphology": UINT8_MULTI_ARRAY,
    "mocap/pose": POSE_STAMPED,
    "predicted/pose": POSE_STAMPED,
    "measured/pose": POSE_STAMPED,
    "cmd_vel": TWIST,
}

#: QoS kind each recorded topic is published with by the nodes (``nodes/_common.py``): ``sensor`` = best effort,
#: volatile, keep last 5 (ROS' sensor-data profile); ``reliable`` = reliable, volatile, keep last 10;
#: ``latched`` = reliable, transient local, keep last 10. What a bag stores when a publisher's own QoS is unknown.
TOPIC_QOS = {
    "joint_commands": "reliable",
    "joint_states": "sensor",
    "joint_states/setpoint": "sensor",
    "imu/data_raw": "sensor",
    "imu/data": "sensor",
    "morphology": "latched",
    "mocap/pose": "sensor",
    "predicted/pose": "reliable",
    "measured/pose": "reliable",
    "cmd_vel": "reliable",
}


def normalize(topic: str) -> str:
    """Canonical form of a topic name: leading slash, no trailing slash (``imu/data`` -> ``/imu/data``)."""
    t = topic.strip().strip("/")
    if not t:
        raise ValueError("empty topic name")
    return "/" + t


@dataclass(frozen=True)
class TopicNames:
    """Which bag topic plays which role. Names are matched with or without the leading slash; '' = none
    (a layout without the role, ``validation/layouts.py``). ``setpoints``:
    servo_driver's ``joint_states/setpoint`` (each read servo's set-point at its reading, the same header stamp as
    its ``joint_states`` message): what the body estimate needs from a bus that reads a few servos per cycle."""

    commands: str = "joint_commands"
    joint_states: str = "joint_states"
    setpoints: str = "joint_states/setpoint"
    imu: str = "imu/data"
    morphology: str = "morphology"
    ground_truth: str = "mocap/pose"

    #: roles that must be in the bag; the others are used when present
    REQUIRED = ("commands", "imu")

    def items(self):
        """(role, normalized topic) pairs; None for a role given no topic ('': the layout has none)."""
        return [(f.name, normalize(getattr(self, f.name)) if getattr(self, f.name) else None) for f in fields(self)]
