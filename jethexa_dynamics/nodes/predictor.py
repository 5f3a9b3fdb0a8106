"""predictor: the modular whole-body model as a real-time predictor next to the robot.

Inputs: ``joint_commands`` (what the servos are told; or ``joint_states`` with ``joint_source:
joint_states``), ``joint_states`` (the joints read in one bus cycle, stamped with the read time),
``imu/data`` (filtered orientation), ``mocap/pose`` (optional ground truth), ``morphology`` (latched). The
model (any ``predictors.base.Predictor`` of the registry) integrates the floating-base dynamics with contact
and re-anchors every ``horizon`` seconds on the newest measurements stamped at or before the anchor time
(measurements carry their header stamp, mapped onto the node's clock).

Outputs at ``rate``: ``predicted/pose`` (geometry_msgs/PoseStamped) and ``predicted/odom`` (nav_msgs/Odometry,
``odom`` -> ``base_link``; twist = the model's base twist, linear and angular, in ``base_link``);
``measured/pose`` (orientation from the IMU filter, position from mocap when
fresh); ``prediction/error`` (std_msgs/Float64MultiArray: predicted - measured roll, pitch, yaw [rad] and
x, y, z [m], NaN when not measured); with ``publish_slip`` the slip model's ``slip/pose`` and
``slip/odom``. An output without subscribers is neither built nor published (its cost is the publish); the
error on ``/diagnostics`` is then computed there. On ``/diagnostics``: the cycle time p50/p99 [ms] (wall)
with its stages ``dynamics_*`` and ``publishing_*``, and the CPU time of every callback (``cpu_ms_per_s
<topic>``: message handling per input topic, ``predict`` = the cycles).

The cycle runs at ``rate``: with ``pace_on_imu``, right after each ``imu/data`` sample while the IMU publishes
at that rate (within 10 %; the launch files run both at 100 Hz), else on the node's timer (``nodes/pacing.py``:
one executor wake-up per period instead of two). ``paced_by``, ``cycles_paced_by_imu`` and ``cycles_on_timer``
on /diagnostics say which.

When the cycles run late (``degrade``; ``nodes/degrade.RateGovernor``: more than ``degrade_late_fraction`` of
the cycles due over 2 s late or not run, while the cycles take ``degrade_min_cpu`` of a core), the cycle rate
is halved, in steps down to ``degrade_min_rate``, and doubled again after ``degrade_recover`` s on time; paced by
the IMU, the cycle then runs on every 2nd, 4th, ... sample. /diagnostics says so at WARN: ``degraded``, ``effective_rate_hz``, ``degraded_reason``.
"""
from __future__ import annotations

import time
from typing import Any, Dict

import numpy as np
from geometry_msgs.msg import InertiaStamped, PoseStamped
from nav_msgs.msg import Odometry
from rclpy.parameter import Parameter
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory

from jethexa_dynamics.model import format_morphology
from jethexa_dynamics.model.body_params import BodyParams, body_of, set_body
from jethexa_dynamics.nodes import messages as validate, params as node_params
from jethexa_dynamics.nodes.authority import subscribe_morphology
from jethexa_dynamics.nodes.degrade import RateGovernor
from jethexa_dynamics.model.wire import morphology_from_wire
from jethexa_dynamics.nodes.messages import MeasuredPose
from jethexa_dynamics.nodes.pacing import CYCLE_TIMER, CyclePacer, arm_timers
from jethexa_dynamics.predictors.base import CycleStats, Predictor
from jethexa_dynamics.predictors.error_metric import ERROR_FIELDS, pose_error
from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS, ThinNode, run, stamp_to_sec
from jethexa_dynamics.nodes._robot import jethexa
from jethexa_dynamics.predictors.registry import make_predictor
from jethexa_dynamics.sim.engine import KERNEL_CPU

SLIP = "slip"
#: a header stamp older than this (or in the future) is not trusted: the receipt time is used instead
MAX_STAMP_AGE = 0.5


def _set_pose(msg_pose, pos, quat_wxyz) -> None:
    msg_pose.position.x, msg_pose.position.y, msg_pose.position.z = map(float, pos)
    q = msg_pose.orientation
    q.w, q.x, q.y, q.z = map(float, quat_wxyz)


