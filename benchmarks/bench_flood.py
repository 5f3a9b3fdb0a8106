#!/usr/bin/env python3
"""The predictor under a flood of malformed messages: output rate and attitude error, quiet vs flooded.

Run: ``source scripts/ros_env.sh && .venv/bin/python benchmarks/bench_flood.py [--seconds 10] [--rate 100]
[--out benchmarks/results/flood.md]``

The sim graph of ``jethexa-demo`` walks in this process (predictor at 50 Hz, as in the demo); a second
process (``test/flood.py``, a foreign client) publishes ``--rate`` malformed messages per second on EVERY
topic the graph subscribes to (NaN/inf, wrong sizes, unknown joints, non-unit quaternions, out-of-limit
joints, malformed morphologies and servo statuses, absurd stamps). Peer measured side by side in the same
run: the quiet window just before the flood. Rate = predicted/pose received per second; attitude error =
RMS angle between predicted and the emulator's true attitude (mocap/pose) at equal stamps; cycle = the
predictor's timer callback (p50/p99) in that window.
"""
import argparse
import os
import sys
import time

from _machine import describe

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test"))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each window [s]")
    ap.add_argument("--rate", type=float, default=100.0, help="malformed messages per second per topic")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "flood.md"))
    args = ap.parse_args(argv)

    from flood import measure, start_flood, walking_graph

    load = os.getloadavg()[0]
    rows = []
    flood = None
    g, nodes, w = walking_graph("bench_flood")
    try:
        pr = nodes["predictor"]

        def window(label):
            pr.stats = type(pr.stats)(pr.p["stats_window"])
            n0 = sum(pr.rejected.values())
            t0 = time.monotonic()
            time.sleep(args.seconds)
            t1 = time.monotonic()
            rate, att = measure(w, t0, t1)
            s = pr.stats.summary()
            rows.append((label, rate, att, s["p50_ms"], s["p99_ms"], (sum(pr.rejected.values()) - n0) / (t1 - t0)))

        window("quiet")
        flood = start_flood(args.rate, pr)
        window("flood, %g msg/s on each of 8 topics" % args.rate)
        errors = {n: nd.errors for n, nd in nodes.items() if nd.errors}
    finally:
        if flood is not None:
            flood.terminate()
            flood.wait(timeout=30)
        g.close()

    lines = ["# Bad input: predictor under a flood of malformed messages", "",
             "`benchmarks/bench_flood.py --seconds %g --rate %g`; load average %.2f at start." % (
                 args.seconds, args.rate, load), ""] + describe("rclpy") + [
        "", "The demo's sim graph walks in one process (predictor at 50 Hz); a second process floods every "
        "subscribed topic. Both windows of the same run, one after the other. Attitude error: predicted/pose "
        "against the emulator's true attitude slerped at the prediction's stamp (`test/flood.py::measure`); "
        "with a 2 s horizon a window holds only ~5 re-anchors, and the quiet error alone spreads over "
        "0.05-0.27 deg from run to run on this shared machine.", "",
        "| window | predicted/pose [Hz] | attitude error RMS [deg] | cycle p50 / p99 [ms] | predictor rejections [1/s] |",
        "|---|---|---|---|---|"]
    lines += ["| %s | %.1f | %.3f | %.2f / %.2f | %.0f |" % r for r in rows]
    lines += ["", "Node errors during the run: %s. Issue 14 reported, for its own flood before the fix, 46 -> 16 Hz "
              "and 0.02 -> 0.27 deg; `test/test_flood.py` on the code before the fix (main @ 3637a8e, this "
              "machine, 2026-11-23) measured 0.45 -> 115.8 deg under this flood (in-limit joint commands with "
              "absurd stamps reached the servos)." % (errors or "none"),
              "On the Jetson Nano (4-6x slower per core) a rejection costs 4-6x more CPU; the predictor runs in "
              "its own process there (ros2 launch), so a flood on other nodes' topics does not share its core."]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
