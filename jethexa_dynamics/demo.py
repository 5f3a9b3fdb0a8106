"""``jethexa-demo``: the whole ``sim.launch.py`` graph, walking, with a damage event mid-run.

The emulated JetHexa (simulation engine + servo-bus emulator on a pty, in a process of its own as the real
hardware would be) is driven by the real nodes -- servo_driver, imu (with the MPU6050 register model),
gait_controller, predictor, damage_monitor -- in this process, on one executor, over DDS on this machine only.
The demo sends ``cmd_vel``, prints predicted vs measured pose as a live table, removes legs in the emulated
world at ``--damage-at`` (the damage monitor must notice from the silent servos, then the gait and the
predictor reshape without a restart), and ends with a summary. Exit status 0 on a clean run.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from jethexa_dynamics.model import jethexa

DEFAULT_DURATION = 16.0
DEFAULT_DAMAGE_AT = 7.0
DEFAULT_PREDICTOR_RATE = 50.0
LEGS = tuple(jethexa().leg_names)   # the URDF's leg order
EMULATOR = "robot_emulator"  # the hardware's stand-in: a process of its own


def build_parser() -> argparse.ArgumentParser:
    from jethexa_dynamics.cli_args import ArgumentParser, checked, new_dir, number, param
    from jethexa_dynamics.nodes.graph_spec import KIT_DEFAULT, KITS
    from jethexa_dynamics.nodes.params import GAIT_CONTROLLER, PREDICTOR

    vmax = GAIT_CONTROLLER["max_linear_speed"].hi
    ap = ArgumentParser(
        prog="jethexa-demo", description=__doc__.split("\n\n")[0],
        epilog="Watch from another terminal with the same ROS_DOMAIN_ID (printed at start): "
               "ros2 topic echo /prediction/error (needs --network or a ROS_LOCALHOST_ONLY=1 shell).")
    ap.add_argument("--duration", type=number(1.0, 3600.0, unit="s"), default=DEFAULT_DURATION,
                    help="walking time [s] (default %(default)s)")
    ap.add_argument("--damage-at", type=number(0.0, None, lo_open=True, unit="s"), default=DEFAULT_DAMAGE_AT,
                    help="when to damage the emulated robot [s], inside (0, --duration) (default %(default)s)")
    ap.add_argument("--no-damage", action="store_true", help="walk healthy for the whole run")
    ap.add_argument("--damage", default="scenario1", type=checked(damage_links),
                    help="what to break: scenario1 (legs RM, LM removed), scenario2 (LM, RR keep only the coxa), "
                         "'RF', 'LM:1,RR:2', ... (default %(default)s)")
    ap.add_argument("--break", dest="breaks", default=None, metavar="SPEC", type=checked(damage_links),
                    help="instead of --damage: a silent break at --damage-at (links lost, servos keep answering), "
                         "e.g. LM:1, RR:0, scenario2; found by damage_monitor's model-based identifier")
    ap.add_argument("--speed", type=number(-vmax, vmax, unit="m/s"), default=0.05,
                    help="forward speed command [m/s] (default %(default)s)")
    ap.add_argument("--recovery", default="on", choices=("on", "off"),
                    help="damage recovery in the gait controller: re-planned gait + heading hold (default on)")
    ap.add_argument("--predictor", default=PREDICTOR["predictor"].default, type=param(PREDICTOR["predictor"]),
                    help="predictor model: %s (default %%(default)s)" % ", ".join(PREDICTOR["predictor"].choices))
    ap.add_argument("--horizon", type=param(PREDICTOR["horizon"]), default=2.0,
                    help="predictor re-anchoring horizon [s] (%s)" % PREDICTOR["horizon"].range_text())
    ap.add_argument("--predictor-rate", type=param(PREDICTOR["rate"]), default=DEFAULT_PREDICTOR_RATE,
                    help="predictor rate [Hz] (default %(default)s: the robot's five nodes share one Python "
                         "process here; the launch files run it at 100 Hz)")
    ap.add_argument("--period", type=number(0.05, 10.0, unit="s"), default=0.5,
                    help="table row period [s] (default %(default)s)")
    ap.add_argument("--record", default=None, metavar="PATH", type=new_dir,
                    help="record the run to a rosbag2 directory (must not exist yet)")
    ap.add_argument("--record-storage", default="mcap", choices=("mcap", "sqlite3"),
                    help="storage of the --record bag (default %(default)s; sqlite3 needs no plugin on Humble)")
    ap.add_argument("--body-estimate", action="store_true",
                    help="estimate the body's mass and CoM online (sim.launch.py body_estimate:=true "
                         "servo_timing:=exact: the reads dithered, the emulated servos timed exactly); a --record "
                         "bag of it gives jethexa-calibrate the body (20 s of healthy walking at least)")
    ap.add_argument("--kit", default=None, choices=sorted(KITS),
                    help="which JetHexa is emulated (sim.launch.py kit:=): orin (today's kit: the STM32 board "
                         "carries the servos and the IMU; servo_driver publishes imu/data) or nano (the Jetson Nano "
                         "kit: UART servos, MPU6050 on the imu node) (default: the sim graph's, %s)"
                         % KIT_DEFAULT["sim"])
    ap.add_argument("--network", action="store_true",
                    help="use the ROS discovery settings of the environment instead of forcing loopback only")
    return ap


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """Parsed and checked options: a bad one ends in one line naming it, exit status 2, before any work."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if not args.no_damage and not args.damage_at < args.duration:
        ap.error("argument --damage-at: must be inside (0, --duration) = (0, %g) s, got %g (or use --no-damage)"
                 % (args.duration, args.damage_at))
    if args.breaks is not None and args.no_damage:
        ap.error("argument --break: excludes --no-damage")
    if args.breaks is not None and damage_links(args.breaks) == [3] * len(LEGS):
        ap.error("argument --break: %r breaks nothing (give a leg and its intact links, e.g. LM:1)" % args.breaks)
    return args


