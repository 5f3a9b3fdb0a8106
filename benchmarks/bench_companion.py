"""Companion mode against the native graph: prediction error vs truth and a silent break named.

    .venv/bin/python benchmarks/bench_companion.py [--seconds 20] [--warmup 6] [--break-at 10] [--repeat 2]

Each run starts, in this process (one rclpy executor, every message through DDS loopback), either

* **native**: the sim.launch.py graph as launched (robot_emulator, servo_driver on the emulated bus, imu,
  gait_controller, predictor, damage_monitor), or
* **companion**: the emulated world without a servo driver (robot_emulator ``interface: topics`` + the sim gait)
  standing in for the stock robot, ``test/stock_standin.py`` publishing exactly Hiwonder's topics from it
  (``/controller_manager/joint_states`` commanded in their names and angles, ``/imu`` in imu_link yawed -90 deg), and
  the companion.launch.py graph (stock_adapter, predictor, damage_monitor in namespace ``companion``) reading only
  those -- and the motion capture's mocap/pose, which the native graph's predictor has too,

drives cmd_vel at 0.05 m/s, waits ``--warmup`` s of walking after the first predicted pose, then measures a
``--seconds`` window: predicted/pose rate, its error against the truth (mocap/pose interpolated at each predicted
stamp; ``predictors.error_metric``) over the healthy part, and a silent break (robot_emulator ``breaks`` LM:1) at
``--break-at`` s: seconds until the graph's morphology names LM (``--name-timeout``). Writes
benchmarks/results/companion.md (``--out``).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))
sys.path.insert(0, HERE)

SPEED = 0.05
BREAK = "LM:1"


def _stamp(h):
    return h.stamp.sec + 1e-9 * h.stamp.nanosec


def run(mode, opts, workdir):
    from geometry_msgs.msg import PoseStamped
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient
    from std_msgs.msg import UInt8MultiArray

    from _nano_measure import prediction_error
    from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for
    from jethexa_dynamics.nodes.graph_spec import processes

    ns = "/companion" if mode == "companion" else ""
    g = Graph()
    try:
        if mode == "native":     # sim.launch.py as launched
            procs = processes("sim", {"port_link": "/tmp/jethexa_bench_companion_%d" % os.getpid()})
        else:                    # the world without the robot's model + companion.launch.py as launched
            from stock_standin import StockStandIn

            procs = [p for p in processes("sim", {"interface": "topics"}) if p.label != "robot_model"]
            procs += processes("companion")
            g.add(StockStandIn, mocap_to=ns + "/mocap/pose")
        for p in procs:
            g.start_process(p, workdir)
        lock = threading.Lock()
        pred, truth, morph = [], [], []

        class Rec(Node):
            def __init__(self, **kw):
                super().__init__("bench_companion", **kw)

                def pose(store):
                    def cb(m):
                        p, o = m.pose.position, m.pose.orientation
                        with lock:
                            store.append((time.monotonic(), _stamp(m.header), p.x, p.y, p.z, o.w, o.x, o.y, o.z))
                    return cb
                self.create_subscription(PoseStamped, ns + "/predicted/pose", pose(pred), RELIABLE_QOS)
                self.create_subscription(PoseStamped, "/mocap/pose", pose(truth), SENSOR_QOS)

                def mo(m):
                    with lock:
                        morph.append((time.monotonic(), list(m.data)))
                self.create_subscription(UInt8MultiArray, ns + "/morphology", mo, LATCHED_QOS)

        rec = g.add(Rec)
        emulator = AsyncParameterClient(rec, "/robot_emulator")
        w = g.add(Watcher, name="bench_driver")
        w.drive(SPEED)
        g.start()
        if not wait_for(lambda: len(pred) > 0, 180.0):
            return {"mode": mode, "failed": "no predicted pose within 180 s"}
        time.sleep(opts.warmup)
        t0 = time.monotonic()
        time.sleep(opts.break_at)
        tb = time.monotonic()
        fut = emulator.set_parameters([Parameter("breaks", value=BREAK)])
        wait_for(fut.done, 10.0)
        if not fut.done() or not fut.result().results[0].successful:
            return {"mode": mode, "failed": "setting breaks on robot_emulator failed"}

        def named():
            with lock:
                return next((t for t, links in morph if t >= tb and links[1] < 3), None)
        t_named = wait_for(named, opts.name_timeout)
        t_end = max(time.monotonic(), t0 + opts.seconds)
        time.sleep(max(0.0, t0 + opts.seconds - time.monotonic()))
        with lock:
            n_window = len([r for r in pred if t0 <= r[0] < t_end])
            p_rows, m_rows = list(pred), list(truth)
            last_morph = morph[-1][1] if morph else None
        err = prediction_error(p_rows, m_rows, t0, tb)       # the healthy part of the window
        del rec
        return {"mode": mode, "pose_hz": n_window / max(1e-9, t_end - t0), "error": err,
                "named_s": None if t_named is None else t_named - tb, "morphology": last_morph,
                "false_before": any(links != [3] * 6 for t, links in morph if t0 <= t < tb)}
    finally:
        g.close()


def _f(v, fmt="%.2f"):
    return "-" if v is None or v != v else fmt % v


def main(argv=None):
    from _machine import describe, front_matter, machine, write_results

    ap = argparse.ArgumentParser(prog="bench_companion.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="window per run [s] (default 20)")
    ap.add_argument("--warmup", type=float, default=6.0, help="walking before the window [s] (default 6)")
    ap.add_argument("--break-at", type=float, default=10.0, help="the silent break, s into the window (default 10)")
    ap.add_argument("--name-timeout", type=float, default=30.0, help="wait for the break to be named [s]")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each mode, alternating (default 2)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "companion.md"))
    args = ap.parse_args(argv)
    for name in ("seconds", "warmup", "break_at", "name_timeout"):
        v = getattr(args, name)
        if not (v == v and 0.0 <= v <= 3600.0) or (name == "seconds" and v <= 0.0):
            ap.error("argument --%s: %r outside [0, 3600] s" % (name.replace("_", "-"), v))
    if args.break_at >= args.seconds:
        ap.error("argument --break-at: %g s is not inside the %g s window" % (args.break_at, args.seconds))
    if not 1 <= args.repeat <= 20:
        ap.error("argument --repeat: %d outside [1, 20]" % args.repeat)
    import tempfile

    load0 = os.getloadavg()
    results = []
    for k in range(args.repeat):
        for mode in ("native", "companion"):
            r = run(mode, args, tempfile.mkdtemp(prefix="bench_companion_%s_" % mode))
            print(r, flush=True)
            results.append(r)
    load1 = os.getloadavg()
    head = describe("rclpy")
    date = head[0][len("- date: "):]
    cmd = "python benchmarks/bench_companion.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])
                                                   if (argv if argv is not None else sys.argv[1:]) else "")
    rows = ["| run | graph | predicted/pose [Hz] | error roll/pitch [deg] | error yaw [deg] | error position mean / "
            "p95 [mm] | silent %s named after [s] | morphology at the end | false damage before the break |"
            % BREAK, "|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(results):
        if "failed" in r:
            rows.append("| %d | %s | failed: %s | | | | | | |" % (i // 2 + 1, r["mode"], r["failed"]))
            continue
        e = r["error"]
        rows.append("| %d | %s | %.1f | %s | %s | %s / %s | %s | %s | %s |" % (
            i // 2 + 1, r["mode"], r["pose_hz"], _f(e["roll_pitch_deg"]), _f(e["yaw_deg"]),
            _f(e["pos_mm"], "%.1f"), _f(e["pos_p95_mm"], "%.1f"),
            "not within %g s" % args.name_timeout if r["named_s"] is None else "%.1f" % r["named_s"],
            r["morphology"], "yes" if r["false_before"] else "no"))

    def summary(mode):
        rs = [r for r in results if r["mode"] == mode and "failed" not in r]
        if not rs:
            return "-", "-", "-"
        rp = [r["error"]["roll_pitch_deg"] for r in rs]
        pm = [r["error"]["pos_mm"] for r in rs]
        nm = [r["named_s"] for r in rs if r["named_s"] is not None]
        return ("%.2f-%.2f deg roll/pitch, %.1f-%.1f mm" % (min(rp), max(rp), min(pm), max(pm)),
                ("%.1f-%.1f s" % (min(nm), max(nm))) if nm else "not named",
                "%d of %d runs" % (len(nm), len(rs)))
    nat, comp = summary("native"), summary("companion")
    current = [
        {"area": "Prediction fidelity", "figure": "companion mode beside a stand-in of Hiwonder's stack vs the native "
         "sim graph: prediction error (mean, healthy walk at 0.05 m/s)", "value": "companion %s; native %s"
         % (comp[0], nat[0])},
        {"area": "Identification", "figure": "companion mode vs the native graph: silent %s named after" % BREAK,
         "value": "companion %s (%s); native %s (%s)" % (comp[1], comp[2], nat[1], nat[2])},
    ]
    text = "\n".join([
        "# Companion mode beside the stock stack vs the native graph (`benchmarks/bench_companion.py`)", "",
        "`%s`" % cmd, ""] + head + [
        "- shared machine: other sessions' load on the same cores; load average %.2f %.2f %.2f at the start, "
        "%.2f %.2f %.2f at the end (1/5/15 min)" % (load0 + load1), "",
        "The graphs' processes as their launch files start them (`graph_spec.processes`, `graph.start_process`); "
        "this process drives cmd_vel and records. **native** = sim.launch.py as launched "
        "(the Nano kit's emulated bus and MPU6050; robot_control + robot_model + robot_emulator). **companion** = "
        "the emulated world without a servo driver (robot_emulator `interface: topics`, the sim gait in its own "
        "process) + `test/stock_standin.py` (in this process) publishing Hiwonder's topics "
        "from it (`/controller_manager/joint_states` commanded at 50 Hz in their names and angles, `/imu` in "
        "imu_link yawed -90 deg) + companion.launch.py's processes (stock_adapter; robot_model = predictor + "
        "damage_monitor, in namespace companion) reading only those; both predictors also get the "
        "motion capture's mocap/pose (the truth they are scored against, as in every sim figure; a robot beside "
        "the stock stack has none). cmd_vel %.2f m/s; %g s of walking after the first predicted pose, then a %g s "
        "window; silent break `%s` (robot_emulator `breaks`) at %g s into it. Error = predicted/pose minus mocap/pose "
        "interpolated at the predicted stamp (`predictors.error_metric`), mean over the healthy part. Named after = "
        "seconds from setting the break until the graph's morphology (companion: `/companion/morphology`) shows LM "
        "broken. Figures for this machine; on a Jetson Nano (4-6x slower per core) the model's CPU is what "
        "bench_nano_budget.py measures for the same two nodes." % (SPEED, args.warmup, args.seconds, BREAK,
                                                                     args.break_at), ""] + rows + [""])
    write_results(text, args.out, front_matter(date, machine() + " (shared)", cmd, current))
    return 0


if __name__ == "__main__":
    sys.exit(main())
