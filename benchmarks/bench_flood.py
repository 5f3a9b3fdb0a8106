#!/usr/bin/env python3
"""The predictor under garbage on every topic the robot's nodes subscribe to: its rate, quiet vs flooded.

Run: ``source scripts/ros_env.sh && .venv/bin/python benchmarks/bench_flood.py [--layouts demo,launch]
[--seconds 12] [--rate 50] [--big 100000] [--alone-seconds 8] [--out benchmarks/results/flood.md]``

The sim graph walks at 0.05 m/s with the demo's arguments (``jethexa-demo``'s defaults: predictor at 50 Hz,
recovery on, the slip model beside the main one) in each process layout asked for: ``demo`` = the robot's five
nodes in this process as ``jethexa-demo`` runs them; ``launch`` = the processes ``sim.launch.py`` starts
(``graph_spec.processes``, ``composed`` at its default ``split``: robot_control and robot_model). A second
process (``test/flood.py`` at nice 19: it stands for a sender on another machine) publishes ``--rate`` malformed
messages per second on EACH topic the nodes subscribe to, cycling through every kind of garbage (NaN/inf, wrong
sizes, unknown and repeated joint names, non-unit quaternions, out-of-range joints, stale, future and absurd
stamps, malformed morphologies, evidence, probe requests and servo statuses) and huge messages (``--big`` numbers,
about 8 x that many bytes on the wire).

Windows, one after the other in the same run: quiet; the control (the same sender on topics nobody subscribes
to: its own load on the machine); every topic at once; quiet again; then each topic alone, each followed by a
quiet window (its cost is against the mean of the quiet windows around it). Rate = predicted/pose received per
second; attitude error = RMS angle between predicted and the emulator's true attitude at equal stamps
(``test/flood.py::measure``). Per topic, from the nodes' own /diagnostics: the messages rejected and the CPU
time per message of the callbacks that rejected one against those that accepted one (``cpu_s`` / ``calls`` of
stages ``<topic>`` and ``rejected <topic>``: from the serialized message on, decoding included).
"""
import argparse
import os
import statistics
import sys
import time

from _machine import describe, front_matter, machine, proc_cpu, write_results

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test"))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))

LAYOUTS = ("demo", "launch")
NICE = 19


def _positive(kind, lo=0.0, allow_zero=False):
    def conv(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a number" % text) from None
        if v < lo or (v == lo and not allow_zero):
            raise argparse.ArgumentTypeError("%s must be %s %g" % (text, ">=" if allow_zero else ">", lo))
        return v
    return conv


def _layouts(text):
    out = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in out if t not in LAYOUTS]
    if bad or not out:
        raise argparse.ArgumentTypeError("%r: a comma-separated list of %s" % (text, ", ".join(LAYOUTS)))
    return out


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layouts", type=_layouts, default=LAYOUTS, help="process layouts (default: demo,launch)")
    ap.add_argument("--seconds", type=_positive(float), default=12.0, help="length of the quiet, control and "
                    "all-at-once windows [s] (default 12)")
    ap.add_argument("--rate", type=_positive(float), default=50.0, help="malformed messages per second on each "
                    "topic (default 50)")
    ap.add_argument("--big", type=_positive(int, allow_zero=True), default=100000, help="size of the huge "
                    "messages among them (numbers; 0: none; default 100000)")
    ap.add_argument("--alone-seconds", type=_positive(float, allow_zero=True), default=8.0, help="length of each "
                    "topic-alone window and of the quiet window after it [s] (0: skip them; default 8)")
    ap.add_argument("--smoke", action="store_true", help="short windows, the demo layout only, nothing written")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "flood.md"))
    return ap.parse_args(argv)


def _statuses(w, t0):
    """{node: {key: value}} of the nodes' own statuses on /diagnostics, the last of each since ``t0``."""
    out = {}
    for _, arr in w.since("/diagnostics", t0):
        for st in arr.status:
            if st.name.endswith(": node"):
                out[st.name[:-len(": node")]] = {kv.key: kv.value for kv in st.values}
    return out


def _num(values, key):
    try:
        return float(values.get(key, "0"))
    except ValueError:
        return 0.0


def _wait_status(w, after):
    """The statuses published after monotonic time ``after`` (each node reports once a second or more)."""
    from jethexa_dynamics.nodes.graph import wait_for

    wait_for(lambda: len(_statuses(w, after)) >= 5, 5.0)
    time.sleep(1.2)
    return _statuses(w, after)