def damage_links(spec: str) -> List[int]:
    """Intact links per leg (URDF leg order) of a ``--damage`` spec (any spec of ``Morphology.parse``)."""
    from jethexa_dynamics.model import Morphology
    from jethexa_dynamics.nodes._robot import jethexa

    return list(Morphology.parse(jethexa(), spec).links_per_leg)


def configure_ros_environment(network: bool) -> Dict[str, str]:
    """Loopback-only DDS with a domain of our own unless ``--network`` (must run before rclpy.init)."""
    if not network:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        os.environ["ROS_LOCALHOST_ONLY"] = "1"
        os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))
    os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    return {k: os.environ.get(k, "") for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE",
                                               "ROS_LOCALHOST_ONLY")}


# ---------------------------------------------------------------------------------------------- table
HEADER = ("  t[s] | true x,y [m]    | predicted x,y,z [m]   | pred r,p,y [deg]   | IMU r,p,y [deg]    "
          "| err pos[mm] rpy[deg] | morphology")


def _deg(v) -> str:
    return " ".join("%5.1f" % math.degrees(x) for x in v)


def table_row(t, true_xy, pred_pos, pred_rpy, meas_rpy, err, morph_text) -> str:
    def xy(v, n):
        return " ".join("%6.3f" % x for x in v[:n]) if v is not None else " " * (7 * n - 1)
    pos_err = float(np.linalg.norm(err[3:])) * 1e3 if err is not None and np.all(np.isfinite(err[3:])) else math.nan
    ang_err = math.degrees(float(np.linalg.norm(err[:3]))) if err is not None else math.nan
    return "%6.1f | %s  | %s  | %s | %s | %7.1f  %6.2f   | %s" % (
        t, xy(true_xy, 2), xy(pred_pos, 3), _deg(pred_rpy) if pred_rpy is not None else " " * 17,
        _deg(meas_rpy) if meas_rpy is not None else " " * 17, pos_err, ang_err, morph_text)


