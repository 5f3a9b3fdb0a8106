#!/usr/bin/env python3
"""Predictor node cycle time at 100 Hz (p50/p99), real rclpy over DDS on loopback.

Run: ``source scripts/ros_env.sh && .venv/bin/python benchmarks/bench_predictor_node.py [--seconds 15]
[--out benchmarks/results/nodes.md]``

Cases, each ``--seconds`` long after a warm-up:

* ``inputs`` -- the predictor node alone, fed by a feeder node: joint_commands of a walking tripod gait
  (50 Hz, gait_controller's WalkingGait), imu/data (100 Hz) and mocap/pose (50 Hz);
  one row per model configuration: boltzmann_hamel + the slip second opinion (the default),
  boltzmann_hamel alone, slip alone.
* ``sim graph`` -- the whole sim.launch.py graph in one process (as jethexa-demo), walking: the predictor
  shares the executor and the CPU with the emulated robot and every other node.

Cycle = the node's timer callback (every model's ``pose(t)`` plus publishing predicted/pose, predicted/odom,
measured/pose, prediction/error and slip/*). ``model`` = the Boltzmann-Hamel predictor's own ``predict()``
wall time. ``rate`` = predicted/pose messages received per second by a subscriber.
"""
import argparse
import os
import sys
import time

from _machine import describe

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))


def feeder(graph, joint_names):
    """A node publishing walking joint commands, a level IMU and mocap, like the robot would."""
    from builtin_interfaces.msg import Duration
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import Imu
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from jethexa_dynamics.control.walking import WalkingGait
    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes._robot import leg_geometry
    from jethexa_dynamics.nodes.graph import Watcher

    node = graph.add(Watcher, name="feeder")
    walker = WalkingGait(leg_geometry(), joint_names)
    walker.set_command((0.05, 0.0, 0.0))
    cmd = node.create_publisher(JointTrajectory, "joint_commands", 10)
    imu = node.create_publisher(Imu, "imu/data", SENSOR_QOS)
    mocap = node.create_publisher(PoseStamped, "mocap/pose", SENSOR_QOS)
    state = {"x": 0.0}

    def on_cmd():
        names, q = walker.step(0.02, True)
        m = JointTrajectory(joint_names=names)
        m.points = [JointTrajectoryPoint(positions=[float(v) for v in q], time_from_start=Duration(nanosec=20000000))]
        cmd.publish(m)
        state["x"] += 0.001
        p = PoseStamped()
        p.pose.position.x, p.pose.position.z, p.pose.orientation.w = state["x"], 0.12, 1.0
        mocap.publish(p)

    def on_imu():
        m = Imu()
        m.orientation.w = 1.0
        m.linear_acceleration.z = 9.81
        imu.publish(m)

    node.create_timer(0.02, on_cmd)
    node.create_timer(0.01, on_imu)
    return node


def measure(params, seconds, full_graph=False):
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
        else:
            pred = g.add(PredictorNode, params)
            feeder(g, jethexa().joint_names)
            w = g.add(Watcher, name="bench")
        w.watch(PoseStamped, "predicted/pose")
        g.start()
        time.sleep(3.0)  # warm-up: discovery, first commands, caches
        pred.stats.samples.clear()
        model = pred.models.get("boltzmann_hamel")
        if model is not None:
            model._wall.clear()
        n0, t0 = w.count("predicted/pose"), time.monotonic()
        time.sleep(seconds)
        n1, t1 = w.count("predicted/pose"), time.monotonic()
        s = pred.stats.summary()
        ms = model.cycle_stats() if model is not None else None
        return {"p50": s["p50_ms"], "p99": s["p99_ms"], "max": s["max_ms"], "rate": (n1 - n0) / (t1 - t0),
                "overruns": s["overruns"], "cycles": s["cycles"],
                "model_p50": 1e3 * ms["p50"] if ms else float("nan"),
                "model_p99": 1e3 * ms["p99"] if ms else float("nan")}
    finally:
        g.close()


