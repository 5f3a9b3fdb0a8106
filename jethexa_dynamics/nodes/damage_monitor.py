"""damage_monitor: decides the robot's morphology and publishes it on ``morphology`` (latched).

Inputs: the servo driver's per-servo statuses on ``/diagnostics`` (no reply with confirmation reads, stall =
position error under load; voltage/temperature outside the servo's own limits are reported, the LED alarm
setting never counts), and ``joint_states``: a joint without servo statuses (another driver, a bus behind
another board) that its publisher stops carrying is lost under the same rules (``JointPresenceTracker``).
Breaks the servos cannot see are found by the model-based identifier
(``jethexa_dynamics.damage.identification``) on ``joint_commands``, ``joint_states`` and ``imu/data``
(parameters ``identify``, ``identify_window``, ``identify_threshold``, ``identify_confirm``); when its worker
falls behind the data it degrades on purpose (``identify_degrade``: bank episodes started less often, never a
decision on less evidence) and says so on ``/diagnostics`` (``identifier_degraded``). The two are
fused: per leg the fewer intact links; the servo evidence re-centres the identifier's hypotheses. On
``/diagnostics``: the top hypotheses with their probabilities and the evidence source of the last change
(servo or model). Manual override: the ``morphology`` parameter (one entry per leg, -1 = automatic), e.g.
``ros2 param set /damage_monitor morphology "[3,3,3,3,0,0]"``. Service ``~/reset`` (std_srvs/Trigger)
clears latched faults. Detection rules: ``jethexa_dynamics.damage.detection.DamageDetector``.

Body estimate (``body_estimate``, off by default): the body's mass and CoM from the servos' load
(``damage.body_load.BodyLoadEstimator``) on each reading of ``joint_states`` paired by stamp with the servo
driver's ``joint_states/setpoint`` (each servo's set-point at its own reading), ``joint_commands`` (the swing
phase) and ``imu/data`` (the attitude), while the morphology is healthy; on ``body/inertia``
(geometry_msgs/InertiaStamped, frame base_link: m and com; the inertia tensor is not estimated, zero) and on
``/diagnostics`` (``body_mass``, ``body_com``), at ``check_rate``. Its CPU is the ``body`` stage. The servos' law it
reads the load with: ``body_servo_kp``, ``body_servo_ki``, ``body_servo_kd``, ``body_servo_damping``.

Active probe (``probe``, on by default): when the identifier names a broken leg (with
``probe_always`` false: only when its event lists ``alternatives``, link counts of that leg the walk could not rule
out), ``damage.active_probe.ActiveProbe``,
driven on the identifier's worker thread by the ``joint_commands`` it sees (the gait's ticks: the joint
set-points held) and the ``imu/data`` samples (gyro by stamp), has the robot stand and probe the leg; the
moving is the gait controller's (the only writer of ``joint_commands``), asked on ``damage/probe``
(``damage.probe_request``: leg, start on the ROS clock, duration, motion, the leg's stance angles; reliable +
transient local). At the stand's start the request goes out (the probe starts ``settle`` later); the plan
(the static margin over the probe, every count) and the margin watched while it runs may refuse or abort it:
then ``action: cancel``. The scoring (three model runs, ~50 ms of CPU) runs on the worker, never in a callback;
its verdict goes to ``DamageIdentifier.on_probe``, whose event publishes the morphology as any model event does
(evidence ``model``). Each result (probed, refused, aborted, ambiguous with every count's probability, off) is
logged and on /diagnostics (``probe_*``); its CPU is the ``probe`` stage.
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import InertiaStamped
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import MultiArrayDimension, UInt8MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from jethexa_dynamics.nodes import params as node_params
from jethexa_dynamics.damage.detection import (DamageDetector, DetectorConfig, JointPresenceTracker, MorphologyChange,
                                               decode_servo_status, joint_leg_link)
from jethexa_dynamics.damage.evidence import NAME as EVIDENCE_NAME, STRONG, evidence_to_values
from jethexa_dynamics.damage.probe_request import NAME as PROBE_NAME, ProbeRequest
from jethexa_dynamics.damage.seizure import SeizureConfig, SeizureTracker
from jethexa_dynamics.model import format_morphology
from jethexa_dynamics.nodes import messages
from jethexa_dynamics.nodes.degrade import LagGovernor
from jethexa_dynamics.model.wire import morphology_to_wire
from jethexa_dynamics.nodes.messages import InvalidMessage
from jethexa_dynamics.nodes._common import (LATCHED_QOS, POLLED_SENSOR_QOS, RELIABLE_QOS, SENSOR_QOS, CpuLoad,
                                            ThinNode, run, stamp_to_sec, status)
from jethexa_dynamics.nodes._robot import jethexa, robot_names
from jethexa_dynamics.predictors.base import CycleStats
from jethexa_dynamics.sim.engine import KERNEL_CPU
from jethexa_dynamics.worker import Worker

_CONFIG_KEYS = ("no_reply_timeout", "min_missed_reads", "position_error_threshold",
                "position_error_hold", "latch")
_IDENTIFIER_ATTRS = node_params.IDENTIFIER_PARAMS
_SEIZURE_KEYS = ("seizure_window", "seizure_min_travel", "seizure_max_motion")
_DEGRADE_KEYS = ("identify_degrade", "identify_max_lag", "identify_max_bank_every", "identify_recover")
#: s after weak evidence is resolved (or a probe ends) before seizures are judged again: the body settles on the
#: feet the gait now uses (standing on a missing leg, a loaded joint that cannot reach its command is no seizure)
SEIZURE_GRACE = 1.0
#: s a suspect probe may take to start (the next joint_commands tick; another probe under way is waited for)
SUSPECT_START = 1.0


#: the worker's share of the interpreter during a bank window at most (it pauses between models for as long as
#: the last one ran, bounded by PAUSE_RANGE s)
PAUSE_RANGE = (0.002, 0.05)


def _closed_windows(idf) -> int:
    """Windows an identifier finished: scored, deferred (degraded mode) or skipped (a data gap)."""
    return idf.windows + idf.deferred_windows + idf.skipped_windows


#: identifier inputs that wait in the queue for the next joint sample instead of waking the worker
RIDE_ALONG = ("on_command", "on_imu")
RIDE_ALONG_MAX = 16


class IdentifierWorker(Worker):
    """Feeds a ``DamageIdentifier`` on a thread of its own.

    The node's callbacks only validate a message and queue its sample with its time (the identifier works
    on those times, not on when it gets to them), so a window of the model bank -- tens of ms, several times
    that on a loaded machine -- never holds up the executor. In the one-process graph (the demo, the tests)
    that executor also runs the emulated world, the IMU and the gait: a held-up executor is a data gap for
    every node, and the identifier's own windows made such gaps (measured: 100-290 ms per bank window with
    the machine loaded). ``on_sample(ok, topic)`` runs on the worker thread after each sample is fed.
    A bug inside the identifier stops the worker (``worker.Worker``'s policy); ``on_error(traceback text)`` logs
    and counts it, ``failed`` says it on /diagnostics, and the node keeps serving the servo evidence.

    Falling behind: with a ``governor`` (``nodes.degrade.LagGovernor``) every finished window reports how long
    its closing sample waited in the queue; the governor sets the identifier's ``bank_every`` (degraded mode:
    a bank episode starts at most every k-th window) and ``on_degrade(change)`` is called on the worker thread
    when it changes.

    Active probe: with a ``probe`` (``damage.active_probe.ActiveProbe`` of this identifier) every IMU sample goes
    to it too, and every joint command drives it (``ActiveProbe.command`` at the command's time with the joint
    set-points commanded so far: the gait's tick), on this thread, so its plan, watch and scoring (~50 ms) never
    hold up the executor; ``on_probe(probe, before, t)`` runs after a command that changed it (a probe started or
    ended, a result added; ``before`` = (active, results) before), its CPU is booked as stage ``probe``."""

    def __init__(self, identifier, on_sample: Callable[[bool, str], None], on_error: Callable[[str], None],
                 max_queue: int = 5000, cpu: Optional[CpuLoad] = None, lock=None, governor=None,
                 on_degrade: Optional[Callable[[str], None]] = None, probe=None,
                 on_probe: Optional[Callable[[Any, tuple, float], None]] = None):
        self.identifier = identifier
        self.probe, self._on_probe = probe, on_probe
        # the joint set-points commanded so far [rad] (NaN: never), the probe's view of the stance held
        self.sent = None if probe is None else np.full(len(probe.robot.joint_names), np.nan)
        self.governor, self._on_degrade = governor, on_degrade
        # cost accounting: every sample's CPU time goes to ``cpu`` (the node's CpuLoad, under ``lock``) as stage
        # "identifier"; a sample that closes a window carries the window's work (a bank window runs its models),
        # timed apart in CPU time and in wall time (the pauses between models included: the decision delay)
        self.cpu, self._cpu_lock = cpu, lock
        self.window_cpu, self.window_wall = CycleStats(1000), CycleStats(1000)
        # a bank window runs ~19 models back to back: pause between them as long as the last one ran, so that
        # the other Python threads of the process -- the executor, the servo bus's reply and poll threads in the
        # one-process graph -- get the interpreter lock at least half the time (without the pause, bus reads
        # timed out behind the bank on a loaded machine: false "no reply" servo faults)
        identifier.between_models = self._pause
        self._ran_since = time.monotonic()
        self._on_sample, self._report_error = on_sample, on_error
        self._topic = ""
        self.max_queue = max_queue
        self.dropped = 0          # samples dropped because the worker fell max_queue behind (a gap to it)
        self.failed = ""
        super().__init__("damage_identifier", on_error=self._failed)

    def _pause(self) -> None:
        lo, hi = PAUSE_RANGE
        time.sleep(min(hi, max(lo, time.monotonic() - self._ran_since)))
        self._ran_since = time.monotonic()

    def put(self, topic: str, method: str, *args) -> None:
        with self._cv:
            if self.stopped:
                return
            if len(self._queue) >= self.max_queue:
                self._queue.popleft()
                self.dropped += 1
            # in the order of the samples' times (args[0]), not of their handling: the node takes its polled
            # streams one after the other at a wake-up, and a window is anchored on the joints measured before it
            item = (topic, method, args, time.monotonic())
            i = len(self._queue)
            while i > 0 and self._queue[i - 1][2][0] > args[0]:
                i -= 1
            self._queue.insert(i, item)
            # one wake-up of this thread per joint sample (50 Hz), not per message: the IMU samples and commands
            # before it wait for it, or for a handful to pile up (the joints paused)
            if method not in RIDE_ALONG or len(self._queue) >= RIDE_ALONG_MAX:
                self.wake()

    def _handle(self, item) -> None:
        idf = self.identifier
        self._topic, method, args, t_put = item
        self._ran_since = wall0 = time.monotonic()
        governor = self.governor
        closed = _closed_windows(idf) if governor is not None else 0
        windows, cpu0 = idf.windows, time.thread_time()
        ok = getattr(idf, method)(*args)
        self._count(time.thread_time() - cpu0, time.monotonic() - wall0, idf.windows != windows)
        if governor is not None and _closed_windows(idf) != closed:
            self._judge(governor, wall0 - t_put)
        if self.probe is not None and method in ("on_command", "on_imu"):
            self._drive_probe(method, args)
        self._on_sample(idf, ok, self._topic)

    def _drive_probe(self, method: str, args) -> None:
        """An IMU sample or a command tick for the active probe (the arguments as the identifier got them)."""
        probe = self.probe
        if method == "on_imu":
            probe.on_imu(args[0], args[1], args[2])
            return
        t, pos, t_end, idx = args
        self.sent[np.asarray(idx, dtype=int)] = pos
        before = (probe.active, len(probe.results))
        c0 = time.thread_time()
        probe.command(t, self.sent, t_end - t)      # the gait's command, replayed by the probe's models
        if self.cpu is not None:
            with self._cpu_lock:
                self.cpu.add("probe", time.thread_time() - c0)
        if (probe.active, len(probe.results)) != before and self._on_probe is not None:
            self._on_probe(probe, before, t)

    def _failed(self, exc: BaseException, text: str) -> None:
        """The policy's report of a bug (no bad input reaches the identifier); the samples queued are dropped."""
        self.failed = "%s: %s" % (self._topic, text.strip().splitlines()[-1])
        with self._cv:
            self._queue.clear()
        self._report_error(text)

    def _judge(self, governor, lag: float) -> None:
        """A window closed: its closing sample waited ``lag`` s in the queue."""
        change = governor.on_window(time.monotonic(), lag)
        if change is not None:
            self.identifier.bank_every = governor.bank_every
            if self._on_degrade is not None:
                self._on_degrade(change)

    def set_governor(self, governor) -> None:
        """A new governor (None: never degraded); the identifier back to its normal mode."""
        self.governor = governor
        self.identifier.bank_every = 1

    def _count(self, cpu: float, wall: float, window: bool) -> None:
        if window:
            self.window_cpu.add(cpu)
            self.window_wall.add(wall)
        if self.cpu is not None:
            with self._cpu_lock:
                self.cpu.add("identifier", cpu)

    def stop(self, timeout: float = 0.0) -> None:
        """Stop after the sample being fed; wait for that up to ``timeout`` s (0 from a callback: the worker may
        be waiting for the node's lock the caller holds; it then finds itself replaced and does nothing)."""
        self.close(timeout)


def _alternatives_text(result: dict) -> str:
    """'LM:1 (or LM:0, 40 % of the leg)': an active-probe result's named count and its alternatives."""
    leg = result["leg"]
    return "%s:%d%s" % (leg, result["named"], "".join(", or %s:%d, %.0f %% of the leg" % (leg, c, 100 * share)
                                                      for c, share in result["alternatives"]))


def morphology_msg(links_per_leg, leg_names) -> UInt8MultiArray:
    """The ``morphology`` message (wire format: ``model.wire``)."""
    data, label = morphology_to_wire(links_per_leg, leg_names)
    msg = UInt8MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(data), stride=len(data))]
    msg.data = data
    return msg


