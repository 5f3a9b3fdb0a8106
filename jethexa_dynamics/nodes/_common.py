"""Shared rclpy plumbing of the thin nodes: declared/validated parameters, guarded callbacks, diagnostics.

Only wiring lives here; the rules (parameter ranges, message validation) are in ``nodes.params`` and ``nodes.messages``
(importable without rclpy).
Compatible with ROS 2 Humble's rclpy (``add_on_set_parameters_callback``, no newer APIs).
"""
from __future__ import annotations

import functools
import inspect
import math
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import rclpy
import rclpy.executors
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSCompatibility, QoSProfile, ReliabilityPolicy, qos_check_compatible
from rclpy.qos import qos_profile_sensor_data
from rclpy.type_support import check_for_type_support

try:   # rclpy >= Iron
    from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import PublisherEventCallbacks, SubscriptionEventCallbacks

from jethexa_dynamics.errors import OversizeMessage
from jethexa_dynamics.hardware.errors import ParameterError
from jethexa_dynamics.nodes import messages as _messages
from jethexa_dynamics.nodes.executor import POLLED, LeanExecutor
from jethexa_dynamics.nodes.messages import InputError, InvalidMessage
from jethexa_dynamics.nodes.param_spec import ParamError, ParamSet, ParamSpec

#: what ``ThinNode.guard`` rejects as bad input: the nodes' message/parameter checks (``InputError``:
#: ``InvalidMessage``, ``CannotServe``, ``ParamError``) and the hardware layer's bad arguments (joint limits)
INPUT_ERRORS = (InputError, ParameterError)

#: sensor streams (imu, joint_states, mocap): best effort, keep last 5
SENSOR_QOS = qos_profile_sensor_data
#: a sensor stream that a node takes at its other stream's wake-ups (``sub(..., wake=False)``) and whose every
#: sample counts: best effort like SENSOR_QOS, keep last 50 (0.5 s at 100 Hz), so that the samples between two
#: wake-ups of a starved node all wait (one whose pacing stream paused wakes only at its timers: the samples of
#: the last 0.5 s wait; damage_monitor's identifier sees a data gap there anyway, its joints paused too)
POLLED_SENSOR_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT,
                               durability=DurabilityPolicy.VOLATILE)
#: commands and computed outputs: reliable, keep last 10
RELIABLE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
#: morphology: reliable + transient local so late joiners get the current one (the last in the replayed
#: history); depth > 1 so quick successive changes are not collapsed for live subscribers
LATCHED_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

#: an arrival older than this [s] is taken as a clock step, not a queue: the handling time stands instead
MAX_ARRIVAL_AGE = 1.0
#: how often (s) a node looks for publishers/subscriptions on its topics with incompatible QoS (``check_qos``)
QOS_CHECK_PERIOD = 2.0
#: the GIL switch interval [s] of a process whose bus thread times servo moves and reads (servo_driver feeding the
#: body estimate, ``read_dither``; robot_emulator's emulated servos): measured in the sim graph on 2 loaded cores,
#: the emulated servos started a move 0.45 ms (median), 6.6 ms (p95) and 29 ms (p99) after it was written with
#: Python's 5 ms; 0.2, 1.8-3.7 and 3.9-5.2 ms with this
BUS_SWITCH_INTERVAL = 0.0005


#: the largest serialized message [bytes] a subscription decodes, by message type (the default for the others):
#: anything larger is rejected before it is decoded, at the cost of a copy. Each is 10-100 times the largest
#: message the graph sends on it (18 joints: a JointState of 0.8 kB, a JointTrajectory of 0.6 kB; the servo
#: driver's /diagnostics array 5-10 kB); a huge one costs its decoding first (rclpy builds a Python object per
#: element: 0.2 s for 10 000 statuses, 1 s for 10 000 trajectory points on this machine)
MAX_MESSAGE_BYTES = 64 * 1024
MAX_BYTES_BY_TYPE = {
    "sensor_msgs/msg/Imu": 4096, "geometry_msgs/msg/PoseStamped": 4096, "geometry_msgs/msg/Twist": 4096,
    "nav_msgs/msg/Odometry": 4096, "geometry_msgs/msg/InertiaStamped": 4096,
    "std_msgs/msg/UInt8MultiArray": 4096, "diagnostic_msgs/msg/DiagnosticStatus": 16 * 1024,
    "sensor_msgs/msg/JointState": 16 * 1024, "trajectory_msgs/msg/JointTrajectory": 16 * 1024,
}
def decoder(msg_type, topic: str = "") -> Callable[[bytes], Any]:
    """A function that decodes a serialized ``msg_type`` (a ``raw=True`` subscription's message on ``topic``);
    bytes that do not decode as one (truncated, another type's) raise ``InvalidMessage``."""
    check_for_type_support(msg_type)
    name = msg_type.__name__

    def decode(raw):
        try:
            return _rclpy.rclpy_deserialize(raw, msg_type)
        except RuntimeError:       # rclpy's RMWError: the middleware's decoder refused the bytes
            raise InvalidMessage("%s: %d bytes that do not decode as a %s" % (topic or name, len(raw), name)) \
                from None
    return decode


