"""Bag layouts: which topics play which role, and how their joints and IMU frame convert to this package's.

* ``native``: what this package's nodes record (``joint_commands`` trajectories, ``joint_states`` measured,
  ``imu/data`` in base_link axes).
* ``hiwonder-ros2``: a rosbag2 recorded from Hiwonder's ROS 2 stack on today's kit:
  ``/controller_manager/joint_states`` (sensor_msgs/JointState, the **commanded** positions at 50 Hz, their
  joint names and angles: ``hardware.joint_map.HIWONDER_ROS2``) and ``/imu`` (imu_filter_madgwick's output in
  ``imu_link``, yawed -90 deg from base_link).
* ``nano-ros1``: a ROS 1 ``.bag`` from the Nano kit's stock software: ``/joint_states`` (commanded, 20 Hz, this
  package's names) and ``/imu/filtered`` (imu_link, the body's axes).

The stock layouts carry no measured joint positions: :data:`UNAVAILABLE_STOCK` says what cannot be scored.
``auto`` picks the layout from the bag's topics (:func:`detect`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Mapping, Optional, Sequence, Tuple

from jethexa_dynamics.hardware.joint_map import (HIWONDER_ROS2, IMU_MOUNT_HIWONDER_ROS2, IMU_MOUNT_NANO_ROS1,
                                                 NANO_ROS1, JointMap)

from .errors import BagError
from .topics import IMU, JOINT_STATE, JOINT_TRAJECTORY, TopicNames, normalize

#: what a bag without measured joint positions cannot give (reports, /diagnostics of the companion graph)
UNAVAILABLE_STOCK = ("measured joint positions", "servo health", "seizure detection", "body estimate")


class LayoutError(BagError):
    """The bag fits no layout, or not the one asked for."""


@dataclass(frozen=True)
class Layout:
    """``topics``: the roles' topics ('' = the role has none in this layout); ``command_type``: the message type
    of the commands topic; ``joint_map``: stock joint names/angles -> ours (None: the names are ours already);
    ``imu_frame``: the frame_id the IMU messages must carry ('' = not checked); ``imu_mount``: imu_link in
    base_link, URDF rpy [rad]; ``measured_joints``: the layout has measured joint positions."""

    name: str
    topics: TopicNames
    command_type: str
    joint_map: Optional[JointMap]
    imu_frame: str
    imu_mount: Tuple[float, float, float]
    measured_joints: bool
    what: str

    def with_topics(self, overrides: Mapping[str, str]) -> "Layout":
        return replace(self, topics=replace(self.topics, **{k: v for k, v in overrides.items() if v is not None}))

    def with_joint_map(self, joint_map: Optional[JointMap]) -> "Layout":
        return self if joint_map is None else replace(self, joint_map=joint_map)

    def unavailable(self) -> Tuple[str, ...]:
        return () if self.measured_joints else UNAVAILABLE_STOCK


LAYOUTS: Dict[str, Layout] = {
    "native": Layout("native", TopicNames(), JOINT_TRAJECTORY, None, "", (0.0, 0.0, 0.0), True,
                     "this package's nodes: joint_commands + imu/data"),
    "hiwonder-ros2": Layout(
        "hiwonder-ros2", TopicNames(commands="/controller_manager/joint_states", joint_states="", setpoints="",
                                    imu="/imu"),
        JOINT_STATE, HIWONDER_ROS2, "imu_link", IMU_MOUNT_HIWONDER_ROS2, False,
        "Hiwonder's ROS 2 stack: /controller_manager/joint_states (commanded) + /imu"),
    "nano-ros1": Layout(
        "nano-ros1", TopicNames(commands="/joint_states", joint_states="", setpoints="", imu="/imu/filtered"),
        JOINT_STATE, NANO_ROS1, "imu_link", IMU_MOUNT_NANO_ROS1, False,
        "the Nano kit's ROS 1 stack: /joint_states (commanded) + /imu/filtered"),
}
CHOICES = ("auto",) + tuple(LAYOUTS)


def _needs(layout: Layout) -> Tuple[str, str]:
    return normalize(layout.topics.commands), normalize(layout.topics.imu)


def detect(available: Mapping[str, str]) -> Layout:
    """The layout of a bag with these topics (name -> type): the first whose commands and IMU topics are there
    with their types, else the first whose commands topic is there (reading names what is missing);
    LayoutError (one line naming what each layout needs) when none fits."""
    have = {normalize(t): ty for t, ty in available.items()}
    for layout in LAYOUTS.values():
        cmd, imu = _needs(layout)
        if have.get(cmd) == layout.command_type and have.get(imu) == IMU:
            return layout
    for layout in LAYOUTS.values():      # its commands there: its reader names what else is missing
        if _needs(layout)[0] in have:
            return layout
    need = "; ".join("%s: %s + %s" % ((lay.name,) + _needs(lay)) for lay in LAYOUTS.values())
    raise LayoutError("the bag fits no layout (%s); it has %s" % (
        need, ", ".join(sorted(have)) or "no topics"))


def check(layout: Layout, available: Mapping[str, str]) -> None:
    """LayoutError (one line) when the bag lacks the commands or IMU topic of ``layout`` (a wrong --layout)."""
    have = {normalize(t): ty for t, ty in available.items()}
    cmd, imu = _needs(layout)
    missing = [t for t, ty in ((cmd, layout.command_type), (imu, IMU)) if have.get(t) != ty]
    if missing:
        try:
            fits = " (it looks like --layout %s)" % detect(available).name
        except LayoutError:
            fits = ""
        raise LayoutError("--layout %s: the bag has no %s of the type the layout needs (%s: %s + %s)%s" % (
            layout.name, " and no ".join(missing), layout.name, cmd, imu, fits))


def resolve(name: str, available: Mapping[str, str], overrides: Optional[Mapping[str, str]] = None,
            joint_map: Optional[JointMap] = None) -> Layout:
    """The layout ``name`` (``auto``: detected) for a bag with ``available`` topics, with the topic ``overrides``
    (role -> topic, None = the layout's) and ``joint_map`` (None = the layout's) applied."""
    if name not in CHOICES:
        raise LayoutError("--layout %r: must be one of %s" % (name, ", ".join(CHOICES)))
    overrides = {k: v for k, v in dict(overrides or {}).items() if v is not None}
    if name == "auto":
        try:
            layout = detect(available)
        except LayoutError:
            if not overrides:          # topics given by option: the native roles on them (checked when read)
                raise
            layout = LAYOUTS["native"]
    else:
        layout = LAYOUTS[name]
        if "commands" not in overrides and "imu" not in overrides:
            check(layout, available)
    return layout.with_topics(overrides).with_joint_map(joint_map)
