"""The robot model the nodes share within one process (built once; ``LeggedRobot.jethexa()``)."""
from __future__ import annotations

import functools
from typing import List, Tuple


def jethexa():
    """``model.robot.jethexa()``: the one shared JetHexa of the process."""
    from jethexa_dynamics.model.robot import jethexa as shared

    return shared()


def robot_names() -> Tuple[List[str], List[str]]:
    """(leg names, joint names) in URDF order (leg-major joints)."""
    robot = jethexa()
    return list(robot.leg_names), list(robot.joint_names)


@functools.lru_cache(maxsize=None)
def leg_geometry():
    from jethexa_dynamics.control.ik import LegGeometry

    return LegGeometry.from_robot(jethexa())