def rms(a) -> float:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return float(np.sqrt(np.mean(a * a))) if a.size else math.nan


# ---------------------------------------------------------------------------------------------- checks
#: a displayed message stamped further than this from the demo's clock is not the graph's [s]
DISPLAY_STAMP_TOLERANCE = 2.0


def check_pose(frame: str, position_may_be_nan: bool = False):
    """``accept`` of a watched PoseStamped: the frame the graph uses, a stamp near now, a unit quaternion and
    a finite position (measured/pose: all-NaN when there is no mocap). Raises ValueError otherwise."""
    from jethexa_dynamics.nodes import messages as validate

    def accept(msg) -> None:
        if msg.header.frame_id != frame:
            raise validate.InvalidMessage("header.frame_id = %r: expected %r" % (msg.header.frame_id, frame))
        validate.stamp("header.stamp", msg.header.stamp.sec, msg.header.stamp.nanosec, time.time(),
                       DISPLAY_STAMP_TOLERANCE)
        p, o = msg.pose.position, msg.pose.orientation
        if position_may_be_nan and all(math.isnan(v) for v in (p.x, p.y, p.z)):
            validate.quaternion("pose.orientation", (o.x, o.y, o.z, o.w))
        else:
            validate.pose((p.x, p.y, p.z), (o.x, o.y, o.z, o.w), "pose")

    return accept


def check_error(msg) -> None:
    """``accept`` of prediction/error: six values labelled as the predictor labels them, finite or NaN."""
    from jethexa_dynamics.predictors.error_metric import ERROR_FIELDS
    from jethexa_dynamics.nodes.messages import InvalidMessage

    label = msg.layout.dim[0].label if msg.layout.dim else ""
    if label != ",".join(ERROR_FIELDS) or len(msg.data) != len(ERROR_FIELDS):
        raise InvalidMessage("prediction/error: expected %d values labelled %r" % (len(ERROR_FIELDS),
                                                                                   ",".join(ERROR_FIELDS)))
    if any(math.isinf(v) for v in msg.data):
        raise InvalidMessage("prediction/error: infinite value")


def displayed_morphology(msg, legs: Sequence[str], monitor) -> Optional[List[int]]:
    """Links per leg of a ``morphology`` message if ``monitor`` (the damage_monitor node) published it, else
    None: the message must decode (``morphology_from_wire``) to a morphology the monitor has had."""
    from jethexa_dynamics.model.wire import morphology_from_wire

    try:
        links = morphology_from_wire(list(msg.data), msg.layout.dim[0].label if msg.layout.dim else "", legs)
    except ValueError:
        return None
    if links == monitor.current or any(links == c.new or links == c.old for c in monitor.changes):
        return links
    return None


# ---------------------------------------------------------------------------------------------- run
@dataclass
class _Walk:
    """What the demo has seen since the walk started at ``t0`` (monotonic s); times below are from ``t0``."""
    t0: float
    t_damage: Optional[float] = None        # when the damage was sent to the emulated world
    t_detect: Optional[float] = None        # when damage_monitor first published it
    damage_sent: bool = False
    morph_seen: List[Sequence[int]] = field(default_factory=list)   # damage_monitor's morphologies, in order
    morph_t: float = -math.inf              # receive time of the last morphology message read
    foreign: int = 0                        # morphology messages not from damage_monitor
    next_row: float = 0.0                   # when the next table row is due


def _graph_overrides(args: argparse.Namespace, link: str) -> Dict[str, str]:
    """The sim.launch.py arguments the demo sets (servo bus link, predictor, recording, recovery, body estimate)."""
    out = {"port_link": link, "predictor": args.predictor, "horizon": str(args.horizon),
           "predictor_rate": str(args.predictor_rate), "record": args.record or "",
           "record_storage": args.record_storage, "recovery": "true" if args.recovery == "on" else "false",
           "publish_slip": "true"}   # the demo shows the second opinion beside the model
    if args.kit:
        out["kit"] = args.kit
    if args.body_estimate:
        # the emulator's default answers reads from its last 100 Hz update: too coarse for the body (a bag of it
        # read 1.22 kg and CoM -18 mm for the URDF's 1.35 kg; docs/identification.md)
        out.update(body_estimate="true", servo_timing="exact")
    return out


