#!/usr/bin/env python3
"""Predictor and identifier nodes at the robot's rates: cycle time and CPU by stage, real rclpy over DDS.

Run: ``source scripts/ros_env.sh && .venv/bin/python benchmarks/bench_predictor_node.py [--seconds 15]
[--repeats 3] [--smoke] [--out benchmarks/results/nodes.md]``

Inputs: the plant's own streams (``sim.streams.walk_streams``), replayed in real time by a feeder node with
fresh header stamps: joint_commands and joint_states 50 Hz, imu/data 100 Hz, mocap/pose 50 Hz (predictor only).
Cases, each ``--seconds`` long after a warm-up:

* own process (as the launch files run it): ``python -m jethexa_dynamics.nodes.predictor`` at 100 Hz (the
  default models, and boltzmann_hamel alone), and ``python -m jethexa_dynamics.nodes.damage_monitor`` with
  ``identify:=true`` (healthy walk, and a silent LM:1 break in the middle of the measured window). The
  breakdown by stage comes from the node's /diagnostics (``cpu_s <stage>``, ``dynamics_*``, ``publishing_*``,
  ``identifier_window_*``), the whole process's CPU from /proc.
* one process: the predictor node fed by the streams (three model configurations), and inside the whole
  sim.launch.py graph (as jethexa-demo).
* rclpy's cost per message with and without its default event handlers (``measure_event_handlers``).

The own-process predictor cases and the peer run ``--repeats`` interleaved rounds (default 3).
"""
import argparse
import os
import statistics
import sys
import time

from _machine import describe

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))


def plant_streams(seconds, breaks=()):
    """``seconds`` of the plant walking a tripod at 0.05 m/s (``sim.streams.walk_streams``: commands and joint
    states 50 Hz, IMU 100 Hz with noise and a gyro bias), optionally with silent breaks ``[(t, "LM:1")]``."""
    from jethexa_dynamics.sim.streams import Segment, WalkConfig, walk_streams

    cfg = WalkConfig(duration=seconds, segments=[Segment(0.0, "walk", (0.05, 0.0, 0.0))], breaks=list(breaks),
                     gyro_bias=(0.0, 0.0, 0.02))
    return walk_streams(cfg)[0]


def feeder(graph, joint_names, streams, mocap_rate=50.0, name="feeder"):
    """A node replaying ``streams`` in real time from ``start()`` on, as the robot's nodes would publish them:
    ``joint_commands`` (JointTrajectory), ``joint_states`` (JointState), ``imu/data`` (Imu), header stamps = now;
    and ``mocap/pose`` at ``mocap_rate`` (0: none). Before ``start()`` it publishes nothing."""
    from builtin_interfaces.msg import Duration
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import Imu, JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Watcher

    node = graph.add(Watcher, name=name)
    cmd = node.create_publisher(JointTrajectory, "joint_commands", 10)
    joints = node.create_publisher(JointState, "joint_states", SENSOR_QOS)
    imu = node.create_publisher(Imu, "imu/data", SENSOR_QOS)
    mocap = node.create_publisher(PoseStamped, "mocap/pose", SENSOR_QOS)
    state = {"t0": None, "i": 0, "mocap_next": 0.0}

    def publish(t, kind, p, stamp):
        if kind == "cmd":
            q, move_time, idx = p
            m = JointTrajectory(joint_names=[joint_names[k] for k in idx])
            m.points = [JointTrajectoryPoint(positions=[float(v) for v in q],
                                             time_from_start=Duration(sec=int(move_time),
                                                                      nanosec=int(move_time % 1.0 * 1e9)))]
            m.header.stamp = stamp
            cmd.publish(m)
        elif kind == "joints":
            m = JointState(name=list(joint_names), position=[float(v) for v in p])
            m.header.stamp = stamp
            joints.publish(m)
        else:
            quat, gyro, acc = p
            m = Imu()
            m.header.stamp, m.header.frame_id = stamp, "imu_link"
            m.orientation.w, m.orientation.x, m.orientation.y, m.orientation.z = map(float, quat)
            m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = map(float, gyro)
            m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = map(float, acc)
            imu.publish(m)

    def on_timer():
        if state["t0"] is None:
            return
        t = time.monotonic() - state["t0"]
        stamp = node.get_clock().now().to_msg()
        while state["i"] < len(streams) and streams[state["i"]][0] <= t:
            publish(*streams[state["i"]], stamp)
            state["i"] += 1
        if mocap_rate > 0.0 and t >= state["mocap_next"]:
            state["mocap_next"] += 1.0 / mocap_rate
            m = PoseStamped()
            m.header.stamp = stamp
            m.pose.position.x, m.pose.position.z, m.pose.orientation.w = 0.05 * t, 0.12, 1.0
            mocap.publish(m)

    node.create_timer(0.005, on_timer)
    return lambda: state.update(t0=time.monotonic())


