"""gait_controller: ``cmd_vel`` (geometry_msgs/Twist) -> gait -> IK -> ``joint_commands`` at the control rate.

Holds the neutral stance when ``cmd_vel`` is older than ``cmd_vel_timeout`` (or zero). Follows
``morphology``: legs that lost links are not commanded and the gait is re-phased for the remaining legs
(``jethexa_dynamics.control.walking.WalkingGait``), without a restart.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Twist
from std_msgs.msg import UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from jethexa_dynamics.nodes import messages as validate, params as node_params
from jethexa_dynamics.model import format_morphology
from jethexa_dynamics.nodes.messages import morphology_from_wire
from jethexa_dynamics.control.walking import WalkingGait
from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, ThinNode, run
from jethexa_dynamics.nodes._robot import jethexa, leg_geometry

STANCE_MOVE_TIME = 0.3  # s: servo move time when going to the stance (smooth stop)
_GAIT_KEYS = {"gait": "kind", "cycle_time": "cycle_time", "step_height": "step_height",
              "body_height": "body_height", "stance_radius": "stance_radius"}


def _duration(seconds: float) -> Duration:
    ns = int(round(seconds * 1e9))
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


class GaitController(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.GAIT_CONTROLLER, **kwargs)
        robot = jethexa()
        self.leg_names = list(robot.leg_names)
        self.walker = WalkingGait(leg_geometry(), robot.joint_names,
                                  **{v: self.p[k] for k, v in _GAIT_KEYS.items()})
        self.last_cmd_time: Optional[float] = None
        self.state = "stance"
        self.published = 0
        self.pub = self.create_publisher(JointTrajectory, "joint_commands", RELIABLE_QOS)
        self.sub(Twist, "cmd_vel", self._on_cmd_vel, RELIABLE_QOS)
        self.sub(UInt8MultiArray, "morphology", self._on_morphology, LATCHED_QOS)
        self.rate_timer("control_rate", self._on_tick, "control")
        self._diag_timer = self.timer(1.0, self._on_diag, "diagnostics")
        self._last_tick = time.monotonic()

    def apply_params(self, changed: Dict[str, Any]) -> None:
        gait = {v: changed[k] for k, v in _GAIT_KEYS.items() if k in changed}
        if gait:
            self.walker.configure(**gait)  # ValueError (unreachable stance) rejects the change

    def _on_cmd_vel(self, msg: Twist) -> None:
        cmd, clamped = validate.twist((msg.linear.x, msg.linear.y, msg.linear.z),
                                      (msg.angular.x, msg.angular.y, msg.angular.z),
                                      self.p["max_linear_speed"], self.p["max_angular_speed"])
        if clamped:
            self.reject("cmd_vel (clamped)", "command above max_linear_speed %.3g m/s / max_angular_speed "
                        "%.3g rad/s: clamped to %s" % (self.p["max_linear_speed"], self.p["max_angular_speed"],
                                                        [round(c, 4) for c in cmd]))
        self.walker.set_command(cmd)
        self.last_cmd_time = time.monotonic()

    def _on_morphology(self, msg: UInt8MultiArray) -> None:
        label = msg.layout.dim[0].label if msg.layout.dim else ""
        lpl = morphology_from_wire(list(msg.data), label, self.leg_names)
        if self.walker.set_morphology(lpl):
            self.get_logger().warning("morphology %s: walking legs %s%s" % (
                format_morphology(lpl, self.leg_names), ",".join(self.walker.walking_legs),
                "" if self.walker.can_walk else " (too few to walk: holding the stance)"))

    def _on_tick(self) -> None:
        now = time.monotonic()
        dt, self._last_tick = now - self._last_tick, now
        fresh = self.last_cmd_time is not None and now - self.last_cmd_time <= self.p["cmd_vel_timeout"]
        moving = fresh and any(abs(c) > 1e-9 for c in self.walker.applied)
        state = "walking" if moving and self.walker.can_walk else ("stale" if not fresh else "stance")
        names, targets = self.walker.step(min(dt, 0.1), state == "walking")
        move_time = 1.0 / self.p["control_rate"]
        if state != "walking" and self.state == "walking":
            move_time = STANCE_MOVE_TIME
        if state != self.state:
            if state == "stale":
                self.get_logger().info("cmd_vel older than %.2f s: gait stopped, holding the stance"
                                       % self.p["cmd_vel_timeout"])
            self.state = state
        if not names:
            return
        msg = JointTrajectory()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.joint_names = names
        msg.points = [JointTrajectoryPoint(positions=[float(v) for v in targets],
                                           time_from_start=_duration(move_time))]
        self.pub.publish(msg)
        self.published += 1

    def _on_diag(self) -> None:
        values = [("state", self.state), ("walking_legs", ",".join(self.walker.walking_legs)),
                  ("morphology", format_morphology(self.walker.links_per_leg, self.leg_names)),
                  ("command_applied", [round(float(c), 4) for c in self.walker.applied]), ("joint_commands_published", self.published)]
        self.publish_diagnostics([self.node_status(self.state, 0, values)])


NODE = GaitController  # the class graph.node_class() finds


def main(args=None):
    return run(GaitController, args, kernels_of="gait_controller")


if __name__ == "__main__":
    main()
