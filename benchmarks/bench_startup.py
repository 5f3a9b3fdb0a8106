#!/usr/bin/env python3
"""Start-up time of the sim.launch.py graph as separate node processes: cold vs warm numba cache.

Run: ``source scripts/ros_env.sh && .venv/bin/python benchmarks/bench_startup.py [--composed split|true|false]
[--out benchmarks/results/startup.md]`` (a few minutes: the cold case compiles every kernel).

The processes are those ``ros2 launch jethexa_dynamics sim.launch.py composed:=false`` starts (a process per
node, as in the earlier figures; ``--composed split``: the launch default, two processes), from
``graph_spec.processes`` and started by ``graph.start_process`` (``python -m jethexa_dynamics.nodes.entry <node>
--ros-args -r __node:=... --params-file ...`` with the graph's parameters). Measured: seconds from starting the processes to the first
``predicted/pose`` received by a subscriber in this process, while it drives ``cmd_vel`` like a teleop.

Cases, side by side in one run:

* ``cold``   -- an empty ``NUMBA_CACHE_DIR``: the nodes compile (the first start after installing).
* ``warmup`` -- ``jethexa-warmup`` alone into another empty directory (the one-off step of the README).
* ``warm``   -- the graph again on the directory the warm-up filled (every later start).

Also counted: ``[ERROR]`` lines and tracebacks in the nodes' logs, and every node's exit status after
SIGINT (all must be 0).
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

from _machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))
NANO_SCALING = (4, 6)  # Jetson Nano (Cortex-A57) is assumed 4-6x slower per core than this machine


def start_graph(cache_dir, workdir, timeout, composed="false"):
    """Seconds from starting the processes of sim.launch.py (``graph_spec.processes``, started by
    ``graph.start_process`` as ``ros2 launch`` starts them; ``composed``: the launch argument) to the first
    predicted/pose and to the graph being up (first predicted/pose and first mocap/pose
    from the emulated world); the logs; the exit codes."""
    from geometry_msgs.msg import PoseStamped

    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, start_process, stop_processes, wait_for
    from jethexa_dynamics.nodes.graph_spec import processes

    path = os.environ.get("PYTHONPATH", "")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=ROOT + (os.pathsep + path if path else ""))
    g = Graph()
    procs, logs = {}, {}
    try:
        w = g.add(Watcher, name="bench_startup")
        w.watch(PoseStamped, "predicted/pose")
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        w.drive(0.05)
        g.start()
        time.sleep(2.0)
        if w.count("predicted/pose"):
            raise SystemExit("another predictor publishes on ROS_DOMAIN_ID=%s: stop it first"
                             % os.environ["ROS_DOMAIN_ID"])
        t0 = time.monotonic()
        for p in processes("sim", {"port_link": "/tmp/jethexa_bench_bus_%d" % os.getpid(),
                                   "composed": composed}):
            name = p.label
            procs[name], logs[name] = start_process(p, workdir, env=env)
        ok = wait_for(lambda: w.count("predicted/pose") > 0 and w.count("mocap/pose") > 0, timeout)
        with w.lock:  # predictor up; whole graph up (the emulated world publishes too)
            first = [w.msgs[t][0][0] if ok else float("nan") for t in ("predicted/pose", "mocap/pose")]
        elapsed = (first[0] - t0, max(first) - t0)
    finally:
        g.close()
        codes, text = stop_processes(procs, logs, timeout=30.0)
    return elapsed, text, codes


def run_warmup(cache_dir):
    """Seconds and peak memory [MB] (the process's maximum resident set, from wait4) of ``jethexa-warmup``
    into ``cache_dir``: the compile must fit the Nano's 4 GB shared with the GPU."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as log:
        p = subprocess.Popen([sys.executable, "-m", "jethexa_dynamics.warmup"], cwd=ROOT, stdout=log,
                             stderr=subprocess.STDOUT, env=dict(os.environ, NUMBA_CACHE_DIR=cache_dir))
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            log.seek(0)
            raise SystemExit("jethexa-warmup failed:\n" + log.read()[-3000:])
    return time.monotonic() - t0, usage.ru_maxrss / 1024.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the markdown results here")
    ap.add_argument("--composed", choices=("split", "true", "false"), default="false",
                    help="launch argument composed: split (the default of the launch files: two processes), true "
                         "(one process), false (a process per node; default here, as in the earlier figures)")
    ap.add_argument("--timeout", type=float, default=900.0, help="give up on a start after this long (s)")
    args = ap.parse_args(argv)
    base = tempfile.mkdtemp(prefix="jethexa_bench_startup_")
    rows, problems = [], []
    try:
        for case in ("cold", "warmup", "warm"):
            work = os.path.join(base, case)
            os.makedirs(work)
            if case == "warmup":
                dt, peak_mb = run_warmup(os.path.join(base, "cache_warm"))
                rows.append((case, "`jethexa-warmup` into an empty cache (peak memory %.0f MB)" % peak_mb, (dt, dt),
                             "-", "-"))
                print("warmup: %.1f s, peak memory %.0f MB" % (dt, peak_mb), flush=True)
                continue
            cache = os.path.join(base, "cache_cold" if case == "cold" else "cache_warm")
            dt, text, codes = start_graph(cache, work, args.timeout, args.composed)
            errors = sum(t.count("[ERROR]") for t in text.values())
            tracebacks = sum(t.count("Traceback") for t in text.values())
            exits = "all 0" if all(c == 0 for c in codes.values()) else str(codes)
            if errors or tracebacks or exits != "all 0":
                problems.append((case, {n: t[-1500:] for n, t in text.items()
                                        if "[ERROR]" in t or "Traceback" in t}))
            what = "graph on an empty cache (nodes compile)" if case == "cold" else "graph on the warmed cache"
            rows.append((case, what, dt, "%d / %d" % (errors, tracebacks), exits))
            print("%s: first predicted/pose after %.1f s, graph up after %.1f s; ERROR lines %d, tracebacks %d; "
                  "exits %s" % (case, dt[0], dt[1], errors, tracebacks, exits), flush=True)
            if case == "cold":
                lines = [ln for t in text.values() for ln in t.splitlines() if "numba kernels" in ln]
                print("\n".join(lines), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    lo, hi = NANO_SCALING
    md = ["# Start-up: launch to the first predicted pose (`benchmarks/bench_startup.py`)", "",
          "Start-up of the sim.launch.py graph as %s (`benchmarks/bench_startup.py%s`):" % (
              {"split": "the launch default, composed:=split (the robot's nodes in two processes)",
               "true": "composed:=true (the robot's nodes in one process)",
               "false": "separate processes (composed:=false)"}[args.composed],
              "" if args.composed == "false" else " --composed " + args.composed),
          "seconds from starting the node processes to the first `predicted/pose` (predictor up) and to the",
          "graph being up (also the first `mocap/pose` of the emulated world), cold vs warm numba cache, in one "
          "run. The cold nodes compile one at a time through the cache's lock file.", ""] + describe("rclpy") + [
          "- Jetson Nano: assumed %d-%d× slower per core (Cortex-A57 vs this CPU); its 4 cores let the nodes "
          "load in parallel, the compile itself is serialized by the cache lock either way" % (lo, hi), "",
          "| case | what | predictor up (s) | graph up (s) | ERROR lines / tracebacks | exit status after SIGINT "
          "| Nano estimate, graph up (s) |",
          "|---|---|---|---|---|---|---|"]
    for case, what, dt, err, exits in rows:
        md.append("| %s | %s | %.1f | %.1f | %s | %s | %.0f-%.0f |" % (case, what, dt[0], dt[1], err, exits,
                                                                        lo * dt[1], hi * dt[1]))
    if problems:
        md += ["", "Problems seen:", ""] + ["- %s: %s" % p for p in problems]
    text = "\n".join(md) + "\n"
    if args.out:
        pathlib.Path(args.out).write_text(text)
    print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