def _topics_subscribed(arguments):
    """The topics the robot's nodes subscribe to in the graph these launch arguments make."""
    from jethexa_dynamics.nodes.graph_spec import ENDPOINTS, ROBOT_NODES, node_parameters

    out = []
    for entry, params in node_parameters("sim", arguments):
        if entry.name not in ROBOT_NODES:
            continue
        for e in ENDPOINTS[entry.executable]:
            if e.kind == "subscribe" and (e.when is None or e.when.holds(params[e.when.param])):
                name = e.name if e.name.startswith("/") else e.name
                if name not in out:
                    out.append(name)
    return out


class Run:
    """One layout's graph and its windows."""

    def __init__(self, layout, args):
        from flood import demo_arguments, walking_graph

        self.layout, self.args = layout, args
        self.arguments = demo_arguments("bench_flood_" + layout)
        self.g, self.nodes, self.w = walking_graph("bench_flood_" + layout, self.arguments, layout, 900.0)
        self.rows = []
        self.cost = {}             # topic -> {node: (accepted us/msg, rejected us/msg, rejected msgs)}

    def window(self, label, seconds, flood=None, keep=True):
        """A window of ``seconds``: rate, attitude error, the predictor's effective rate; with ``flood`` (the
        keyword arguments of ``start_flood``), that sender runs over it. Returns the row."""
        from flood import measure, start_flood, stop_flood

        proc = (start_flood(self.args.rate, None, nice=NICE, big=self.args.big, **flood) if flood is not None
                else None)
        try:
            time.sleep(1.0 if proc else 0.0)       # its first messages arrived: the window is the flood's
            s0 = _wait_status(self.w, time.monotonic()) if keep else {}
            c0 = {k: proc_cpu(pid) for k, pid in self.pids().items()}
            t0 = time.monotonic()
            time.sleep(seconds)
            t1 = time.monotonic()
            c1 = {k: proc_cpu(pid) for k, pid in self.pids().items()}
        finally:
            sent = stop_flood(proc) if proc else {}
        rate, att = measure(self.w, t0, t1, strict=False)
        s1 = _wait_status(self.w, t1) if keep else {}
        pr = s1.get("predictor", {})
        row = {"label": label, "rate": rate, "att": att, "s0": s0, "s1": s1, "seconds": t1 - t0,
               "effective": pr.get("effective_rate_hz", "?"), "degraded": pr.get("degraded", "?"),
               "sent": sum(sent.values()) / max(t1 - t0 + 2.0, 1e-9) if sent else 0.0,
               "cpu": {k: 1e3 * (c1[k] - c0[k]) / (t1 - t0) for k in c0},
               "rejected": sum(_num(v, k) - _num(s0.get(n, {}), k) for n, v in s1.items() for k in v
                               if k.startswith("rejected ") and k != "rejected_total")}
        if keep:
            self.rows.append(row)
        return row

    def pids(self):
        """{process: pid} of the robot's nodes: this process (the demo layout: its watcher and the flood's
        bookkeeping included), or each robot process of the launch layout."""
        if self.layout == "demo":
            return {"this process": os.getpid()}
        return {name: p.pid for name, (p, _) in self.g.processes.items() if name != "robot_emulator"}

    def close(self):
        errors = {n: nd.errors for n, nd in self.nodes.items() if nd.errors}
        self.g.close()
        return errors


def _per_message(s0, s1, node, stage):
    """CPU [us] per call of ``stage`` of ``node`` between two status snapshots, and the calls; (nan, 0) if none."""
    a, b = s0.get(node, {}), s1.get(node, {})
    calls = _num(b, "calls " + stage) - _num(a, "calls " + stage)
    if calls <= 0:
        return float("nan"), 0
    return 1e6 * (_num(b, "cpu_s " + stage) - _num(a, "cpu_s " + stage)) / calls, int(calls)


def _cost_rows(row, topics):
    """Per (node, topic) the accepted and rejected message costs over an all-at-once window."""
    s0, s1 = row["s0"], row["s1"]
    out = []
    for node in sorted(s1):
        for topic in topics:
            acc, n_acc = _per_message(s0, s1, node, topic)
            rej, n_rej = _per_message(s0, s1, node, "rejected " + topic)
            if n_acc or n_rej:
                out.append((node, topic, acc, n_acc, rej, n_rej))
    return out