def _cpu_seconds(pid):
    """user + system CPU seconds of a process so far (all its threads: callbacks, DDS, timers)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_own_process(params, seconds):
    """The predictor as the launch files run it: its own process (``python -m jethexa_dynamics.nodes.predictor``),
    fed over DDS by the feeder in this process. Cycle figures from its /diagnostics (a stats window of exactly
    the measured seconds, so the warm-up is out of it); ``cpu`` = the process's whole CPU time (message handling,
    DDS threads, cycles) per 10 ms period over the measured seconds."""
    import subprocess

    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped

    from jethexa_dynamics.nodes._robot import jethexa
    from jethexa_dynamics.nodes.graph import Graph, Watcher

    rate = params["rate"]
    ros = ["--ros-args"] + sum((["-p", "%s:=%s" % (k, str(v).lower() if isinstance(v, bool) else v)]
                               for k, v in dict(params, stats_window=int(seconds * rate)).items()), [])
    proc = subprocess.Popen([sys.executable, "-m", "jethexa_dynamics.nodes.predictor"] + ros,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    g = Graph()
    try:
        feeder(g, jethexa().joint_names)
        w = g.add(Watcher, name="bench")
        w.watch(PoseStamped, "predicted/pose")
        w.watch(DiagnosticArray, "diagnostics")
        g.start()
        t_end = time.monotonic() + 180.0      # numba cache load in the new process
        while w.count("predicted/pose") < 100 and time.monotonic() < t_end and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(2.0)
        n0, t0, c0 = w.count("predicted/pose"), time.monotonic(), _cpu_seconds(proc.pid)
        time.sleep(seconds)
        n1, t1, c1 = w.count("predicted/pose"), time.monotonic(), _cpu_seconds(proc.pid)
        time.sleep(1.5)                        # one more diagnostics message covering the window
        vals = {}
        for _, arr in w.since("diagnostics", t1):
            for st in arr.status:
                if st.name.endswith(": node") and "predictor" in st.name:
                    vals = {kv.key: kv.value for kv in st.values}
        f = lambda k: float(vals.get(k, "nan"))  # noqa: E731
        return {"p50": f("p50_ms"), "p99": f("p99_ms"), "max": f("max_ms"), "rate": (n1 - n0) / (t1 - t0),
                "overruns": int(f("overruns")) if vals else -1, "cycles": int(f("cycles")) if vals else -1,
                "cpu_ms": 1e3 * (c1 - c0) / ((t1 - t0) * rate)}
    finally:
        g.close()
        proc.send_signal(2)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0, help="measured seconds per case")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "nodes.md"))
    args = ap.parse_args(argv)
    info = describe("rclpy") + ["- load average %.2f at start; %s" % (
        os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"),
        os.environ.get("RMW_IMPLEMENTATION", "default rmw"))]
    cases = [
        ("inputs", "boltzmann_hamel + slip (default)", {"predictor": "boltzmann_hamel", "publish_slip": True}, False),
        ("inputs", "boltzmann_hamel alone", {"predictor": "boltzmann_hamel", "publish_slip": False}, False),
        ("inputs", "slip alone", {"predictor": "slip", "publish_slip": False}, False),
        ("sim graph", "boltzmann_hamel + slip, whole graph in one process", {}, True),
    ]
    own = []
    for label, params in [("boltzmann_hamel + slip (default)", {"predictor": "boltzmann_hamel", "publish_slip": True}),
                          ("boltzmann_hamel alone", {"predictor": "boltzmann_hamel", "publish_slip": False})]:
        r = measure_own_process(dict(params, rate=100.0), args.seconds)
        own.append((label, r))
        print("own process %-40s p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  rate %5.1f Hz  cpu %.2f ms/period" % (
            label, r["p50"], r["p99"], r["max"], r["rate"], r["cpu_ms"]), flush=True)
    rows = []
    for feed, label, params, full in cases:
        params = dict(params, rate=100.0)
        r = measure(params, args.seconds, full)
        rows.append((feed, label, r))
        print("%-10s %-50s p50 %6.2f ms  p99 %6.2f ms  rate %5.1f Hz  model p50 %.2f / p99 %.2f ms" % (
            feed, label, r["p50"], r["p99"], r["rate"], r["model_p50"], r["model_p99"]), flush=True)
    lines = [
        "# Predictor node: cycle time at 100 Hz",
        "",
        "`benchmarks/bench_predictor_node.py --seconds %g`" % args.seconds,
        "",
        *info,
        "",
        "Real rclpy over DDS on loopback; period 10 ms. Cycle = the node's timer callback (models + 4-6 "
        "publications); model = `BoltzmannHamelPredictor.predict()` alone; rate = predicted/pose received per s.",
        "",
        "| inputs | predictor configuration | cycle p50 [ms] | cycle p99 [ms] | max [ms] | overruns (>10 ms) "
        "| rate [Hz] | model p50 / p99 [ms] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for feed, label, r in rows:
        lines.append("| %s | %s | %.2f | %.2f | %.1f | %d of %d | %.1f | %.2f / %.2f |" % (
            feed, label, r["p50"], r["p99"], r["max"], r["overruns"], r["cycles"], r["rate"], r["model_p50"],
            r["model_p99"]))
    lines += [
        "",
        "### As the launch files run it: the predictor in its own process",
        "",
        "`python -m jethexa_dynamics.nodes.predictor` (rate 100 Hz) fed over DDS by the feeder above (joint "
        "commands 50 Hz, IMU 100 Hz, mocap 50 Hz). Cycle p50/p99/max from the node's own /diagnostics over the "
        "measured seconds; `CPU per period` = the process's whole CPU time (subscription callbacks = message "
        "handling, DDS threads, the cycles) per 10 ms period. Cycle = dynamics (model `pose(t)`) + publishing; "
        "message handling = CPU per period - cycle mean (approximately). Jetson Nano estimate: x4-6 per core "
        "(Cortex-A57 at 1.43 GHz), i.e. the p99 times 4-6 against the 10 ms period.",
        "",
        "| predictor configuration | cycle p50 [ms] | cycle p99 [ms] | max [ms] | overruns | rate [Hz] "
        "| CPU per period [ms] | Nano p99 estimate [ms] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, r in own:
        lines.append("| %s | %.2f | %.2f | %.1f | %d of %d | %.1f | %.2f | %.1f-%.1f |" % (
            label, r["p50"], r["p99"], r["max"], r["overruns"], r["cycles"], r["rate"], r["cpu_ms"],
            4 * r["p99"], 6 * r["p99"]))
    lines += [
        "",
        "Reading: the p50 is what the model costs; the p99 and the achieved rate depend on what else runs on the",
        "machine (this one is shared, see the load average). On the robot the predictor runs in its own process",
        "(`ros2 launch`), not in one executor with the emulated world as in the `sim graph` row and the demo.",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("written", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
