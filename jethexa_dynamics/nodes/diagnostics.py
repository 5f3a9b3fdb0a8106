"""What each node reports on ``/diagnostics``, as data (no rclpy): the statuses it publishes and their keys.

The node reference pages (``nodes/reference.py``) print these; ``test/test_security.py`` runs the launch graphs and
checks that every key a node publishes is declared here (``<...>`` in a name stands for the part that varies),
and ``test/test_docs.py`` that every declared key is still written by the code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Dict, Tuple

from jethexa_dynamics.damage.detection import ServoStatus


@dataclass(frozen=True)
class Key:
    name: str
    meaning: str


@dataclass(frozen=True)
class Status:
    """A status a node publishes: ``name`` after the node's name and ``': '`` (``<node name>: node``)."""
    name: str
    meaning: str
    keys: Tuple[Key, ...]

    def match(self, key: str) -> bool:
        return any(pattern(k.name).fullmatch(key) for k in self.keys)


def pattern(name: str) -> "re.Pattern[str]":
    """A key or status name with ``<...>`` placeholders as a regular expression."""
    return re.compile("".join(".+" if part.startswith("<") else re.escape(part)
                              for part in re.split(r"(<[^>]*>)", name) if part))


K = Key

#: every node's own status (``ThinNode.node_status``): rejected input, errors, CPU per callback
NODE_KEYS: Tuple[Key, ...] = (
    K("rejected_total", "messages and parameter values refused since start (bad input: the node keeps serving)"),
    K("errors", "unexpected exceptions in callbacks (a bug: logged with its traceback)"),
    K("rejected <topic>", "refused messages of one topic (or parameter changes, or the servo bus); "
      "``rejected <topic> (oversize)``: those refused for their size before they were decoded"),
    K("last_rejection", "the last refusal's one line"),
    K("qos_incompatible", "publishers or subscriptions on this node's topics whose QoS cannot match (WARN)"),
    K("cpu_ms_per_s <callback>", "CPU time of one callback (a topic, a timer) since the previous report "
      "[ms per s; 10 = 1 % of a core]; ``rejected <topic>``: of its calls that refused the message"),
    K("cpu_s <callback>", "its total CPU time [s]"),
    K("calls <callback>", "how often it ran"),
)
#: nodes that act on ``morphology`` only from their authority (``nodes/authority.py``)
AUTHORITY_KEYS: Tuple[Key, ...] = (
    K("morphology_authority", "whose morphology messages are acted on (parameter morphology_authority and the "
      "allowed list)"),
    K("morphology_sender_check", "how the sender is identified: publisher gid or ros graph"),
    K("morphology_accepted", "morphology messages acted on"),
)
#: nodes that run the engines' compiled kernels (``sim.engine.KERNEL_CPU``)
KERNEL_KEYS: Tuple[Key, ...] = (
    K("process_kernel_cpu_s", "CPU time the whole process spent in the engines' compiled steps [s] (numba nogil)"),
)
#: the servo driver's per-servo status: every field of ``damage.detection.ServoStatus`` (what damage_monitor reads
#: back with ``decode_servo_status``), with its meaning
SERVO_FIELDS: Dict[str, str] = {
    "joint": "the joint the servo drives",
    "servo_id": "its bus ID",
    "reads": "read attempts",
    "misses": "read attempts without a valid reply",
    "consecutive_misses": "misses in a row (counted only while other servos answer: a silent bus is no lost leg)",
    "last_reply_age": "seconds since its last valid reply (inf: never)",
    "voltage_mv": "supply voltage read [mV]",
    "temperature_c": "temperature read [deg C]",
    "vin_min_mv": "the servo's own lower voltage limit, read from it [mV] (below: WARN under-voltage)",
    "vin_max_mv": "its upper voltage limit [mV] (above: WARN over-voltage)",
    "temp_limit_c": "its temperature limit [deg C] (above: WARN over-temperature)",
    "led_alarm": "the LED alarm setting read back (cmd 36; -1 not read): configuration, never a fault",
    "commanded": "the last commanded angle [rad]",
    "measured": "the last measured angle [rad]",
    "measured_age": "seconds since that position read",
    "torque": "loaded (true) or unloaded (LOAD_OR_UNLOAD_READ when read, else what the driver last sent)",
    "silent_confirmations": "confirmation reads (long timeout, on time) without a reply since its last valid reply",
}
assert set(SERVO_FIELDS) == {f.name for f in fields(ServoStatus)}, "describe every ServoStatus field here"