def _start_graph(say, graph, overrides, workdir: str, speed: float, t_build: float):
    """Start the emulated robot's process, then the robot's nodes and the demo's watcher (driving at ``speed``
    m/s) in this process; returns (emulator process, its log file, {name: node}, watcher, client of the
    emulator's parameters)."""
    from geometry_msgs.msg import PoseStamped
    from rcl_interfaces.srv import SetParameters
    from diagnostic_msgs.msg import DiagnosticArray
    from std_msgs.msg import Float64MultiArray, UInt8MultiArray

    from jethexa_dynamics.nodes._common import LATCHED_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Watcher, add_launch_graph
    from jethexa_dynamics.nodes.graph_spec import processes

    emulator = [p for p in processes("sim", overrides) if p.name == EMULATOR][0]
    emu_proc = graph.start_process(emulator, workdir)   # the hardware's stand-in first (the bus pty)
    emu_log = graph.processes[EMULATOR][1]
    nodes = add_launch_graph(graph, "sim", overrides, exclude=(EMULATOR,))
    w = graph.add(Watcher, name="demo")
    w.watch(DiagnosticArray, "/diagnostics", 10, emulator_status)
    odom = nodes["predictor"].p["odom_frame"]
    # validate what is displayed: anyone may publish on these topics (the morphology is checked below)
    for topic, typ, qos, accept in (
            ("predicted/pose", PoseStamped, 10, check_pose(odom)),
            ("measured/pose", PoseStamped, 10, check_pose(odom, position_may_be_nan=True)),
            ("slip/pose", PoseStamped, 10, check_pose(odom)),
            ("mocap/pose", PoseStamped, SENSOR_QOS, check_pose("world")),
            ("prediction/error", Float64MultiArray, 10, check_error),
            ("morphology", UInt8MultiArray, LATCHED_QOS, None)):
        w.watch(typ, topic, qos, accept)
    w.drive(speed)
    param_cli = w.create_client(SetParameters, "/robot_emulator/set_parameters")
    say("  %d nodes up in %.1f s: %s in this process, %s in its own (pid %d, log %s)" % (
        len(nodes) + 1, time.monotonic() - t_build, ", ".join(nodes), EMULATOR, emu_proc.pid, emu_log.name))
    return emu_proc, emu_log, nodes, w, param_cli


