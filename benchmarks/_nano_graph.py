"""The graph runner of ``bench_nano_budget.py``: the sim graph's processes started as ``sim.launch.py`` starts
them, the benchmark's recording node (cmd_vel out; poses, commands, IMU, joint states, morphology and /diagnostics
in), one measured run of the whole graph (``run_case``), and the A/B of the imu node alone.

Imported by ``bench_nano_budget.py`` (which puts the checkout on ``sys.path`` and sets the ROS environment)."""
import math
import os
import sys
import threading
import time

from _machine import proc_cpu
from _nano_cgroup import Groups
from _nano_measure import (IMU_EMULATED_STAGES, call_rates, counter_rate, false_alarms,
                           node_stages, prediction_error, rest_split, robot_cpu, robot_total, stage_rates, walk_speed)
from _nano_proc import load_text, proc_memory, proc_threads, thread_delta

from jethexa_dynamics.nodes.graph_spec import COMPOSED_DEFAULT, ROBOT_NODES

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EMULATOR_NODES = ("robot_emulator",)
LAYOUTS = {"split": "split", "composed": "true", "separate": "false"}   # name here -> launch argument composed:=
LAUNCHED = next(k for k, v in LAYOUTS.items() if v == COMPOSED_DEFAULT)   # the launch files' default
SPEED = 0.05                # m/s forward on cmd_vel, as in the issue


def _stamp(h):
    return h.stamp.sec + 1e-9 * h.stamp.nanosec


def make_recorder(graph, speed, break_target="robot_emulator"):
    """The benchmark's node in ``graph``: publishes cmd_vel (``speed`` forward, 10 Hz) and records the topics
    (arrival times on the monotonic clock; poses with their header stamps)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped, Twist
    from rclpy.node import Node
    from rclpy.parameter_client import AsyncParameterClient
    from sensor_msgs.msg import Imu, JointState
    from std_msgs.msg import UInt8MultiArray
    from trajectory_msgs.msg import JointTrajectory

    from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes._robot import jethexa
    from jethexa_dynamics.model.wire import morphology_from_wire

    legs = list(jethexa().leg_names)

    class Recorder(Node):
        def __init__(self, **kwargs):
            super().__init__("bench_nano_budget", **kwargs)
            self.lock = threading.Lock()
            self.arrivals = {t: [] for t in ("predicted/pose", "mocap/pose", "joint_commands", "imu/data",
                                             "joint_states")}
            self.poses = {"predicted/pose": [], "mocap/pose": []}    # (arrival, stamp, x, y, z, qw, qx, qy, qz)
            self.morphology = []                                     # (arrival, links)
            self.diag = {}                                           # status name -> [(arrival, values)]

            def pose_cb(topic):
                def cb(msg):
                    t = time.monotonic()
                    p, o = msg.pose.position, msg.pose.orientation
                    with self.lock:
                        self.arrivals[topic].append(t)
                        self.poses[topic].append((t, _stamp(msg.header), p.x, p.y, p.z, o.w, o.x, o.y, o.z))
                return cb

            def count_cb(topic):
                def cb(msg):
                    t = time.monotonic()
                    with self.lock:
                        self.arrivals[topic].append(t)
                return cb

            def morph_cb(msg):
                label = msg.layout.dim[0].label if msg.layout.dim else ""
                links = morphology_from_wire(list(msg.data), label, legs)
                with self.lock:
                    self.morphology.append((time.monotonic(), links))

            def diag_cb(arr):
                t = time.monotonic()
                for st in arr.status:
                    if st.name.endswith(": node"):
                        with self.lock:
                            self.diag.setdefault(st.name[:-len(": node")], []).append(
                                (t, {kv.key: kv.value for kv in st.values}))

            self.create_subscription(PoseStamped, "predicted/pose", pose_cb("predicted/pose"), RELIABLE_QOS)
            self.create_subscription(PoseStamped, "mocap/pose", pose_cb("mocap/pose"), SENSOR_QOS)
            self.create_subscription(JointTrajectory, "joint_commands", count_cb("joint_commands"), RELIABLE_QOS)
            self.create_subscription(Imu, "imu/data", count_cb("imu/data"), SENSOR_QOS)
            self.create_subscription(JointState, "joint_states", count_cb("joint_states"), SENSOR_QOS)
            self.create_subscription(UInt8MultiArray, "morphology", morph_cb, LATCHED_QOS)
            self.create_subscription(DiagnosticArray, "/diagnostics", diag_cb, RELIABLE_QOS)
            pub = self.create_publisher(Twist, "cmd_vel", 10)
            twist = Twist()
            twist.linear.x = float(speed)
            self.create_timer(0.1, lambda: pub.publish(twist))
            self.params = AsyncParameterClient(self, break_target)

        def count(self, topic):
            with self.lock:
                return len(self.arrivals[topic])

        def diag_after(self, node, t):
            """(arrival, values) of ``node``'s first status received at or after ``t``, or None."""
            with self.lock:
                for item in self.diag.get(node, []):
                    if item[0] >= t:
                        return item
            return None

    return graph.add(Recorder), legs


