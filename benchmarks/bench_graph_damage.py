"""Damage in the running graph: recovered speed and exact link counts, per single-leg case, over DDS.

Per case a fresh sim graph in its launch layout (``graph_spec.processes``: a process per group as ``sim.launch.py``
starts them, DDS on loopback) with ``recovery:=true`` and every other node on its defaults (damage_monitor's
identifier and active probe included); the world's body ``--mass-scale`` heavier and its CoM ``--com-shift`` m
forward of the URDF's (the nodes' models keep the URDF's). The robot walks straight at ``--speed`` m/s (cmd_vel at
10 Hz, as a teleop node) for ``--before`` s, then the damage (robot_emulator's ``breaks``: a silent break, every
servo still answering; ``--kind loss``: its ``damage``, the lost links' servos silent) and ``--after`` s more.

Two tables from the same runs:

* recovery: forward speed along the heading held before the damage over the last ``--window`` s of the ``--after``
  s, as a fraction of the command; the yaw and the cross-track drift of the last gait cycle from the line walked
  before the damage (``sim.recovery.window_metrics``); the largest roll/pitch (upright: within 10 deg); and where
  the time after the damage went (gait_controller's state on /diagnostics at 1 Hz: probe, crawl, unconfirmed,
  stance; the morphology's first change, the probes).
* identify: the time from the damage to the monitor's morphology equal to the truth for good (exact: it stays so to
  the end), its final morphology, any other morphology published on the way (a wrong count of the broken leg,
  another leg touched).

Times are the arrival of the world's ``mocap/pose`` here; robot_emulator's ``lag_events`` (the world fell behind real
time) is reported per run. ``--plant``/``--interface`` pass to the sim launch's arguments of those names where the
emulator has them.

    .venv/bin/python benchmarks/bench_graph_damage.py --plant mujoco --interface topics [--cases LM:1,RR:2|all]
        [--kind break|loss] [--set damage_monitor.probe_max_lag=0.05 ...]
        [--out-recovery benchmarks/results/graph_recovery.md] [--out-identify benchmarks/results/graph_identify.md]

A case takes about a minute (start-up, 8 s of walking, 17 s after the damage); the 18 take 20-30 min on a shared
2-core machine. The results files begin with the front matter collect.py reads (benchmarks/README.md).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections import defaultdict, deque

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
STATES = ("walking", "crawl", "probe", "unconfirmed", "stance", "imu_stale", "stale")


def all_cases():
    """The 18 single-leg cases in the morphology vocabulary (``LEG:n``: n links of the leg kept)."""
    return ["%s:%d" % (leg, n) for leg in LEGS for n in (2, 1, 0)]


def truth_of(case):
    """Links per leg (LEGS order) of a single-leg case ``LEG:n``."""
    leg, n = case.split(":")
    out = [3] * 6
    out[LEGS.index(leg)] = int(n)
    return out


def parse_cases(text):
    """'all' or comma-separated ``LEG:n`` (n in 0..2); ValueError naming the bad entry."""
    if text.strip() == "all":
        return all_cases()
    out = []
    for c in (s.strip() for s in text.split(",") if s.strip()):
        if c not in all_cases():
            raise ValueError("--cases: %r is not a single-leg case (LEG:n, LEG one of %s, n in 0..2, or all)"
                             % (c, " ".join(LEGS)))
        out.append(c)
    if not out:
        raise ValueError("--cases: no case given (LEG:n, comma-separated, or all)")
    return out


def parse_overrides(items):
    """``NODE.PARAM=VALUE`` strings -> {node: {param: value}} (VALUE read as YAML), each checked against the node's
    ParamSpec; ValueError naming the bad one."""
    import yaml

    from jethexa_dynamics.nodes import params as node_params

    out = {}
    for item in items:
        key, sep, text = item.partition("=")
        node, dot, name = key.partition(".")
        if not sep or not dot or node not in node_params.ALL or name not in node_params.ALL[node]:
            raise ValueError("--set %s: not NODE.PARAM=VALUE with a parameter of %s" % (
                item, ", ".join(sorted(node_params.ALL))))
        try:
            value = node_params.ALL[node].specs[name].validate(yaml.safe_load(text))
        except (ValueError, TypeError, yaml.YAMLError) as exc:
            raise ValueError("--set %s: %s" % (item, exc)) from None
        out.setdefault(node, {})[name] = value
    return out


def emulator_has(name):
    from jethexa_dynamics.nodes import params as node_params

    return name in node_params.ROBOT_EMULATOR


def _rpy(q):
    from transforms3d.euler import quat2euler

    return quat2euler((q.w, q.x, q.y, q.z))


def _status(arr, prefix):
    for st in arr.status:
        if st.name.startswith(prefix):
            return st, {kv.key: kv.value for kv in st.values}
    return None, None


def run_case(case, args, log=print):
    """One graph, one damage: the samples and events (times in s from the damage, this process's monotonic clock)."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import PoseStamped
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    from std_msgs.msg import UInt8MultiArray

    from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, start_process, stop_processes, wait_for
    from jethexa_dynamics.nodes.graph_spec import processes

    arguments = {"port_link": "/tmp/jethexa_graph_damage_%d" % os.getpid(), "recovery": "true",
                 "composed": args.composed}
    if args.plant != "engine":
        arguments["plant"] = args.plant
    if args.interface != "bus":
        arguments["interface"] = args.interface
    plan = processes("sim", arguments)
    for p in plan:
        for entry, params in p.nodes:
            if entry.name == "robot_emulator":
                params.update(body_mass_scale=args.mass_scale, body_com_shift=[args.com_shift, 0.0, 0.0])
            params.update(args.overrides.get(entry.name, {}))
    g = Graph()
    w = g.add(Watcher, name="graph_damage_watcher")
    w.msgs = defaultdict(lambda: deque(maxlen=100000))
    w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
    w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
    w.watch(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)
    w.watch(DiagnosticStatus, "damage/probe", LATCHED_QOS)
    w.watch(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
    w.drive(args.speed)
    client = w.create_client(SetParameters, "/robot_emulator/set_parameters")
    procs, logs = {}, {}
    workdir = tempfile.mkdtemp(prefix="graph_damage_")
    os.environ["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")

    def gc_state():
        for _, arr in reversed(w.since("/diagnostics", 0.0)):
            st, v = _status(arr, "gait_controller")
            if v is not None:
                return v.get("state")
        return None

    res = {"case": case, "workdir": workdir}
    try:
        g.start()
        t_launch = time.monotonic()
        for p in plan:
            procs[p.label], logs[p.label] = start_process(p, workdir)
        if not wait_for(lambda: (w.count("mocap/pose") > 10 and gc_state() == "walking"
                                 and client.service_is_ready()) or any(p.poll() is not None for p in procs.values()),
                        args.timeout, poll=0.2) or any(p.poll() is not None for p in procs.values()):
            raise RuntimeError("graph not walking after %.0f s (gait state %s); logs in %s"
                               % (time.monotonic() - t_launch, gc_state(), workdir))
        res["startup_s"] = time.monotonic() - t_launch
        t_walk = time.monotonic()
        time.sleep(args.before)
        req = SetParameters.Request()
        req.parameters = [ParameterMsg(name="breaks" if args.kind == "break" else "damage",
                                       value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=case))]
        fut = client.call_async(req)
        if not wait_for(fut.done, 10.0):
            raise RuntimeError("robot_emulator did not answer set_parameters in 10 s")
        t_d = time.monotonic()
        r = fut.result().results[0]
        if not r.successful:
            raise RuntimeError("robot_emulator refused %s: %s" % (case, r.reason))
        # the window in the world's poses: until one arrives after_s past the damage (or twice that in wall time)
        wait_for(lambda: (w.since("mocap/pose", t_d + args.after + 0.05) != []), 2 * args.after + 30.0, poll=0.1)
        t_end = time.monotonic()
        res["damage_s_after_walk"] = t_d - t_walk
    finally:
        g.close()
        codes, texts = stop_processes(procs, logs)
        res["exit_codes"] = codes
    poses = w.since("mocap/pose", 0.0)
    res["t"] = np.array([t - t_d for t, _ in poses])
    res["pos"] = np.array([[m.pose.position.x, m.pose.position.y, m.pose.position.z] for _, m in poses])
    rpy = np.array([_rpy(m.pose.orientation) for _, m in poses])
    rpy[:, 2] = np.unwrap(rpy[:, 2])
    res["rpy"] = rpy
    res["morphology"] = [(t - t_d, list(m.data)) for t, m in w.since("morphology", 0.0)]
    res["evidence"] = [(t - t_d, {kv.key: kv.value for kv in m.values}) for t, m in w.since("morphology/evidence",
                                                                                          0.0)]
    res["probes"] = [(t - t_d, {kv.key: kv.value for kv in m.values}) for t, m in w.since("damage/probe", 0.0)]
    states, lag = [], None
    for t, arr in w.since("/diagnostics", 0.0):
        _, v = _status(arr, "gait_controller")
        if v is not None:
            states.append((t - t_d, v.get("state"), v.get("active_gait"), v.get("command_applied")))
        _, e = _status(arr, "robot_emulator")
        if e is not None:
            lag = (e.get("lag_events"), e.get("real_time_factor"))
    res["states"] = states
    res["lag_events"] = lag
    res["t_end"] = t_end - t_d
    return res


def recovery_row(case, res, args):
    from jethexa_dynamics.sim.recovery import window_metrics

    m = window_metrics(res["t"], res["pos"], res["rpy"], 0.0, after=args.after, last=args.window,
                       command=args.speed)
    upright = m["max_roll_deg"] <= 10.0 and m["max_pitch_deg"] <= 10.0
    tail = [s for s in res["states"] if args.after - args.window <= s[0] <= args.after]
    after = [s for s in res["states"] if 0.0 <= s[0] <= args.after]
    count = lambda rows: {k: sum(1 for s in rows if s[1] == k) for k in STATES if any(s[1] == k for s in rows)}  # noqa
    first = next((t for t, d in res["morphology"] if t >= 0.0 and d != [3] * 6), None)
    probes = ["%.1f %s" % (t, v.get("leg", "?")) for t, v in res["probes"] if t >= 0.0 and v.get("action") == "probe"]
    ok = (m["speed_fraction"] >= 0.6 and abs(m["yaw_deg"]) <= 2.0 and abs(m["lateral_m"]) <= 0.03 and upright)
    row = "| %s | %.0f %% | %+.2f | %+.1f | %.1f/%.1f %s | %s | %s | %s | %s | %s | %s |" % (
        case, 100 * m["speed_fraction"], m["yaw_deg"], 100 * m["lateral_m"], m["max_roll_deg"], m["max_pitch_deg"],
        "yes" if upright else "NO", "yes" if ok else "no",
        "-" if first is None else "%.1f" % first, ", ".join(probes) or "-",
        " ".join("%s %d" % kv for kv in count(after).items()), " ".join("%s %d" % kv for kv in count(tail).items()),
        (res["states"][-1][2] if res["states"] else "?"))
    return row, m, ok


RECOVERY_HEADER = ("| case | speed, last %g s (of the command) | yaw deg | drift cm | max roll/pitch deg, upright | "
                   "holds | first morphology change s | probes (s, leg) | gait states over the %g s (1 Hz) | "
                   "over the last %g s | gait at the end |\n|" + "---|" * 11)


def identify_row(case, res, args):
    truth = truth_of(case)
    leg = LEGS.index(case.split(":")[0])
    after = [(t, d) for t, d in res["morphology"] if t >= 0.0]
    final = after[-1][1] if after else (res["morphology"][-1][1] if res["morphology"] else None)
    t_exact = None
    if final == truth:
        for t, d in reversed(after):
            if d != truth:
                break
            t_exact = t
    from jethexa_dynamics.model import format_morphology

    wrong = sorted({format_morphology(d, LEGS) for _, d in after if d != truth and d != [3] * 6
                    and d[leg] != truth[leg] and all(d[i] == 3 for i in range(6) if i != leg)})
    other = sorted({format_morphology(d, LEGS) for _, d in after
                    if any(d[i] != 3 for i in range(6) if i != leg)})
    exact = t_exact is not None and t_exact <= args.exact_within
    row = "| %s | %s | %s | %s | %s | %s |" % (
        case, "-" if t_exact is None else "%.1f" % t_exact, format_morphology(final, LEGS) if final else "-",
        "yes" if exact else "no", ", ".join(wrong) or "-", ", ".join(other) or "none")
    return row, exact, bool(other), final


IDENTIFY_HEADER = ("| case | time to exact s | final morphology | exact within %g s | wrong counts of the leg published "
                   "| other legs touched |\n|---|---|---|---|---|---|")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench_graph_damage.py", description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="all", help="comma-separated single-leg cases LEG:n (n links kept), or all")
    ap.add_argument("--kind", choices=("break", "loss"), default="break",
                    help="break: robot_emulator breaks (silent, servos answer); loss: its damage (servos silent)")
    ap.add_argument("--plant", choices=("engine", "mujoco"), default="engine", help="the emulated world's physics")
    ap.add_argument("--interface", choices=("bus", "topics"), default="bus",
                    help="how the nodes reach the world (topics: no servo driver)")
    ap.add_argument("--composed", choices=("false", "split", "true"), default="split",
                    help="the launch's process layout (default split, as launched)")
    ap.add_argument("--speed", type=float, default=0.05, help="cmd_vel forward speed [m/s], (0, 0.1]")
    ap.add_argument("--before", type=float, default=8.0, help="walk before the damage [s], [3, 60]")
    ap.add_argument("--after", type=float, default=17.0, help="window after the damage [s], [5, 120]")
    ap.add_argument("--window", type=float, default=8.0, help="speed over the last this of --after [s]")
    ap.add_argument("--exact-within", type=float, default=6.0, help="the identify table's bound [s]")
    ap.add_argument("--mass-scale", type=float, default=1.1, help="the world's body mass / the URDF's, [0.5, 2]")
    ap.add_argument("--com-shift", type=float, default=0.005, help="the world's body CoM forward [m], [-0.03, 0.03]")
    ap.add_argument("--timeout", type=float, default=240.0, help="graph start-up allowed [s]")
    ap.add_argument("--set", action="append", default=[], metavar="NODE.PARAM=VALUE",
                    help="a node parameter on top of the launch's (repeatable), e.g. damage_monitor.probe_max_lag=0.06")
    ap.add_argument("--out-recovery", default="", help="write the recovery table here (markdown)")
    ap.add_argument("--out-identify", default="", help="write the identify table here (markdown)")
    args = ap.parse_args(argv)
    try:
        cases = parse_cases(args.cases)
    except ValueError as exc:
        ap.error(str(exc))
    for name, v, lo, hi in (("--speed", args.speed, 1e-3, 0.1), ("--before", args.before, 3.0, 60.0),
                            ("--after", args.after, 5.0, 120.0), ("--window", args.window, 1.0, args.after),
                            ("--exact-within", args.exact_within, 0.5, args.after),
                            ("--mass-scale", args.mass_scale, 0.5, 2.0), ("--com-shift", args.com_shift, -0.03, 0.03),
                            ("--timeout", args.timeout, 10.0, 3600.0)):
        if not (math.isfinite(v) and lo <= v <= hi):
            ap.error("%s %g outside [%g, %g]" % (name, v, lo, hi))
    try:
        args.overrides = parse_overrides(args.set)
    except ValueError as exc:
        ap.error(str(exc))
    for name, value, default in (("plant", args.plant, "engine"), ("interface", args.interface, "bus")):
        if value != default and not emulator_has(name):
            ap.error("--%s %s: this robot_emulator has no parameter %s (only its %s world)" % (name, value, name,
                                                                                              default))
    from _machine import describe, front_matter, write_results

    head = describe() + [
        "- command: `python benchmarks/bench_graph_damage.py %s`" % " ".join(sys.argv[1:] if argv is None else argv),
        "- graph: sim launch, composed:=%s, recovery:=true, plant %s, interface %s; world body x%.2f mass, CoM %+.1f mm "
        "forward; %s at t = %.0f s of walking at %.3f m/s%s" % (
            args.composed, args.plant, args.interface, args.mass_scale, 1e3 * args.com_shift,
            "silent break (breaks)" if args.kind == "break" else "loss (damage)", args.before, args.speed,
            "".join("; %s.%s = %r" % (n, k, v) for n, d in args.overrides.items() for k, v in d.items())),
        "- load average at the start: %.2f %.2f %.2f (1, 5, 15 min)" % os.getloadavg()]
    load0 = os.getloadavg()[0]
    print("\n".join(head), flush=True)
    rec_rows, id_rows, holds, exact, touched, done = [], [], 0, 0, 0, []
    for case in cases:
        try:
            res = run_case(case, args)
        except RuntimeError as exc:
            print("%s: %s" % (case, exc), flush=True)
            rec_rows.append("| %s | run failed: %s |" % (case, exc))
            continue
        row, m, ok = recovery_row(case, res, args)
        irow, ex, other, final = identify_row(case, res, args)
        holds += ok
        exact += ex
        touched += other
        done.append(case)
        rec_rows.append(row)
        id_rows.append(irow)
        print(row, flush=True)
        print(irow, "  world lag events, real-time factor: %s; startup %.0f s" % (res["lag_events"],
                                                                                res["startup_s"]), flush=True)
    head.append("- load average at the end: %.2f %.2f %.2f (1, 5, 15 min)" % os.getloadavg())
    load1 = os.getloadavg()[0]
    summary_r = "holds (speed >= 60 %%, |yaw| <= 2 deg, |drift| <= 3 cm, upright): %d/%d" % (holds, len(done))
    summary_i = "exact within %g s: %d/%d; other legs touched in %d" % (args.exact_within, exact, len(done), touched)
    rec = "\n".join(["# Recovered speed in the running graph (`benchmarks/bench_graph_damage.py`)", ""] + head + [
        "", RECOVERY_HEADER % (args.window, args.after, args.window)] + rec_rows + ["", summary_r])
    ide = "\n".join(["# Exact link counts in the running graph (`benchmarks/bench_graph_damage.py`)", ""] + head + [
        "", IDENTIFY_HEADER % args.exact_within] + id_rows + ["", summary_i])
    print("\n" + rec + "\n\n" + ide)
    date = head[0].split(": ", 1)[1]
    machine = "%s (load average %.1f at the start, %.1f at the end)" % (head[1].split(": ", 1)[1], load0, load1)
    command = "python benchmarks/bench_graph_damage.py %s" % " ".join(sys.argv[1:] if argv is None else argv)
    cases_text = "%d single-leg %s" % (len(done), "silent breaks" if args.kind == "break" else "losses")
    for path, text, row in (
            (args.out_recovery, rec, {"area": "Recovery", "figure": "the running graph (recovery:=true, every node on "
                                      "its defaults), %s on the %s plant: the last %g s of %g s after the damage"
                                      % (cases_text, args.plant, args.window, args.after), "value": summary_r,
                                      "target": ">= 60 %%, <= 2 deg, <= 3 cm for every case: %s" % (
                                          "met" if holds == len(cases) else "not met")}),
            (args.out_identify, ide, {"area": "Identification", "figure": "the running graph, %s on the %s plant, "
                                      "body x%.2f, CoM %+.0f mm: the monitor's morphology exact" % (
                                          cases_text, args.plant, args.mass_scale, 1e3 * args.com_shift),
                                      "value": summary_i, "target": ">= 17/18 within 6 s, no other leg: %s" % (
                                          "met" if exact >= 17 and not touched else "not met")})):
        if path:
            write_results(text + "\n", path, front_matter(date, machine, command, [row]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