def _send_damage(say, args, param_cli, walk: _Walk, damage, silent: bool, legs) -> None:
    """Damage (or silently break) the emulated robot through its parameters; nobody else is told."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    from jethexa_dynamics.model import format_morphology

    pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=args.breaks if silent else args.damage)
    if param_cli.wait_for_service(timeout_sec=5.0):
        param_cli.call_async(SetParameters.Request(parameters=[
            ParameterMsg(name="breaks" if silent else "damage", value=pv)]))
        walk.t_damage = time.monotonic() - walk.t0
        walk.damage_sent = True
        say("  >> %.1f s: %s in the emulated world: %s (%s; nobody is told)"
            % (walk.t_damage, "silent break" if silent else "damage", format_morphology(damage, legs),
               "every servo keeps answering" if silent else "their servos go silent"))


def _follow_morphology(say, w, nodes, walk: _Walk, t: float, damage, silent: bool, legs) -> None:
    """Show each new morphology damage_monitor publishes; on the first that names the damage, wait for the
    gait and the predictor to reshape and show them."""
    from jethexa_dynamics.model import format_morphology

    for t_msg, m in w.since("morphology", walk.morph_t):
        if t_msg <= walk.morph_t:
            continue
        walk.morph_t = t_msg
        links = displayed_morphology(m, legs, nodes["damage_monitor"])
        if links is None:  # malformed or foreign: counted, never shown as the monitor's
            walk.foreign += 1
            continue
        if walk.morph_seen and links == list(walk.morph_seen[-1]):
            continue
        walk.morph_seen.append(links)
        if len(walk.morph_seen) > 1:
            since = "" if walk.t_damage is None else " (%.2f s after the damage)" % (t - walk.t_damage)
            say("  >> %.1f s: damage_monitor publishes morphology %s%s" % (t, format_morphology(links, legs), since))
            if damage is not None and _found(links, damage, silent) and walk.t_detect is None:
                walk.t_detect = t
                _show_reshaped(say, nodes, list(links), silent, legs)


def _show_reshaped(say, nodes, found: List[int], silent: bool, legs) -> None:
    """The identifier's ranking (silent break), then the gait and predictor once reshaped to ``found``."""
    from jethexa_dynamics.model import format_morphology
    from jethexa_dynamics.nodes.graph import wait_for

    gc, pr = nodes["gait_controller"], nodes["predictor"]
    if silent:
        st = nodes["damage_monitor"]
        say("  >> identifier: %s (evidence: %s)" % (", ".join(
            "%s p=%.3f" % (st.identifier.describe(h), p) for h, p in st.identifier.top(3)), st.last_source))
    # the re-plan runs in the gait controller's worker thread: wait for it (the graph keeps
    # running meanwhile; the gait holds an all-feet-down stance)
    wait_for(lambda: gc.walker.links_per_leg == found == list(pr.morphology) and not gc.walker.planning, 5.0)
    st = gc.walker.status()
    say("  >> gait %s for legs %s (%s, planned margin %.1f mm); predictor reshaped to %s -- "
        "no restart" % (st["gait"], ",".join(gc.walker.walking_legs), "walking" if
                        gc.walker.can_walk else "holding the stance" + (
                            ": " + st["reason"] if st["reason"] else ""),
                        1e3 * st["stability_margin"], format_morphology(pr.morphology, legs)))


def _say_row(say, w, walk: _Walk, t: float, period: float, legs) -> None:
    """One table row: the latest true, predicted and measured poses, the error and the morphology."""
    from jethexa_dynamics.model import format_morphology
    from jethexa_dynamics.predictors.error_metric import rpy

    # the next row on the period's grid: after a stall one row, not a burst of the same values
    walk.next_row = (int(t / period) + 1) * period
    mocap, pred, meas, err = (w.last(k) for k in ("mocap/pose", "predicted/pose", "measured/pose",
                                                   "prediction/error"))
    say(table_row(
        t, None if mocap is None else (mocap.pose.position.x, mocap.pose.position.y),
        None if pred is None else (pred.pose.position.x, pred.pose.position.y, pred.pose.position.z),
        None if pred is None else rpy(_q(pred)), None if meas is None else rpy(_q(meas)),
        None if err is None else np.asarray(err.data, dtype=float),
        format_morphology(walk.morph_seen[-1], legs) if walk.morph_seen else "?"))


def _shut_down(say, graph, workdir: str, record: Optional[str]) -> bool:
    """Close the nodes, then the emulator (the servos unloaded over its bus); show its log if it failed; say
    whether the bag was written. False if the emulator failed."""
    graph.close()
    code, log = graph.exit_codes.get(EMULATOR), graph.logs.get(EMULATOR, "")
    failed = code not in (0, None) or "Traceback" in log
    if failed:
        say("  %s ended with status %s; its log:\n%s" % (EMULATOR, code, log[-3000:]))
    shutil.rmtree(workdir, ignore_errors=True)
    if record:  # only claim a bag that rosbag2 finished (it writes metadata.yaml on close)
        if os.path.isfile(os.path.join(record, "metadata.yaml")):
            say("  bag written to %s (jethexa-validate %s)" % (record, record))
        else:
            say("  NO bag written to %s (the recorder did not finish; see the log above)" % record)
    return not failed