def node_status(meaning: str, *keys: Key) -> Status:
    """``<node>: node``: the common keys, then the node's own."""
    return Status("node", meaning, NODE_KEYS + tuple(keys))


_DEGRADE = (
    K("degraded", "true while the cycle rate is lowered on purpose (CPU short; level WARN)"),
    K("effective_rate_hz", "the cycle rate in force [Hz]"),
    K("degraded_reason", "why it was lowered"),
    K("late_fraction", "fraction of the last 2 s' cycles that ran late or not at all"),
    K("cycle_cpu_fraction", "fraction of a core the last 2 s' cycles took"),
    K("degrade_steps_down", "times the rate was halved"),
    K("degrade_steps_up", "times it was doubled back"),
)

KEYS: Dict[str, Tuple[Status, ...]] = {
    "servo_driver": (
        node_status(
            "the bus: open or not, silent or not (ERROR when no servo answered for 1 s: a bus fault, not six lost "
            "legs)",
            K("port", "the serial device"),
            K("commands_applied", "joint_commands messages sent to the servos"),
            K("commands_before_open", "valid joint_commands that came before the bus first opened (start-up: "
              "dropped, not counted as rejected; after a bus failure they are rejected)"),
            K("bus_silent_s", "seconds since any servo answered"),
            K("led_alarm", "the configured LED alarm setting (parameter led_alarm)")),
        Status("servo <id> (<joint>)", "one per servo, all at diagnostics_rate, the faulty ones (missed replies, "
               "readings outside the servo's own limits) at fault_report_rate: what damage_monitor decides from",
               tuple(K(k, v) for k, v in SERVO_FIELDS.items())),
        Status("board", "with transport rrc (the STM32 board): its IMU and battery reports (ERROR when the IMU "
               "reports stop; battery WARN at 10.5 V, ERROR at 10 V)", (
                   K("imu_samples", "IMU reports published on imu/data"),
                   K("imu_gaps", "IMU sample periods without a report"),
                   K("imu_rate_expected_hz", "the board's IMU rate (parameter imu_rate) [Hz]"),
                   K("battery_v", "the battery voltage [V] (nan: no report yet)"),
                   K("battery_reports", "battery reports read"),
                   K("reports_<kind>", "unasked reports of the board skipped, by kind (bad CRC, unknown function, "
                     "...)"))),
    ),
    "imu": (
        node_status(
            "the sensor and the attitude filter (initialising the attitude for filter_init_time after a (re)start)",
            K("source", "chip (the MPU6050 on I2C) or emulator"),
            K("samples", "samples read"),
            K("read_failures", "failed reads of the chip"),
            K("gaps", "sample periods without a sample"),
            K("gyro_bias", "the gyro bias [rad/s] (x, y, z) measured at start-up, once known")),
    ),
    "gait_controller": (
        node_status(
            "the walk's state; WARN while a morphology is held for want of evidence",
            K("state", "walking, crawl, stance, planning, probe, imu_stale, unconfirmed, ..."),
            K("walking_legs", "the legs that step"),
            K("active_gait", "the gait in use (tripod, ripple, wave, a re-planned crawl, planning)"),
            K("stability_margin", "the planned static stability margin [m]"),
            K("heading_hold", "on or off (with recovery)"),
            K("morphology", "the morphology the gait follows"),
            K("morphology_requested", "the last morphology received from the authority"),
            K("morphology_held", "why a requested morphology is not followed yet (no: it is)"),
            K("morphology_holds", "how often a morphology was held"),
            K("motion_unexplained", "damage_monitor's identifier says no morphology explains the motion: the "
              "gait crawls"),
            K("seized", "seized joints (comma-separated): the gait crawls"),
            K("command_applied", "the command in force (vx [m/s], vy [m/s], yaw rate [rad/s]) after clamping"),
            K("joint_commands_published", "joint_commands messages published"),
            K("probe", "the active probe under way (leg and end time), returning, or none"),
            K("probes_run", "active probes run"),
            *AUTHORITY_KEYS),
    ),
    "predictor": (
        node_status(
            "cycle time against the period (WARN when its p99 is over the period, or degraded; ERROR without a "
            "model)",
            K("predictor", "the model in use (parameter predictor)"),
            K("horizon_s", "the re-anchoring horizon [s]"),
            *_DEGRADE,
            K("paced_by", "imu/data (a cycle after each IMU sample) or timer"),
            K("cycles_paced_by_imu", "cycles run after an IMU sample"),
            K("cycles_on_timer", "cycles run on the timer"),
            K("cycles", "cycles counted in the statistics (parameter stats_window)"),
            K("mean_ms", "cycle time, mean [ms]"),
            K("p50_ms", "cycle time, median [ms]"),
            K("p99_ms", "cycle time, 99th percentile [ms]"),
            K("max_ms", "cycle time, maximum [ms]"),
            K("overruns", "cycles longer than the period"),
            K("<stage>_<statistic>", "the cycle's stages: dynamics (the models' pose(t)) and publishing, each as "
              "p50_ms, p99_ms and mean_ms"),
            K("body", "where the models' body comes from: urdf, parameters or estimate"),
            K("body_estimates", "body/inertia messages taken"),
            K("body_mass", "the model's body mass [kg]"),
            K("body_com", "the model's body CoM [m, base_link]"),
            K("morphology", "the morphology the models have"),
            K("anchors", "re-anchors so far"),
            K("mocap", "fresh or none: whether mocap/pose is used as the measured position"),
            K("error_rpy_xyz", "the last prediction error: roll, pitch, yaw [rad], x, y, z [m]"),
            *AUTHORITY_KEYS, *KERNEL_KEYS),
    ),
    "damage_monitor": (
        node_status(
            "the morphology and why (WARN with faults, seized joints, unexplained motion, a degraded identifier, "
            "or no servo diagnostics for servo_diagnostics_timeout)",
            K("morphology", "the published morphology: intact links per leg"),
            K("legs", "the legs' order (LF,LM,LR,RF,RM,RR)"),
            K("override", "the morphology parameter (-1: automatic)"),
            K("fault <joint>", "a servo fault and its reason"),
            K("seized", "seized joints, comma-separated"),
            K("seized <joint>", "why that joint is taken for seized"),
            K("evidence", "servo or model: the evidence of the last change"),
            K("evidence <leg>", "the evidence of a damaged leg (servo, model, override, stall, joint_states, probe, "
              "none)"),
            K("suspects", "legs lost on weak evidence alone (joint_states) that a probe is checking before they are "
              "published, e.g. RM:0 ('' none)"),
            K("unresolved", "legs a probe could not settle: published on their weak evidence, comma-separated"),
            K("last_change_reason", "the reasons of the last morphology change"),
            K("identifier", "on, off, or failed: why"),
            K("hypothesis <n>", "the identifier's n-th most probable morphology, e.g. LM:1 p=0.987"),
            K("identifier_windows", "windows scored"),
            K("identifier_bank_windows", "windows a bank episode of the models ran"),
            K("identifier_skipped_windows", "windows not scored (data gaps)"),
            K("identifier_gaps", "data gaps seen"),
            K("identifier_unexplained", "true while no hypothesis explains the motion"),
            K("identifier_residual_rms_deg", "the best hypothesis's residual [deg RMS]"),
            K("identifier_unexplained_windows", "windows no hypothesis explained"),
            K("identifier_unexplained_decisions", "decisions that the motion is unexplained"),
            K("identifier_gyro_bias_z", "the learnt gyro z bias [rad/s]"),
            K("identifier_ground_slope_deg", "the learnt ground slope [deg]"),
            K("identifier_rejected", "samples the identifier refused"),
            K("identifier_queue", "samples waiting for its worker thread"),
            K("identifier_dropped", "samples dropped from a full queue"),
            K("identifier_degraded", "true while the identifier runs its bank less often on purpose (WARN)"),
            K("identifier_bank_every", "a bank episode at most every n-th window"),
            K("identifier_degraded_reason", "why"),
            K("identifier_lag_s", "the last window's lag behind its data [s]"),
            K("identifier_deferred_windows", "windows whose episode start was deferred (not scored)"),
            K("identifier_window_<cpu or wall>_<statistic>", "per window, the CPU time of its work (cpu) and the "
              "same with the worker's pauses between models (wall: the delay of a decision), as p50_ms, p99_ms, "
              "max_ms"),
            K("probe", "the active probe: on or off"),
            K("probe_requests", "probe requests sent to the gait controller"),
            K("probe_state", "idle, standing or probing"),
            K("probe_results", "probes finished"),
            K("probe_last_leg", "the last probe's leg"),
            K("probe_last", "its verdict: a link count, ambiguous with the probabilities, refused, aborted, off, "
              "or no verdict (a starved probe; it runs once more)"),
            K("probe_last_probabilities", "each link count's probability"),
            K("probe_last_misfit", "each count's chi^2 per scored gyro value (about 1: explains the gyro to its "
              "noise)"),
            K("probe_last_command_gap_ms", "the longest gap between the probe's command ticks [ms]"),
            K("probe_last_cpu_score_ms", "CPU time of scoring it [ms]"),
            K("probe_last_margin_m", "its planned static stability margin [m]"),
            K("body_seconds", "seconds of data in the body estimate (with body_estimate)"),
            K("body_healthy", "whether the morphology is healthy (the estimate runs only then)"),
            K("body_pairs", "joint_states paired with their set-points"),
            K("body_unpaired", "joint_states without set-points"),
            K("body_rejected", "readings the estimate refused"),
            K("body_mass", "the estimated body mass [kg] (nan: none yet)"),
            K("body_com", "the estimated CoM [m, base_link]"),
            K("body_servo_lag_ms", "the servos' moves' timing against the driver's set-points [ms]"),
            *KERNEL_KEYS),
    ),
    "stock_adapter": (
        node_status(
            "the stock topics' conversion (WARN with names or frames the joint map does not know; ERROR when the "
            "stock stack is silent for stale_after)",
            K("mode", "companion"),
            K("unavailable", "what the stock topics cannot give (measured joints, servo health, seizure detection)"),
            K("morphology", "reported on morphology, not acted on (the stock gait does not read it)"),
            K("joint_map", "the joint map in use"),
            K("commands_topic", "the stock commanded joints' topic"),
            K("imu_topic", "the stock IMU's topic"),
            K("commands_in", "stock joint messages converted"),
            K("imu_in", "stock IMU messages converted"),
            K("command_age_s", "seconds since the last stock joint message"),
            K("imu_age_s", "seconds since the last stock IMU message"),
            K("foreign_joints", "stock joints the map does not name, with their counts"),
            K("foreign_frames", "IMU frames other than imu_frame, with their counts")),
    ),
    "robot_emulator": (
        node_status(
            "the emulated world (WARN when it falls behind real time)",
            K("interface", "bus (servo bus and IMU model for the drivers) or topics (the world's joints and IMU "
              "as topics)"),
            K("plant", "engine or mujoco"),
            K("port", "the emulated bus's pty"),
            K("port_link", "the link to it (what servo_driver opens)"),
            K("sim_time", "simulated time [s]"),
            K("real_time_factor", "simulated over real time"),
            K("engine_wall_time", "wall time in the engine [s]"),
            K("lag_events", "world updates that fell behind real time"),
            K("sim_failures", "engine steps that failed"),
            K("world_morphology", "the world's robot: links per leg (parameter damage)"),
            K("silenced_servos", "servos silenced by the damage"),
            K("world_breaks", "silent breaks in the world (parameter breaks)"),
            K("world_seized", "seized joints in the world (parameter seize)"),
            K("commands_applied", "with interface topics: joint_commands taken"),
            K("hidden_joints", "with interface topics: joints left out of joint_states (parameter hide)")),
    ),
}
