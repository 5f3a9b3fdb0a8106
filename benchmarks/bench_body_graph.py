"""The body estimate in the running sim graph: its nodes as processes (``sim.launch.py`` with ``composed:=false``,
DDS on loopback), the world's body heavier and its CoM moved (``robot_emulator`` ``body_mass_scale``,
``body_com_shift``), damage_monitor's ``body_estimate`` on, cmd_vel 0.05 m/s for ``--walk`` s.

Prints, every 5 s of walking, damage_monitor's estimate (``body_mass``, ``body_com`` on /diagnostics) against the
world's body, the CPU of its ``body`` stage and of the servo_driver and damage_monitor processes (/proc); then the
same streams as recorded here replayed offline into the estimator: with the driver's set-points at each reading
(what the node does), and from the commands alone timed at their receipt here (what a node without
``joint_states/setpoint`` can do), with the receipt moved by a few ms. ``--timing`` is the emulator's
``servo_timing``, ``--read-dither`` servo_driver's ``read_dither`` (on: what ``body_estimate:=true`` launches),
``--bus-line 1`` the robot's 115200-baud line emulated (``bus_line:=true``). ``--json FILE`` writes everything,
``--save-streams FILE`` the recorded streams (with mocap/pose, the world's attitude) for offline replays, ``--record
BAG`` a rosbag2 bag of the run (robot_emulator's ``record``) that ``jethexa-calibrate`` then reads: 5 Dec 09:50, 35 s
of walking, 1.717 kg and CoM (13.4, -0.5) mm from the bag beside the node's 1.721 kg, (13.9, -0.2) mm.

    python benchmarks/bench_body_graph.py --bus-line 1 --walk 40

5 Dec 06:23-06:37 UTC with the line (2 shared cores, a process per node), world body 1.6875 kg / CoM +10 mm: at 30 s
the mass -5.8..+1.3 %, CoM x +0.2..+9.4 mm, y -5.7..+4.1 mm off, within 5 mm both ways in 4 of 9 runs;
``--control-rate 25`` (7 runs to 07:05): -5.9..0.0 %, x -6.4..+3.7 mm, y -8.6..+2.2 mm, 5 of 7; with
``--reads-per-cycle 6`` too (the line has room for them at 25 Hz; 5 runs, 07:30-07:34): -2.6..+3.2 %, x 0.0..+8.1
mm, y -4.4..+6.0 mm, 4 of 5, the body stage 39-42 ms of CPU per second of walking. Before the
emulator kept each servo's superseded moves (a world brought up after a group write's frames had run got their
trajectories wrong) this read the mass +92 %.

    python benchmarks/bench_body_graph.py --timing exact --walk 40

Measured 15:24 UTC 2026-11-27 (2 shared cores, 100 Hz world, body 1.6875 kg / CoM +10 mm): at 30 s of walking
1.7036 kg (+1.0 %), CoM (12.2, 4.6) mm, 35 s (11.2, 2.5) mm; body stage 26.7 ms of CPU per second, servo_driver
7.4 % and damage_monitor 11.4 % of a core.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from collections import defaultdict, deque

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from _machine import proc_cpu  # noqa: E402


def monitor_values(w):
    for _, arr in reversed(w.since("/diagnostics", 0.0)):
        for st in arr.status:
            if st.name.startswith("damage_monitor") and any(kv.key == "body_mass" for kv in st.values):
                return {kv.key: kv.value for kv in st.values}
    return None


def stamp(st):
    return st.sec + 1e-9 * st.nanosec


def replay(streams, names, variant, shift=0.0, clock_offset=0.0, fit_lag=True):
    """The recorded messages into a fresh estimator: ``variant`` 'setpoints' (pairs of joint_states and
    joint_states/setpoint by stamp, as damage_monitor) or 'commands' (the commands at their receipt here +
    ``shift`` s, joint_states alone; ``clock_offset`` = ROS time - this process's monotonic clock); ``fit_lag``
    the estimator's. Returns [(t since the walk began, mass, com x, com y, fitted lag)] once a second."""
    from jethexa_dynamics.damage.body_load import BodyLoadEstimator, ReadingPairs

    est, pairs = BodyLoadEstimator(fit_lag=fit_lag), ReadingPairs(names)
    idx = {n: i for i, n in enumerate(names)}
    out, t_next = [], None
    for t, kind, msg, t_walk in streams:
        if kind == "joint_commands":
            p = msg.points[-1]
            q = np.array(p.positions, dtype=float)
            mt = p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
            tc = t + clock_offset + shift
            est.on_command(tc, q, tc + mt, [idx[n] for n in msg.joint_names])
        elif kind == "imu/data":
            o = msg.orientation
            est.on_imu(stamp(msg.header.stamp), (o.w, o.x, o.y, o.z))
        elif kind == "joint_states":
            if variant == "setpoints":
                pair = pairs.add(False, stamp(msg.header.stamp), stamp(msg.header.stamp), list(msg.name),
                                 list(msg.position))
                if pair is not None:
                    est.on_joints(*pair)
            else:
                q = np.full(len(names), np.nan)
                q[[idx[n] for n in msg.name]] = msg.position
                est.on_joints(stamp(msg.header.stamp), q)
        elif kind == "joint_states/setpoint" and variant == "setpoints":
            pair = pairs.add(True, stamp(msg.header.stamp), stamp(msg.header.stamp), list(msg.name),
                             list(msg.position))
            if pair is not None:
                est.on_joints(*pair)
        if t_walk is not None and (t_next is None or t - t_walk >= t_next):
            t_next = (t_next or 0.0) + 1.0
            e = est.estimate()
            if e is not None:
                out.append((t - t_walk, e.mass, float(e.com[0]), float(e.com[1]), e.lag))
    return out


def plain_streams(streams):
    """The recorded messages as plain tuples (t here, topic, stamp [s], payload): joint_states and its set-points
    (names, positions), imu/data (w, x, y, z), joint_commands (names, last point's positions, its time [s]),
    mocap/pose (the world's body: (w, x, y, z), position [m])."""
    out = []
    for t, topic, msg, _ in streams:
        if topic == "joint_commands":
            p = msg.points[-1]
            payload = (list(msg.joint_names), list(p.positions),
                       p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec)
        elif topic == "imu/data":
            o = msg.orientation
            payload = (o.w, o.x, o.y, o.z)
        elif topic == "mocap/pose":
            o, p = msg.pose.orientation, msg.pose.position
            payload = ((o.w, o.x, o.y, o.z), (p.x, p.y, p.z))
        else:
            payload = (list(msg.name), list(msg.position))
        out.append((t, topic, stamp(msg.header.stamp), payload))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timing", choices=("tick", "exact"), default="exact")
    ap.add_argument("--walk", type=float, default=40.0)
    ap.add_argument("--world-rate", type=float, default=0.0, help="robot_emulator rate [Hz] (0: its config's)")
    ap.add_argument("--read-dither", type=int, default=1, choices=(0, 1), help="servo_driver read_dither")
    ap.add_argument("--composed", choices=("false", "split", "true"), default="false",
                    help="the launch's composed: a process per node (default), two (as launched) or one")
    ap.add_argument("--bus-line", type=int, default=0, choices=(0, 1), help="the robot's 115200-baud line emulated "
                    "(robot_emulator bus_line, servo_driver line_model)")
    ap.add_argument("--sync-start", type=int, default=0, choices=(0, 1), help="servo_driver sync_start (off: what "
                    "body_estimate:=true launches, each servo's move on its own frame)")
    ap.add_argument("--control-rate", type=float, default=0.0, help="gait_controller control_rate [Hz] (0: its "
                    "config's, 50)")
    ap.add_argument("--reads-per-cycle", type=int, default=0, help="servo_driver reads_per_cycle [1, 18] (0: its "
                    "config's, 3)")
    ap.add_argument("--mass-scale", type=float, default=1.25)
    ap.add_argument("--com-shift", type=float, default=0.01)
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--json", default="")
    ap.add_argument("--record", default="", metavar="BAG", help="robot_emulator records the run to this new "
                    "rosbag2 directory (its defaults: joint_states/setpoint too); afterwards jethexa-calibrate runs "
                    "on it, the offline estimate beside the node's")
    ap.add_argument("--save-streams", default="", help="pickle the recorded streams here (plain tuples, see "
                    "plain_streams) for offline replays")
    args = ap.parse_args(argv)
    if args.control_rate and not 1.0 <= args.control_rate <= 200.0:
        ap.error("--control-rate %g outside [1, 200] Hz (0: the gait controller's config)" % args.control_rate)
    if args.reads_per_cycle and not 1 <= args.reads_per_cycle <= 18:
        ap.error("--reads-per-cycle %d outside [1, 18] (0: the servo driver's config)" % args.reads_per_cycle)
    if args.record and os.path.exists(args.record):
        # robot_emulator would refuse it after the graph started: the run would wait for a graph never up
        ap.error("--record %s exists (a bag never overwrites one: give a new directory)" % args.record)

    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped, Twist
    from sensor_msgs.msg import Imu, JointState
    from trajectory_msgs.msg import JointTrajectory

    from jethexa_dynamics.model import LeggedRobot
    from jethexa_dynamics.nodes._common import RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, start_process, stop_processes, wait_for
    from jethexa_dynamics.nodes.graph_spec import processes
    from jethexa_dynamics.sim.streams import scaled_body_robot

    robot = LeggedRobot.jethexa()
    names = list(robot.joint_names)
    world = scaled_body_robot(args.mass_scale, (args.com_shift, 0.0, 0.0)).description
    truth_m, truth_c = float(world.body_mass), np.asarray(world.body_com, float)[:2]
    print("world body: %.4f kg, CoM (%.4f, %.4f) m; URDF %.4f kg; emulator servo_timing %s" % (
        truth_m, truth_c[0], truth_c[1], robot.description.body_mass, args.timing), flush=True)

    plan = processes("sim", {"port_link": "/tmp/jethexa_body_bus_%d" % os.getpid(), "composed": args.composed})
    for p in plan:
        for entry, params in p.nodes:
            if entry.name == "robot_emulator":
                params.update(body_mass_scale=args.mass_scale, body_com_shift=[args.com_shift, 0.0, 0.0],
                              servo_timing=args.timing, bus_line=bool(args.bus_line))
                if args.record:
                    params.update(record=os.path.abspath(args.record))
                if args.world_rate:
                    params.update(rate=args.world_rate)
            if entry.name == "damage_monitor":
                params.update(body_estimate=True)
            if entry.name == "servo_driver":
                params.update(read_dither=bool(args.read_dither), line_model=bool(args.bus_line),
                              sync_start=bool(args.sync_start))
                if args.reads_per_cycle:
                    params.update(reads_per_cycle=args.reads_per_cycle)
            if entry.name == "gait_controller" and args.control_rate:
                params.update(control_rate=args.control_rate)
    g = Graph()
    w = g.add(Watcher)
    w.msgs = defaultdict(lambda: deque(maxlen=200000))
    w.watch(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
    w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
    for ty, topic in ((JointState, "joint_states"), (JointState, "joint_states/setpoint"), (Imu, "imu/data")):
        w.watch(ty, topic, SENSOR_QOS)
    w.watch(JointTrajectory, "joint_commands", RELIABLE_QOS)
    walk = {"vx": 0.0}
    pub = w.create_publisher(Twist, "cmd_vel", 10)

    def drive():
        tw = Twist()
        tw.linear.x = walk["vx"]
        pub.publish(tw)
    w.create_timer(0.1, drive)
    procs, logs, res = {}, {}, {"args": vars(args), "truth": {"mass": truth_m, "com": list(truth_c)}}
    workdir = tempfile.mkdtemp(prefix="bench_body_")
    env_path = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = env_path
    try:
        g.start()
        t_launch = time.monotonic()
        for p in plan:
            name = p.label
            procs[name], logs[name] = start_process(p, workdir)
        up = wait_for(lambda: w.count("mocap/pose") > 10 and w.count("joint_states/setpoint") > 50
                      and monitor_values(w) is not None, args.timeout, poll=0.2)
        if not up:
            raise RuntimeError("graph not up after %.0f s; logs in %s" % (time.monotonic() - t_launch, workdir))
        print("graph up after %.1f s (logs in %s)" % (time.monotonic() - t_launch, workdir), flush=True)
        # the processes of the servo driver and of the damage monitor (robot_control / robot_model when composed)
        host = {n: next(p.label for p in plan if n in [e.name for e, _ in p.nodes])
                for n in ("servo_driver", "damage_monitor", "robot_emulator")}
        pids = {n: procs[host[n]].pid for n in host}
        time.sleep(2.0)
        cpu0 = {n: proc_cpu(pid) for n, pid in pids.items()}
        v0 = monitor_values(w)
        t_walk = time.monotonic()
        walk["vx"] = 0.05
        rows = []
        print("%6s %9s %8s %8s %8s %8s %8s %10s %10s %10s" % (
            "t [s]", "mass", "err %", "com x", "com y", "lag ms", "used s", "body ms/s", "driver %", "monitor %"))
        while time.monotonic() - t_walk < args.walk:
            time.sleep(5.0 - (time.monotonic() - t_walk) % 5.0)
            t = time.monotonic() - t_walk
            v = monitor_values(w) or {}
            cpu = {n: proc_cpu(pid) for n, pid in pids.items()}
            body_cpu = float(v.get("cpu_s body", "nan")) - float(v0.get("cpu_s body", "nan"))
            mass = float(v.get("body_mass", "nan"))
            com = [float(x) for x in v.get("body_com", "nan,nan,nan").split(",")] if v.get("body_com") != "nan" \
                else [float("nan")] * 3
            row = {"t": t, "mass": mass, "com": com[:2], "lag_ms": float(v.get("body_servo_lag_ms", "nan")),
                   "seconds": float(v.get("body_seconds", "nan")),
                   "pairs": int(v.get("body_pairs", 0)), "unpaired": int(v.get("body_unpaired", 0)),
                   "body_cpu_ms_per_s": 1e3 * body_cpu / t,
                   "proc_cpu_pct": {n: 100.0 * (cpu[n] - cpu0[n]) / t for n in pids}}
            rows.append(row)
            print("%6.1f %9.4f %8.1f %8.4f %8.4f %8.2f %8.1f %10.2f %10.1f %10.1f" % (
                t, mass, 100.0 * (mass - truth_m) / truth_m, com[0], com[1], row["lag_ms"], row["seconds"],
                row["body_cpu_ms_per_s"], row["proc_cpu_pct"]["servo_driver"],
                row["proc_cpu_pct"]["damage_monitor"]), flush=True)
        res["node"] = rows
        res["monitor_last"] = monitor_values(w)
        emu_diag = None
        for _, arr in reversed(w.since("/diagnostics", 0.0)):
            for st in arr.status:
                if st.name.startswith("robot_emulator"):
                    emu_diag = {kv.key: kv.value for kv in st.values}
                    break
            if emu_diag:
                break
        res["emulator"] = emu_diag
    finally:
        g.close()
        codes, _ = stop_processes(procs, logs)
        res["exit_codes"] = codes
    # offline replays of what was recorded here
    streams = []
    for topic in ("joint_states", "joint_states/setpoint", "imu/data", "joint_commands", "mocap/pose"):
        for t, m in w.since(topic, 0.0):
            streams.append((t, topic, m, t_walk))
    streams.sort(key=lambda s: s[0])
    if args.save_streams:
        with open(args.save_streams, "wb") as f:
            pickle.dump({"t_walk": t_walk, "truth": res["truth"], "streams": plain_streams(streams)}, f)
    js = [m for _, m in w.since("joint_states", 0.0)]
    res["names_per_message"] = float(np.mean([len(m.name) for m in js])) if js else 0.0
    res["replay"] = {}
    for label, variant, shift, fit in (("setpoints", "setpoints", 0.0, True),
                                       ("setpoints no lag fit", "setpoints", 0.0, False),
                                       ("commands", "commands", 0.0, True), ("commands+2ms", "commands", 0.002, True),
                                       ("commands-2ms", "commands", -0.002, True)):
        out = replay(streams, names, variant, shift, time.time() - time.monotonic(), fit)
        res["replay"][label] = out
        at = {k: next((row[1:] for row in out if row[0] >= k), None) for k in (10, 20, 30, 40)}
        print("replay %-20s " % label + "  ".join(
            "%ds: %s" % (k, "-" if v is None else "%.3f kg (%+.0f %%) com %.1f,%.1f mm lag %+.1f ms" % (
                v[0], 100 * (v[0] - truth_m) / truth_m, 1e3 * v[1], 1e3 * v[2], 1e3 * v[3]))
            for k, v in at.items()), flush=True)
    print("emulator: %s" % {k: (res.get("emulator") or {}).get(k) for k in ("real_time_factor", "lag_events")})
    if args.record:
        from jethexa_dynamics.damage import calibrate_cli
        from jethexa_dynamics.model import body_params

        out = args.record.rstrip("/") + "_body.yaml"
        status = calibrate_cli.main([args.record, "--out", out])
        if status == 0:
            b = body_params.read(out)
            res["calibrate"] = {"mass": b.mass, "com": list(b.com_offset)}
            print("jethexa-calibrate on the bag: %.4f kg (%+.1f %%), CoM (%.1f, %.1f) mm" % (
                b.mass, 100 * (b.mass - truth_m) / truth_m, 1e3 * b.com_offset[0], 1e3 * b.com_offset[1]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