def run(args: argparse.Namespace, out=sys.stdout) -> int:
    env = configure_ros_environment(args.network)
    # the servo driver's bus thread shares this process with the executor and the identifier's worker: hand
    # the GIL over more often so a reply is read when it comes, not behind a long callback (default 5 ms)
    sys.setswitchinterval(0.001)
    from jethexa_dynamics.model import format_morphology
    from jethexa_dynamics.nodes.graph import Graph, wait_for

    def say(text=""):
        print(text, file=out, flush=True)

    legs = list(LEGS)
    silent = args.breaks is not None
    damage = None if args.no_damage else damage_links(args.breaks if silent else args.damage)
    say("jethexa-demo: the sim.launch.py graph (the robot's nodes in this process, the emulated robot in its "
        "own); DDS %s, ROS_DOMAIN_ID=%s" % (
        "as configured by the environment" if args.network else "on loopback only", env["ROS_DOMAIN_ID"]))
    from jethexa_dynamics.nodes.graph_spec import KIT_DEFAULT, KITS
    kit = args.kit or KIT_DEFAULT["sim"]
    say("  kit %s (%s); walk %.3f m/s for %.0f s; %s; predictor %s (re-anchored every %.1f s)" % (
        kit, KITS[kit].description, args.speed, args.duration, "no damage" if damage is None else "%s %s at %.1f s"
        % ("silent break" if silent else "damage", format_morphology(damage, legs), args.damage_at),
        args.predictor, args.horizon))
    from jethexa_dynamics import warmup
    warmup.ensure_kernels(tuple(warmup.GROUPS), log=lambda line: say("  " + line))  # says compiling only if so
    say("  building the nodes")
    overrides = _graph_overrides(args, "/tmp/jethexa_demo_bus_%d" % os.getpid())
    t_build = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="jethexa_demo_")
    graph = Graph(threads=1)
    status = 1
    try:
        emu_proc, emu_log, nodes, w, param_cli = _start_graph(say, graph, overrides, workdir, args.speed, t_build)
        graph.start()
        if not wait_for(lambda: (w.count("predicted/pose") > 0 and w.count("mocap/pose") > 0)
                        or emu_proc.poll() is not None, 60.0) or emu_proc.poll() is not None:
            emu_log.seek(0)
            say("ERROR: no predicted/mocap pose within 60 s (%s exit status %s); its log:\n%s" % (
                EMULATOR, emu_proc.poll(), emu_log.read()[-3000:]))
            return 1
        say()
        say(HEADER)
        say("-" * len(HEADER))
        walk = _Walk(time.monotonic())
        while True:
            t = time.monotonic() - walk.t0
            if t >= args.duration or graph.spin_error is not None or emu_proc.poll() is not None:
                break
            if damage is not None and not walk.damage_sent and t >= args.damage_at:
                _send_damage(say, args, param_cli, walk, damage, silent, legs)
            _follow_morphology(say, w, nodes, walk, t, damage, silent, legs)
            if t >= walk.next_row:
                _say_row(say, w, walk, t, args.period, legs)
            time.sleep(0.02)
        ignored = {t: n for t, n in w.rejected.items() if n and t != "/diagnostics"}   # (the others' statuses)
        if walk.foreign:
            ignored["morphology"] = walk.foreign
        if ignored:
            say("  the display ignored messages the graph did not publish (malformed or foreign): %s" % ignored)
        status = summary(say, args, w, nodes, graph, walk.t0, walk.t_damage, walk.t_detect, damage, walk.morph_seen,
                         legs, silent, emu_proc)
    finally:
        if not _shut_down(say, graph, workdir, args.record):
            status = 1              # the emulator failed on its way down: not a clean run
    return status


def _q(msg):
    o = msg.pose.orientation
    return (o.w, o.x, o.y, o.z)


def _series(w, topic, t0, t1=None):
    return [m for t, m in w.since(topic, t0) if t1 is None or t < t1]