def _valid_messages(now, lower, upper):
    """{topic: a message the graph itself would send} (a command at mid-range, a driver's 3-joint read, a unit
    quaternion, a healthy servo status array of 18 servos)."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from geometry_msgs.msg import PoseStamped, Twist
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import Imu, JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from flood import JOINTS
    from jethexa_dynamics.damage.detection import ServoStatus, encode_servo_status

    mid = [0.5 * (lo + hi) for lo, hi in zip(lower, upper)]
    cmd = JointTrajectory(joint_names=list(JOINTS), points=[JointTrajectoryPoint(positions=mid)])
    cmd.points[0].time_from_start.nanosec = 20_000_000
    js = JointState(name=list(JOINTS[:3]), position=mid[:3])
    imu = Imu()
    imu.orientation.w, imu.orientation_covariance[0], imu.linear_acceleration.z = 1.0, 0.0004, 9.81
    pose = PoseStamped()
    pose.header.frame_id, pose.pose.position.z, pose.pose.orientation.w = "world", 0.12, 1.0
    odom = Odometry()
    odom.header.frame_id, odom.pose.pose.orientation.w = "odom", 1.0
    twist = Twist()
    twist.linear.x = 0.05
    statuses = []
    for i, j in enumerate(JOINTS):
        level, text, kv = encode_servo_status(ServoStatus(joint=j, servo_id=i + 1, reads=100, last_reply_age=0.02))
        statuses.append(DiagnosticStatus(level=bytes([level]), name="servo_driver: servo %d (%s)" % (i + 1, j),
                                         message=text, values=[KeyValue(key=k, value=v) for k, v in kv]))
    diag = DiagnosticArray(status=statuses)
    out = {"joint_commands": cmd, "joint_states": js, "imu/data": imu, "emulator/imu_motion": imu,
           "mocap/pose": pose, "predicted/odom": odom, "cmd_vel": twist, "/diagnostics": diag}
    for m in out.values():
        if hasattr(m, "header"):
            m.header.stamp = now
    return out


def per_message_costs(args, repeats=200):
    """CPU [us] (median of ``repeats`` calls, the thread's CPU time) of each robot node's subscription callback,
    in this process without DDS, from the serialized message on (what the executor hands it): a valid message,
    and each kind of garbage the flood sends on that topic. Rows (node, topic, valid us, [(kind, us)])."""
    import statistics as st

    from rclpy.serialization import serialize_message

    import flood
    from jethexa_dynamics.nodes.graph import Graph, add_launch_graph

    g = Graph()
    rows = []
    try:
        tag = "bench_flood_cost"
        nodes = add_launch_graph(g, "sim", flood.demo_arguments(tag), exclude=("robot_emulator",))
        pr = nodes["predictor"]
        streams = {topic: build for topic, _, _, build in flood.streams(lambda: pr.get_clock().now().to_msg())}
        for name, node in nodes.items():
            for sub in node.subscriptions:
                topic = sub.topic_name if sub.topic_name == "/diagnostics" else sub.topic_name.lstrip("/")
                now = pr.get_clock().now().to_msg()          # current stamps for this subscription's calls
                valid = _valid_messages(now, pr.lower, pr.upper)
                if topic not in streams or topic not in valid:
                    continue
                garbage = {topic: streams[topic]()}
                cb = sub.callback
                kinds = [("valid", serialize_message(valid[topic]))]
                raws = flood.truncated([serialize_message(m) for m in garbage[topic]])
                kinds += [("garbage %d" % i, r) for i, r in enumerate(raws[:-1])] + [("truncated", raws[-1])]
                kinds += [("huge %d" % i, flood.restamp(serialize_message(m), now) if hasattr(m, "header")
                           else serialize_message(m)) for i, m in enumerate(flood.big(topic, args.big))]
                costs = []
                for kind, raw in kinds:
                    ts = []
                    for _ in range(repeats if not kind.startswith("huge") else 20):
                        t0 = time.thread_time_ns()
                        cb(raw)
                        ts.append(time.thread_time_ns() - t0)
                    costs.append((kind, st.median(ts) / 1e3))
                rows.append((name, topic, costs[0][1], costs[1:]))
    finally:
        g.close()
    return rows


def run_layout(layout, args):
    from flood import stop_flood  # noqa: F401 (the flood module is importable before the graph starts)

    run = Run(layout, args)
    alone = []
    try:
        topics = _topics_subscribed(run.arguments)
        run.window("quiet", args.seconds)
        run.window("control: the sender on topics nobody subscribes to", args.seconds,
                   {"prefix": "flood_control/"})
        run.window("every topic at once", args.seconds, {})
        run.window("quiet", args.seconds)
        if args.alone_seconds > 0:
            before = run.window("quiet", args.alone_seconds, keep=False)["rate"]
            for topic in topics:
                r = run.window(topic, args.alone_seconds, {"only": (topic,)}, keep=False)
                after = run.window("quiet", args.alone_seconds, keep=False)["rate"]
                alone.append((topic, r["rate"], 0.5 * (before + after), r["att"]))
                before = after
        errors = None
    finally:
        errors = run.close()
    return run, topics, alone, errors


def _fmt_us(v, n):
    return "-" if n == 0 else "%.0f (%d)" % (v, n)


def report_costs(rows, args):
    lines = ["## CPU per message, accepted and rejected", "",
             "Each robot node's subscription callback in this process (no DDS, nothing spinning), handed the "
             "serialized message as the executor hands it; median CPU time of 200 calls (20 for the huge ones): a "
             "valid message of the graph's own (a mid-range command, the driver's 3-joint read, a unit "
             "quaternion, 18 healthy servo statuses) against each kind of garbage the flood sends on that topic "
             "(rejected: by its size, its stamp before decoding, or decoded and checked).", "",
             "| node | topic | valid [us] | garbage: median / max [us] | huge: max [us] | truncated [us] |",
             "|---|---|---|---|---|---|"]
    for node, topic, ok, costs in rows:
        garbage = [c for k, c in costs if k.startswith("garbage")]
        huge = [c for k, c in costs if k.startswith("huge")]
        trunc = [c for k, c in costs if k == "truncated"]
        lines.append("| %s | %s | %.1f | %.1f / %.1f | %s | %s |" % (
            node, topic, ok, statistics.median(garbage), max(garbage), "%.1f" % max(huge) if huge else "-",
            "%.1f" % trunc[0] if trunc else "-"))
    return lines + [""]


def report(results, args, load, costs=()):
    lines = ["# Bad input: the predictor under garbage on every subscribed topic", "",
             "`benchmarks/bench_flood.py --layouts %s --seconds %g --rate %g --big %d --alone-seconds %g`; load "
             "average %.2f at start." % (",".join(args.layouts), args.seconds, args.rate, args.big,
                                          args.alone_seconds, load), ""] + describe("rclpy") + [
        "", "Other load on the machine comes and goes within a run, so the quiet windows around each flooded one "
        "are given too. The sender "
        "(`test/flood.py`) runs at nice 19 (a sender on another machine); every kind of garbage on every topic "
        "the robot's nodes subscribe to, huge messages of ~%d kB among them." % (8 * args.big // 1000), ""]
    if costs:
        lines += report_costs(costs, args)
    for layout, (run, topics, alone, errors) in results.items():
        quiet = [r["rate"] for r in run.rows if r["label"] == "quiet"]
        q = statistics.mean(quiet) if quiet else float("nan")
        lines += ["## Layout `%s` (%s)" % (layout, "the robot's five nodes in one process, as jethexa-demo runs "
                                           "them" if layout == "demo" else "sim.launch.py's processes, "
                                           "composed:=split: robot_control, robot_model"), "",
                  "| window | predicted/pose [Hz] | x quiet (mean %.1f Hz) | attitude error RMS [deg] | predictor "
                  "effective rate [Hz] | messages sent [1/s] | rejected [1/s] | CPU [ms/s] |" % q,
                  "|---|---|---|---|---|---|---|---|"]
        for r in run.rows:
            lines.append("| %s | %.1f | %.2f | %.3f | %s | %.0f | %.0f | %s |" % (
                r["label"], r["rate"], r["rate"] / q, r["att"], r["effective"], r["sent"],
                r["rejected"] / r["seconds"], ", ".join("%s %.0f" % kv for kv in sorted(r["cpu"].items()))))
        if alone:
            lines += ["", "Each topic flooded alone (%g s, then %g s quiet): cost = 1 - rate / mean of the quiet "
                      "windows around it." % (args.alone_seconds, args.alone_seconds), "",
                      "| topic | predicted/pose [Hz] | quiet around [Hz] | cost | attitude error RMS [deg] |",
                      "|---|---|---|---|---|"]
            for topic, rate, ref, att in alone:
                lines.append("| %s | %.1f | %.1f | %+.1f %% | %.3f |" % (topic, rate, ref, 100 * (1 - rate / ref), att))
        flood = next((r for r in run.rows if r["label"] == "every topic at once"), None)
        if flood is not None:
            lines += ["", "CPU per message, every topic at once, by node and topic (from the serialized message "
                      "on: size and stamp checks, decoding, validation, the model's input); calls in brackets:", "",
                      "| node | topic | accepted [us] | rejected [us] |", "|---|---|---|---|"]
            for node, topic, acc, n_acc, rej, n_rej in _cost_rows(flood, topics):
                lines.append("| %s | %s | %s | %s |" % (node, topic, _fmt_us(acc, n_acc), _fmt_us(rej, n_rej)))
        lines += ["", "Node errors during the run: %s." % (errors or "none"), ""]
    lines += ["On the Jetson Nano (4-6x slower per core) every figure of CPU per message is 4-6x larger."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.smoke:
        args.layouts, args.seconds, args.alone_seconds = ("demo",), 3.0, 0.0
    load = os.getloadavg()[0]
    costs = per_message_costs(args)
    results = {}
    for layout in args.layouts:
        results[layout] = run_layout(layout, args)
    text = report(results, args, load, costs)
    if args.smoke:
        print("smoke run:\n" + text)
        return 0
    date = next(ln[len("- date: "):] for ln in text.splitlines() if ln.startswith("- date: "))
    command = "python benchmarks/bench_flood.py --layouts %s --seconds %g --rate %g --big %d --alone-seconds %g" % (
        ",".join(args.layouts), args.seconds, args.rate, args.big, args.alone_seconds)
    machine_load = "%s (load average %.1f at the start, %.1f at the end)" % (machine(), load, os.getloadavg()[0])
    write_results(text, args.out, front_matter(date, machine_load, command, current_rows(results, costs)))
    return 0


def current_rows(results, costs):
    """The front matter's figures: the every-topic-at-once rate against the quiet windows per layout, the quiet
    attitude error, and what a message costs accepted and rejected."""
    rows = []
    for layout, (run, _, _, _) in results.items():
        quiet = [r for r in run.rows if r["label"] == "quiet"]
        flood = next(r for r in run.rows if r["label"] == "every topic at once")
        q = statistics.mean(r["rate"] for r in quiet)
        rows.append({"area": "Bad input (flood)", "figure": "every subscribed topic at once, 50 malformed messages/s "
                     "each, huge ones among them, sender at nice 19: predicted/pose flooded / quiet, layout %s" % layout,
                     "value": "%.2fx (%.1f / %.1f Hz); attitude %.3f -> %.3f deg RMS" % (
                         flood["rate"] / q, flood["rate"], q, statistics.mean(r["att"] for r in quiet), flood["att"]),
                     "target": ">= 0.8x quiet: %s" % ("met" if flood["rate"] >= 0.8 * q else "not met")})
    for layout, (_, _, alone, _) in results.items():
        if not alone:
            continue
        cost = {topic: 1.0 - rate / ref for topic, rate, ref, _ in alone}
        worst = max(cost, key=cost.get)
        rows.append({"area": "Bad input (flood)", "figure": "each subscribed topic flooded alone (50 malformed "
                     "messages/s): predicted/pose's rate lost against the quiet windows around it, layout %s" % layout,
                     "value": "%+.1f to %+.1f %% over %d topics (the most: %s); quiet windows %.1f-%.1f Hz" % (
                         100 * min(cost.values()), 100 * cost[worst], len(cost), worst,
                         min(ref for _, _, ref, _ in alone), max(ref for _, _, ref, _ in alone)),
                     "target": "<= 5 %% for every topic: %s" % ("met" if cost[worst] <= 0.05 else "not met")})
    if costs:
        valid = [ok for _, _, ok, _ in costs]
        rejected = [c for _, _, _, cs in costs for k, c in cs if not k.startswith("huge")]
        huge = [c for _, _, _, cs in costs for k, c in cs if k.startswith("huge")]
        rows.append({"area": "Bad input (flood)", "figure": "CPU per message in a node's callback, from the serialized "
                     "message: valid vs rejected (huge ones before decoding)",
                     "value": "valid %.0f-%.0f us; rejected %.0f-%.0f us, huge %.1f-%.1f us" % (
                         min(valid), max(valid), min(rejected), max(rejected), min(huge), max(huge)),
                     "nano": "valid %.0f-%.0f us; rejected %.0f-%.0f us (4-6x)" % (
                         4 * min(valid), 6 * max(valid), 4 * min(rejected + huge), 6 * max(rejected))})
    return rows


if __name__ == "__main__":
    sys.exit(main())