def measure(params, seconds, streams, full_graph=False):
    """The predictor in this process (``Graph``): fed by the replayed plant streams, or inside the whole sim
    graph (``full_graph``). Cycle figures from the node's own statistics over the measured seconds."""
    from geometry_msgs.msg import PoseStamped

    from jethexa_dynamics.nodes._robot import jethexa
    from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph
    from jethexa_dynamics.nodes.predictor import PredictorNode

    g = Graph()
    try:
        if full_graph:
            nodes = add_launch_graph(g, "sim", {"port_link": "/tmp/jethexa_bench_bus_%d" % os.getpid()})
            pred = nodes["predictor"]
            w = g.add(Watcher, name="bench")
            w.drive(0.05)
            start = None
        else:
            pred = g.add(PredictorNode, params)
            start = feeder(g, jethexa().joint_names, streams)
            w = g.add(Watcher, name="bench")
        w.watch(PoseStamped, "predicted/pose")
        g.start()
        if start is not None:
            start()
        time.sleep(3.0)  # warm-up: discovery, first commands, caches
        with pred._lock:
            pred.stats.clear()
            for st in pred.stage_stats.values():
                st.clear()
        model = pred.models.get("boltzmann_hamel")
        if model is not None:
            model.wall.clear()
        n0, t0 = w.count("predicted/pose"), time.monotonic()
        time.sleep(seconds)
        n1, t1 = w.count("predicted/pose"), time.monotonic()
        with pred._lock:
            s = pred.stats.summary()
            dyn, pub = (pred.stage_stats[k].summary() for k in ("dynamics", "publishing"))
        ms = model.cycle_stats() if model is not None else None
        return {"p50": s["p50_ms"], "p99": s["p99_ms"], "max": s["max_ms"], "rate": (n1 - n0) / (t1 - t0),
                "overruns": s["overruns"], "cycles": s["cycles"],
                "dyn_p50": dyn["p50_ms"], "dyn_p99": dyn["p99_ms"], "pub_p50": pub["p50_ms"], "pub_p99": pub["p99_ms"],
                "model_p50": 1e3 * ms["p50"] if ms else float("nan"),
                "model_p99": 1e3 * ms["p99"] if ms else float("nan")}
    finally:
        g.close()


def _cpu_seconds(pid):
    """user + system CPU seconds of a process so far (all its threads: callbacks, DDS, timers)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _thread_cpu_seconds(pid):
    """(main thread, every other thread) user + system CPU seconds of a process so far: the main thread runs
    rclpy's executor and every callback; the others are the middleware's (DDS) and the node's workers."""
    main = other = 0.0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        sec = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if int(tid) == pid:
            main += sec
        else:
            other += sec
    return main, other


def _cpu_snapshot(pid):
    """(monotonic time, process CPU s, (main thread, other threads) CPU s) of process ``pid`` now."""
    return time.monotonic(), _cpu_seconds(pid), _thread_cpu_seconds(pid)


def _cpu_rates(a, b):
    """CPU ms per s between two ``_cpu_snapshot``: whole process, main thread, other threads."""
    (t0, c0, th0), (t1, c1, th1) = a, b
    return {"cpu_ms_per_s": 1e3 * (c1 - c0) / (t1 - t0), "main_ms_per_s": 1e3 * (th1[0] - th0[0]) / (t1 - t0),
            "other_ms_per_s": 1e3 * (th1[1] - th0[1]) / (t1 - t0)}