def type_name(msg_type) -> str:
    """``pkg/msg/Name`` of a message class."""
    return "%s/msg/%s" % (msg_type.__module__.split(".")[0], msg_type.__name__)


def max_bytes(msg_type) -> int:
    """The largest serialized ``msg_type`` a subscription decodes (``MAX_BYTES_BY_TYPE``)."""
    return MAX_BYTES_BY_TYPE.get(type_name(msg_type), MAX_MESSAGE_BYTES)


def switch_for_bus() -> None:
    """Let a bus thread of this process get the GIL within ``BUS_SWITCH_INTERVAL`` (never lengthen a shorter one):
    servo_driver's and robot_emulator's threads time servo moves and reads."""
    sys.setswitchinterval(min(sys.getswitchinterval(), BUS_SWITCH_INTERVAL))


_PTYPE = {
    "bool": Parameter.Type.BOOL, "int": Parameter.Type.INTEGER, "double": Parameter.Type.DOUBLE,
    "string": Parameter.Type.STRING, "int_array": Parameter.Type.INTEGER_ARRAY,
    "double_array": Parameter.Type.DOUBLE_ARRAY, "string_array": Parameter.Type.STRING_ARRAY,
}


def _descriptor(spec: ParamSpec) -> ParameterDescriptor:
    # Type and range are checked by ParamSpec.validate in our own callback (rclpy's descriptor checks would
    # reject silently, before any callback could log the line the user needs), so the descriptor carries
    # them in its description and allows dynamic typing (an integer for a double is accepted).
    return ParameterDescriptor(name=spec.name, type=_PTYPE[spec.kind].value, description=spec.full_description(),
                               additional_constraints=spec.range_text(), read_only=spec.read_only,
                               dynamic_typing=True)


