#!/usr/bin/env python3
"""CPU of the robot's five nodes on the sim graph, walking: per node (a process each) and composed (one process).

Run: ``source scripts/ros_env.sh && .venv/bin/python benchmarks/bench_robot_cpu.py [--seconds 20]
[--mode separate|composed|both] [--speed 0.05] [--out benchmarks/results/robot_cpu.md]``

The emulated robot (``robot_emulator``) runs in a process of its own, as the hardware would; the robot's nodes
(servo_driver, imu, gait_controller, predictor, damage_monitor) with the ``sim.launch.py`` parameters
(``graph_spec.node_parameters``) either each in its own process (``separate``: the per-node figures) or all on
one executor in one process (``composed``). This process sends ``cmd_vel`` (``--speed`` m/s forward) and reads
/diagnostics. After the graph walks (``predicted/pose`` flowing, ``--warmup`` s more) each process's user +
system CPU time (/proc/<pid>/stat: every thread) is differenced over ``--seconds``: CPU seconds per second,
robust to the machine's load (what the processes computed, not how long they waited for a core). The issue-21
budget is 0.4 CPU-s/s for the five together on these machines (the Nano is ~5x slower per core).

``--starve``: the robot's processes pinned to the last CPU, which a busy-looping process shares with them (about
half a core left: a CPU too short for the graph, as on the Nano); the report adds the rates the watcher saw of
the gait controller's joint_commands (50 Hz wanted) and of predicted/pose, and whether the nodes degraded.
"""
import argparse
import os
import sys
import tempfile
import time

from _machine import describe

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))

ROBOT = ("servo_driver", "imu", "gait_controller", "predictor", "damage_monitor")
EMULATOR = "robot_emulator"
BUDGET = 0.4