def _interrupt(proc):
    """Ctrl-C a node's process, as ros2 launch does; kill it if it has not ended 20 s later."""
    import subprocess

    proc.send_signal(2)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def _node_values(arr, node):
    for st in arr.status:
        if st.name == node + ": node":
            return {kv.key: kv.value for kv in st.values}
    return None


def _stage_loads(first, last):
    """CPU ms per s of every counted stage between two /diagnostics value sets (their ``cpu_s <stage>``
    totals) and the seconds between them (``t`` = the receipt times)."""
    (t_a, a), (t_b, b) = first, last
    return {k[len("cpu_s "):]: 1e3 * (float(b[k]) - float(a.get(k, 0.0))) / (t_b - t_a)
            for k in b if k.startswith("cpu_s ")}


def measure_own_process(module, node, params, seconds, streams, mocap_rate, ready_topic=None):
    """A node as the launch files run it: its own process (``python -m <module>``), fed over DDS by the replayed
    plant streams from this process. Its /diagnostics give the per-stage CPU (``cpu_s <stage>`` totals,
    differenced over the measured window) and its own statistics; ``cpu_ms_per_s`` = the process's whole CPU
    time (every thread: callbacks, DDS, workers) per second over the window."""
    import subprocess

    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped

    from jethexa_dynamics.nodes._robot import jethexa
    from jethexa_dynamics.nodes.graph import Graph, Watcher

    ros = ["--ros-args"] + sum((["-p", "%s:=%s" % (k, str(v).lower() if isinstance(v, bool) else v)]
                               for k, v in params.items()), [])
    proc = subprocess.Popen([sys.executable, "-m", module] + ros, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    g = Graph()
    try:
        start = feeder(g, jethexa().joint_names, streams, mocap_rate)
        w = g.add(Watcher, name="bench")
        w.watch(PoseStamped, "predicted/pose")
        w.watch(DiagnosticArray, "/diagnostics")
        g.start()

        def diag(t0=0.0):
            got = [(t, _node_values(arr, node)) for t, arr in w.since("/diagnostics", t0)]
            return [x for x in got if x[1] is not None]

        t_end = time.monotonic() + 180.0      # numba cache load in the new process
        while not diag() and time.monotonic() < t_end and proc.poll() is None:
            time.sleep(0.2)
        start()
        time.sleep(3.0)                        # warm-up: first windows, first anchors
        t_mark = time.monotonic()
        while not diag(t_mark) and time.monotonic() < t_mark + 5.0:
            time.sleep(0.05)
        first = diag(t_mark)[0]
        n0, cpu0 = w.count("predicted/pose"), _cpu_snapshot(proc.pid)
        time.sleep(seconds)
        n1, cpu1 = w.count("predicted/pose"), _cpu_snapshot(proc.pid)
        t_mark = time.monotonic()
        while not diag(t_mark) and time.monotonic() < t_mark + 5.0:
            time.sleep(0.05)
        last = diag(t_mark)[0]
        vals = last[1]
        return dict(_cpu_rates(cpu0, cpu1), values=vals, first_values=first[1], stages=_stage_loads(first, last),
                    window_s=last[0] - first[0], rate=(n1 - n0) / (cpu1[0] - cpu0[0]))
    finally:
        g.close()
        _interrupt(proc)


def floor_node():
    """The peer: a plain rclpy node as its users write one (``rclpy.spin``), subscribed like the predictor to
    joint_commands, joint_states and imu/data with empty callbacks, and an empty 100 Hz timer: what rclpy itself
    costs on this traffic (taking and deserializing messages, the executor), the floor under any Python node."""
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Imu, JointState
    from trajectory_msgs.msg import JointTrajectory

    from jethexa_dynamics.nodes._common import RELIABLE_QOS, SENSOR_QOS

    rclpy.init()
    node = Node("floor")
    node.create_subscription(JointTrajectory, "joint_commands", lambda m: None, RELIABLE_QOS)
    node.create_subscription(JointState, "joint_states", lambda m: None, SENSOR_QOS)
    node.create_subscription(Imu, "imu/data", lambda m: None, SENSOR_QOS)
    node.create_timer(0.01, lambda: None)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass


def measure_floor(seconds, streams):
    """CPU of ``floor_node`` in its own process under the replayed streams (whole process and main thread)."""
    import subprocess

    from jethexa_dynamics.nodes._robot import jethexa
    from jethexa_dynamics.nodes.graph import Graph, wait_for

    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--floor-node"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    g = Graph()
    try:
        start = feeder(g, jethexa().joint_names, streams, 0.0)
        g.start()
        imu_pub = [p for p in g.nodes[-1].publishers if p.topic_name.endswith("imu/data")][0]
        wait_for(lambda: imu_pub.get_subscription_count() > 0, 60.0)
        start()
        time.sleep(3.0)
        cpu0 = _cpu_snapshot(proc.pid)
        time.sleep(seconds)
        return _cpu_rates(cpu0, _cpu_snapshot(proc.pid))
    finally:
        g.close()
        _interrupt(proc)


def measure_event_handlers(messages=3000, rounds=3):
    """rclpy's cost per message with and without its default event handlers, in one process: a node shaped like
    the predictor (5 subscriptions, 8 publishers), one of its subscriptions fed by a publisher of the same
    process, one ``spin_once`` per message; thread CPU per message (publish + wake-up + take + callback).
    ``default``: the node as rclpy makes it (two event-handler waitables per endpoint); ``without``: the
    endpoints as ``ThinNode`` creates them (``use_default_callbacks=False``). Returns {case: [µs per round]}."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from sensor_msgs.msg import Imu

    from jethexa_dynamics.nodes._common import SENSOR_QOS, PublisherEventCallbacks, SubscriptionEventCallbacks

    ctx = Context()
    rclpy.init(context=ctx)
    try:
        cases = {}
        for case in ("default", "without"):
            node = Node("events_" + case, context=ctx)
            sub_kw = {} if case == "default" else {
                "event_callbacks": SubscriptionEventCallbacks(use_default_callbacks=False)}
            pub_kw = {} if case == "default" else {
                "event_callbacks": PublisherEventCallbacks(use_default_callbacks=False)}
            got = [0]
            for k in range(5):
                node.create_subscription(Imu, "events_%s_%d" % (case, k), lambda m: got.__setitem__(0, got[0] + 1),
                                         SENSOR_QOS, **sub_kw)
            for k in range(8):
                node.create_publisher(Imu, "events_%s_out_%d" % (case, k), 10, **pub_kw)
            pub = Node("events_pub_" + case, context=ctx).create_publisher(Imu, "events_%s_0" % case, SENSOR_QOS)
            ex = SingleThreadedExecutor(context=ctx)
            ex.add_node(node)
            cases[case] = (pub, ex, got, len(list(node.waitables)))
        time.sleep(1.0)                   # discovery
        msg, out = Imu(), {c: [] for c in cases}
        for _ in range(rounds):
            for case, (pub, ex, got, _) in cases.items():
                c0 = time.thread_time()
                for _ in range(messages):
                    n = got[0]
                    pub.publish(msg)
                    while got[0] == n:
                        ex.spin_once(timeout_sec=0.5)
                out[case].append((time.thread_time() - c0) / messages * 1e6)
        return out, {c: v[3] for c, v in cases.items()}
    finally:
        ctx.try_shutdown()


PREDICTOR_INPUTS = ("joint_commands", "joint_states", "imu/data", "mocap/pose", "morphology")
MONITOR_INPUTS = ("joint_commands", "joint_states", "imu/data", "/diagnostics")
NANO = (4.0, 6.0)   # Jetson Nano (Cortex-A57 at 1.43 GHz) assumed 4-6x slower per core than this machine


def _f(vals, key):
    return float(vals.get(key, "nan"))


def _print_own(label, r):
    print("own process %-34s cycle p50 %.2f p99 %.2f ms, dynamics p99 %.2f, publishing p99 %.2f, "
          "rate %.1f Hz, paced by imu/data %.0f %%, CPU %.1f ms/s (main thread %.1f, others %.1f), stages %s" % (
              label, _f(r["values"], "p50_ms"), _f(r["values"], "p99_ms"), _f(r["values"], "dynamics_p99_ms"),
              _f(r["values"], "publishing_p99_ms"), r["rate"], _paced_percent(r), r["cpu_ms_per_s"],
              r["main_ms_per_s"], r["other_ms_per_s"], {k: round(v, 2) for k, v in r["stages"].items()}), flush=True)


def _median_run(runs):
    """The run with the median main-thread CPU (the lower middle of an even count), with ``main_range`` =
    (least, most) main-thread ms per s over ``runs``."""
    ranked = sorted(runs, key=lambda r: r["main_ms_per_s"])
    return dict(ranked[(len(ranked) - 1) // 2], main_range=(ranked[0]["main_ms_per_s"], ranked[-1]["main_ms_per_s"]),
                rounds=len(ranked))


def _main_cell(r, period):
    """The main thread's ms of CPU per period, with its range over the rounds."""
    main = r["main_ms_per_s"] * period / 1e3
    if r.get("rounds", 1) < 2:
        return "%.3f" % main
    lo, hi = (x * period / 1e3 for x in r["main_range"])
    return "%.3f (%.2f-%.2f)" % (main, lo, hi)


def _paced_percent(r):
    """Share of the predictor's cycles in the measured window that ran right after an imu/data sample
    (``pace_on_imu``), in %."""
    a, b = r["first_values"], r["values"]
    paced, timer = (_f(b, k) - _f(a, k) for k in ("cycles_paced_by_imu", "cycles_on_timer"))
    return 100.0 * paced / (paced + timer) if paced + timer > 0 else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0, help="measured seconds per case")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds of the own-process predictor "
                    "cases and the peer; a row is the round with its median main-thread CPU (default 3)")
    ap.add_argument("--smoke", action="store_true", help="one short own-process case each, to check the script")
    ap.add_argument("--floor-node", action="store_true", help=argparse.SUPPRESS)  # the peer's process
    ap.add_argument("--out", default=None, help="results file (default benchmarks/results/nodes.md; with --smoke "
                    "nothing is written unless given)")
    args = ap.parse_args(argv)
    if args.floor_node:
        floor_node()
        return 0
    if args.seconds <= 0.0:
        ap.error("--seconds must be > 0 (measured seconds per case)")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    info = describe("rclpy") + ["- load average %.2f at start; %s" % (
        os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"),
        os.environ.get("RMW_IMPLEMENTATION", "default rmw"))]
    # the plant's streams: warm-up + measured seconds + the start-up margin; the silent break of the identifier
    # case falls in the middle of its measured window (the feeder starts at stream time 0 when the node is up)
    span = args.seconds + 10.0
    healthy = plant_streams(span)
    broken = plant_streams(span, breaks=[(3.0 + 0.5 * args.seconds, "LM:1")])

    own = []
    pred_cases = [("boltzmann_hamel + slip (default)", {"predictor": "boltzmann_hamel", "publish_slip": True}),
                  ("boltzmann_hamel + slip, pace_on_imu false (the cycle on its own timer)",
                   {"predictor": "boltzmann_hamel", "publish_slip": True, "pace_on_imu": False}),
                  ("boltzmann_hamel alone", {"predictor": "boltzmann_hamel", "publish_slip": False})]
    # interleaved rounds (the cases, then the peer, again): the machine's load drifts between minutes, and a
    # row is the round with the median main-thread CPU of its case, the range beside it
    runs = {label: [] for label, _ in pred_cases}
    floors = []
    for _ in range(1 if args.smoke else args.repeats):
        for label, params in pred_cases[:1] if args.smoke else pred_cases:
            params = dict(params, rate=100.0, stats_window=int(args.seconds * 100.0))
            r = measure_own_process("jethexa_dynamics.nodes.predictor", "predictor", params, args.seconds, healthy,
                                    0.0)
            runs[label].append(r)
            _print_own(label, r)
        floors.append(measure_floor(args.seconds, healthy))
        print("peer: plain rclpy node, empty callbacks, same traffic + 100 Hz timer: CPU %.1f ms/s (main %.1f, "
              "others %.1f)" % (floors[-1]["cpu_ms_per_s"], floors[-1]["main_ms_per_s"], floors[-1]["other_ms_per_s"]),
              flush=True)
    own = [(label, _median_run(rs)) for label, rs in runs.items() if rs]
    floor = _median_run(floors)
    events = measure_event_handlers(300 if args.smoke else 3000, 1 if args.smoke else 3)
    print("rclpy per message, default event handlers vs none: %s" % ({c: [round(x, 1) for x in v]
                                                                     for c, v in events[0].items()},), flush=True)
    ident = []
    id_cases = [("healthy walk", healthy), ("silent LM:1 break mid-window", broken)]
    for label, streams in id_cases[:1] if args.smoke else id_cases:
        params = {"identify": True}
        r = measure_own_process("jethexa_dynamics.nodes.damage_monitor", "damage_monitor", params, args.seconds,
                                streams, 0.0)
        ident.append((label, r))
        print("own process damage_monitor, %-28s CPU %.1f ms/s (main %.1f, others %.1f), stages %s, "
              "window cpu p99 %.1f ms, wall p99 %.1f ms, morphology %s" % (
                  label, r["cpu_ms_per_s"], r["main_ms_per_s"], r["other_ms_per_s"],
                  {k: round(v, 2) for k, v in r["stages"].items()}, _f(r["values"], "identifier_window_cpu_p99_ms"),
                  _f(r["values"], "identifier_window_wall_p99_ms"), r["values"].get("morphology")),
              flush=True)
    rows = []
    if not args.smoke:
        cases = [
            ("streams", "boltzmann_hamel + slip (default)", {"predictor": "boltzmann_hamel", "publish_slip": True},
             False),
            ("streams", "boltzmann_hamel alone", {"predictor": "boltzmann_hamel", "publish_slip": False}, False),
            ("streams", "slip alone", {"predictor": "slip", "publish_slip": False}, False),
            ("sim graph", "boltzmann_hamel + slip, whole graph in one process", {}, True),
        ]
        for feed, label, params, full in cases:
            r = measure(dict(params, rate=100.0), args.seconds, healthy, full)
            rows.append((feed, label, r))
            print("%-10s %-50s p50 %6.2f ms  p99 %6.2f ms  rate %5.1f Hz  model p50 %.2f / p99 %.2f ms" % (
                feed, label, r["p50"], r["p99"], r["rate"], r["model_p50"], r["model_p99"]), flush=True)
    if args.smoke and args.out is None:
        print("smoke run: every case ran; results not written")
        return 0
    args.out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "nodes.md")
    write(args, info, own, floor, ident, rows, events)
    return 0