def evidence_msg(links_per_leg, kinds: Dict[str, str], leg_names, unexplained: bool = False,
                 seized=()) -> DiagnosticStatus:
    """The ``morphology/evidence`` message: per damaged leg what its link count rests on, whether the motion is
    unexplained, and the seized joints (``damage.evidence``)."""
    message, values = evidence_to_values(links_per_leg, kinds, leg_names, unexplained=unexplained, seized=seized)
    return status(EVIDENCE_NAME, message, 0, values)


class DamageMonitor(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.DAMAGE_MONITOR, **kwargs)
        self.status_sources.append(KERNEL_CPU.status_values)    # the engines' nogil kernel, process-wide
        self.leg_names, self.joint_names = robot_names()
        # joint limits of the URDF: a command beyond them is garbage to the identifier as to the predictor and the
        # servo driver (a flood's 1000 rad commands drove its models far from the body: "unexplained" motion)
        self.lower, self.upper = np.asarray(jethexa().joint_lower), np.asarray(jethexa().joint_upper)
        self.detector = DamageDetector(self.joint_names, self.leg_names, self._config())
        self.current: Optional[List[int]] = None
        self.changes: List[MorphologyChange] = []
        self.last_servo_diag: Optional[float] = None
        self.servo_diag_messages = 0   # /diagnostics messages that carried servo statuses
        self.presence = JointPresenceTracker(self.joint_names)
        self.seizure = SeizureTracker(self.joint_names, self._seizure_config())
        self.seized: Dict[str, str] = {}   # seized joints (servo stall or joint_states) -> reason; links kept
        self.suspected: Dict[str, int] = {}  # legs on weak evidence a suspect probe was asked for -> their links
        self._suspect_asked: Dict[str, float] = {}   # ... -> node time [s] asked
        self._suspect_started: set = set()           # ... whose probe has started
        self.unresolved: set = set()         # legs a suspect probe could not settle: their weak evidence published
        self._seizure_paused_until = -math.inf   # node time [s] until which seizures are not judged
        self._t_start_ros = self.now_sec()
        self.pub = self.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS)
        self.evidence_pub = self.create_publisher(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)
        self.evidence: Dict[str, str] = {}
        # the active probe's requests to the gait controller (damage.probe_request); latched: a late gait
        # controller sees the last one (and rejects it as stale)
        self.probe_pub = self.create_publisher(DiagnosticStatus, "damage/probe", LATCHED_QOS)
        self.active_probe = None
        self.probe_request: Optional[ProbeRequest] = None     # the last request published
        self.probe_requests = 0
        self.identifier = None
        self.worker: Optional[IdentifierWorker] = None
        self.last_source = "none"
        self._last_event = None        # the identifier's last event acted upon
        self.unexplained = False       # said on morphology/evidence: no hypothesis explains the motion
        self.q_meas = np.full(len(self.joint_names), np.nan)
        self._make_identifier()
        self.body = self.body_pairs = None
        self.body_pub = None
        if self.p["body_estimate"]:
            from jethexa_dynamics.damage.body_load import BodyLoadEstimator, ReadingPairs

            p = self.p
            self.body = BodyLoadEstimator(jethexa(), window=p["body_window"], damping=p["body_servo_damping"],
                                          gains=(p["body_servo_kp"], p["body_servo_ki"], p["body_servo_kd"]))
            self.body_pairs = ReadingPairs(self.joint_names)
            self.body_pub = self.create_publisher(InertiaStamped, "body/inertia", RELIABLE_QOS)
            self.sub(JointState, "joint_states/setpoint", self._on_setpoints, SENSOR_QOS, wake=False,
                     stamped=True)
        # one wake-up per sample of ``wake_on``: the other streams are polled, taken at that wake-up (or the
        # check's) before it, and the identifier's worker puts their samples in time order. Alone, on joint_states
        # (50 Hz: a window closes a few ms later than with a wake-up per 100 Hz IMU sample; the node wakes half as
        # often); beside the predictor, on the IMU sample that wakes the predictor too (both subscriptions are
        # ready in the same wait: measured in the launched split graph, the model's process woke 106-133 times a
        # second instead of 153-219, and took 0.136-0.142 CPU-s/s instead of 0.149-0.178)
        imu_wakes = self.p["wake_on"] == "imu/data"
        self.sub(DiagnosticArray, "/diagnostics", self._on_diagnostics, RELIABLE_QOS, wake=False)
        self.sub(JointTrajectory, "joint_commands", self._on_commands, RELIABLE_QOS, wake=False, stamped=True)
        self.sub(Imu, "imu/data", self._on_imu, POLLED_SENSOR_QOS, wake=imu_wakes, stamped=True)
        self.sub(JointState, "joint_states", self._on_joint_states, POLLED_SENSOR_QOS if imu_wakes else SENSOR_QOS,
                 wake=not imu_wakes, stamped=True)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.rate_timer("check_rate", self._on_check, "check")
        self._decide(self.now_sec(), ["start-up"])

    def _config(self) -> DetectorConfig:
        return DetectorConfig(**{k: self.p[k] for k in _CONFIG_KEYS})

    def _seizure_config(self) -> SeizureConfig:
        return SeizureConfig(**{k[len("seizure_"):]: self.p[k] for k in _SEIZURE_KEYS})

    # ------------------------------------------------------------------ identifier
    def _make_identifier(self) -> None:
        """A fresh identifier from the parameters (None when ``identify`` is off) on a worker thread of its own
        (``IdentifierWorker``); its first step loads the model code, so it is built here, not in a callback."""
        self._stop_identifier()
        if not self.p["identify"]:
            return
        from jethexa_dynamics.damage.identification import DamageIdentifier

        from jethexa_dynamics.damage.active_probe import ActiveProbe, ProbeConfig

        idf = DamageIdentifier(jethexa(), **{attr: self.p[key] for key, attr in _IDENTIFIER_ATTRS})
        idf.hyps[0].engine.step(0)
        self.identifier = idf
        # always built: with ``probe`` off its results still say that an ambiguous count was left as it is
        self.active_probe = ActiveProbe(idf, config=ProbeConfig(
            enabled=self.p["probe"], min_margin=self.p["probe_min_margin"], decide=self.p["probe_decide"],
            max_lag=self.p["probe_max_lag"], always=self.p["probe_always"]))
        self.worker = IdentifierWorker(idf, self._check_identifier, self._identifier_failed, cpu=self.cpu,
                                       lock=self._lock, governor=self._lag_governor(),
                                       on_degrade=self._identifier_degraded, probe=self.active_probe,
                                       on_probe=self._probe_changed)
        self._feed_servo()

    def _stop_identifier(self, timeout: float = 0.0) -> None:
        if self.worker is not None:
            self.worker.stop(timeout)
        if self.active_probe is not None and self.active_probe.active and self.probe_request is not None:
            self._publish_probe(ProbeRequest("cancel", self.probe_request.id, self.probe_request.leg),
                                "the identifier was replaced")     # its probe cannot be scored any more
        self.identifier, self.worker, self.active_probe = None, None, None

    # ------------------------------------------------------------------ active probe
    def _publish_probe(self, req: ProbeRequest, why: str) -> None:
        self.probe_pub.publish(status(PROBE_NAME, "%s %s: %s" % (req.action, req.leg, why), 0, req.to_values()))
        self.probe_request = req
        self.probe_requests += 1

    def _probe_changed(self, probe, before: tuple, t: float) -> None:
        """The active probe changed at command time ``t`` [s, node time] (worker thread): a probe started (the
        request to the gait controller), ended (refused or aborted: the cancel; scored: the verdict went to the
        identifier), or a named count was left as it is (probe off, leg probed before). Logged; the status
        at once."""
        with self._lock:
            if probe is not self.active_probe:
                return
            was_active, seen = before
            for r in probe.results[seen:]:
                if "reason" in r:        # not started: off or probed before
                    self.get_logger().info("probe: %s named with %s; no probe: %s" % (
                        r["leg"], _alternatives_text(r), r["reason"]))
            r = probe.results[-1] if probe.results else None
            if probe.active and not was_active and r is not None:
                if r.get("suspect"):
                    self._suspect_started.add(r["leg"])
                cfg = probe.config
                leg = self.leg_names.index(r["leg"])
                # node time -> ROS clock (the gait controller's): now on both, minus the start's distance from now
                t_start = self.now_sec() + (t + cfg.settle - self.t())
                req = ProbeRequest("probe", self.probe_requests + 1, r["leg"], t_start, cfg.spec,
                                   tuple(float(v) for v in probe.stance[3 * leg:3 * leg + 3]))
                self._publish_probe(req, "a loss on weak evidence checked" if r.get("suspect") else
                                    "link count ambiguous" if r["alternatives"] else "link count checked")
                self.get_logger().warning(
                    "probe %d: %s named with %s: standing on the other legs, %s moves for %.1f s from %.1f s on "
                    "(damage/probe)" % (req.id, r["leg"], _alternatives_text(r), r["leg"], cfg.spec.duration,
                                        cfg.settle))
            elif was_active and not probe.active and r is not None:
                req = self.probe_request
                if "t_end" not in r and req is not None and req.action == "probe":    # refused or aborted
                    self._publish_probe(ProbeRequest("cancel", req.id, req.leg), r.get("reason", "ended"))
                fit = r.get("misfit_per_value", {})
                self.get_logger().warning("probe %d of %s: %s%s" % (
                    req.id if req is not None else 0, r["leg"], r.get("reason", "ended"),
                    "" if "cpu_score_s" not in r else " (misfit per value %s; %d IMU samples, commands up to %.0f ms "
                    "apart; scored in %.0f ms of CPU)" % (
                        ", ".join("%s:%d %.2f" % (r["leg"], c, v) for c, v in sorted(fit.items())), r["samples"],
                        1e3 * r.get("max_command_gap", 0.0), 1e3 * r["cpu_score_s"])))
                if r.get("suspect"):
                    self._suspect_probed(r)
            self._publish_status_locked()

    def _suspect_probed(self, r: dict) -> None:
        """A suspect probe ended (under the lock): the leg found there withdraws its weak evidence (its absence
        from joint_states is not judged again until the joints come back); a loss found went to the identifier
        (its event publishes the morphology on evidence ``model``); refused, or no verdict after the retry: the
        weak evidence is published as it is."""
        self._seizure_paused_until = max(self._seizure_paused_until, self.t() + SEIZURE_GRACE)
        leg = r["leg"]
        self._suspect_started.discard(leg)
        reason = r.get("reason", "")
        if r.get("again") and leg in self._suspect_asked:
            self._suspect_asked[leg] = self.t()      # the retry starts at the next command
        if r.get("present"):
            i = self.leg_names.index(leg)
            joints = [j for j, (k, _) in zip(self.joint_names, joint_leg_link(self.joint_names, self.leg_names))
                      if k == i]
            self.detector.clear(joints, hold=self.presence)
            self._decide_locked(self.now_sec(), ["probe: %s is there (%s); its absence from joint_states is not "
                                                 "evidence" % (leg, reason)])
        elif r.get("taken") is None and not r.get("again") and not r.get("withdrawn") and leg in self.suspected:
            self._unresolved(leg, "the probe neither confirmed nor ruled out its loss (%s)" % reason)

    def _probe_values(self) -> list:
        """The probe's /diagnostics values: state, last result (reason, probabilities, CPU)."""
        probe = self.active_probe
        values = [("probe", "on" if self.p["probe"] else "off"), ("probe_requests", self.probe_requests)]
        if probe is None:
            return values
        r = probe.results[-1] if probe.results else {}
        state = "idle" if not probe.active else ("probing" if "margin_planned" in r else "standing")
        values += [("probe_state", state), ("probe_results", len(probe.results)),
                   ("probe_last_leg", r.get("leg", "")), ("probe_last", r.get("reason", state if r else "")),
                   ("probe_last_probabilities", ", ".join("%s:%d=%.3f" % (r["leg"], c, v) for c, v in sorted(
                       r.get("probabilities", {}).items(), key=lambda kv: -kv[1]))),
                   ("probe_last_misfit", ", ".join("%s:%d=%.2f" % (r["leg"], c, v) for c, v in sorted(
                       r.get("misfit_per_value", {}).items()))),
                   ("probe_last_command_gap_ms", "%.0f" % (1e3 * r["max_command_gap"]) if "max_command_gap" in r
                    else ""),
                   ("probe_last_cpu_score_ms", "%.1f" % (1e3 * r["cpu_score_s"]) if "cpu_score_s" in r else ""),
                   ("probe_last_margin_m", "%.4f" % r["margin_planned"] if "margin_planned" in r else "")]
        return values

    def _lag_governor(self) -> Optional[LagGovernor]:
        if not self.p["identify_degrade"]:
            return None
        return LagGovernor(self.p["identify_max_lag"], self.p["identify_max_bank_every"], self.p["identify_recover"])

    def _identifier_degraded(self, change: str) -> None:
        """The worker's governor changed the identifier's mode (worker thread): one log line."""
        gov = self.worker.governor if self.worker is not None else None
        if gov is None:
            return
        if change == "down":
            self.get_logger().warning("identifier degraded: a bank episode starts at most every %d windows (%s)"
                                      % (gov.bank_every, gov.reason))
        else:
            self.get_logger().info("identifier %s" % ("back to its normal mode" if not gov.degraded else
                                                      "less degraded: a bank episode at most every %d windows"
                                                      % gov.bank_every))

    def _identifier_failed(self, trace: str) -> None:
        self.errors += 1
        self.get_logger().error("identifier: unexpected error (a bug, not bad input); the identifier stops, the "
                                "servo evidence goes on:\n%s" % trace)

    def _say_unexplained(self, idf) -> None:
        """The identifier's ``unexplained`` flipped (under the lock): one log line, and the evidence message again
        with the flag (the gait crawls while it is set); the morphology stays what it is."""
        self.unexplained = idf.unexplained
        if self.unexplained:
            self.get_logger().warning("motion unexplained by every morphology hypothesis (residual %.1f deg RMS): "
                                      "morphology %s kept, the gait crawls" % (
                                          math.degrees(idf.residual_rms), format_morphology(self.current,
                                                                                            self.leg_names)))
        else:
            self.get_logger().info("motion explained again (residual %.1f deg RMS)" % math.degrees(idf.residual_rms))
        if self.current is not None:
            self.evidence_pub.publish(evidence_msg(self.current, self.evidence, self.leg_names, self.unexplained,
                                                   sorted(self.seized)))
        self._publish_status_locked()

    def _feed(self, topic: str, method: str, *args) -> None:
        if self.worker is not None:
            self.worker.put(topic, method, *args)

    def _feed_servo(self) -> None:
        # a servo confirmed silent only: a joint left out of joint_states is no fact about the body for the model
        # (it would take the loss as its own count); the suspect probe settles it
        self._feed("servo", "on_servo_morphology", self.t(), self.detector.detected(strong=True))

    def _check_identifier(self, idf, ok: bool, topic: str) -> None:
        """After each sample the worker fed ``idf`` (worker thread, under the node's lock like a callback):
        rejections counted, a model event published; nothing if ``idf`` was replaced meanwhile."""
        if not ok or (idf.events and idf.events[-1] is not self._last_event) or idf.unexplained != self.unexplained:
            with self._lock:
                if idf is not self.identifier:
                    return
                if not ok:
                    self.reject(topic, idf.last_rejection)
                if idf.unexplained != self.unexplained:
                    self._say_unexplained(idf)
                if idf.events and idf.events[-1] is not self._last_event:
                    self._last_event = e = idf.events[-1]
                    if e["source"] in ("model", "probe"):
                        # a probe's verdict is the model's count too (evidence "model"): the morphology as for
                        # any model event
                        self.last_source = e["source"]
                        alt = "".join("; or %s, %.0f %% of the leg: the %s does not tell them apart" % (
                            format_morphology(links, self.leg_names), 100 * s,
                            "motion" if e["source"] == "model" else "probe") for links, s in e["alternatives"])
                        self._decide(self.now_sec(), ["%s: %s (p = %.3f%s)" % (
                            e["source"], format_morphology(e["morphology"], self.leg_names), e["probability"], alt)])
                        self._publish_status()

    def _on_commands(self, msg: JointTrajectory) -> None:
        self.check_stamp("joint_commands", msg.header)
        points = [(p.positions, p.velocities, stamp_to_sec(p.time_from_start)) for p in msg.points]
        idx, pos, t_from_start = messages.trajectory(msg.joint_names, points, self.joint_names, self.lower,
                                                     self.upper)
        # at arrival: a command drained late (polled) or by a starved monitor still asked the joint when it came
        if not self._seizure_paused():
            self.seizure.on_command(self.now_sec() - self.arrival_age(), [self.joint_names[i] for i in idx], pos,
                                    t_from_start)
        if self.body is not None:
            self._body("on_command", self.arrival_time(), pos, self.arrival_time() + t_from_start, idx)
        if self.worker is None:
            return
        # commands at arrival: the servo driver acts on them when they arrive (the predictor does the same)
        t = self.arrival_time()
        self._feed("joint_commands", "on_command", t, pos, t + t_from_start, idx)
        if self.p["joints_from_commands"]:      # no measured joints: the windows start from the commanded ones
            self.q_meas[idx] = pos
            self._feed("joint_commands", "on_joints", t, self.q_meas.copy())

    def _on_imu(self, msg: Imu) -> None:
        if self.worker is None and self.body is None:
            return
        self.check_stamp("imu/data", msg.header)
        o = msg.orientation
        x, y, z, w = messages.imu_orientation((o.x, o.y, o.z, o.w), msg.orientation_covariance)
        gyro = messages.finite_vector("imu/data.angular_velocity", (
            msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z))
        if self.body is not None:
            self._body("on_imu", self.stamp_time(msg.header.stamp), (w, x, y, z))
        self._feed("imu/data", "on_imu", self.stamp_time(msg.header.stamp), (w, x, y, z), gyro)

    # ------------------------------------------------------------------ body estimate
    def _body(self, method: str, *args) -> None:
        """One input of the body estimator, its CPU time booked as stage ``body`` (also inside its topic's)."""
        c0 = time.thread_time()
        getattr(self.body, method)(*args)
        self.cpu.add("body", time.thread_time() - c0)

    def _on_setpoints(self, msg: JointState) -> None:
        self.check_stamp("joint_states/setpoint", msg.header)
        idx, pos, _ = messages.joint_state(msg.name, msg.position, msg.velocity, msg.effort, self.joint_names,
                                           prefix="joint_states/setpoint", lower=self.lower, upper=self.upper)
        self._pair(True, msg.header.stamp, self.stamp_time(msg.header.stamp), idx, pos)

    def _pair(self, setpoints: bool, stamp, t: float, idx, pos) -> None:
        c0 = time.thread_time()
        pair = self.body_pairs.add(setpoints, (stamp.sec, stamp.nanosec), t, [self.joint_names[i] for i in idx],
                                   pos)
        if pair is not None:
            self.body.on_joints(*pair)
        self.cpu.add("body", time.thread_time() - c0)

    def _publish_body(self) -> list:
        """The estimate on body/inertia (once there is one); returns the status's body values."""
        body = self.body
        est = body.estimate()
        values = [("body_seconds", "%.1f" % body.seconds), ("body_healthy", body.healthy),
                  ("body_pairs", self.body_pairs.pairs), ("body_unpaired", self.body_pairs.unpaired),
                  ("body_rejected", body.rejected)]
        if est is None:
            return values + [("body_mass", "nan"), ("body_com", "nan")]
        msg = InertiaStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "base_link"
        msg.inertia.m = float(est.mass)
        msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = map(float, est.com)
        self.body_pub.publish(msg)
        return values + [("body_mass", "%.4f" % est.mass), ("body_com", "%.4f,%.4f,%.4f" % tuple(est.com)),
                         ("body_servo_lag_ms", "%.2f" % (1e3 * est.lag))]

    # ------------------------------------------------------------------ parameters and decisions
    def apply_params(self, changed: Dict[str, Any]) -> None:
        if "identify" in changed:
            self._make_identifier()
            self._decide(self.now_sec(), ["identifier %s" % ("on" if self.p["identify"] else "off")])
        elif self.identifier is not None:
            for key, attr in _IDENTIFIER_ATTRS:
                if key in changed:
                    setattr(self.identifier, attr, changed[key])   # takes effect from the next window
            if any(k in changed for k in _DEGRADE_KEYS):
                self.worker.set_governor(self._lag_governor())     # the normal mode, judged afresh
        if any(k in changed for k in _CONFIG_KEYS):
            self.detector.config = self._config()
        if any(k in changed for k in _SEIZURE_KEYS):
            self.seizure.config = self._seizure_config()
        if "morphology" in changed:
            self._decide(self.now_sec(), ["manual override %s" % list(changed["morphology"])])
        if "probe" in changed and "identify" not in changed and self.active_probe is not None:
            # read by the worker at the next model event (a probe under way finishes)
            self.active_probe.config = dataclasses.replace(self.active_probe.config, enabled=changed["probe"])

    def _override(self) -> Optional[List[int]]:
        o = list(self.p["morphology"])
        return o if any(v >= 0 for v in o) else None

    def _decide(self, now: float, reasons: List[str]) -> None:
        with self._lock:
            self._decide_locked(now, reasons)

    def _decide_locked(self, now: float, reasons: List[str]) -> None:
        override = self._override()
        new = self.detector.morphology(override)
        if self.identifier is not None:      # fused: per leg the fewer links, unless the leg is overridden or seized
            model = self.identifier.morphology
            held = self._seized_legs()
            new = [n if (override is not None and override[i] >= 0) or self.leg_names[i] in held else min(n, model[i])
                   for i, n in enumerate(new)]
        # a leg shortened on weak evidence alone (a joint left out of joint_states) is not published while the
        # suspect probe may settle it: the probe's stop holds the robot meanwhile, and a false alarm changes nothing
        prev = list(self.current) if self.current is not None else [self.detector.links] * len(self.leg_names)
        pending = {}
        for leg, kind in self._leg_evidence(new, override).items():
            i = self.leg_names.index(leg)
            if kind not in STRONG and new[i] < prev[i] and self._can_settle(leg):
                pending[leg] = new[i]
                new[i] = prev[i]
        self._ask_suspects(pending)
        evidence = self._leg_evidence(new, override)
        if new == self.current:
            if evidence != self.evidence:     # the same links on other evidence (a suspect leg confirmed)
                self.evidence = evidence
                self.evidence_pub.publish(evidence_msg(new, self.evidence, self.leg_names, self.unexplained,
                                                       sorted(self.seized)))
                self.get_logger().warning("morphology %s now rests on %s (%s)" % (
                    format_morphology(new, self.leg_names), ", ".join("%s %s" % kv for kv in sorted(evidence.items())),
                    "; ".join(reasons)))
            return
        old = self.current
        self.current = new
        if self.body is not None:
            self.body.on_morphology(new)
        # what the verdict rests on, per leg, just before the morphology (the gait acts only on strong evidence)
        self.evidence = evidence
        self.evidence_pub.publish(evidence_msg(new, self.evidence, self.leg_names, self.unexplained,
                                                   sorted(self.seized)))
        self.pub.publish(morphology_msg(new, self.leg_names))
        if old is not None:
            self.changes.append(MorphologyChange(now, old, new, reasons))
            self.get_logger().warning("morphology %s -> %s (%s)" % (
                format_morphology(old, self.leg_names), format_morphology(new, self.leg_names), "; ".join(reasons)))
        else:
            self.get_logger().info("morphology %s" % format_morphology(new, self.leg_names))

    def _can_settle(self, leg: str) -> bool:
        """A suspect probe may still settle ``leg``: the identifier and the probe are on, and no suspect probe of
        the leg has failed to (refused, no verdict after its retry, never started)."""
        probe = self.active_probe
        return probe is not None and probe.config.enabled and leg not in self.unresolved

    def _ask_suspects(self, pending: Dict[str, int]) -> None:
        """A suspect probe for each leg ``pending`` ({leg: links} on weak evidence, not published) not asked for
        yet (under the lock): the robot stands, the leg moves, and the gyro says whether it is there
        (``ActiveProbe.suspect``); the legs no longer pending are forgotten. Seizures wait meanwhile."""
        t = self.t()
        for leg in list(self.suspected):
            if leg not in pending:
                del self.suspected[leg]
                self._suspect_asked.pop(leg, None)
        for leg, links in sorted(pending.items()):
            if self.suspected.get(leg) == links:
                continue
            self.suspected[leg] = links
            self._suspect_asked[leg] = t
            self.active_probe.suspect(self.leg_names.index(leg), links)
            self.get_logger().warning("%s:%d rests on weak evidence (%s) alone: probing the leg to confirm or rule it "
                                      "out before it is published" % (leg, links, ", ".join(sorted(
                                          f.reason for j, f in self.detector.faults.items()
                                          if j.endswith("_" + leg)))))
        weak = pending or any(k not in STRONG for k in self.evidence.values())
        if weak:
            self._seizure_paused_until = math.inf
        elif self._seizure_paused_until == math.inf:
            self._seizure_paused_until = t + SEIZURE_GRACE

    def _unresolved(self, leg: str, why: str) -> None:
        """The suspect probe cannot settle ``leg`` (under the lock): its weak evidence is published as it is (the
        gait keeps every foot down on it until other evidence comes or the morphology is corrected)."""
        self.unresolved.add(leg)
        self.get_logger().warning("%s: %s; its loss is published on its weak evidence (the gait keeps every foot "
                                  "down until other evidence comes or the morphology is corrected)" % (leg, why))
        self._decide_locked(self.now_sec(), ["%s unresolved: %s" % (leg, why)])

    def _seizure_paused(self) -> bool:
        """Seizures are not judged while a leg's state is unresolved (weak evidence), while a probe holds the robot,
        and ``SEIZURE_GRACE`` s after either: standing on a leg that may be gone loads the others past their
        commands."""
        probe = self.active_probe
        return (self.t() < self._seizure_paused_until
                or (probe is not None and (probe.active or probe.suspect_pending)))

    def _joints_back(self, now: float, names: List[str]) -> None:
        """Joints whose only fault was their absence from joint_states are back: that evidence is withdrawn (the
        morphology follows; a suspect probe of their leg is dropped)."""
        back = [j for j in names if j in self.detector.faults and self.detector.faults[j].source == "joint_states"]
        if not back:
            return
        with self._lock:
            cleared = self.detector.clear(back)
            legs = {self.leg_names[k] for k, _ in joint_leg_link(cleared, self.leg_names)}
            left = {self.leg_names[k] for k, _ in joint_leg_link(
                [j for j, f in self.detector.faults.items() if f.source == "joint_states"], self.leg_names)}
            for leg in legs - left:
                self.unresolved.discard(leg)
                if self.active_probe is not None:
                    self.active_probe.withdraw(self.leg_names.index(leg))
        self._decide(now, ["%s back in joint_states" % ", ".join(cleared)])
        self._publish_status()

    def _leg_evidence(self, new: List[int], override: Optional[List[int]]) -> Dict[str, str]:
        """Per damaged leg of ``new``, what its link count rests on (``damage.evidence.KINDS``): the override, the
        model (the identifier's count; or fewer links where the model counts the leg broken, its foot gone, and its
        joints are gone from joint_states: the model says it carries nothing, joint_states how many joints are
        left), else the servo detector's strongest fault on that leg."""
        servo = self.detector.leg_evidence()
        det = self.detector.morphology(None)
        model = self.identifier.morphology if self.identifier is not None else None
        out = {}
        for i, (leg, n) in enumerate(zip(self.leg_names, new)):
            if n >= self.detector.links:
                continue
            if override is not None and override[i] >= 0:
                out[leg] = "override"
            elif det[i] == n and servo.get(leg) == "servo":
                out[leg] = "servo"
            elif model is not None and (model[i] == n or (n < model[i] < self.detector.links
                                                           and servo.get(leg) == "joint_states")):
                out[leg] = "model"
            else:
                out[leg] = servo.get(leg, "none")
        return out

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
        self._seizure_changed(now)          # a stall is a seizure: said when the set of seized joints changes

    def _on_joint_states(self, msg: JointState) -> None:
        """Presence evidence and, with the identifier on, the measured angles. The whole message is validated
        first (known, unique names; sizes; finite values within the joint limits and their margin, as the
        predictor checks them): a malformed message is rejected, never taken as evidence that the joints it
        leaves out are gone (a flood of malformed joint_states)."""
        self.check_stamp("joint_states", msg.header)
        idx, pos, _ = messages.joint_state(msg.name, msg.position, msg.velocity, msg.effort, self.joint_names,
                                           lower=self.lower, upper=self.upper)
        now = self.now_sec()
        st = msg.header.stamp
        self.presence.observe(now, list(msg.name), None if st.sec == 0 and st.nanosec == 0 else stamp_to_sec(st))
        if self._presence_judged(now):
            self._joints_back(now, list(msg.name))
            self._apply(now, self.detector.update_presence(now, self.presence))
        if self.body is not None:
            self._pair(False, st, self.stamp_time(st), idx, pos)
        if not self._seizure_paused():
            self.seizure.on_joint_states(now, now if st.sec == 0 and st.nanosec == 0 else stamp_to_sec(st),
                                         [self.joint_names[i] for i in idx], pos)
        if self.seizure.changed:
            self.seizure.changed = False
            self._seizure_changed(now)
        if self.worker is not None:
            self.q_meas[idx] = pos
            self._feed("joint_states", "on_joints", self.stamp_time(msg.header.stamp), self.q_meas.copy())

    def _presence_judged(self, now: float) -> bool:
        """joint_states evidence is judged only once servo_driver's statuses had their chance to say which
        joints they cover (``servo_diagnostics_timeout`` after start; its full set comes at diagnostics_rate):
        before that a starting driver's partial reads would read as joints left out (it made a false RF:1
        at 0.6 s)."""
        return now - self._t_start_ros >= self.p["servo_diagnostics_timeout"]

    def _apply(self, now: float, new) -> None:
        if new:
            self.last_source = "servo"
            self._feed_servo()
            self._decide(now, ["%s: %s" % (f.joint, f.reason) for f in new])
            self._publish_status()

    def _seizure_changed(self, now: float) -> None:
        """If the set of seized joints (joint_states' and the servo driver's stalls) changed: say it (log,
        evidence, diagnostics) and decide again -- a seized joint keeps its links, and the model's verdict on its
        leg is not followed (the seizure explains the motion)."""
        with self._lock:
            seized = dict(self.seizure.seized)
            seized.update(self.detector.stalled)
            if set(seized) == set(self.seized):
                return
            new, self.seized = sorted(set(seized) - set(self.seized)), seized
            for j in new:
                self.get_logger().warning("%s seized: %s; morphology kept, the gait crawls" % (j, seized[j]))
            if not seized:
                self.get_logger().info("no joint seized any more")
            self.evidence_pub.publish(evidence_msg(self.current, self.evidence, self.leg_names, self.unexplained,
                                                   sorted(self.seized)))
            self._decide_locked(now, ["seized: %s" % (", ".join(sorted(seized)) or "none")])
        self._publish_status()

    def _seized_legs(self) -> set:
        return {self.leg_names[leg] for leg, _ in joint_leg_link(list(self.seized), self.leg_names)}

    def _on_reset(self, request, response):
        with self._lock:                   # a service callback: not wrapped by guard()
            self.detector.reset()
            self.seizure.reset()
            self.seized = {}
            self.suspected, self._suspect_asked, self._suspect_started = {}, {}, set()
            self.unresolved = set()
            self._seizure_paused_until = -math.inf
            self._make_identifier()            # forget what the model found, too
            self._decide(self.now_sec(), ["reset"])
        response.success = True
        response.message = "faults cleared; morphology %s" % format_morphology(self.current, self.leg_names)
        return response

    # The status at check_rate (1 Hz, as diagnostic_updater publishes): each one is ~45 values, ~2 kB that every
    # /diagnostics reader deserializes -- this node too, which reads the servo driver's there. At 10 Hz it cost
    # ~4 % of the model process's CPU (bench_nano_budget.py); a change of state is published at once instead.
    def _on_check(self) -> None:
        self._suspects_waiting()
        self._publish_status()

    def _suspects_waiting(self) -> None:
        """A suspect probe that has not started ``SUSPECT_START`` s after it was asked (no joint_commands: no gait
        controller to move the leg) cannot settle its leg: its weak evidence is published."""
        with self._lock:
            probe, t = self.active_probe, self.t()
            for leg, asked in list(self._suspect_asked.items()):
                if leg in self._suspect_started or t - asked < SUSPECT_START:
                    continue
                if probe is not None and probe.active:
                    continue                   # another probe holds the robot: this one waits its turn
                if probe is not None:
                    probe.withdraw(self.leg_names.index(leg))
                self._suspect_asked.pop(leg, None)
                self._unresolved(leg, "no probe started within %.1f s (no joint_commands to move the leg with?)"
                                 % SUSPECT_START)

    def _publish_status(self) -> None:
        with self._lock:
            self._publish_status_locked()

    def _publish_status_locked(self) -> None:
        now = self.now_sec()
        level, message = 0, "morphology %s" % format_morphology(self.current, self.leg_names)
        if self.last_servo_diag is None or now - self.last_servo_diag > self.p["servo_diagnostics_timeout"]:
            level, message = 1, message + "; no servo diagnostics (is servo_driver running?)"
        values = [("morphology", list(self.current)), ("legs", ",".join(self.leg_names)),
                  ("override", list(self.p["morphology"]))]
        values += [("fault " + j, f.reason) for j, f in sorted(self.detector.faults.items())]
        values.append(("seized", ",".join(sorted(self.seized))))
        values += [("seized " + j, why) for j, why in sorted(self.seized.items())]
        if self.seized:
            message += "; seized: %s (links kept, the gait crawls)" % ", ".join(sorted(self.seized))
            level = max(level, 1)
        values.append(("evidence", self.last_source))
        values += [("suspects", format_morphology([self.suspected.get(leg, self.detector.links)
                                                   for leg in self.leg_names], self.leg_names)
                    if self.suspected else ""), ("unresolved", ",".join(sorted(self.unresolved)))]
        if self.suspected:
            message += "; probing %s: a loss on weak evidence" % ",".join(sorted(self.suspected))
        values += [("evidence " + leg, kind) for leg, kind in sorted(self.evidence.items())]
        if self.changes:      # why the morphology is what it is (a model's link count it could not single out too)
            values.append(("last_change_reason", "; ".join(self.changes[-1].reasons)))
        idf, worker = self.identifier, self.worker
        values.append(("identifier", "off" if idf is None else ("failed: " + worker.failed if worker.failed
                                                                  else "on")))
        if idf is not None:
            for k, (links, p) in enumerate(idf.top(3)):
                values.append(("hypothesis %d" % (k + 1), "%s p=%.3f" % (idf.describe(links), p)))
            values += [("identifier_windows", idf.windows), ("identifier_bank_windows", idf.bank_windows),
                       ("identifier_skipped_windows", idf.skipped_windows), ("identifier_gaps", idf.gaps),
                       ("identifier_unexplained", idf.unexplained),
                       ("identifier_residual_rms_deg", "%.3f" % math.degrees(idf.residual_rms)),
                       ("identifier_unexplained_windows", idf.unexplained_windows),
                       ("identifier_unexplained_decisions", idf.unexplained_decisions),
                       ("identifier_gyro_bias_z", "%.5f" % idf.gyro_bias),
                       ("identifier_ground_slope_deg", "%.2f" % math.degrees(math.hypot(*idf.ground_slope))),
                       ("identifier_rejected", sum(idf.rejections.values())),
                       ("identifier_queue", len(worker._queue)), ("identifier_dropped", worker.dropped)]
            gov = worker.governor
            degraded = gov is not None and gov.degraded
            values += [("identifier_degraded", degraded),
                       ("identifier_bank_every", gov.bank_every if gov is not None else 1),
                       ("identifier_degraded_reason", gov.reason if degraded else ""),
                       ("identifier_lag_s", gov.last_lag if gov is not None else 0.0),
                       ("identifier_deferred_windows", getattr(idf, "deferred_windows", 0))]
            if idf.unexplained:
                message += ("; motion unexplained by every hypothesis (residual %.1f deg RMS): morphology kept"
                            % math.degrees(idf.residual_rms))
                level = max(level, 1)
            if degraded:
                message += "; identifier degraded: a bank episode at most every %d windows (%s)" % (
                    gov.bank_every, gov.reason)
                level = max(level, 1)
            for what, stats in (("cpu", worker.window_cpu), ("wall", worker.window_wall)):
                st = stats.summary()
                values += [("identifier_window_%s_%s" % (what, k), st[k]) for k in ("p50_ms", "p99_ms", "max_ms")]
            if worker.failed and level == 0:
                level = 1
        if self.detector.faults and level == 0:
            level = 1
        values += self._probe_values()
        probe = self.active_probe
        if probe is not None and probe.active and probe.results:
            message += "; probing %s (the gait stands)" % probe.results[-1]["leg"]
        if self.body is not None:
            values += self._publish_body()
        self.publish_diagnostics([self.node_status(message, level, values)])

    def close(self) -> None:
        self._stop_identifier(timeout=5.0)


NODE = DamageMonitor  # the class graph.node_class() finds


def main(args=None):
    return run(DamageMonitor, args)


if __name__ == "__main__":
    main()