def stamp_to_sec(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


class CpuLoad:
    """CPU time of a node's work by stage: each guarded callback under its topic or timer name, worker threads
    under theirs. ``add(stage, seconds)`` takes the CPU time of the calling thread (``time.thread_time``: what
    the stage computed, not the time it waited for the interpreter lock or a core), so the figures scale to
    another processor by its per-core speed. ``values(now)`` gives, per stage, the total CPU seconds and the
    calls since start, and the load over the interval since the previous ``values`` call in ms of CPU per s
    (10 ms/s = 1 % of a core)."""

    def __init__(self, now: float = 0.0):
        self.total: Dict[str, float] = {}
        self.calls: Dict[str, int] = {}
        self._last: Dict[str, float] = {}
        self._last_t = now

    def add(self, stage: str, seconds: float) -> None:
        self.total[stage] = self.total.get(stage, 0.0) + seconds
        self.calls[stage] = self.calls.get(stage, 0) + 1

    def values(self, now: float) -> List[Tuple[str, Any]]:
        """``[("cpu_ms_per_s <stage>", ...), ("cpu_s <stage>", ...), ("calls <stage>", ...)]``, stages sorted."""
        dt = now - self._last_t
        out: List[Tuple[str, Any]] = []
        for stage in sorted(self.total):
            total = self.total[stage]
            rate = 1e3 * (total - self._last.get(stage, 0.0)) / dt if dt > 0.0 else math.nan
            out += [("cpu_ms_per_s " + stage, rate), ("cpu_s " + stage, total), ("calls " + stage, self.calls[stage])]
            self._last[stage] = total
        self._last_t = now
        return out


class ThinNode(Node):
    """A node whose parameters come from a :class:`ParamSet` and whose callbacks never kill it.

    * ``self.p`` holds the current (validated) parameter values.
    * ``apply_params(changed)`` (override) is called with validated changes at run time; raising
      ``ValueError`` there rejects the change.
    * ``guard(topic)`` wraps a subscription callback: the project's input errors (``INPUT_ERRORS``) -> one
      log line + rejected count, the node keeps serving; anything else is a bug and propagates with its
      traceback (a plain ``ValueError`` from deep inside is not mistaken for rejected input).
    """

    def __init__(self, params: ParamSet, node_name: Optional[str] = None, **kwargs):
        super().__init__(node_name or params.node_name, **kwargs)
        # Callbacks and run-time parameter changes hold this lock: set_parameters may come from another thread
        # (a multi-threaded executor, an in-process caller) and must not change the state a callback is using.
        self._lock = threading.RLock()
        self._t0 = time.monotonic()
        self.cpu = CpuLoad(0.0)   # on the node clock, t()
        self.params = params
        self.p: Dict[str, Any] = {}
        self.rejected: Dict[str, int] = {}
        self.last_rejection: str = ""
        self.errors = 0
        self._log_times: Dict[str, float] = {}
        self._rate_timers: Dict[str, Tuple[Any, Callable, str]] = {}
        self.qos_incompatible: Dict[Tuple[str, str, str], str] = {}   # (topic, endpoint kind, node) -> policy
        #: more (key, value) pairs for the node's own /diagnostics status, each call of each source at each report
        self.status_sources: List[Callable[[], Sequence[Tuple[str, Any]]]] = []
        for spec in params:
            self.p[spec.name] = self._declare(spec)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.timer(QOS_CHECK_PERIOD, self.check_qos, "qos check")

    # ------------------------------------------------------------------ endpoints
    # rclpy gives every publisher and subscription default event handlers (incompatible QoS, incompatible
    # type): two waitables each, which its executor adds to the wait set and checks at EVERY wake-up, in Python
    # (~3 µs each here, and a node has 10-16 endpoints counting /parameter_events). Ours are created without
    # them; ``check_qos`` gives the same warning from the ROS graph every QOS_CHECK_PERIOD s instead.
    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):
        kwargs.setdefault("event_callbacks", SubscriptionEventCallbacks(use_default_callbacks=False))
        return super().create_subscription(msg_type, topic, callback, qos_profile, **kwargs)

    def create_publisher(self, msg_type, topic, qos_profile, **kwargs):
        kwargs.setdefault("event_callbacks", PublisherEventCallbacks(use_default_callbacks=False))
        return super().create_publisher(msg_type, topic, qos_profile, **kwargs)

    def check_qos(self) -> Dict[Tuple[str, str, str], str]:
        """Publishers of the topics this node subscribes to, and subscriptions of those it publishes, whose QoS
        cannot match (``rclpy.qos.qos_check_compatible``: no message would pass): one warning per new one, and
        ``qos_incompatible`` on /diagnostics. Returns {(topic, 'publisher'|'subscription', node): policy}."""
        found: Dict[Tuple[str, str, str], str] = {}
        mine = self.get_fully_qualified_name()

        def name(info):
            return info.node_namespace.rstrip("/") + "/" + info.node_name

        # both sides as the graph reports them (the QoS the middleware resolved: a local profile's unset
        # deadline or lease reads as a mismatch against a resolved one)
        for topic in sorted({e.topic_name for e in (*self.subscriptions, *self.publishers)}):
            subs = [(name(info), info.qos_profile) for info in self.get_subscriptions_info_by_topic(topic)]
            for pub in self.get_publishers_info_by_topic(topic):
                pub_name = name(pub)
                for sub_name, sub_qos in subs:
                    if (pub_name == mine) == (sub_name == mine):
                        continue                  # one side must be this node, the other not
                    compatibility, reason = qos_check_compatible(pub.qos_profile, sub_qos)
                    if compatibility == QoSCompatibility.ERROR:
                        key = (topic, "subscription", sub_name) if pub_name == mine else (topic, "publisher", pub_name)
                        found[key] = reason
        for key in sorted(found.keys() - self.qos_incompatible.keys()):
            self.get_logger().warning("%s %s on '%s' has incompatible QoS, no messages will pass: %s"
                                      % (key[1], key[2], key[0], found[key]))
        self.qos_incompatible = found
        return found

    # ------------------------------------------------------------------ parameters
    def _declare(self, spec: ParamSpec) -> Any:
        desc = _descriptor(spec)
        try:
            value = self.declare_parameter(spec.name, spec.default, desc).value
            return spec.validate(value)
        except Exception as exc:  # noqa: BLE001 - a bad start-up override must not kill the node
            if isinstance(exc, ParamError):
                why = str(exc)
            else:
                why = "parameter '%s' rejected at start-up: %s (allowed: %s)" % (spec.name, exc, spec.range_text())
            self.reject("parameter " + spec.name, why + "; using the default %r" % (spec.default,))
            if self.has_parameter(spec.name):
                self.set_parameters([Parameter(spec.name, _PTYPE[spec.kind], spec.default)])
            else:
                self.declare_parameter(spec.name, spec.default, desc, ignore_override=True)
            return spec.default

    def _on_set_parameters(self, params: List[Parameter]) -> SetParametersResult:
        with self._lock:
            return self._set_parameters_locked(params)

    def _set_parameters_locked(self, params: List[Parameter]) -> SetParametersResult:
        changed = {}
        try:
            for prm in params:
                if prm.name not in self.params:
                    continue  # e.g. use_sim_time
                spec = self.params[prm.name]
                if spec.read_only and prm.value != self.p.get(prm.name):
                    raise ParamError("parameter '%s' is read-only (set it at start-up)" % prm.name)
                changed[prm.name] = spec.validate(prm.value)
            if changed:
                old = dict(self.p)
                self.p.update(changed)
                try:
                    self.apply_params(changed)
                except Exception:
                    self.p = old
                    raise
                for key in changed:
                    if key in self._rate_timers:
                        timer, callback, name = self._rate_timers[key]
                        timer.cancel()
                        self.destroy_timer(timer)
                        self.rate_timer(key, callback, name)
        except ValueError as exc:
            self.reject("parameter", str(exc))
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def apply_params(self, changed: Dict[str, Any]) -> None:
        """Hook: react to validated run-time parameter changes (raise ValueError to reject)."""

    # ------------------------------------------------------------------ rejections and guards
    def reject(self, topic: str, why: str, once: bool = False) -> None:
        """Count a rejected message/parameter and log one line (at most one per topic per 2 s; with ``once``
        only the first of ``topic``: the rest are counted on /diagnostics, not logged)."""
        first = topic not in self.rejected
        self.rejected[topic] = self.rejected.get(topic, 0) + 1
        self.last_rejection = "%s: %s" % (topic, why)
        if once:
            if first:
                self.get_logger().warning("rejected %s: %s (further ones are counted on /diagnostics, not logged)"
                                          % (topic, why))
            return
        now = time.monotonic()
        if now - self._log_times.get(topic, -1e9) >= 2.0:
            self._log_times[topic] = now
            n = self.rejected[topic]
            more = " (%d rejected so far)" % n if n > 1 else ""
            self.get_logger().warning("rejected %s: %s%s" % (topic, why, more))

    def guard(self, topic: str, fn: Callable) -> Callable:
        """Wrap a callback: bad input (``INPUT_ERRORS``) is rejected with a log line; anything else is a bug:
        counted in ``errors``, logged with the topic, and re-raised with its traceback. The callback runs
        under the node's lock, so a parameter change never lands in the middle of it. Its CPU time is counted
        under ``topic`` in ``self.cpu``, a rejected call's under ``rejected <topic>`` (what garbage costs). A
        message rejected for its size (``OversizeMessage``) is counted under ``<topic> (oversize)``."""
        cpu = self.cpu
        rejected_stage, oversize = "rejected " + topic, topic + " (oversize)"

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            c0 = time.thread_time()
            stage = topic
            try:
                with self._lock:
                    return fn(*args, **kwargs)
            except INPUT_ERRORS as exc:
                stage = rejected_stage
                self.reject(oversize if isinstance(exc, OversizeMessage) else topic, str(exc))
            except Exception as exc:
                self.errors += 1
                self.get_logger().error("%s: unexpected %s (a bug, not bad input): %s" % (
                    topic, type(exc).__name__, exc))
                raise
            finally:
                cpu.add(stage, time.thread_time() - c0)
            return None

        # rclpy's executor looks at a timer callback's signature at every call (for a TimerInfo parameter):
        # ~20 µs through functools.wraps' __wrapped__ to a bound method, 2 µs when it is given here
        try:
            wrapped.__signature__ = inspect.signature(fn)
        except (TypeError, ValueError):
            pass
        return wrapped

    def intake(self, msg_type, topic: str, callback: Callable, stamped: bool = False,
               decode: bool = True, unit_quaternion: bool = False) -> Callable:
        """``callback(msg)`` (or ``callback(msg, info)``) behind the checks a serialized message passes before it
        is decoded, cheapest first: its size (``max_bytes``: a huge message would cost its decoding first; fewer
        bytes than an empty message's cannot decode),
        with ``stamped`` its header stamp (read from the first bytes; ``messages.stamp`` against the node's
        ``stamp_tolerance``: stale, future and absurd stamps), and with ``unit_quaternion`` its quaternion
        (``messages.QUATERNION_AT``; an Imu's only when its orientation covariance[0] is not -1): finite and of unit
        norm, as ``callback`` checks it after decoding, so that garbage costs less than a message taken (the
        decoding is most of a small message's cost). Returns a function of the serialized message
        (``raw=True`` subscriptions) that raises ``InvalidMessage`` naming the field, or decodes the message
        (``decode=False``: hands the serialized message on, for ``decoder(msg_type)`` later) and returns what
        ``callback`` returns."""
        decode_raw = decoder(msg_type, topic)
        limit = max_bytes(msg_type)
        least = len(_rclpy.rclpy_serialize(msg_type(), msg_type))     # every string and array empty
        field = topic + ".header.stamp"
        if unit_quaternion and msg_type.__name__ not in _messages.QUATERNION_AT:
            raise ValueError("unit_quaternion: %s has no quaternion layout in messages.QUATERNION_AT"
                             % msg_type.__name__)
        quaternion_of = msg_type.__name__ if unit_quaternion else ""

        def checked(raw):
            n = len(raw)
            if n > limit:
                raise OversizeMessage("%s: serialized message of %d bytes, more than the %d a %s may have here"
                                      % (topic, n, limit, msg_type.__name__))
            if n < least:
                raise InvalidMessage("%s: serialized message of %d bytes, fewer than the %d of an empty %s"
                                     % (topic, n, least, msg_type.__name__))
            if stamped:
                stamp = _messages.raw_stamp(raw)
                if stamp is not None:
                    _messages.stamp(field, stamp[0], stamp[1], self.now_sec(), self.p["stamp_tolerance"])
            if quaternion_of:
                _messages.raw_unit_quaternion(raw, quaternion_of, topic)
            return decode_raw(raw) if decode else raw

        try:
            with_info = len(inspect.signature(callback).parameters) == 2
        except (TypeError, ValueError):
            with_info = False
        if with_info:
            def take(raw, info):
                return callback(checked(raw), info)
        else:
            def take(raw):
                return callback(checked(raw))
        return take

    def check_stamp(self, topic: str, header) -> float:
        """A decoded message's ``header`` stamp against the node's ``stamp_tolerance`` (``messages.stamp``:
        ``InvalidMessage`` naming ``<topic>.header.stamp``); returns it [s, 0 when unset]."""
        return _messages.stamp(topic + ".header.stamp", header.stamp.sec, header.stamp.nanosec, self.now_sec(),
                               self.p["stamp_tolerance"])

    def sub(self, msg_type, topic: str, callback: Callable, qos=RELIABLE_QOS, wake: bool = True,
            stamped: bool = False, decode: bool = True, unit_quaternion: bool = False):
        """A guarded subscription, its messages taken serialized and checked before they are decoded
        (``intake``: size; with ``stamped`` the header stamp against ``stamp_tolerance``; with ``unit_quaternion``
        its quaternion; ``decode=False``: the callback gets the serialized message). ``wake=False``: polled
        (``nodes.executor``): its messages do not wake the executor but are taken at the node's next wake-up (its
        cycle timer or pacing topic), before the cycle."""
        sub = self.create_subscription(msg_type, topic, self.guard(topic, self.intake(
            msg_type, topic, callback, stamped, decode, unit_quaternion)), qos, raw=True)
        if not wake:
            setattr(sub, POLLED, True)
        return sub

    def timer(self, period: float, callback: Callable, name: str = "timer"):
        return self.create_timer(period, self.guard(name, callback))

    def rate_timer(self, param: str, callback: Callable, name: str):
        """A guarded timer at ``self.p[param]`` Hz, re-created whenever that parameter changes."""
        timer = self.timer(1.0 / self.p[param], callback, name)
        self._rate_timers[param] = (timer, callback, name)
        return timer

    # ------------------------------------------------------------------ diagnostics
    def node_status(self, message: str = "running", level: int = 0,
                    values: Sequence[Tuple[str, Any]] = ()) -> DiagnosticStatus:
        """The node's own status: rejected messages/parameters and unexpected errors."""
        kv = [("rejected_total", sum(self.rejected.values())), ("errors", self.errors)]
        kv += [("rejected " + t, n) for t, n in sorted(self.rejected.items())]
        if self.last_rejection:
            kv.append(("last_rejection", self.last_rejection))
        if self.qos_incompatible:
            kv.append(("qos_incompatible", "; ".join("%s %s on %s: %s" % (k[1], k[2], k[0], why)
                                                     for k, why in sorted(self.qos_incompatible.items()))))
        for source in self.status_sources:
            kv += list(source())
        kv += list(values)
        kv += self.cpu.values(self.t())
        if (self.errors or self.qos_incompatible) and level == 0:
            level = 1
        return status(self.get_name() + ": node", message, level, kv, hardware_id=self.get_name())

    def publish_diagnostics(self, statuses: Sequence[DiagnosticStatus]) -> None:
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = list(statuses)
        self.diag_pub.publish(arr)

    def now_sec(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def t(self) -> float:
        """Node time [s]: seconds since the node started (monotonic), the clock of the models the node feeds."""
        return time.monotonic() - self._t0

    def arrival_age(self) -> float:
        """Seconds since the message being handled arrived (rmw's receive time, which ``LeanExecutor`` hands
        over): a message taken at the node's next cycle (a polled subscription) or by a starved executor is
        placed when it arrived, not when it was handled. 0 when the executor does not say (rclpy's own) or the
        age is absurd. Call it from a subscription's callback only."""
        received = getattr(self.executor, "received_ns", 0)
        if not received:
            return 0.0
        age = (time.time_ns() - received) * 1e-9
        return age if 0.0 <= age <= MAX_ARRIVAL_AGE else 0.0

    def arrival_time(self) -> float:
        """Node time [s] (``t``) at which the message being handled arrived (``arrival_age``)."""
        return self.t() - self.arrival_age()

    def stamp_time(self, stamp, max_age: float = math.inf) -> float:
        """Node time of a measurement's header stamp: now minus its age on the ROS clock, so a sample that
        waited in a queue is placed when it was measured; the receipt time if the stamp is unset, in the
        future or older than ``max_age`` [s]."""
        now = self.t()
        if stamp.sec == 0 and stamp.nanosec == 0:
            return now
        age = self.now_sec() - stamp_to_sec(stamp)
        return now - age if 0.0 <= age <= max_age else now


def status(name: str, message: str, level: int, values: Sequence[Tuple[str, Any]],
           hardware_id: str = "") -> DiagnosticStatus:
    s = DiagnosticStatus()
    s.level = bytes([level]) if isinstance(DiagnosticStatus().level, bytes) else level
    s.name = name
    s.message = message
    s.hardware_id = hardware_id
    s.values = [KeyValue(key=str(k), value=_fmt(v)) for k, v in values]
    return s


def level_of(s: DiagnosticStatus) -> int:
    lv = s.level
    return lv[0] if isinstance(lv, (bytes, bytearray)) else int(lv)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else "%.6g" % v
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _init_without_rclpy_signal_handlers(args) -> None:
    """rclpy's own SIGINT handler shuts the context down at once, from the signal, possibly while a node's
    worker thread (the servo bus thread) is inside a publish -- a use-after-free in the middleware that was
    seen as a segfault on Ctrl-C. Without it, ``run``'s own handlers (below) stop the spin loop and ``run``
    shuts down in order: node threads (``close``), executor, node, then rclpy."""
    try:
        from rclpy.signals import SignalHandlerOptions
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except (ImportError, TypeError):  # rclpy without the option: its handlers are replaced by ours below
        rclpy.init(args=args)


#: longest time (s) the spin loop waits before it looks at the stop flag again
SPIN_POLL = 0.1


def _install_stop_handlers(stop: List[int]) -> bool:
    """SIGINT and SIGTERM append to ``stop`` and raise nothing. Installed explicitly, so a node started
    from a shell that ignores SIGINT (a background job: Python then keeps SIG_IGN) still stops. Raising
    from the handler instead would land the exception at any bytecode, e.g. inside rclpy's ``take_message``
    argument conversion, where pybind11 turned it into ``RuntimeError: Unable to convert call argument``
    (exit 1, seen once in fourteen Ctrl-C). Only the main thread can install handlers."""
    if threading.current_thread() is not threading.main_thread():
        return False

    def on_signal(signum, frame):
        stop.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    return True


def _node_name(args, default: str) -> str:
    """The node name after a ``__node:=`` / ``__name:=`` remap in the command line, else ``default``."""
    for a in (sys.argv if args is None else args):
        for prefix in ("__node:=", "__name:="):
            if isinstance(a, str) and a.startswith(prefix):
                return a[len(prefix):]
    return default


def prepare_kernels(node: str, stop: List[int], args=None) -> None:
    """Compile or load the numba kernels ``node`` uses (``warmup.NODE_KERNELS``) before ``rclpy.init``,
    logging what happens and how long it took. The work runs in a thread while the main thread waits on it
    in short steps, so SIGINT/SIGTERM end the process at once (exit 0) even in the middle of an LLVM call;
    numba writes each cache file whole (temporary file + rename), so nothing half-written is left."""
    from rclpy.logging import get_logger

    from jethexa_dynamics import warmup

    groups = warmup.NODE_KERNELS.get(node, ())
    if not groups:
        return
    logger = get_logger(_node_name(args, node))
    failure: List[BaseException] = []

    def work():
        try:
            warmup.ensure_kernels(groups, log=logger.info)
        except BaseException as exc:  # handed to the main thread, which raises it (traceback shown)
            failure.append(exc)

    worker = threading.Thread(target=work, name="numba-warmup", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(SPIN_POLL)
        if stop:
            logger.info("stopped by signal %d while preparing the numba kernels; what was compiled so far "
                        "stays cached" % stop[0])
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)  # the compiler thread may be inside LLVM: do not wait for it
    if failure:
        raise failure[0]


def run(factory: Callable[..., Node], args=None, executor_cls=None, kernels_of: str = "") -> int:
    """``main()`` of every node: (compile or load the kernels of node ``kernels_of``), init, spin until
    SIGINT/SIGTERM or shutdown, then ``close()`` the node's threads, shut the executor down and destroy the
    node -- in that order, after spinning has stopped, so no callback runs into a destroyed entity."""
    return run_nodes([factory], args, executor_cls, (kernels_of,) if kernels_of else ())


def run_nodes(factories: Sequence[Callable[..., Node]], args=None, executor_cls=None,
              kernels_of: Sequence[str] = ()) -> int:
    """:func:`run` for several nodes in one process, on one executor (the ``robot`` executable): the
    kernels of every node in ``kernels_of`` first, the nodes built in order, closed in reverse order."""
    stop: List[int] = []
    handlers = _install_stop_handlers(stop)
    for name in kernels_of:
        prepare_kernels(name, stop, args)
    if stop:  # a signal arrived before rclpy was even started
        return 0
    _init_without_rclpy_signal_handlers(args)
    if handlers:
        _install_stop_handlers(stop)  # again: an rclpy without SignalHandlerOptions installed its own
    nodes: List[Node] = []
    executor = None
    try:
        executor = (executor_cls or LeanExecutor)()
        for factory in factories:
            nodes.append(factory())
            executor.add_node(nodes[-1])
        while not stop and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_POLL)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass  # KeyboardInterrupt: run() called from a thread other than the main one, no handlers there
    finally:
        for node in reversed(nodes):
            close = getattr(node, "close", None)
            if close is not None:
                close()
        if executor is not None:
            executor.shutdown()
        for node in reversed(nodes):
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0
