"""damage_monitor: decides the robot's morphology and publishes it on ``morphology`` (latched).

Inputs: the servo driver's per-servo statuses on ``/diagnostics`` (no reply with confirmation reads, stall =
position error under load; voltage/temperature outside the servo's own limits are reported, the LED alarm
setting never counts), and ``joint_states``: a joint without servo statuses (another driver, a bus behind
another board) that its publisher stops carrying is lost under the same rules (``JointPresenceTracker``).
Manual override: the ``morphology`` parameter (one entry per leg, -1 = automatic), e.g.
``ros2 param set /damage_monitor morphology "[3,3,3,3,0,0]"``. Service ``~/reset`` (std_srvs/Trigger)
clears latched faults. Detection rules: ``jethexa_dynamics.damage.detection.DamageDetector``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import MultiArrayDimension, UInt8MultiArray
from std_srvs.srv import Trigger

from jethexa_dynamics.nodes import params as node_params
from jethexa_dynamics.damage.detection import (DamageDetector, DetectorConfig, JointPresenceTracker, MorphologyChange,
                                               decode_servo_status)
from jethexa_dynamics.model import format_morphology
from jethexa_dynamics.nodes import messages as validate
from jethexa_dynamics.nodes.messages import InvalidMessage, morphology_to_wire
from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS, ThinNode, run
from jethexa_dynamics.nodes._robot import robot_names

_CONFIG_KEYS = ("no_reply_timeout", "min_missed_reads", "position_error_threshold",
                "position_error_hold", "latch")


def morphology_msg(links_per_leg, leg_names) -> UInt8MultiArray:
    """The ``morphology`` message (wire format: ``nodes.messages.morphology_to_wire``)."""
    data, label = morphology_to_wire(links_per_leg, leg_names)
    msg = UInt8MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(data), stride=len(data))]
    msg.data = data
    return msg


class DamageMonitor(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.DAMAGE_MONITOR, **kwargs)
        self.leg_names, self.joint_names = robot_names()
        self.detector = DamageDetector(self.joint_names, self.leg_names, self._config())
        self.current: Optional[List[int]] = None
        self.changes: List[MorphologyChange] = []
        self.last_servo_diag: Optional[float] = None
        self.servo_diag_messages = 0   # /diagnostics messages that carried servo statuses
        self.presence = JointPresenceTracker(self.joint_names)
        self.pub = self.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS)
        self.sub(DiagnosticArray, "/diagnostics", self._on_diagnostics, RELIABLE_QOS)
        self.sub(JointState, "joint_states", self._on_joint_states, SENSOR_QOS)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.rate_timer("check_rate", self._on_check, "check")
        self._decide(self.now_sec(), ["start-up"])

    def _config(self) -> DetectorConfig:
        return DetectorConfig(**{k: self.p[k] for k in _CONFIG_KEYS})

    def apply_params(self, changed: Dict[str, Any]) -> None:
        if any(k in changed for k in _CONFIG_KEYS):
            self.detector.config = self._config()
        if "morphology" in changed:
            self._decide(self.now_sec(), ["manual override %s" % list(changed["morphology"])])

    def _override(self) -> Optional[List[int]]:
        o = list(self.p["morphology"])
        return o if any(v >= 0 for v in o) else None

    def _decide(self, now: float, reasons: List[str]) -> None:
        new = self.detector.morphology(self._override())
        if new == self.current:
            return
        old = self.current
        self.current = new
        self.pub.publish(morphology_msg(new, self.leg_names))
        if old is not None:
            self.changes.append(MorphologyChange(now, old, new, reasons))
            self.get_logger().warning("morphology %s -> %s (%s)" % (
                format_morphology(old, self.leg_names), format_morphology(new, self.leg_names), "; ".join(reasons)))
        else:
            self.get_logger().info("morphology %s" % format_morphology(new, self.leg_names))

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        # the whole array is decoded before the detector sees any of it: one malformed servo status rejects
        # the message (InvalidMessage -> guard: counted on /diagnostics, rate-limited log line)
        healths = []
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            if "servo_id" not in values or "joint" not in values:
                continue  # not a servo status
            try:
                healths.append(decode_servo_status(values))
            except ValueError as exc:
                raise InvalidMessage("status %r: %s (whole message ignored)" % (st.name, exc)) from None
        if not healths:
            return
        now = self.now_sec()
        self.last_servo_diag = now
        self.servo_diag_messages += 1
        self._apply(now, self.detector.update(now, healths))

    def _on_joint_states(self, msg: JointState) -> None:
        """Presence evidence only: a joint absent from a VALID message. The whole message is validated first
        (known, unique names; sizes; finite values): a malformed message is rejected, never taken as evidence
        that the joints it leaves out are gone (issue 14: a flood of malformed joint_states)."""
        validate.joint_state(msg.name, msg.position, msg.velocity, msg.effort, self.joint_names)
        now = self.now_sec()
        self.presence.observe(now, list(msg.name))
        self._apply(now, self.detector.update_presence(now, self.presence))

    def _apply(self, now: float, new) -> None:
        if new:
            self._decide(now, ["%s: %s" % (f.joint, f.reason) for f in new])
            self._publish_status()

    def _on_reset(self, request, response):
        self.detector.reset()
        self._decide(self.now_sec(), ["reset"])
        response.success = True
        response.message = "faults cleared; morphology %s" % format_morphology(self.current, self.leg_names)
        return response

    def _on_check(self) -> None:
        self._publish_status()

    def _publish_status(self) -> None:
        now = self.now_sec()
        level, message = 0, "morphology %s" % format_morphology(self.current, self.leg_names)
        if self.last_servo_diag is None or now - self.last_servo_diag > self.p["servo_diagnostics_timeout"]:
            level, message = 1, message + "; no servo diagnostics (is servo_driver running?)"
        values = [("morphology", list(self.current)), ("legs", ",".join(self.leg_names)),
                  ("override", list(self.p["morphology"]))]
        values += [("fault " + j, f.reason) for j, f in sorted(self.detector.faults.items())]
        if self.detector.faults and level == 0:
            level = 1
        self.publish_diagnostics([self.node_status(message, level, values)])


NODE = DamageMonitor  # the class graph.node_class() finds


def main(args=None):
    return run(DamageMonitor, args)


if __name__ == "__main__":
    main()
