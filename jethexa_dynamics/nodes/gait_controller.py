"""gait_controller: ``cmd_vel`` (geometry_msgs/Twist) -> gait -> IK -> ``joint_commands`` at the control rate.

Holds the neutral stance when ``cmd_vel`` is older than ``cmd_vel_timeout`` (or zero). Follows
``morphology``: legs that lost links are not commanded and the gait is re-phased for the remaining legs
(``jethexa_dynamics.control.walking.WalkingGait``), without a restart -- but a leg stops being supported on
only when ``morphology/evidence`` (damage_monitor) says it carries nothing (a servo confirmed silent, the
model, the manual override: ``damage.evidence.SupportGate``); on weaker evidence the gait stands still on every
foot it has (state ``unconfirmed``, the reason on /diagnostics) until the evidence comes or the morphology is
corrected (this package's damage monitor probes such a leg first and publishes it on weak evidence only when the
probe cannot settle it). While ``morphology/evidence`` says the motion is unexplained (no morphology of the
identifier's bank explains it) or a joint is seized, the gait keeps its morphology and walks at
``unexplained_speed_scale`` of ``cmd_vel`` (a safe crawl; state ``crawl``) until the monitor clears it.

With ``recovery`` the gait is re-planned from the model for each morphology (statically stable
crawl with body shift, folded footless legs, blended switch; no stable gait -> safe stance). The planning
runs in a worker thread (``WalkingGait(background=True)``): the morphology callback returns at once, the
targets blend to an all-feet-down stance until the plan is ready, then to the new gait; the single-leg
losses and the paper's scenarios are planned ahead at start. The heading
hold (``control.heading``) trims the yaw rate from ``imu/data`` (gyro z) and ``predicted/odom`` (position);
a silent IMU -> the stance. /diagnostics carries ``active_gait`` and ``stability_margin`` (m, planned).

Active probe (``damage.probe_request``): a request on ``damage/probe`` from the morphology
authority (the damage monitor) for leg L stops the walk at once (state ``probe``: the other legs hold their
stance, ``cmd_vel`` is kept but not followed), brings L to the request's stance angles, and from its start time
(ROS clock) for its duration moves L's coxa and femur through ``LinkProbe.targets`` at every control tick (the
probe time read from the clock at the tick, so the motion follows the monitor's schedule whatever the ticks'
phase; targets within the URDF's joint limits like every command); then L goes back in one move of
``STANCE_MOVE_TIME`` to its stance, or where the gait holds it (folded, with recovery), and is left out of the
commands until it is there (re-sent, a 20 ms move would follow), the walk held meanwhile; then the walk goes on.
``action: cancel`` of that probe ends it early the same way. A stale, malformed or overlapping request is
rejected with one log line (``rejected damage/probe``, counted on /diagnostics); /diagnostics says ``probe``
(the leg and its end, or ``none``) and ``probes_run``.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Dict, Optional

import numpy as np

from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu
from std_msgs.msg import UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from jethexa_dynamics.control.heading import HeadingHold
from jethexa_dynamics.control.replan import common_morphologies
from jethexa_dynamics.control.walking import STANCE_MOVE_TIME, WalkingGait
from jethexa_dynamics.damage.evidence import SupportGate, evidence_from_values
from jethexa_dynamics.damage.probe import LinkProbe
from jethexa_dynamics.damage.probe_request import ProbeRequest
from jethexa_dynamics.model import format_morphology
from jethexa_dynamics.nodes import messages as validate, params as node_params
from jethexa_dynamics.nodes.authority import subscribe_morphology
from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS, ThinNode, run
from jethexa_dynamics.model.wire import morphology_from_wire
from jethexa_dynamics.nodes._robot import jethexa, leg_geometry

#: the states in which the gait steps (a crawl is walking at unexplained_speed_scale)
STEPPING = ("walking", "crawl")

_GAIT_KEYS = {"gait": "kind", "cycle_time": "cycle_time", "step_height": "step_height",
              "body_height": "body_height", "stance_radius": "stance_radius"}


def _with_leg(names, targets, leg_names, leg_targets):
    """The walker's (names, targets) with a leg's joints set to ``leg_targets`` (replaced where present)."""
    names, targets = list(names), [float(v) for v in targets]
    for n, v in zip(leg_names, leg_targets):
        if n in names:
            targets[names.index(n)] = float(v)
        else:
            names.append(n)
            targets.append(float(v))
    return names, targets


def _duration(seconds: float) -> Duration:
    ns = int(round(seconds * 1e9))
    return Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


class GaitController(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.GAIT_CONTROLLER, **kwargs)
        robot = jethexa()
        self.robot = robot
        self.leg_names = list(robot.leg_names)
        self.lower, self.upper = np.asarray(robot.joint_lower), np.asarray(robot.joint_upper)
        self.walker = WalkingGait(leg_geometry(), robot.joint_names, recovery=self.p["recovery"],
                                  robot=robot if self.p["recovery"] else None, background=True,
                                  **{v: self.p[k] for k, v in _GAIT_KEYS.items()})
        if self.p["recovery"]:   # plan the likely morphologies ahead, off the executor's thread
            self.walker.prefetch(common_morphologies(robot.description.n_joints, robot.leg_names))
        self._switches = self.walker.switches
        self.hold = self._make_hold()
        self._gyro = None
        self._yaw = None
        self._odom = None
        self.last_cmd_time: Optional[float] = None
        self.state = "stance"
        self.published = 0
        self.pub = self.create_publisher(JointTrajectory, "joint_commands", RELIABLE_QOS)
        self.sub(Twist, "cmd_vel", self._on_cmd_vel, RELIABLE_QOS, wake=False)   # taken at each control tick
        self.gate = SupportGate(self.leg_names)
        self.unexplained = False          # morphology/evidence: crawl at unexplained_speed_scale ...
        self.seized: tuple = ()           # ... and while a joint is seized (its links kept)
        self._cmd = (0.0, 0.0, 0.0)       # the last cmd_vel as clamped, before that scale
        self._held_said = ""
        # both from the morphology authority only (nodes.authority): anyone may publish on a topic
        self.morphology_sub = subscribe_morphology(self, self._on_morphology, LATCHED_QOS)
        self.evidence_sub = subscribe_morphology(self, self._on_evidence, LATCHED_QOS, "morphology/evidence",
                                                 DiagnosticStatus)
        # the active probe: it moves a leg, so from the morphology authority only, like the morphology
        self.probe: Optional[dict] = None      # the probe under way: request, LinkProbe, joints
        self.probes_run = 0
        self._returning: Optional[dict] = None  # the probed leg on its way back: names, stance, until, sent
        self._probe_ids: set = set()           # requests taken (the latched history replays them)
        self.probe_sub = subscribe_morphology(self, self._on_probe_request, LATCHED_QOS, "damage/probe",
                                              DiagnosticStatus)
        if self.p["recovery"]:
            self.sub(Imu, "imu/data", self._on_imu, SENSOR_QOS, wake=False, stamped=True, unit_quaternion=True)
            self.sub(Odometry, "predicted/odom", self._on_odom, RELIABLE_QOS, wake=False, stamped=True,
                     unit_quaternion=True)
        self.rate_timer("control_rate", self._on_tick, "control")
        self._diag_timer = self.timer(1.0, self._on_diag, "diagnostics")
        self._last_tick = time.monotonic()

    def _make_hold(self) -> HeadingHold:
        return HeadingHold(enabled=self.p["recovery"] and self.p["heading_hold"], k_yaw=self.p["heading_k_yaw"],
                           k_lat=self.p["heading_k_lat"], max_yaw_correction=self.p["heading_max_correction"],
                           imu_timeout=self.p["heading_imu_timeout"])

    def _on_imu(self, msg: Imu) -> None:
        """The gyro's yaw rate and, when the message carries an orientation (covariance[0] != -1), its yaw; the
        whole message checked first (stamp, finite values, a unit quaternion), as the predictor checks it."""
        self.check_stamp("imu/data", msg.header)
        w = validate.finite_vector("imu/data.angular_velocity", (msg.angular_velocity.x, msg.angular_velocity.y,
                                                                 msg.angular_velocity.z), 3)
        o = msg.orientation
        yaw = None
        if msg.orientation_covariance[0] != -1.0:
            x, y, z, qw = validate.imu_orientation((o.x, o.y, o.z, o.w), msg.orientation_covariance)
            # yaw of the filter's attitude (w, x, y, z): the heading hold then shares odometry's world frame
            yaw = math.atan2(2.0 * (qw * z + x * y), 1.0 - 2.0 * (y * y + z * z))
        self._gyro = float(w[2])
        if yaw is not None:
            self._yaw = yaw

    def _on_odom(self, msg: Odometry) -> None:
        self.check_stamp("predicted/odom", msg.header)
        pos, o = msg.pose.pose.position, msg.pose.pose.orientation
        p, _ = validate.pose((pos.x, pos.y, pos.z), (o.x, o.y, o.z, o.w), "predicted/odom.pose.pose")
        self._odom = (float(p[0]), float(p[1]))

    def apply_params(self, changed: Dict[str, Any]) -> None:
        if any(k.startswith("heading") for k in changed):
            self.hold = self._make_hold()   # ValueError (out of range) rejects the change
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
        self._cmd = tuple(float(c) for c in cmd)
        self._apply_command()
        self.last_cmd_time = time.monotonic()

    def _apply_command(self) -> None:
        scale = self.p["unexplained_speed_scale"] if self.crawling else 1.0
        self.walker.set_command([scale * c for c in self._cmd])

    def _on_morphology(self, msg: UInt8MultiArray) -> None:
        label = msg.layout.dim[0].label if msg.layout.dim else ""
        lpl = morphology_from_wire(list(msg.data), label, self.leg_names)
        self._follow(self.gate.request(lpl))

    def _on_evidence(self, msg: DiagnosticStatus) -> None:
        try:
            ev = evidence_from_values({kv.key: kv.value for kv in msg.values}, self.leg_names)
        except ValueError as exc:
            raise validate.InvalidMessage(str(exc)) from None
        if (ev.unexplained, ev.seized) != (self.unexplained, self.seized):
            self.unexplained, self.seized = ev.unexplained, ev.seized
            if self.crawling:
                self.get_logger().warning("the damage monitor finds %s: crawling at %.0f %% of cmd_vel" % (
                    self._crawl_reason(), 100.0 * self.p["unexplained_speed_scale"]))
            else:
                self.get_logger().info("motion explained again: cmd_vel at full scale")
            self._apply_command()
        self._follow(self.gate.set_evidence(ev))

    def _on_probe_request(self, msg: DiagnosticStatus) -> None:
        """A probe request (``damage.probe_request``): taken, or rejected (InvalidMessage: one log line)."""
        try:
            req = ProbeRequest.from_values({kv.key: kv.value for kv in msg.values}, self.leg_names)
            req.check_time(self.now_sec())
            if req.action == "probe":
                link = LinkProbe(self.robot, req.leg, spec=dataclasses.replace(
                    req.spec, command_period=1.0 / self.p["control_rate"]))   # ValueError: over the joints' limits
        except ValueError as exc:
            raise validate.InvalidMessage(str(exc)) from None
        if req.action == "cancel":
            if self.probe is not None and self.probe["request"].id == req.id:
                self._end_probe("cancelled by the damage monitor")
            return                    # a cancel of a probe over or never taken: nothing to do
        if req.id in self._probe_ids:
            return                    # the latched history again (a re-subscription): taken before
        if self.probe is not None:
            raise validate.InvalidMessage("probe request %d (%s): probe %d of %s under way" % (
                req.id, req.leg, self.probe["request"].id, self.probe["request"].leg))
        i = self.leg_names.index(req.leg)
        names = list(self.robot.joint_names[3 * i:3 * i + 3])
        self._probe_ids.add(req.id)
        self._returning = None
        self.probe = {"request": req, "link": link, "joints": np.arange(3 * i, 3 * i + 3), "names": names,
                      "stance": np.clip(req.stance, self.lower[3 * i:3 * i + 3], self.upper[3 * i:3 * i + 3]),
                      "started": False}
        self.get_logger().warning("probe %d of %s (damage monitor): walk stopped, the other legs hold their stance; "
                                  "%s moves for %.1f s from %.2f s on" % (
                                      req.id, req.leg, req.leg, req.spec.duration, req.t_start - self.now_sec()))

    def _end_probe(self, why: str) -> None:
        """The probe ends: the leg goes back in one move of STANCE_MOVE_TIME (to where the gait wants it -- a
        folded leg with recovery -- or else its stance), the others holding their stance; then the walk goes on."""
        req = self.probe["request"]
        self._returning = {"names": self.probe["names"], "stance": self.probe["stance"], "sent": False,
                           "until": time.monotonic() + STANCE_MOVE_TIME + 0.1}
        self.probe = None
        self.probes_run += 1
        self.get_logger().warning("probe %d of %s %s: %s back (its stance, or where the gait holds it), then "
                                  "walking on" % (req.id, req.leg, why, req.leg))

    def _probe_targets(self, move_time: float):
        """The probed leg's (names, targets [rad], move time [s]) at this tick: its stance until the start, then
        ``LinkProbe.targets`` at the probe time one tick ahead (the servo reaches it at the end of the move);
        None once the probe is over (it is ended here)."""
        pr = self.probe
        req = pr["request"]
        tau = self.now_sec() - req.t_start
        if tau >= req.spec.duration:
            self._end_probe("done")
            return None
        if tau + move_time <= 0.0:        # standing: the leg to its stance (re-sent: the servo may be elsewhere)
            return pr["names"], pr["stance"], STANCE_MOVE_TIME
        q = pr["link"].targets(pr["stance"], tau + move_time)
        i = pr["joints"]
        return pr["names"], np.clip(q, self.lower[i], self.upper[i]), move_time

    def _return_leg(self, names, targets, move_time):
        """The probed leg back after its probe: once, to the gait's own target for it (a folded leg with
        recovery) or else its stance, in STANCE_MOVE_TIME; left out of the next messages until that move is
        done (re-sent, each tick would restart it: a 20 ms move of the rest at the next one), then the walk."""
        r = self._returning
        if time.monotonic() >= r["until"]:
            self._returning = None
            return names, targets, move_time
        if r["sent"]:
            keep = [k for k, n in enumerate(names) if n not in r["names"]]
            return [names[k] for k in keep], [targets[k] for k in keep], move_time
        r["sent"] = True
        own = [targets[names.index(n)] for n in r["names"]] if all(n in names for n in r["names"]) else None
        names, targets = _with_leg(names, targets, r["names"], r["stance"] if own is None else own)
        return names, targets, STANCE_MOVE_TIME

    @property
    def crawling(self) -> bool:
        """Walk at ``unexplained_speed_scale``: the motion is unexplained or a joint is seized."""
        return self.unexplained or bool(self.seized)

    def _crawl_reason(self) -> str:
        why = ["the motion unexplained"] if self.unexplained else []
        return " and ".join(why + (["seized: " + ", ".join(self.seized)] if self.seized else []))

    def _follow(self, changed: bool) -> None:
        """The gait follows the gate's accepted morphology; a held one is said once (a leg that may
        still carry the body is never folded or lifted on weak evidence)."""
        if self.gate.held and self.gate.held != self._held_said:
            self.get_logger().warning("morphology %s not followed: %s; standing still on every foot (%s) until "
                                      "the evidence comes or the morphology is corrected" % (
                                          format_morphology(self.gate.requested, self.leg_names), self.gate.held,
                                          ",".join(self.walker.walking_legs)))
        self._held_said = self.gate.held
        if changed and self.walker.set_morphology(self.gate.accepted):
            self.hold.new_gait()
            self._log_gait("morphology %s" % format_morphology(self.gate.accepted, self.leg_names))

    def _log_gait(self, what: str) -> None:
        st = self.walker.status()
        self._switches = self.walker.switches
        self.get_logger().warning("%s: walking legs %s, gait %s%s%s" % (
            what, ",".join(self.walker.walking_legs), st["gait"],
            "" if self.walker.can_walk else " (holding the stance)", (": " + st["reason"]) if st["reason"] else ""))

    def close(self) -> None:
        """Stop the re-planning worker thread (called on shutdown)."""
        self.walker.close()

    def _on_tick(self) -> None:
        now = time.monotonic()
        dt, self._last_tick = now - self._last_tick, now
        fresh = self.last_cmd_time is not None and now - self.last_cmd_time <= self.p["cmd_vel_timeout"]
        moving = fresh and any(abs(c) > 1e-9 for c in self.walker.command) and self.probe is None
        gyro, yaw, odom, self._gyro, self._yaw, self._odom = self._gyro, self._yaw, self._odom, None, None, None
        imu_stale = False
        if self.hold.enabled and moving and self.walker.can_walk and not self.gate.held:
            trimmed = self.hold.update(self.walker.command, now, min(dt, 0.1), gyro_z=gyro, yaw=yaw, odom_xy=odom)
            imu_stale = self.hold.imu_stale(now)
            self.walker.set_trim(trimmed)
        state = "walking" if moving and self.walker.can_walk else ("stale" if not fresh else "stance")
        if state == "walking" and self.gate.held:
            state = "unconfirmed"
        if imu_stale and state == "walking":
            state = "imu_stale"
        if state == "walking" and self.crawling:
            state = "crawl"
        if self.probe is not None or self._returning is not None:
            state = "probe"
        if self.probe is not None:
            # the stand for a probe: the walker's stance at once (no blend: a re-planned gait's lasts up to a second,
            # and the probe's models start from the set-points held at its start), then held as it was until the end
            # (a plan or a morphology coming meanwhile waits: the probe is scored on those set-points)
            if "stand" not in self.probe:
                self.probe["stand"] = self.walker.stand()
            names, targets = self.probe["stand"]
        else:
            names, targets = self.walker.step(min(dt, 0.1), state in STEPPING)
        if self.walker.switches != self._switches and not self.walker.planning:   # a plan finished in the worker
            self._log_gait("re-planned for %s" % format_morphology(self.walker.links_per_leg, self.leg_names))
        move_time = 1.0 / self.p["control_rate"]
        if state not in STEPPING and self.state in STEPPING:
            move_time = STANCE_MOVE_TIME
        if self.probe is not None:
            # the probed leg beside the others' stance, in the same message (the one writer of joint_commands):
            # standing, every joint moves in STANCE_MOVE_TIME (as ActiveProbe does offline); probing, in a tick
            leg = self._probe_targets(1.0 / self.p["control_rate"])
            if leg is not None:
                names, targets = _with_leg(names, targets, leg[0], leg[1])
                move_time = leg[2]
        if self.probe is None and self._returning is not None:
            names, targets, move_time = self._return_leg(names, targets, move_time)
        if state != self.state:
            if state == "stale":
                self.get_logger().info("cmd_vel older than %.2f s: gait stopped, holding the stance"
                                       % self.p["cmd_vel_timeout"])
            elif state == "unconfirmed":
                self.get_logger().warning("holding the stance on every foot: %s" % self.gate.held)
            elif state == "imu_stale":
                self.get_logger().warning("imu/data silent for more than heading_imu_timeout = %.2f s: heading "
                                          "hold blind, holding the stance" % self.p["heading_imu_timeout"])
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
        st = self.walker.status()
        values = [("state", self.state), ("walking_legs", ",".join(self.walker.walking_legs)),
                  ("active_gait", st["gait"]), ("stability_margin", round(st["stability_margin"], 4)),
                  ("heading_hold", "on" if self.hold.enabled else "off"),
                  ("morphology", format_morphology(self.walker.links_per_leg, self.leg_names)),
                  ("morphology_requested", format_morphology(self.gate.requested, self.leg_names)),
                  ("morphology_held", self.gate.held or "no"), ("morphology_holds", self.gate.holds),
                  ("motion_unexplained", self.unexplained), ("seized", ",".join(self.seized)),
                  ("command_applied", [round(float(c), 4) for c in self.walker.applied]),
                  ("joint_commands_published", self.published),
                  ("probe", ("returning" if self._returning else "none") if self.probe is None else "%s until %.2f" % (
                      self.probe["request"].leg, self.probe["request"].t_end)), ("probes_run", self.probes_run)]
        level = 1 if self.gate.held or self.crawling else 0
        self.publish_diagnostics([self.node_status(self.state + (": " + self.gate.held if self.gate.held else ""),
                                                   level, values)])


NODE = GaitController  # the class graph.node_class() finds


def main(args=None):
    return run(GaitController, args, kernels_of="gait_controller")


if __name__ == "__main__":
    main()