def _cpu_seconds(pid):
    """user + system CPU seconds of process ``pid`` so far (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _threads_cpu(pid):
    """{thread kind: CPU s so far} of process ``pid``: 'main' (the executor and every callback), 'python' (the
    nodes' own threads: servo bus, identifier), else the thread's name (the middleware's: dds.*, ...)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                text = f.read()
        except FileNotFoundError:
            continue
        name = "main" if int(tid) == pid else text[text.index("(") + 1:text.rindex(")")]
        name = name.rstrip("0123456789.").split(".")[0] if name.startswith("dds") else name
        fields = text.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def composed_child(params_file):
    """The five nodes of the graph on one SingleThreadedExecutor in this process (``--composed-child``)."""
    import pickle

    import rclpy
    import rclpy.executors

    from jethexa_dynamics.nodes._common import _init_without_rclpy_signal_handlers, _install_stop_handlers
    from jethexa_dynamics.nodes.graph import node_class, overrides

    with open(params_file, "rb") as f:
        entries = pickle.load(f)
    stop = []
    _install_stop_handlers(stop)
    _init_without_rclpy_signal_handlers(None)
    executor = rclpy.executors.SingleThreadedExecutor()
    nodes = []
    for executable, name, params in entries:
        node = node_class(executable)(parameter_overrides=overrides(params))
        nodes.append(node)
        executor.add_node(node)
    try:
        while not stop and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    finally:
        for node in reversed(nodes):
            close = getattr(node, "close", None)
            if close is not None:
                close()
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.shutdown()
    return 0


def _latest_status(w, since):
    """{node: (arrival time, message, {key: value})} of the newest ``<node>: node`` status since ``since``."""
    out = {}
    for t, arr in w.since("/diagnostics", since):
        for st in arr.status:
            if st.name.endswith(": node"):
                out[st.name[:-len(": node")]] = (t, st.message, {kv.key: kv.value for kv in st.values})
    return out


def _hog():
    """A busy loop for --starve (killed by the caller)."""
    while True:
        pass


def measure(mode, seconds, warmup, speed, starve=False):
    """({process label: CPU s per s} over ``seconds`` of walking, predicted/pose rate, {node: (message, values)}
    of the nodes' last /diagnostics, {node: {stage: CPU s per s}} from their ``cpu_s <stage>`` totals)."""
    import pickle
    import subprocess

    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped

    from jethexa_dynamics.nodes.graph import Graph, Watcher, node_process, stop_processes, wait_for
    from jethexa_dynamics.nodes.graph_spec import node_parameters

    workdir = tempfile.mkdtemp(prefix="bench_robot_cpu_")
    spec = node_parameters("sim", {"port_link": os.path.join(workdir, "bus")})
    procs, logs = {}, {}
    for entry, params in spec:
        if entry.name == EMULATOR:
            procs[EMULATOR], logs[EMULATOR] = node_process(entry, params, workdir)
    time.sleep(1.0)
    if mode == "separate":
        for entry, params in spec:
            if entry.name != EMULATOR:
                procs[entry.name], logs[entry.name] = node_process(entry, params, workdir)
    else:
        path = os.path.join(workdir, "robot.pkl")
        with open(path, "wb") as f:
            pickle.dump([(e.executable, e.name, p) for e, p in spec if e.name != EMULATOR], f)
        logs["robot"] = open(os.path.join(workdir, "robot.log"), "w+")
        procs["robot"] = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--composed-child", path],
                                          stdout=logs["robot"], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env=dict(os.environ, PYTHONUNBUFFERED="1"))
    hog = None
    if starve:
        cpu = {os.cpu_count() - 1}
        for k, p in procs.items():
            if k != EMULATOR:
                for tid in os.listdir("/proc/%d/task" % p.pid):
                    os.sched_setaffinity(int(tid), cpu)
        hog = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--hog"], stdin=subprocess.DEVNULL)
        os.sched_setaffinity(hog.pid, cpu)
    from trajectory_msgs.msg import JointTrajectory

    g = Graph()
    try:
        w = g.add(Watcher, name="bench_robot_cpu")
        w.watch(JointTrajectory, "joint_commands")
        w.watch(PoseStamped, "predicted/pose")
        w.watch(DiagnosticArray, "/diagnostics")
        w.drive(speed)
        g.start()
        if not wait_for(lambda: w.count("predicted/pose") > 0 or any(p.poll() is not None for p in procs.values()),
                        240.0) or any(p.poll() is not None for p in procs.values()):
            raise RuntimeError("the graph did not come up; logs in %s" % workdir)
        time.sleep(warmup)
        first = _latest_status(w, 0.0)
        t0 = time.monotonic()
        c0 = {k: _cpu_seconds(p.pid) for k, p in procs.items()}
        th0 = {k: _threads_cpu(p.pid) for k, p in procs.items()}
        n0, j0 = w.count("predicted/pose"), w.count("joint_commands")
        time.sleep(seconds)
        t1 = time.monotonic()
        c1 = {k: _cpu_seconds(p.pid) for k, p in procs.items()}
        th1 = {k: _threads_cpu(p.pid) for k, p in procs.items()}
        n1, j1 = w.count("predicted/pose"), w.count("joint_commands")
        rates = {k: (c1[k] - c0[k]) / (t1 - t0) for k in procs}
        threads = {k: {n: (v - th0[k].get(n, 0.0)) / (t1 - t0) for n, v in th1[k].items()} for k in procs}
        time.sleep(1.5)                       # the nodes' next /diagnostics
        last = _latest_status(w, t1)
        stages = {}
        for node, (t_b, _, b) in last.items():
            if node in first:
                t_a, _, a = first[node]
                stages[node] = {k[len("cpu_s "):]: (float(b[k]) - float(a.get(k, 0.0))) / (t_b - t_a)
                                for k in b if k.startswith("cpu_s ")}
        queue = [int(kv.value) for _, arr in w.since("/diagnostics", t0) for st in arr.status
                 if st.name == "damage_monitor: node" for kv in st.values if kv.key == "identifier_queue"]
        diag = {k: v[1:] for k, v in last.items()}
        if "damage_monitor" in diag:
            diag["damage_monitor"][1]["identifier_queue_max"] = max(queue, default=0)
        if "gait_controller" in diag:
            diag["gait_controller"][1]["joint_commands_hz"] = (j1 - j0) / (t1 - t0)
        return rates, threads, (n1 - n0) / (t1 - t0), diag, stages
    finally:
        if hog is not None:
            hog.kill()
        g.close()
        codes, text = stop_processes(procs, logs)
        for k, c in codes.items():
            if c not in (0, -2):
                print("%s ended with %s:\n%s" % (k, c, text[k][-2000:]), file=sys.stderr)


def report(mode, rates, threads, pose_rate, diag, stages):
    lines = ["", "### %s (%s)" % (mode, "a process per node" if mode.startswith("separate") else
                                  "one process, one executor"),
             "", "| process | CPU s per s | by thread (main = executor and callbacks) |", "|---|---|---|"]
    robot = 0.0
    for k, v in rates.items():
        by = sorted(((c, n) for n, c in threads[k].items() if c >= 0.0005), reverse=True)
        lines.append("| %s | %.3f | %s |" % (k, v, ", ".join("%s %.3f" % (n, c) for c, n in by)))
        if k != EMULATOR:
            robot += v
    lines.append("| **robot's nodes together** | **%.3f** (budget %.2f) | |" % (robot, BUDGET))
    lines.append("")
    lines.append("predicted/pose at %.1f Hz. Callbacks' CPU by stage (ms per s, from the nodes' /diagnostics "
                 "``cpu_s <stage>`` totals over the same window):" % pose_rate)
    lines.append("")
    for node in ROBOT:
        if node in stages:
            st = sorted(((1e3 * v, k) for k, v in stages[node].items()), reverse=True)
            lines.append("- %s: sum %.1f; %s" % (node, sum(v for v, _ in st),
                                                  ", ".join("%s %.1f" % (k, v) for v, k in st if v >= 0.05)))
    if "gait_controller" in diag:
        lines.append("- gait_controller: joint_commands at %.1f Hz" % diag["gait_controller"][1]["joint_commands_hz"])
    for node in ("predictor", "damage_monitor"):
        if node in diag:
            message, values = diag[node]
            keep = {k: v for k, v in values.items() if k.startswith(("degraded", "effective_rate", "identifier_degr",
                                                                   "identifier_queue", "identifier_bank",
                                                                   "identifier_deferred", "identifier_windows"))}
            lines.append("- %s: %s %s" % (node, message, keep))
    return lines


def main():
    ap = argparse.ArgumentParser(prog="bench_robot_cpu.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="measured walking time [s] (default %(default)s)")
    ap.add_argument("--warmup", type=float, default=5.0, help="walking before the measurement [s]")
    ap.add_argument("--speed", type=float, default=0.05, help="cmd_vel forward speed [m/s] (default %(default)s)")
    ap.add_argument("--mode", choices=("separate", "composed", "both"), default="both")
    ap.add_argument("--note", default="", help="a line said under the header (what tree, what load)")
    ap.add_argument("--out", default=None, help="write the markdown here too")
    ap.add_argument("--starve", action="store_true", help="the robot's processes on one CPU shared with a busy loop")
    ap.add_argument("--composed-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--hog", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.hog:
        return _hog()
    if args.composed_child:
        return composed_child(args.composed_child)
    if not args.seconds > 0 or not args.warmup >= 0:
        ap.error("--seconds must be > 0 and --warmup >= 0")
    lines = ["## Robot nodes' CPU on the sim graph (bench_robot_cpu.py)", ""] + describe()
    lines.append("- load average at start: %s" % " ".join("%.1f" % x for x in os.getloadavg()))
    if args.note:
        lines.append("- " + args.note)
    for mode in (("separate", "composed") if args.mode == "both" else (args.mode,)):
        lines += report(mode + (", starved" if args.starve else ""),
                        *measure(mode, args.seconds, args.warmup, args.speed, args.starve))
        print("\n".join(lines[-12:]), flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