def emulator_status(msg) -> None:
    """``accept`` of the watched /diagnostics: only the emulator's own status is kept (ValueError otherwise)."""
    if not any(st.name == EMULATOR + ": node" for st in msg.status):
        raise ValueError("not the emulator's status")


def lag_events(w) -> int:
    """The emulated world's lag events (it fell behind real time), from its last status on /diagnostics."""
    msg = w.last("/diagnostics")
    values = {} if msg is None else {kv.key: kv.value for st in msg.status for kv in st.values}
    return int(values.get("lag_events", -1))


def summary(say, args, w, nodes, graph, t0, t_damage, t_detect, damage, morph_seen, legs, silent=False,
            emu_proc=None) -> int:
    from jethexa_dynamics.model import format_morphology

    problems = []
    t_end = time.monotonic()
    mocap = _series(w, "mocap/pose", t0)
    say()
    say("Summary")
    if len(mocap) >= 2:
        a, b = mocap[0].pose.position, mocap[-1].pose.position
        dist = math.hypot(b.x - a.x, b.y - a.y)
        say("  walked %.3f m in %.1f s (%.3f m/s average; commanded %.3f m/s)" % (
            dist, t_end - t0, dist / max(1e-9, t_end - t0), args.speed))
    else:
        problems.append("no mocap/pose")
    split = (t0 + t_damage) if t_damage is not None else None
    _walk_segments(say, args, mocap, w, t0, split)
    phases = [("healthy", t0, split)] + ([("damaged", split, None)] if split is not None else [])
    say("  prediction error vs measurement (RMS; orientation vs the IMU filter, position vs mocap):")
    for label, a, b in phases:
        errs = np.array([list(m.data) for t, m in w.since("prediction/error", a) if b is None or t < b])
        if errs.size == 0:
            problems.append("no prediction/error while %s" % label)
            continue
        say("    %-8s roll %.2f  pitch %.2f  yaw %.2f deg | x %.1f  y %.1f  z %.1f mm  (%d samples)" % (
            label, *[math.degrees(rms(errs[:, i])) for i in range(3)], *[1e3 * rms(errs[:, i]) for i in range(3, 6)],
            len(errs)))
    pred = nodes["predictor"]
    s = pred.stats.summary()
    n_pred = len(_series(w, "predicted/pose", t0))
    say("  predictor %s: %.0f poses/s (configured %.0f Hz), cycle p50 %.2f ms, p99 %.2f ms, %d re-anchors" % (
        pred.p["predictor"], n_pred / max(1e-9, t_end - t0), pred.p["rate"], s["p50_ms"], s["p99_ms"],
        len(getattr(pred.models.get(pred.p["predictor"]), "anchors", []))))
    slip = _series(w, "slip/pose", t0)
    if slip:
        say("  slip model on slip/pose: %d poses" % len(slip))
    if damage is not None:
        if t_detect is None:
            problems.append("damage %s injected but not detected" % format_morphology(damage, legs))
            say("  damage: injected %s at %.1f s, NOT detected" % (format_morphology(damage, legs), t_damage or -1))
        else:
            say("  damage: injected %s%s at %.1f s, %s %.2f s later%s; gait walks on %s" % (
                "silent break " if silent else "", format_morphology(damage, legs), t_damage,
                "identified by the model" if silent else "detected", t_detect - t_damage,
                " as %s" % format_morphology(morph_seen[-1], legs) if silent else "",
                ",".join(nodes["gait_controller"].walker.walking_legs)))
    if not morph_seen or list(morph_seen[0]) != [3] * len(legs) or not _converges(morph_seen, damage, silent):
        problems.append("unexpected morphology sequence %s" % [format_morphology(m, legs) for m in morph_seen])
    body = getattr(nodes.get("damage_monitor"), "body", None)
    if body is not None:
        est = body.estimate()
        say("  body from the servos' load (damage_monitor, %.0f s of samples): %s; the URDF's %.3f kg, (0.0, 0.0) mm"
            % (body.seconds, "not yet" if est is None else "%.3f kg, CoM (%.1f, %.1f) mm" % (
                est.mass, 1e3 * est.com[0], 1e3 * est.com[1]), body.body_mass_model))
    rejected = {n: sum(node.rejected.values()) for n, node in nodes.items() if getattr(node, "rejected", None)}
    errors = {n: node.errors for n, node in nodes.items() if getattr(node, "errors", 0)}
    running = len(nodes) + (emu_proc is not None and emu_proc.poll() is None)
    say("  nodes: %d running; rejected inputs %s; unexpected errors %s; world lag events %d" % (
        running, rejected or "none", errors or "none", lag_events(w)))
    if emu_proc is not None and emu_proc.poll() is not None:
        problems.append("%s stopped (exit status %s)" % (EMULATOR, emu_proc.poll()))
    if errors:
        problems.append("node errors %s" % errors)
    if graph.spin_error is not None:
        problems.append("executor stopped: %r" % graph.spin_error)
    if n_pred == 0 or not _series(w, "measured/pose", t0):
        problems.append("predicted/measured pose not published")
    if problems:
        say("  NOT CLEAN: " + "; ".join(problems))
        return 1
    say("  clean run")
    return 0