def check_domain_free(rec):
    """Exit (status 1) if anything publishes the graph's topics on this ROS domain already (another engineer's
    graph: scripts/ros_env.sh derives the domain from the shell's pid, so two shells can share one)."""
    busy = [t for t in rec.arrivals if rec.count(t)]
    if busy:
        raise SystemExit("another graph publishes %s on ROS_DOMAIN_ID=%s: choose another domain (export "
                         "ROS_DOMAIN_ID=...)" % (", ".join(busy), os.environ["ROS_DOMAIN_ID"]))


def domain_free():
    """``check_domain_free`` from a short-lived recorder of its own (before any process of a run starts)."""
    from jethexa_dynamics.nodes.graph import Graph

    g = Graph()
    rec, _ = make_recorder(g, 0.0)
    g.start()
    time.sleep(1.0)
    try:
        check_domain_free(rec)
    finally:
        g.close()


def wait_diag(rec, nodes, t, timeout):
    """{node: (arrival, values)}: each node's first /diagnostics status at or after ``t`` (waits up to ``timeout``)."""
    end = time.monotonic() + timeout
    while True:
        got = {n: rec.diag_after(n, t) for n in nodes}
        if all(got.values()) or time.monotonic() > end:
            return got
        time.sleep(0.05)


def launch_processes(layout, port_link, body_estimate=False, kit=None):
    """The processes ``sim.launch.py`` starts with ``composed:=<LAYOUTS[layout]>`` (and ``body_estimate:=true
    servo_timing:=exact`` with ``body_estimate``; ``kit:=<kit>`` with a kit): ``graph_spec.processes``, the launch
    file's own source."""
    from jethexa_dynamics.nodes.graph_spec import processes

    args = {"port_link": port_link, "composed": LAYOUTS[layout]}
    if kit:
        args["kit"] = kit
    if body_estimate:
        args.update(body_estimate="true", servo_timing="exact")
    return processes("sim", args)


def process_name(process):
    return process.label


def node_names(process):
    return [entry.name for entry, _ in process.nodes]


def is_robot(process):
    return all(n in ROBOT_NODES for n in node_names(process))


