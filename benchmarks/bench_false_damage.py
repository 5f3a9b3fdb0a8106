#!/usr/bin/env python3
"""False damage on a healthy robot under CPU starvation: the acceptance of issue 21, point 3.

Run (as root for part (b)'s quota; about ten minutes):

    cd <repo> && export PYTHONPATH=$PWD && source scripts/ros_env.sh && source scripts/numba_env.sh
    .venv/bin/python benchmarks/bench_false_damage.py [--runs 10] [--duration 16] [--hogs 2] [--minutes 1]
        [--factor 5] [--cgroup auto] [--out benchmarks/results/false_damage.md]
    .venv/bin/python benchmarks/bench_false_damage.py --smoke     (one 6 s demo run, a 12 s quota walk; CI)

(a) ``--runs`` healthy ``jethexa-demo --no-damage --duration <--duration>`` runs (``python -m
jethexa_dynamics.demo``: the robot's nodes in the demo's process, the emulated robot in its own), each with
``--hogs`` busy-loop processes started beside it and ended after it. Counted per run, from the demo's output: the
morphology changes (its lines ``damage_monitor publishes morphology ...``, printed for every morphology after
the first), its verdict ('unexpected morphology sequence', 'clean run' or 'NOT CLEAN', the exit status) and the
predictor's achieved rate (the summary's ``predictor <model>: N poses/s (configured R Hz)``).

(b) The launch graph as launched (``composed`` at its default, ``graph_spec.COMPOSED_DEFAULT``: the robot's nodes
in two processes, robot_emulator in its own; ``graph_spec.processes`` as ``bench_nano_budget.py`` starts it)
walking healthy at 0.05 m/s for ``--minutes``, the robot's processes together inside a CPU cgroup quota of 4/F
core (``--factor`` F = 5: 0.8 core, the Nano at a 5x slowdown per core; no credit for the emulated MPU6050, which
runs inside the imu's process and so spends the quota too: its cost is reported). Counted: the morphology
changes on ``morphology`` from start-up to the end, what was named, the rates, the throttling. Without a
writable CPU cgroup, (b) runs unconstrained and says so.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_nano_budget as nano  # noqa: E402  (sets the ROS environment defaults, sys.path)
from _nano_cgroup import cfs_slice, find_cgroup  # noqa: E402
import _nano_graph as runner  # noqa: E402
import _nano_measure as measure  # noqa: E402
from _nano_proc import load_text  # noqa: E402
import _nano_report as results  # noqa: E402
from _machine import describe  # noqa: E402

from jethexa_dynamics import cli_args  # noqa: E402
from jethexa_dynamics.nodes import graph_spec  # noqa: E402

MORPHOLOGY_LINE = "damage_monitor publishes morphology"
REASON_LINE = "[damage_monitor]: "
PREDICTOR_LINE = re.compile(r"predictor (\S+): (\d+) poses/s \(configured (\d+) Hz\)")
HOG = "while True: pass"


# ---------------------------------------------------------------------------------------------- (a) demo
def parse_demo(text):
    """{changes, named, reasons, rate, configured, model, verdict} from a demo's output (rate None without a
    summary); reasons = the damage monitor's own log lines for each change (``morphology A -> B (why)``)."""
    named = [line.split(MORPHOLOGY_LINE, 1)[1].split("(")[0].strip() for line in text.splitlines()
             if MORPHOLOGY_LINE in line]
    reasons = [line.split(REASON_LINE, 1)[1].strip() for line in text.splitlines()
               if REASON_LINE in line and " -> " in line]
    m = PREDICTOR_LINE.search(text)
    if "unexpected morphology sequence" in text:
        verdict = "unexpected morphology sequence"
    elif "NOT CLEAN" in text:
        verdict = "not clean: " + text.split("NOT CLEAN:", 1)[1].splitlines()[0].strip()
    elif "clean run" in text:
        verdict = "clean run"
    else:
        verdict = "no summary"
    return {"changes": len(named), "named": named, "reasons": reasons, "rate": int(m.group(2)) if m else None,
            "configured": int(m.group(3)) if m else None, "model": m.group(1) if m else None, "verdict": verdict}


