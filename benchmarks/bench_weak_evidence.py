#!/usr/bin/env python3
"""Weak evidence in the running graph: a leg said lost only from joint_states, confirmed or ruled out.

Run (a few minutes per run on a shared 2-core machine):

    source scripts/ros_env.sh; source scripts/numba_env.sh; export OMP_NUM_THREADS=1
    .venv/bin/python benchmarks/bench_weak_evidence.py [--runs 2] [--plants engine,mujoco]
        [--out benchmarks/results/weak_evidence.md]

The sim graph without servo_driver and imu (``interface:=topics``: the emulated world publishes joint_states and
imu/data itself, as a robot whose joints come from another driver), recovery on, damage_monitor with its defaults
(identifier and probe on), in one process over DDS (``nodes.damage_run``); the robot walks straight at 0.05 m/s.
Two cases per plant, each ``--runs`` times:

- ``RM removed``: at 8 s into the walk RM leaves the world and its joints leave joint_states (no other evidence);
- ``RM hidden 1 s``: the world keeps RM, its joints are left out of joint_states for 1 s (a starved publisher).

Per run, on the world's clock: when the monitor's RM:0 rested on strong evidence (s after the damage; the target
<= 5 s), the largest |roll| or |pitch| after the damage (<= 10 deg), the mean speed along the heading over the last
8 s of the 17 s after the damage over the command (>= 60 % for a loss; a false alarm should change nothing), the
morphologies the monitor published and the gait walked on, the joints reported seized (none), the probes run.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from _machine import describe, front_matter, machine, write_results  # noqa: E402

CASES = {"RM removed": [(8.0, "damage", "RM")], "RM hidden 1 s": [(8.0, "hide", "RM"), (9.0, "hide", "")]}


def _fmt_morph(ms):
    from jethexa_dynamics.model import format_morphology
    legs = "LF LM LR RF RM RR".split()
    return " -> ".join(format_morphology(list(m), legs) for m in ms)


def _probes(run):
    out = []
    for r in run.probes:
        what = "suspect" if r.get("suspect") else "model"
        out.append("%s %s: %s" % (what, r["leg"], r.get("reason", "under way")))
    return "; ".join(out) or "none"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench_weak_evidence.py")
    ap.add_argument("--runs", type=int, default=2, help="runs per case and plant (default 2)")
    ap.add_argument("--plants", default="engine,mujoco", help="comma-separated: engine, mujoco (default both)")
    ap.add_argument("--predictor-rate", type=float, default=100.0,
                    help="sim launch argument predictor_rate [Hz] (default 100, the launch's)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "weak_evidence.md"))
    args = ap.parse_args(argv)
    plants = [p.strip() for p in args.plants.split(",") if p.strip()]
    if not 1 <= args.runs <= 20:
        ap.exit(2, "bench_weak_evidence.py: --runs=%d outside the allowed range [1, 20]\n" % args.runs)
    if not 10.0 <= args.predictor_rate <= 1000.0:
        ap.exit(2, "bench_weak_evidence.py: --predictor-rate=%g outside the allowed range [10, 1000] Hz\n"
                % args.predictor_rate)
    if not plants or any(p not in ("engine", "mujoco") for p in plants):
        ap.exit(2, "bench_weak_evidence.py: --plants=%r: engine and/or mujoco\n" % args.plants)
    from jethexa_dynamics.nodes.damage_run import run_damage

    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    load0 = os.getloadavg()[0]
    rows, stats = [], {}
    for plant in plants:
        for case, changes in CASES.items():
            for k in range(args.runs):
                w0 = time.monotonic()
                run = run_damage(changes, seconds=8.0 + 17.0, plant=plant,
                                 arguments={"predictor_rate": "%g" % args.predictor_rate})
                conf = run.confirmed("RM", 0)
                speed = run.speed_fraction(9.0, 17.0)
                tilt = run.max_tilt_deg()
                row = "| %s | %s | %d | %s | %.1f | %.0f | %s | %s | %s | %s | %.0f |" % (
                    plant, case, k + 1, "-" if conf is None else "%.1f" % conf, tilt, 100 * speed,
                    _fmt_morph(run.monitor_morphologies()), _fmt_morph(run.gait_morphologies()),
                    ", ".join(run.seized_ever()) or "none", _probes(run), time.monotonic() - w0)
                print(row, flush=True)
                rows.append(row)
                stats.setdefault((plant, case), []).append((conf, tilt, speed, run))
    desc = describe("mujoco")
    desc[0] = "- date: " + date                  # the run's start, as in the front matter
    lines = ["# Weak evidence in the running graph: a leg lost only from joint_states", ""] + desc + [
        "- load average %.1f at the start, %.1f at the end (1 min); the world's clock is the reference, wall time "
        "is not" % (load0, os.getloadavg()[0]), "",
        "The sim graph on `interface:=topics` (no servo_driver, no imu: the world publishes joint_states and imu/data), "
        "recovery on, damage_monitor's defaults (identifier and probe on), one process over DDS "
        "(`jethexa_dynamics.nodes.damage_run`), predictor_rate %g Hz, walking at 0.05 m/s; the damage 8 s into the "
        "walk. Confirmed: s after "
        "the damage until the monitor's RM:0 rested on strong evidence (target <= 5 s). Tilt: the largest |roll| or "
        "|pitch| after it (<= 10 deg). Speed: the last 8 s of the 17 s after it, along the heading at the damage, "
        "%% of the command (>= 60 %% after a loss)." % args.predictor_rate, "",
        "| plant | case | run | confirmed s | max tilt deg | speed % | monitor published | gait walked | seized | "
        "probes | wall s |", "|" + "---|" * 11] + rows + [""]
    current = []
    for plant in plants:
        loss = stats.get((plant, "RM removed"), [])
        hide = stats.get((plant, "RM hidden 1 s"), [])
        if loss:
            confs = [c for c, _, _, _ in loss if c is not None]
            speeds = [100 * s for _, _, s, _ in loss]
            tilts = [t for _, t, _, _ in loss]
            ok = len(confs) == len(loss) and max(confs) <= 5.0 and min(speeds) >= 60 and max(tilts) <= 10
            current.append({"area": "Recovery", "figure": "a leg lost seen only in joint_states (RM, no servo "
                            "driver), running graph on the %s plant: confirmed after, speed over the last 8 s of 17 s, "
                            "tilt" % plant,
                            "value": "%s s; %.0f-%.0f %% of the command; <= %.1f deg (%d runs)" % (
                                "-".join("%.1f" % v for v in (min(confs), max(confs))) if confs else "never",
                                min(speeds), max(speeds), max(tilts), len(loss)),
                            "target": "<= 5 s, >= 60 %%, <= 10 deg: %s" % ("met" if ok else "NOT met")})
        if hide:
            same = all(len(r.monitor_morphologies()) == 1 and len(r.gait_morphologies()) == 1 and not r.seized_ever()
                       for _, _, _, r in hide)
            current.append({"area": "Recovery", "figure": "a leg's joints left out of joint_states for 1 s (starved "
                            "publisher), running graph on the %s plant" % plant,
                            "value": "%s in %d runs" % ("no morphology change, nothing seized" if same else
                                                         "a change or a seizure", len(hide)),
                            "target": "nothing changes: %s" % ("met" if same else "NOT met")})
    command = "python benchmarks/bench_weak_evidence.py --runs %d --plants %s --predictor-rate %g" % (
        args.runs, ",".join(plants), args.predictor_rate)
    machine_load = "%s (load average %.1f at the start, %.1f at the end)" % (machine(), load0, os.getloadavg()[0])
    write_results("\n".join(lines), args.out, front_matter(date, machine_load, command, current))
    return 0


if __name__ == "__main__":
    sys.exit(main())