def child_env():
    """This environment with the checkout first on PYTHONPATH (the processes run this tree's package)."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + path if path else ""))


def start(process, workdir, local_motion=False):
    """``graph.start_process`` (parameter file, command line and log as ``ros2 launch``); the process that hosts the
    imu node through ``_imu_split.py`` (the same arguments; its emulated MPU6050 counted apart). Returns (Popen,
    log)."""
    from jethexa_dynamics.nodes.graph import start_process

    launcher = None
    if "imu" in node_names(process):
        launcher = [sys.executable, os.path.join(HERE, "_imu_split.py")] + (["--local-motion"] if local_motion else [])
    return start_process(process, workdir, env=child_env(), launcher=launcher)


def stop(procs, logs):
    """SIGINT to every process, the robot's first (the commands stop before the emulated bus closes); returns
    (exit codes, log texts)."""
    from jethexa_dynamics.nodes.graph import stop_processes

    return stop_processes(procs, logs, timeout=20.0)


def run_case(label, layout, quota, opts, workdir, cgroup, credit, per_process=False, native=None):
    """One run of the whole graph in ``layout`` (a key of ``LAYOUTS``); ``quota`` = cores of the robot's group
    (None: unconstrained), or of each robot process with ``per_process`` (plus ``native``, {process: cores}, its
    native threads' credit). Returns a dict of everything measured."""
    from jethexa_dynamics.model import format_morphology
    from jethexa_dynamics.nodes.graph import Graph, wait_for
    from rclpy.parameter import Parameter

    run = "%s %s" % (layout, label)
    native = dict(native or {}) if per_process and quota is not None else {}
    print("== %s: %s" % (run, "unconstrained" if quota is None else "robot's %s inside %.3f core%s%s%s" % (
        "process" if layout == "composed" else "processes", quota, " each" if per_process else "",
        " (+ %.3f credit for the emulated MPU6050)" % credit if credit else "",
        " (+ native threads and kernel: %s)" % ", ".join("%s %.3f" % kv for kv in sorted(native.items()))
        if native else ""
    )), flush=True)
    res = {"label": label, "layout": layout, "run": run, "quota": quota, "per_process": per_process,
           "credit": credit if quota is not None else 0.0, "native_credit": native, "load_start": load_text()}
    g = Graph()
    procs, logs, groups = {}, {}, None
    try:
        rec, legs = make_recorder(g, opts.speed)
        g.start()
        time.sleep(1.0)
        check_domain_free(rec)
        groups = Groups(cgroup, quota, opts.shares, per_process, credit, native)
        if quota is not None:
            res["quota_us"] = groups.quota_us
        t_launch = time.monotonic()
        run_dir = os.path.join(workdir, run.replace(" ", "_"))
        os.makedirs(run_dir, exist_ok=True)
        plan = launch_processes(layout, "/tmp/jethexa_nano_bus_%d" % os.getpid(), opts.body_estimate,
                                getattr(opts, "kit", None))
        res["processes"] = {process_name(p): node_names(p) for p in plan}
        res["robot_procs"] = [process_name(p) for p in plan if is_robot(p)]
        for p in plan:
            name = process_name(p)
            procs[name], logs[name] = start(p, run_dir)
            groups.add(is_robot(p), procs[name].pid, "imu" in node_names(p), name)   # at once: start-up inside too

        def up():
            return all(rec.count(t) for t in rec.arrivals) and rec.morphology

        def dead():
            return [n for n, p in procs.items() if p.poll() is not None]

        wait_for(lambda: up() or dead(), opts.timeout, poll=0.1)
        if not up():
            raise RuntimeError("graph not up after %.0f s (ended: %s); see the logs in %s"
                               % (time.monotonic() - t_launch, dead() or "none", run_dir))
        res["startup_s"] = time.monotonic() - t_launch
        print("   graph up after %.1f s (first predicted pose, truth, commands, IMU, joint states, morphology)"
              % res["startup_s"], flush=True)
        if not rec.params.wait_for_services(timeout_sec=30.0):
            raise RuntimeError("robot_emulator's parameter service not available")
        time.sleep(opts.warmup)
        if dead():
            raise RuntimeError("node processes ended: %s" % dead())
        pids = {n: p.pid for n, p in procs.items()}

        def snapshot():
            return time.monotonic(), {n: proc_cpu(pid) for n, pid in pids.items()}, {
                n: proc_threads(pid) for n, pid in pids.items()}

        t_mark = time.monotonic()
        diag0 = wait_diag(rec, ROBOT_NODES, t_mark, 5.0)
        s0 = snapshot()
        g0 = groups.stats()
        t0 = s0[0]
        sb = tb = None
        mem_mid = None
        if opts.break_at > 0:
            time.sleep(max(0.0, t0 + opts.break_at - time.monotonic()))
            mem_mid = {n: proc_memory(pid) for n, pid in pids.items()}
            sb = snapshot()
            tb = time.monotonic()
            fut = rec.params.set_parameters([Parameter("breaks", value=opts.break_spec)])
            wait_for(fut.done, 10.0)
            if not fut.done() or not fut.result().results[0].successful:
                raise RuntimeError("setting breaks=%s on robot_emulator failed: %s" % (
                    opts.break_spec, fut.result().results[0].reason if fut.done() else "no answer"))
            print("   silent break %s at %.1f s into the window" % (opts.break_spec, tb - t0), flush=True)
        time.sleep(max(0.0, t0 + opts.seconds - time.monotonic()))
        s1 = snapshot()
        t1 = s1[0]
        g1 = groups.stats()
        mem = {n: proc_memory(pid) for n, pid in pids.items()}
        if mem_mid:
            for n, m in mem.items():
                if mem_mid[n]["rss"] > m["rss"]:     # the larger RSS, with its file-backed part
                    m["rss"], m["file"] = mem_mid[n]["rss"], mem_mid[n]["file"]
                m["pss"] = max(m["pss"], mem_mid[n]["pss"])
        diag1 = wait_diag(rec, ROBOT_NODES, t1, 5.0)
        if dead():
            raise RuntimeError("node processes ended during the window: %s" % dead())

        # silent break: the first non-healthy morphology after it (waiting on a little past the window)
        healthy = [3] * len(legs)
        if tb is not None:
            def named():
                with rec.lock:
                    return next(((t, m) for t, m in rec.morphology if t >= tb and m != healthy), None)

            wait_for(named, max(0.0, tb + opts.name_timeout - time.monotonic()), poll=0.1)
            first = named()
            with rec.lock:
                before = [m for t, m in rec.morphology if t < tb and m != healthy]
                final = rec.morphology[-1][1] if rec.morphology else None
            expect = _links(opts.break_spec)
            broken = [i for i, n in enumerate(expect) if n < 3]
            res["break"] = {"delay_s": first[0] - tb if first else float("nan"),
                            "named": format_morphology(first[1], legs) if first else "nothing",
                            "legs_right": bool(first and [i for i, n in enumerate(first[1]) if n < 3] == broken),
                            "exact": bool(first and first[1] == expect), "waited_s": opts.name_timeout,
                            "final": format_morphology(final, legs) if final else "-"}
        else:
            with rec.lock:
                before = [m for t, m in rec.morphology if m != healthy]
        res["false_damage"] = [format_morphology(m, legs) for m in before]
        res["false_alarms"] = false_alarms(rec, t0, tb if tb is not None else t1)
        with rec.lock:
            seq = [m for t, m in rec.morphology if tb is None or t < tb]
        res["changes"] = sum(1 for a, b in zip(seq, seq[1:]) if a != b)   # before the break: all false

        dt = t1 - t0
        res["window_s"] = dt
        res["cpu"] = {n: (s1[1][n] - s0[1][n]) / dt for n in pids}
        res["threads"] = {n: thread_delta(s0[2][n], s1[2][n], dt) for n in pids}
        if sb is not None:
            res["cpu_before"] = sum((sb[1][n] - s0[1][n]) for n in res["robot_procs"]) / (sb[0] - s0[0])
            res["cpu_after"] = sum((s1[1][n] - sb[1][n]) for n in res["robot_procs"]) / (t1 - sb[0])
        res["mem"] = mem
        with rec.lock:
            res["rates"] = {t: sum(1 for a in arr if t0 <= a < t1) / dt for t, arr in rec.arrivals.items()}
            pred, truth = list(rec.poses["predicted/pose"]), list(rec.poses["mocap/pose"])
        t_h = tb if tb is not None else t1
        res["error"] = prediction_error(pred, truth, t0, t_h)
        res["error_after"] = prediction_error(pred, truth, t_h, t1) if tb is not None else None
        res["speed"] = walk_speed(truth, t0, t_h)
        res["stages"] = {n: stage_rates(diag0.get(n), diag1.get(n)) for n in ROBOT_NODES}
        res["calls"] = {n: call_rates(diag0.get(n), diag1.get(n)) for n in ROBOT_NODES}
        res["kernel"] = {p: max([0.0] + [k for k in (counter_rate(diag0.get(n), diag1.get(n), "process_kernel_cpu_s")
                                                      for n in res["processes"][p]) if math.isfinite(k)])
                         for p in res["robot_procs"]}
        res["id_windows"] = counter_rate(diag0.get("damage_monitor"), diag1.get("damage_monitor"),
                                         "identifier_windows")
        if g0:
            res["throttle"] = {"periods": g1.get("nr_periods", 0) - g0.get("nr_periods", 0),
                               "throttled": g1.get("nr_throttled", 0) - g0.get("nr_throttled", 0),
                               "throttled_s": g1.get("throttled_s", 0.0) - g0.get("throttled_s", 0.0)}
        res["load_end"] = load_text()
        _print_case(res)
        return res
    finally:
        g.close()
        if groups is not None:
            groups.close()            # the nodes end at full speed
        if procs:
            codes, text = stop(procs, logs)
            bad = {n: c for n, c in codes.items() if c != 0}
            errors = sum(t.count("[ERROR]") + t.count("Traceback") for t in text.values())
            res["exits"] = "all 0" if not bad else str(bad)
            res["error_lines"] = errors
            if bad or errors:
                print("   exits %s, ERROR lines/tracebacks %d (logs in %s)" % (res["exits"], errors, workdir),
                      flush=True)


def _links(spec):
    from jethexa_dynamics.model import Morphology
    from jethexa_dynamics.nodes._robot import jethexa

    return list(Morphology.parse(jethexa(), spec).links_per_leg)


def _print_case(res):
    r, e = res["rates"], res["error"]
    rest, dds = rest_split(res)
    line = ("   robot CPU %.3f CPU-s/s (stages: %s; rest %.3f, of which DDS threads %.3f); emulator %.3f; "
            "predicted/pose %.1f Hz, joint_commands %.1f, imu/data %.1f, joint_states %.1f; identifier windows "
            "%.2f/s; error roll/pitch %.3f deg, position %.1f mm; speed %.3f m/s"
            % (robot_cpu(res), ", ".join("%s %.3f" % (n, node_stages(res, n)) for n in ROBOT_NODES), rest, dds,
               res["cpu"]["robot_emulator"], r["predicted/pose"], r["joint_commands"], r["imu/data"],
               r["joint_states"], res["id_windows"], e["roll_pitch_deg"], e["pos_mm"], res["speed"]))
    if "break" in res:
        b = res["break"]
        line += "; break named after %.1f s as %s" % (b["delay_s"], b["named"])
    line += "; morphology changes before it %d" % res["changes"] if "break" in res else \
        "; morphology changes %d" % res["changes"]
    line += "; false alarms %s" % (", ".join(res.get("false_alarms", ())) or "none")
    line += "; per process %s" % ", ".join("%s %.3f" % (n, res["cpu"][n]) for n in sorted(res["cpu"]))
    line += "; waited for a CPU %.2f s/s" % robot_total(res, "threads", "wait")
    line += "; RSS %.0f MB (PSS %.0f)" % (robot_total(res, "mem", "rss"), robot_total(res, "mem", "pss"))
    print(line, flush=True)


def measure_imu_alone(local, seconds, workdir, cgroup=(None, ""), shares=None):
    """The imu node alone, ``seconds`` measured: ``local`` False = as in the sim graph (source emulator, fed
    emulator/imu_motion at 100 Hz by this process), True = its robot code path (source i2c) on the same register
    model fed in-process (``_imu_split.py --local-motion``). This process subscribes to imu/data in both.
    {cpu (CPU-s/s of the process), stages (from /diagnostics), rate}."""
    from geometry_msgs.msg import Vector3  # noqa: F401  (message package loaded before the node class)
    from sensor_msgs.msg import Imu

    from jethexa_dynamics.nodes import graph_spec
    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, wait_for

    entry, values = next((e, dict(v)) for e, v in graph_spec.node_parameters("sim") if e.name == "imu")
    values["source"] = "i2c" if local else "emulator"
    side_dir = os.path.join(workdir, "imu_alone_%s" % ("local" if local else "topic"))
    os.makedirs(side_dir, exist_ok=True)
    domain_free()
    groups = Groups(cgroup, None, shares)
    proc, log = start(graph_spec.Process("imu", "imu", (), ((entry, values),)), side_dir, local_motion=local)
    g = Graph()
    try:
        groups.add(True, proc.pid)
        rec, _ = make_recorder(g, 0.0)
        if not local:
            pub = rec.create_publisher(Imu, "emulator/imu_motion", SENSOR_QOS)
            msg = Imu()
            msg.orientation.w = 1.0
            msg.angular_velocity.x, msg.angular_velocity.z = 0.05, 0.1

            def feed():
                msg.header.stamp = rec.get_clock().now().to_msg()
                pub.publish(msg)

            rec.create_timer(0.01, feed)
        g.start()
        if not wait_for(lambda: rec.count("imu/data") > 50 or proc.poll() is not None, 120.0, poll=0.1) \
                or proc.poll() is not None:
            raise RuntimeError("imu node alone did not publish (log %s)" % log.name)
        time.sleep(2.0)
        a = wait_diag(rec, ["imu"], time.monotonic(), 5.0)["imu"]
        c0, t0 = proc_cpu(proc.pid), time.monotonic()
        n0 = rec.count("imu/data")
        time.sleep(seconds)
        c1, t1 = proc_cpu(proc.pid), time.monotonic()
        n1 = rec.count("imu/data")
        b = wait_diag(rec, ["imu"], t1, 5.0)["imu"]
        return {"cpu": (c1 - c0) / (t1 - t0), "stages": stage_rates(a, b), "calls": call_rates(a, b),
                "rate": (n1 - n0) / (t1 - t0)}
    finally:
        g.close()
        groups.close()
        stop({"imu": proc}, {"imu": log})


def imu_ab(seconds, workdir, cgroup, shares):
    """The A/B of the imu node alone: {topic, local, delivery}; delivery = CPU-s/s of receiving
    emulator/imu_motion (DDS threads + rclpy executor), i.e. the difference of the two processes' CPU outside
    the emulated stages."""
    topic = measure_imu_alone(False, seconds, workdir, cgroup, shares)
    local = measure_imu_alone(True, seconds, workdir, cgroup, shares)
    rest_topic = topic["cpu"] - sum(topic["stages"].get(k, 0.0) for k in IMU_EMULATED_STAGES)
    rest_local = local["cpu"] - local["stages"].get("emulated MPU6050", 0.0)
    out = {"topic": topic, "local": local, "delivery": rest_topic - rest_local}
    print("== imu node alone (%.0f s each): fed by emulator/imu_motion %.4f CPU-s/s (motion callback %.4f, register "
          "model %.4f), local motion %.4f (register model %.4f); delivery of emulator/imu_motion %.4f CPU-s/s" % (
              seconds, topic["cpu"], topic["stages"].get("emulator/imu_motion", 0.0),
              topic["stages"].get("emulated MPU6050", 0.0), local["cpu"], local["stages"].get("emulated MPU6050", 0.0),
              out["delivery"]), flush=True)
    return out