def _walk_segments(say, args, mocap, w, t0, split) -> None:
    """Per segment (before / after the damage), from mocap: forward speed vs the command, heading drift,
    lateral drift, max roll and pitch (``sim.recovery.segment_metrics``; the static margin is not measured here,
    see ``jethexa-sim --recovery``)."""
    from jethexa_dynamics.predictors.error_metric import rpy
    from jethexa_dynamics.sim.recovery import segment_metrics

    stamped = [(t - t0, m) for t, m in w.since("mocap/pose", t0)]
    if len(stamped) < 10:
        return
    t = np.array([s for s, _ in stamped])
    pos = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z] for _, m in stamped])
    e = np.array([rpy(_q(m)) for _, m in stamped])
    e[:, 2] = np.unwrap(e[:, 2])
    cmd = np.tile([args.speed, 0.0, 0.0], (len(t), 1))
    margin = np.full(len(t), np.nan)
    bounds = [("healthy", 0.0, t[-1] if split is None else split - t0)]
    if split is not None:
        bounds.append(("damaged", split - t0, t[-1]))
    say("  walking (mocap), per segment (recovery %s):" % args.recovery)
    for label, a, b in bounds:
        if b - a < 4.0:
            continue
        s = segment_metrics(t, pos, e, margin, cmd, a, a + 2.0, b)
        say("    %-8s speed %.4f m/s (command %.3f), heading drift %+.2f deg/10 s, lateral drift %.3f m/m, "
            "max roll %.2f deg, max pitch %.2f deg" % (label, s["speed_mps"], args.speed,
                                                       s["heading_drift_deg_per_10s"], s["lateral_per_m"],
                                                       s["max_roll_deg"], s["max_pitch_deg"]))


def _found(links, damage, silent) -> bool:
    """The published morphology names the damage: exactly (servo evidence), or the same legs (a silent break:
    the identifier may be one link off on a leg, the coxa weighs 20 g)."""
    if not silent:
        return list(links) == list(damage)
    return [n < 3 for n in links] == [n < 3 for n in damage]


def _converges(seen, damage, silent=False) -> bool:
    """Healthy, then (with damage) steps that only lose links and end at the injected morphology (the same
    legs, for a silent break)."""
    if damage is None:
        return len(seen) == 1
    steps = [list(m) for m in seen]
    if silent:
        return _found(steps[-1], damage, True) and all(n < 3 for m in steps[1:] for n, d in zip(m, damage) if d < 3)
    final = list(damage)
    between = all(f <= v for m in steps for v, f in zip(m, final))
    monotone = all(all(b <= a for a, b in zip(m0, m1)) for m0, m1 in zip(steps, steps[1:]))
    return steps[-1] == final and between and monotone


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