PERIOD = 10.0   # ms, the predictor's 100 Hz and the IMU's


def _per_period(stages, keys):
    """CPU ms per 10 ms period of the stages ``keys`` (missing ones count 0) from their ms per s."""
    return sum(stages.get(k, 0.0) for k in keys) * PERIOD / 1e3


def write(args, info, own, floor, ident, rows, events):
    period = PERIOD
    lines = [
        "# Predictor and identifier nodes: cost at the robot's rates",
        "",
        "`benchmarks/bench_predictor_node.py --seconds %g --repeats %d%s`" % (args.seconds, args.repeats,
                                                                         " --smoke" if args.smoke else ""),
        "",
        *info,
        "- Jetson Nano: assumed %g-%g× slower per core (Cortex-A57 at 1.43 GHz against this machine's core); every "
        "Nano figure below is this machine's figure times %g-%g" % (NANO + NANO),
        "",
        "Real rclpy over DDS on loopback. The inputs are the plant's own streams (`sim.streams.walk_streams`: the "
        "engine walking a tripod at 0.05 m/s; joint commands 50 Hz, joint states 50 Hz, IMU 100 Hz with noise and "
        "a gyro bias), replayed in real time by a feeder node in the benchmark's process with fresh header stamps; "
        "in the one-process rows the predictor also gets mocap/pose at 50 Hz.",
        "",
        "## The predictor as the launch files run it: its own process, 100 Hz",
        "",
        "`python -m jethexa_dynamics.nodes.predictor` (rate 100 Hz) on the robot's traffic (joint commands, joint "
        "states, IMU; no motion capture), one subscriber (predicted/pose; the outputs nobody subscribes to are not "
        "built). From the node's own /diagnostics over the measured seconds: the cycle (its timer callback, wall "
        "time) and its stages -- dynamics = every model's `pose(t)`, publishing = the rest of the cycle (building "
        "and publishing the messages); message handling = the CPU time of the subscription callbacks (validation, "
        "feeding the models; per topic below); cycles = the CPU time of the timer callbacks. From /proc: the main "
        "thread (rclpy's executor and every callback) and the other threads (DDS). Executor = main thread minus "
        "every counted callback (taking and deserializing messages, the wait set). The peer row is a plain rclpy "
        "node with empty callbacks on the same traffic and an empty 100 Hz timer: the floor under any Python node. "
        "Paced = the share of cycles that ran right after an imu/data sample (`pace_on_imu`, `nodes/pacing.py`: "
        "one executor wake-up per period instead of two); the row with `pace_on_imu false` is the node as it "
        "was before, its cycle on its own 100 Hz timer, measured in the same run. %d interleaved rounds (each "
        "case, then the peer, again): a row is the round with its case's median main-thread CPU, the range of the "
        "rounds beside it." % args.repeats,
        "",
        "| node | cycle p50 / p99 [ms] | dynamics p50 / p99 [ms] | publishing p50 / p99 [ms] "
        "| message handling | cycles | executor (rest of main thread) | main thread | DDS threads "
        "| rate [Hz] | paced [%] | Nano: cycle p99 [ms] / main thread [ms per 10 ms] |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in own:
        v, st = r["values"], r["stages"]
        msg, cyc = _per_period(st, PREDICTOR_INPUTS), _per_period(st, ("predict", "diagnostics"))
        main = r["main_ms_per_s"] * period / 1e3
        lines.append("| predictor, %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.3f | %.3f | %.3f | %s | %.3f "
                     "| %.1f | %.0f | %.1f-%.1f / %.1f-%.1f |" % (
                         label, _f(v, "p50_ms"), _f(v, "p99_ms"), _f(v, "dynamics_p50_ms"), _f(v, "dynamics_p99_ms"),
                         _f(v, "publishing_p50_ms"), _f(v, "publishing_p99_ms"), msg, cyc, main - msg - cyc,
                         _main_cell(r, period),
                         r["other_ms_per_s"] * period / 1e3, r["rate"], _paced_percent(r), NANO[0] * _f(v, "p99_ms"),
                         NANO[1] * _f(v, "p99_ms"), NANO[0] * main, NANO[1] * main))
    if floor:
        main = floor["main_ms_per_s"] * period / 1e3
        lines.append("| peer: plain rclpy node, empty callbacks + empty 100 Hz timer | - | - | - | - | - | %.3f | %s "
                     "| %.3f | - | - | - / %.1f-%.1f |" % (main, _main_cell(floor, period),
                                                      floor["other_ms_per_s"] * period / 1e3,
                                                      NANO[0] * main, NANO[1] * main))
    lines += ["", "Columns from message handling to DDS threads: ms of CPU per 10 ms period (÷10 = % of a core)."]
    if own:
        st = own[0][1]["stages"]
        lines += ["", "Message handling by topic (first row), ms of CPU per 10 ms period: " + ", ".join(
            "%s %.3f" % (k, st[k] * period / 1e3) for k in PREDICTOR_INPUTS if k in st) + "."]
    per_msg, waitables = events
    med = {c: float(statistics.median(v)) for c, v in per_msg.items()}
    lines += ["", "rclpy's default event handlers (`measure_event_handlers`): a node shaped like the predictor (5 "
              "subscriptions, 8 publishers) fed by a publisher in the same process, one `spin_once` per message, "
              "thread CPU per message (publish + wake-up + take + callback), median of %d interleaved rounds: "
              "%.1f µs as rclpy makes the endpoints (%d event-handler waitables, walked at every wake-up) against "
              "%.1f µs without them (%d waitables, as `ThinNode` creates them; `check_qos` gives their "
              "incompatible-QoS warning from the graph every 2 s): %.2f×; rounds %s and %s µs. Nano: ×4-6."
              % (len(per_msg["default"]), med["default"], waitables["default"], med["without"], waitables["without"],
                 med["without"] / med["default"], ", ".join("%.1f" % x for x in per_msg["default"]),
                 ", ".join("%.1f" % x for x in per_msg["without"]))]
    lines += [
        "",
        "## The damage identifier as the launch files run it: `damage_monitor` with `identify:=true`, own process",
        "",
        "`python -m jethexa_dynamics.nodes.damage_monitor --ros-args -p identify:=true`, fed the same streams "
        "(no servo driver: its /diagnostics are absent, which the monitor reports and which costs nothing here). "
        "Message handling = the subscription callbacks (validate and queue); identifier = the worker thread "
        "feeding `DamageIdentifier` (windows of 0.5 s; a bank window runs up to 19 models); a window's cost = the "
        "work of the sample that closed it, in CPU time and in wall time (the worker pauses between models so the "
        "executor keeps the interpreter: the wall time is the decision's delay, not a CPU load).",
        "",
        "| streams | message handling | identifier worker | executor (rest of main thread) | DDS threads "
        "| whole process [% of a core] | window CPU p50 / p99 / max [ms] | window wall p99 / max [ms] "
        "| windows (bank) | morphology at the end | Nano: whole process [% of a core], window CPU max [ms] |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in ident:
        v, st = r["values"], r["stages"]
        msg, wrk = _per_period(st, MONITOR_INPUTS), _per_period(st, ("identifier",))
        dds = r["other_ms_per_s"] * period / 1e3 - wrk     # the worker is one of the other threads
        rest = r["main_ms_per_s"] * period / 1e3 - msg - _per_period(st, ("check",))
        pct = r["cpu_ms_per_s"] / 10.0
        lines.append("| %s | %.3f | %.3f | %.3f | %.3f | %.1f | %.2f / %.1f / %.1f | %.1f / %.1f | %s (%s) | %s "
                     "| %.0f-%.0f, %.0f-%.0f |" % (
                         label, msg, wrk, rest, dds, pct, _f(v, "identifier_window_cpu_p50_ms"),
                         _f(v, "identifier_window_cpu_p99_ms"), _f(v, "identifier_window_cpu_max_ms"),
                         _f(v, "identifier_window_wall_p99_ms"), _f(v, "identifier_window_wall_max_ms"),
                         v.get("identifier_windows"), v.get("identifier_bank_windows"), v.get("morphology"),
                         NANO[0] * pct, NANO[1] * pct, NANO[0] * _f(v, "identifier_window_cpu_max_ms"),
                         NANO[1] * _f(v, "identifier_window_cpu_max_ms")))
    lines += ["", "Columns message handling to DDS threads: ms of CPU per 10 ms (the IMU period)."]
    if rows:
        lines += [
            "",
            "## In one process (the demo's and the tests' way)",
            "",
            "The predictor node in this process fed by the replayed streams, and inside the whole sim.launch.py "
            "graph in one process (it then shares the executor and the CPU with the emulated robot and every other "
            "node). Cycle stats from the node; model = `BoltzmannHamelPredictor.predict()` alone; rate = "
            "predicted/pose received per s.",
            "",
            "| inputs | predictor configuration | cycle p50 / p99 [ms] | max [ms] | dynamics p50 / p99 [ms] "
            "| publishing p50 / p99 [ms] | overruns (>10 ms) | rate [Hz] | model p50 / p99 [ms] |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for feed, label, r in rows:
            lines.append("| %s | %s | %.2f / %.2f | %.1f | %.2f / %.2f | %.2f / %.2f | %d of %d | %.1f | %.2f / %.2f |"
                         % (feed, label, r["p50"], r["p99"], r["max"], r["dyn_p50"], r["dyn_p99"], r["pub_p50"],
                            r["pub_p99"], r["overruns"], r["cycles"], r["rate"], r["model_p50"], r["model_p99"]))
    lines += [
        "",
        "Reading: the cycle's p50 is what the work costs; its p99 and the rate depend on what else runs on the "
        "machine (this one is shared, see the load average; the feeder runs beside the node on the same 2 cores). "
        "On the robot each node runs in its own process (`ros2 launch`) on one of the Nano's 4 cores.",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("written", args.out)


if __name__ == "__main__":
    sys.exit(main())