class PredictorNode(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.PREDICTOR, **kwargs)
        self.status_sources.append(KERNEL_CPU.status_values)    # the engines' nogil kernel, process-wide
        robot = jethexa()
        self.leg_names = list(robot.leg_names)
        self.joint_names = list(robot.joint_names)
        self.lower, self.upper = np.asarray(robot.joint_lower), np.asarray(robot.joint_upper)
        self.q_cmd = np.zeros(len(self.joint_names))
        self.morphology = [3] * len(self.leg_names)
        self.measured = MeasuredPose(self.p["mocap_timeout"])
        self.stats = CycleStats(self.p["stats_window"])
        self.stage_stats = self._stage_stats()
        self.last_error = np.full(6, np.nan)
        self.last_prediction = None    # (t, position, quaternion) of the newest cycle's main model
        self.models: Dict[str, Predictor] = {}
        self.model_error = ""
        self.body_source = "urdf"        # the models' body: urdf, parameters (body_mass, body_com_offset), estimate
        self.body_estimates = 0          # body/inertia messages taken (body_estimate)
        self._own_body = None            # with body_estimate: the models' robot, its body set in place
        try:
            BodyParams(self.p["body_mass"], tuple(self.p["body_com_offset"]))
        except ValueError as exc:  # a bad body from the start-up parameters: the URDF's, said once
            self.reject("parameter body_mass", "%s; using the URDF's body" % exc)
            self.p["body_mass"], self.p["body_com_offset"] = 0.0, [0.0, 0.0, 0.0]
            self.set_parameters([Parameter("body_mass", value=0.0), Parameter("body_com_offset", value=[0.0] * 3)])
        try:
            self._build_models()
        except ValueError as exc:  # e.g. a model that is not installed: fall back to the default, keep serving
            default = self.params["predictor"].default
            self.reject("parameter predictor", "%s; using %s" % (exc, default))
            self.p["predictor"] = default
            self.set_parameters([Parameter("predictor", value=default)])
            try:
                self._build_models()
            except ValueError as exc2:
                self.model_error = str(exc2)
                self.get_logger().error("no predictor model available: %s" % exc2)
        self.pubs = {
            "pose": self.create_publisher(PoseStamped, "predicted/pose", RELIABLE_QOS),
            "odom": self.create_publisher(Odometry, "predicted/odom", RELIABLE_QOS),
            "measured": self.create_publisher(PoseStamped, "measured/pose", RELIABLE_QOS),
            "error": self.create_publisher(Float64MultiArray, "prediction/error", RELIABLE_QOS),
            "slip_pose": self.create_publisher(PoseStamped, "slip/pose", RELIABLE_QOS),
            "slip_odom": self.create_publisher(Odometry, "slip/odom", RELIABLE_QOS),
        }
        self.out_msgs = {"pose": PoseStamped(), "odom": Odometry(), "measured": PoseStamped(),
                         "slip_pose": PoseStamped(), "slip_odom": Odometry(), "error": Float64MultiArray()}
        self.out_msgs["error"].layout.dim = [MultiArrayDimension(label=",".join(ERROR_FIELDS), size=6, stride=6)]
        self.sub(JointTrajectory, "joint_commands", self._on_commands, RELIABLE_QOS, wake=False, stamped=True)
        # polled (taken at the next cycle, before it): the joint states are stamped, the commands placed at arrival
        self.sub(JointState, "joint_states", self._on_joint_states, SENSOR_QOS, wake=False, stamped=True)
        # imu/data also paces the cycle when it arrives at the cycle's rate (nodes/pacing.py): one wake-up of
        # the executor per period instead of two; the cycle timer is then cancelled and a watchdog of two
        # periods (reset by every sample) hands the cycle back to it when the IMU falls silent
        self.pacer = CyclePacer(1.0 / self.p["rate"])
        self.governor = self._new_governor()
        self._imu_sample = self.guard("imu/data", self.intake(Imu, "imu/data", self._on_imu, stamped=True,
                                                              unit_quaternion=True))
        self._paced_cycle = self.guard("predict", self._on_tick)
        self.create_subscription(Imu, "imu/data", self._on_imu_arrival, SENSOR_QOS, raw=True)
        self.sub(PoseStamped, "mocap/pose", self._on_mocap, SENSOR_QOS, wake=False, stamped=True,
                 unit_quaternion=True)
        self.morphology_sub = subscribe_morphology(self, self._on_morphology, LATCHED_QOS)  # authority only
        if self.p["body_estimate"]:
            self.sub(InertiaStamped, "body/inertia", self._on_body, RELIABLE_QOS, wake=False, stamped=True)
        self.rate_timer("rate", self._on_cycle_timer, "predict")
        self._watchdog = self._new_watchdog()
        self.rate_timer("diagnostics_rate", self._on_diag, "diagnostics")

    # ------------------------------------------------------------------ models
    def _build_models(self) -> None:
        """(Re)create the model(s) from the parameters; ValueError keeps the old ones."""
        names = [self.p["predictor"]] + ([SLIP] if self.p["publish_slip"] and self.p["predictor"] != SLIP else [])
        robot, source = self._model_robot()
        # jethexa-validate's registry
        models = {n: make_predictor(n, model=robot, horizon=self.p["horizon"]) for n in names}
        t = self.t()
        for m in models.values():  # first calls compile/load numba code: do it here, not in the first cycle
            m.reset(t, self.joint_names)
            m.on_morphology(t, np.asarray(self.morphology))
            m.on_command(t, self.q_cmd.copy(), t)
            m.pose(t)
            m.reset(t, self.joint_names)
            m.on_morphology(t, np.asarray(self.morphology))
        self.models, self.body_source = models, source

    def _model_robot(self):
        """(robot, source): the body parameters (``body_mass``, ``body_com_offset``: jethexa-calibrate's file, a
        robot weighed) on the URDF, or the URDF's body (None: the registry's packaged robot). ValueError naming
        the parameter (``body_mass`` in (0, 0.1) kg: the spec's range cannot say "0 or at least 0.1")."""
        params = BodyParams(self.p["body_mass"], tuple(self.p["body_com_offset"]))
        if self.p["body_estimate"]:   # a robot of the node's own, its body set in place by each estimate
            if self._own_body is None:
                base = jethexa()
                d = base.description
                self._own_body = params.robot(base) if not params.is_urdf else base.with_body(d.body_mass, d.body_com)
            return self._own_body, "estimate" if self.body_estimates else (
                "urdf" if params.is_urdf else "parameters")
        return (None, "urdf") if params.is_urdf else (params.robot(jethexa()), "parameters")

    def apply_params(self, changed: Dict[str, Any]) -> None:
        if "rate" in changed:    # the cycle timer is re-created (running) after this: it paces until the IMU does
            self.governor = self._new_governor()
            self.pacer.reset(1.0 / changed["rate"])
            self.pacer.every = 1
            self._watchdog.cancel()
            self.destroy_timer(self._watchdog)
            self._watchdog = self._new_watchdog()
        elif "pace_on_imu" in changed:
            self.pacer.reset()
            self._arm(CYCLE_TIMER)
        if "rate" not in changed and any(k.startswith("degrade") for k in changed):
            was = self.governor.factor
            self.governor = self._new_governor()      # normal mode again, judged afresh
            if was != 1:
                self._retime(None)
        if any(k in changed for k in ("predictor", "horizon", "publish_slip", "body_mass", "body_com_offset")):
            self._build_models()
        if "mocap_timeout" in changed:
            self.measured.mocap_timeout = changed["mocap_timeout"]
        if "stats_window" in changed:
            self.stats = CycleStats(changed["stats_window"])
            self.stage_stats = self._stage_stats()

    def _stage_stats(self) -> Dict[str, CycleStats]:
        """The cycle's stages: ``dynamics`` (every model's ``pose(t)``) and ``publishing`` (the rest of the cycle:
        building and publishing the messages, the measured pose and the error)."""
        return {k: CycleStats(self.p["stats_window"]) for k in ("dynamics", "publishing")}

    def _each(self, method: str, *args) -> None:
        for m in self.models.values():
            getattr(m, method)(*args)

    # ------------------------------------------------------------------ inputs
    # Every handler validates the WHOLE message (stamp first, then every field) before it changes any state
    # or calls a model: a rejected message leaves no trace but its counter on /diagnostics. Before a handler,
    # the subscription's intake (``ThinNode.intake``) has rejected a serialized message that is too large or
    # stamped out of ``stamp_tolerance`` without decoding it (the handler checks the stamp again, decoded).
    def _on_commands(self, msg: JointTrajectory) -> None:
        if self.p["joint_source"] != "commands":
            return
        self.check_stamp("joint_commands", msg.header)
        points = [(p.positions, p.velocities, stamp_to_sec(p.time_from_start)) for p in msg.points]
        idx, pos, t_from_start = validate.trajectory(msg.joint_names, points, self.joint_names, self.lower,
                                                     self.upper)
        self.q_cmd[idx] = pos
        t = self.arrival_time()    # when the servos got it too (taken at the next cycle: a polled subscription)
        self._each("on_command", t, self.q_cmd.copy(), t + t_from_start)

    def _on_joint_states(self, msg: JointState) -> None:
        self.check_stamp("joint_states", msg.header)
        idx, pos, _ = validate.joint_state(msg.name, msg.position, msg.velocity, msg.effort, self.joint_names,
                                           lower=self.lower, upper=self.upper)
        t = self.stamp_time(msg.header.stamp, MAX_STAMP_AGE)
        if self.p["joint_source"] == "joint_states":
            self.q_cmd[idx] = pos
            self._each("on_command", self.t(), self.q_cmd.copy(), self.t())
        q = np.full(len(self.joint_names), np.nan)  # only the joints read in this message count as measured
        q[idx] = pos
        self._each("on_joints", t, q)

    def _on_imu(self, msg: Imu) -> bool:
        self.check_stamp("imu/data", msg.header)
        o = msg.orientation
        x, y, z, w = validate.imu_orientation((o.x, o.y, o.z, o.w), msg.orientation_covariance)
        gyro = validate.finite_vector("imu/data.angular_velocity", (
            msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z))
        acc = validate.finite_vector("imu/data.linear_acceleration", (
            msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z))
        t = self.stamp_time(msg.header.stamp, MAX_STAMP_AGE)
        quat = np.array([w, x, y, z])
        self.measured.on_imu(t, quat)
        self._each("on_imu", t, quat, gyro, acc)
        return True

    def _on_mocap(self, msg: PoseStamped) -> None:
        self.check_stamp("mocap/pose", msg.header)
        p, o = msg.pose.position, msg.pose.orientation
        pos, (x, y, z, w) = validate.pose((p.x, p.y, p.z), (o.x, o.y, o.z, o.w), "mocap/pose.pose")
        t = self.stamp_time(msg.header.stamp, MAX_STAMP_AGE)
        quat = np.array([w, x, y, z])
        self.measured.on_mocap(t, pos)
        self._each("on_ground_truth", t, pos, quat)

    def _on_body(self, msg: InertiaStamped) -> None:
        """damage_monitor's body estimate (m [kg], com [m, base_link]): the models' body from now on, in place (the
        models keep their state; the slip model keeps the weight it was built with)."""
        self.check_stamp("body/inertia", msg.header)
        com = validate.finite_vector("body/inertia.inertia.com", (msg.inertia.com.x, msg.inertia.com.y,
                                                                   msg.inertia.com.z))
        try:
            set_body(self._own_body, jethexa(), float(msg.inertia.m), com)
        except ValueError as exc:
            raise validate.InvalidMessage("body/inertia: %s" % exc) from None
        self.body_estimates += 1
        self.body_source = "estimate"

    def _on_morphology(self, msg: UInt8MultiArray) -> None:
        label = msg.layout.dim[0].label if msg.layout.dim else ""
        links = morphology_from_wire(list(msg.data), label, self.leg_names)
        if links != self.morphology:
            self.get_logger().warning("morphology %s: model reshaped (no restart)"
                                      % format_morphology(links, self.leg_names))
        self.morphology = links
        self._each("on_morphology", self.t(), np.asarray(links))

    # ------------------------------------------------------------------ pacing
    def _new_watchdog(self):
        """The IMU-silence timer (two periods), created cancelled: it runs only while the IMU paces the cycle."""
        timer = self.timer(self.pacer.watchdog_period, self._on_imu_silent, "predict")
        timer.cancel()
        return timer

    def _on_imu_arrival(self, raw: bytes) -> None:
        """imu/data (serialized): the sample (checked, decoded, validated and fed like any input), then the cycle if
        the IMU paces it. A rejected sample is no part of the IMU's rhythm: a flood on the topic neither runs nor
        re-times the cycle."""
        if not self._imu_sample(raw) or not self.p["pace_on_imu"]:
            return
        with self._lock:     # (a parameter change may re-create the timers from another thread)
            run, arm = self.pacer.on_input(time.monotonic())
            self._arm(arm)
        if run:
            self._paced_cycle()

    def _on_cycle_timer(self) -> None:
        self.pacer.on_timer(time.monotonic())
        self._on_tick()

    def _on_imu_silent(self) -> None:
        _, arm = self.pacer.on_silence(time.monotonic())
        self._arm(arm)
        self._on_tick()

    def _arm(self, which) -> None:
        arm_timers(which, self._rate_timers["rate"][0], self._watchdog)

    # ------------------------------------------------------------------ degrading (nodes/degrade.py)
    def _new_governor(self) -> RateGovernor:
        return RateGovernor(self.p["rate"], self.p["degrade_min_rate"], self.p["degrade_late_fraction"],
                            self.p["degrade_recover"], min_cpu=self.p["degrade_min_cpu"])

    def _retime(self, change) -> None:
        """The governor changed the effective rate (``change``: 'down', 'up'; None: back to the configured rate):
        the cycle timer's period, the pacer's every-n-th sample and the watchdog follow; one log line."""
        rate = self.governor.effective_rate
        self.pacer.every = self.governor.factor
        self._set_period("rate", self._rate_timers["rate"][0], 1.0 / rate)
        self._set_period("watchdog", self._watchdog, self.pacer.watchdog_period)
        if change == "down":
            self.get_logger().warning("cycle rate lowered to %g Hz of %g (degraded: %s)" % (
                rate, self.p["rate"], self.governor.reason))
        elif change == "up":
            self.get_logger().info("cycle rate back up to %g Hz of %g%s" % (
                rate, self.p["rate"], " (still degraded)" if self.governor.degraded else ""))

    def _set_period(self, which: str, timer, period: float) -> None:
        try:
            timer.timer_period_ns = int(round(period * 1e9))      # rcl: from the timer's next call on
        except AttributeError:          # an rclpy without the setter: a new timer, armed like the old one
            running = not timer.is_canceled()
            timer.cancel()
            self.destroy_timer(timer)
            if which == "rate":
                new = self.timer(period, self._on_cycle_timer, "predict")
                self._rate_timers["rate"] = (new, self._on_cycle_timer, "predict")
            else:
                new = self._watchdog = self.timer(period, self._on_imu_silent, "predict")
            if not running:
                new.cancel()

    # ------------------------------------------------------------------ outputs
    def _on_tick(self) -> None:
        tic, cpu0 = time.perf_counter(), time.thread_time()
        if self.p["degrade"]:
            change = self.governor.on_cycle(time.monotonic())
            if change is not None:
                self._retime(change)
        t = self.t()
        stamp = self.get_clock().now().to_msg()
        dynamics = 0.0
        for name, model in self.models.items():
            t_model = time.perf_counter()
            pos, quat = model.pose(t)
            dynamics += time.perf_counter() - t_model
            prefix = "slip_" if name == SLIP and name != self.p["predictor"] else ""
            self._publish(prefix + "pose", self._pose_msg, stamp, pos, quat)
            if self._listened(prefix + "odom"):   # checked first: the twist is computed for it only
                self.pubs[prefix + "odom"].publish(self._odom_msg(prefix + "odom", stamp, pos, quat, model.twist))
            if not prefix:
                self.last_prediction = (t, pos, quat)
                if self._listened("measured") or self._listened("error"):
                    self._publish_measured_and_error(stamp, t, pos, quat)
        cycle = time.perf_counter() - tic
        self.stats.add(cycle, 1.0 / self.governor.effective_rate)
        self.governor.add_cpu(time.thread_time() - cpu0)
        self.stage_stats["dynamics"].add(dynamics)
        self.stage_stats["publishing"].add(cycle - dynamics)

    # An output nobody subscribes to is neither built nor published: a publish costs 50-200 us of CPU at a 10 ms
    # cadence (caches cold; DDS serialization and send), more than the dynamics (bench_predictor_node.py).
    def _listened(self, key: str) -> bool:
        return self.pubs[key].get_subscription_count() > 0

    def _publish(self, key: str, build, *args) -> None:
        if self._listened(key):
            self.pubs[key].publish(build(key, *args))

    # The output messages are built once and refilled each cycle: rclpy's publish() serializes at once, and
    # constructing a PoseStamped / Odometry (nested messages, covariance arrays) costs more than publishing it.
    def _pose_msg(self, key: str, stamp, pos, quat) -> PoseStamped:
        msg = self.out_msgs[key]
        msg.header.stamp, msg.header.frame_id = stamp, self.p["odom_frame"]
        _set_pose(msg.pose, pos, quat)
        return msg

    def _odom_msg(self, key: str, stamp, pos, quat, twist) -> Odometry:
        """Pose in ``odom_frame``; twist [v; w] (m/s, rad/s) of base_link in ``base_frame`` (REP-105), the model's."""
        msg = self.out_msgs[key]
        msg.header.stamp, msg.header.frame_id = stamp, self.p["odom_frame"]
        msg.child_frame_id = self.p["base_frame"]
        _set_pose(msg.pose.pose, pos, quat)
        v = msg.twist.twist
        v.linear.x, v.linear.y, v.linear.z, v.angular.x, v.angular.y, v.angular.z = map(float, twist)
        return msg

    def _publish_measured_and_error(self, stamp, t: float, pos, quat) -> None:
        """``measured/pose`` and ``prediction/error`` (predicted ``pos``, ``quat`` minus measured) at ``t``."""
        mpos, mquat = self.measured.current(t)
        if mquat is None:
            return
        self._publish("measured", self._pose_msg, stamp, mpos if mpos is not None else (np.nan, np.nan, np.nan),
                      mquat)
        self.last_error = pose_error(pos, quat, mpos, mquat)
        self._publish("error", self._error_msg)

    def _error_msg(self, key: str) -> Float64MultiArray:
        msg = self.out_msgs[key]
        msg.data = [float(v) for v in self.last_error]
        return msg

    def _on_diag(self) -> None:
        if self.last_prediction is not None and not (self._listened("measured") or self._listened("error")):
            t, pos, quat = self.last_prediction      # the error was not computed in the cycles: nobody listens
            mpos, mquat = self.measured.current(t)
            if mquat is not None:
                self.last_error = pose_error(pos, quat, mpos, mquat)
        s = self.stats.summary()
        gov = self.governor
        period_ms = 1e3 / gov.effective_rate
        level = 1 if (s["cycles"] and s["p99_ms"] > period_ms) or gov.degraded else 0
        message = "cycle p50 %.2f ms, p99 %.2f ms (period %.1f ms)" % (s["p50_ms"], s["p99_ms"], period_ms)
        if gov.degraded:
            message += "; degraded to %g Hz of %g: %s" % (gov.effective_rate, self.p["rate"], gov.reason)
        if not self.models:
            level, message = 2, "no model: " + self.model_error
        model = self.models.get(self.p["predictor"])
        values = [("predictor", self.p["predictor"]), ("horizon_s", self.p["horizon"]),
                  ("degraded", gov.degraded), ("effective_rate_hz", gov.effective_rate),
                  ("degraded_reason", gov.reason), ("degrade_steps_down", gov.ladder.steps_down),
                  ("degrade_steps_up", gov.ladder.steps_up), ("late_fraction", gov.last_late_fraction),
                  ("cycle_cpu_fraction", gov.last_cpu),
                  ("paced_by", "imu/data" if self.pacer.paced else "timer"),
                  ("cycles_paced_by_imu", self.pacer.counts["input"]), ("cycles_on_timer", self.pacer.counts["timer"])]
        values += [(k, v) for k, v in s.items()]
        for stage, stats in self.stage_stats.items():
            st = stats.summary()
            values += [("%s_%s" % (stage, k), st[k]) for k in ("p50_ms", "p99_ms", "mean_ms")]
        body = getattr(model, "robot", None)
        mass, com = body_of(body) if body is not None else (float("nan"), np.full(3, np.nan))
        values += [("body", self.body_source), ("body_estimates", self.body_estimates),
                   ("body_mass", "%.4f" % mass if body is not None else "-"),
                   ("body_com", ",".join("%.4f" % v for v in com) if body is not None else "-"),
                   ("morphology", format_morphology(self.morphology, self.leg_names)),
                   ("anchors", len(getattr(model, "anchors", []))),
                   ("mocap", "fresh" if self.measured.mocap_fresh(self.t()) else "none"),
                   ("error_rpy_xyz", [round(float(v), 4) for v in self.last_error])]
        self.publish_diagnostics([self.node_status(message, level, values)])


NODE = PredictorNode  # the class graph.node_class() finds


def main(args=None):
    return run(PredictorNode, args, kernels_of="predictor")


if __name__ == "__main__":
    main()