def demo_run(i, opts, workdir):
    """One healthy demo run beside ``opts.hogs`` busy loops (started first, ended after it)."""
    env = runner.child_env()
    hogs = [subprocess.Popen([sys.executable, "-c", HOG], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(opts.hogs)]
    load = load_text()
    t0 = time.monotonic()
    path = os.path.join(workdir, "demo_%d.log" % i)
    try:
        with open(path, "w+") as log:
            proc = subprocess.Popen([sys.executable, "-m", "jethexa_dynamics.demo", "--no-damage", "--duration",
                                     "%g" % opts.duration], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                code = proc.wait(timeout=opts.duration + 600.0)     # a hang guard only
            except subprocess.TimeoutExpired:
                proc.kill()
                code = "killed"
            log.seek(0)
            text = log.read()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    out = parse_demo(text)
    out.update({"run": i, "exit": code, "wall_s": time.monotonic() - t0, "load": load, "log": path})
    print("   demo run %d: exit %s, morphology changes %d%s, predictor %s poses/s (configured %s Hz), %s; %s" % (
        i, code, out["changes"], " (%s)" % ", ".join(out["named"]) if out["named"] else "", out["rate"],
        out["configured"], out["verdict"], load), flush=True)
    return out


# ---------------------------------------------------------------------------------------------- (b) graph
LAYOUT = runner.LAUNCHED   # as launched


def quota_walk(opts, workdir, cgroup):
    """The launch graph as launched walking healthy for ``opts.minutes``, the robot's processes together inside
    4/``opts.factor`` core (no break)."""
    quota = results.NANO_CORES / opts.factor if cgroup[0] else None
    run = types.SimpleNamespace(speed=runner.SPEED, timeout=600.0, warmup=2.0, break_at=0.0, break_spec="",
                                seconds=opts.minutes * 60.0, name_timeout=0.0, shares=opts.shares,
                                body_estimate=False)
    return runner.run_case("%gx" % opts.factor if quota else "unconstrained", LAYOUT, quota, run, workdir, cgroup,
                         0.0)


# ---------------------------------------------------------------------------------------------- report
def report(opts, info, cgroup_note, demos, walk, argv_text):
    rates = [d["rate"] for d in demos if d["rate"] is not None]
    with_changes = [d for d in demos if d["changes"] or d["verdict"] == "unexpected morphology sequence"]
    md = ["# False damage on a healthy robot under CPU starvation (`benchmarks/bench_false_damage.py`)", "",
          "`benchmarks/bench_false_damage.py %s`" % argv_text, ""] + info + ["- CPU quota: " + cgroup_note, "",
          "Issue 21, point 3: a healthy robot starved of CPU must not name damage. (a) %d healthy `jethexa-demo "
          "--no-damage --duration %g` runs (the robot's nodes in the demo's process, predictor at the demo's 50 Hz; "
          "the emulated robot in its own process), each with %d busy-loop processes (`python -c '%s'`) beside it "
          "on this 2-core machine; morphology changes = the demo's `%s` lines (one for every morphology after the "
          "first); predictor rate = its summary line. (b) The launch graph as launched (`composed:=%s`: %s) walking "
          "healthy at %.2f m/s for %g min, the robot's processes together inside %s; morphology changes on "
          "`morphology` from start-up to the end." % (
              opts.runs, opts.duration, opts.hogs, HOG, MORPHOLOGY_LINE,
              graph_spec.COMPOSED_DEFAULT, ", ".join("%s (%s)" % (p, ", ".join(m))
                                                     for p, m in graph_spec.LAYOUTS[graph_spec.COMPOSED_DEFAULT]),
              runner.SPEED,
                                    opts.minutes, "%.2f core (4/%g: the Nano at a %gx slowdown per core; no credit "
                                    "for the emulated MPU6050, which spends the quota too)" % (
                                        walk["quota"], opts.factor, opts.factor) if walk["quota"] else
                                    "no quota (no writable CPU cgroup)"), "",
          "## Acceptance", "", "| check | measured | status |", "|---|---|---|",
          "| (a) no morphology change in %d healthy demo runs beside %d busy loops | %d of %d runs changed the "
          "morphology%s | %s |" % (
              opts.runs, opts.hogs, len(with_changes), len(demos),
              " (%s)" % "; ".join("run %d: %s" % (d["run"], ", ".join(d["named"]) or d["verdict"])
                                  for d in with_changes) if with_changes else "", results._met(not with_changes)),
          "| (a) every demo run clean (exit 0) | %s | %s |" % (
              ", ".join("run %d: exit %s, %s" % (d["run"], d["exit"], d["verdict"]) for d in demos
                        if d["exit"] != 0) or "all exit 0", results._met(all(d["exit"] == 0 for d in demos))),
          "| (b) no morphology change in %g min inside %s | %d change(s)%s | %s |" % (
              opts.minutes, "%.2f core" % walk["quota"] if walk["quota"] else "no quota", walk["changes"],
              " (%s)" % ", ".join(walk["false_damage"]) if walk["false_damage"] else "",
              results._met(walk["changes"] == 0)), "",
          "## (a) jethexa-demo --no-damage beside %d busy loops" % opts.hogs, "",
          "| run | exit | morphology changes | named | predictor poses/s (configured) | demo's verdict | the damage "
          "monitor's reason | wall [s] | load at the start |", "|---|---|---|---|---|---|---|---|---|"]
    for d in demos:
        md.append("| %d | %s | %d | %s | %s (%s Hz) | %s | %s | %.0f | %s |" % (
            d["run"], d["exit"], d["changes"], ", ".join(d["named"]) or "-", results._f(d["rate"], "%d"),
            results._f(d["configured"], "%d"), d["verdict"], "; ".join(d["reasons"]) or "-", d["wall_s"], d["load"]))
    if rates:
        md += ["", "Predictor (%s) achieved rate over the %d runs: min %d, median %g, max %d poses/s (configured "
               "%s Hz)." % (demos[0]["model"], len(rates), min(rates), statistics.median(rates), max(rates),
                            demos[0]["configured"])]
    r = walk
    thr = r.get("throttle")
    emu = r["stages"].get("imu", {})
    md += ["", "## (b) the launch graph (%s, as launched) walking healthy inside the quota" % LAYOUT, "",
           "| quota | minutes | morphology changes | named | throttled periods | predicted/pose [Hz] "
           "| joint_commands [Hz] | imu/data [Hz] | joint_states [Hz] | speed [m/s] | robot CPU-s/s (emulated "
           "MPU6050 in it) | robot waited for a CPU [s/s] | exits |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
           "| %s | %g | %d | %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %.3f (%.3f) | %.2f | %s |" % (
               results._quota_text(r), opts.minutes, r["changes"], ", ".join(r["false_damage"]) or "-",
               "%d of %d (%.1f s)" % (thr["throttled"], thr["periods"], thr["throttled_s"]) if thr else "-",
               r["rates"]["predicted/pose"], r["rates"]["joint_commands"], r["rates"]["imu/data"],
               r["rates"]["joint_states"], results._f(r["speed"]), measure.robot_cpu(r),
               emu.get(measure.MOTION, 0.0) + emu.get(measure.REGISTERS, 0.0),
               measure.robot_total(r, "threads", "wait"),
               r.get("exits", "?")),
           "", "Load: (b) %s at the start, %s at the end." % (r["load_start"], r["load_end"]), "",
           "Not covered: the demo's runs beside busy loops are not inside a quota (the busy loops and the machine's "
           "other load set the starvation, which differs from run to run: see the load); (b) is one run of the "
           "launched graph without busy loops; neither stands for the Nano's single-thread speed (see nano_budget).",
           ""]
    return "\n".join(md)


# ---------------------------------------------------------------------------------------------- main
def parse_args(argv):
    num = cli_args.number
    ap = cli_args.ArgumentParser(prog="bench_false_damage.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="short: --runs 1 --duration 6 --minutes 0.2 (unless "
                    "given); nothing written unless --out")
    ap.add_argument("--runs", type=num(1, 100, integer=True), help="healthy demo runs in (a) (default 10)")
    ap.add_argument("--duration", type=num(1.0, 3600.0, unit="s"), help="walking time of each demo run (default 16)")
    ap.add_argument("--hogs", type=num(0, 16, integer=True), default=2, help="busy-loop processes beside each demo "
                    "run (default 2)")
    ap.add_argument("--minutes", type=num(0.0, 60.0, lo_open=True, unit="min"), help="(b): walking time inside the "
                    "quota (default 1)")
    ap.add_argument("--factor", type=num(1.0, 20.0), default=5.0, help="(b): quota 4/F core (default 5: 0.8 core)")
    ap.add_argument("--cgroup", choices=("auto", "v1", "v2", "none"), default="auto", help="CPU controller of (b) "
                    "(default auto)")
    ap.add_argument("--slice-us", type=num(0, 100000, integer=True), default=1000,
                    help="(b): kernel CFS bandwidth slice, µs, as bench_nano_budget.py (default 1000; 0 = the "
                    "machine's)")
    ap.add_argument("--shares", type=num(0.0, 262144.0, integer=True), default=102400,
                    help="(b): CPU weight of the robot's group and of the emulator's, as bench_nano_budget.py "
                    "(default 102400)")
    ap.add_argument("--out", type=cli_args.output_file, help="results file (default benchmarks/results/"
                    "false_damage.md; with --smoke nothing is written unless given)")
    args = ap.parse_args(argv)
    for k, full, smoke in (("runs", 10, 1), ("duration", 16.0, 6.0), ("minutes", 1.0, 0.2)):
        if getattr(args, k) is None:
            setattr(args, k, smoke if args.smoke else full)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    kind, mount, note = find_cgroup(opts.cgroup)
    print("CPU quota: " + note, flush=True)
    info = describe("rclpy") + ["- %s at the start; %s" % (load_text(), os.environ.get(
        "RMW_IMPLEMENTATION", "default rmw"))]
    workdir = tempfile.mkdtemp(prefix="jethexa_false_damage_")

    def work():
        runner.domain_free()
        print("== (a) %d healthy demo runs beside %d busy loops" % (opts.runs, opts.hogs), flush=True)
        demos = [demo_run(i + 1, opts, workdir) for i in range(opts.runs)]
        print("== (b) the launch graph walking healthy for %g min" % opts.minutes, flush=True)
        with cfs_slice(opts.slice_us if kind else 0) as slice_note:
            info.append("- " + slice_note)
            walk = quota_walk(opts, workdir, (kind, mount))
        info.append("- %s at the end" % load_text())
        return nano.finish(opts, report(opts, info, note, demos, walk, " ".join(argv) or "(defaults)"),
                           "false_damage", workdir)

    return nano.interruptible(work)


if __name__ == "__main__":
    sys.exit(main())
